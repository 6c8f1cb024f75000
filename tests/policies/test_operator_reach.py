"""One notion of "this pod uses GPUs" (policies/rules/_gpus.py) and the pods of OME, Kubeflow Trainer TrainJobs, NIM
Operator NIMServices and KServe runtimes as their controllers build them, on upstream manifests (as published, and
made compliant). The fixtures are under tests/fixtures/upstream/, each naming its source on its first line.
"""

from __future__ import annotations

import copy

import pytest

from aks_gpu_inference.components.core.labels import GPU_TOLERATION
from aks_gpu_inference.policies.manifests import pod_templates

from ._upstream import load, mandatory, mutated, resources, verdicts

GPU_RULE = "gpu-taints-and-tolerations"


def templates(docs, index=-1):
    """(path, containers, fragment) of an object's pods, with the other objects in the index (its runtime)."""
    from aks_gpu_inference.policies.manifests import StackIndex

    found = resources(docs)
    StackIndex.build(found)  # links a TrainJob or an OME service to its runtime
    return [(t.path, [w for w, _ in t.containers()], t.fragment) for t in pod_templates(found[index])]


def tolerate(spec):
    spec["tolerations"] = [*(spec.get("tolerations") or []), dict(GPU_TOLERATION)]


# ---- GPUs however they are requested ------------------------------------------------------------------


def test_vfio_passthrough_claim_is_a_gpu_claim():
    """The NVIDIA DRA driver's quickstart claims vfio.gpu.nvidia.com (no DeviceClass in the file: judged by name)."""
    docs = load("vfio-gpu-quickstart.yaml")
    found = verdicts(docs)
    assert set(found) == {GPU_RULE}
    assert "Pod gpu-test-vfio/pod1: requests GPUs (claim gpu) but does not tolerate 'sku=gpu:NoSchedule'" in found[GPU_RULE][0]
    assert verdicts(mutated(docs, lambda pod: tolerate(pod["spec"]))) == {}


def test_ray_gpus_in_ray_start_params():
    """KubeRay's LLM serving sample with the worker group's GPUs given to Ray only through rayStartParams.num-gpus."""

    def only_ray_start_params(service):
        for section in ("limits", "requests"):
            del service["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]["resources"][
                section
            ]["nvidia.com/gpu"]

    docs = mutated(load("ray-llm-serve.yaml"), only_ray_start_params, index=0)
    found = verdicts(docs)
    assert set(found) == {GPU_RULE}
    (message,) = found[GPU_RULE]
    assert "spec.rayClusterConfig.workerGroupSpecs[0].template.spec: requests GPUs (rayStartParams.num-gpus: 4)" in message
    worker = docs[0]["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]["template"]["spec"]
    tolerate(worker)
    assert verdicts(docs) == {}


def test_ray_head_with_zero_gpus_asks_for_none():
    docs = load("ray-llm-serve.yaml")
    assert [m for m in verdicts(docs)[GPU_RULE] if "headGroupSpec" in m] == []


def test_kserve_gpu_types_annotation():
    """KServe's gpu-resource-types annotation (pkg/constants CustomGPUResourceTypesAnnotationKey) names resources the
    service requests as GPUs: a predictor asking only for such a resource asks for GPUs."""
    service = {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": "llm", "annotations": {"serving.kserve.io/gpu-resource-types": '["example.com/h100"]'}},
        "spec": {
            "predictor": {"model": {"modelFormat": {"name": "huggingface"}, "resources": {"limits": {"example.com/h100": 1}}}}
        },
    }
    found = verdicts([service])
    assert "requests GPUs (example.com/h100)" in found[GPU_RULE][0]
    without = copy.deepcopy(service)
    del without["metadata"]["annotations"]
    assert verdicts([without]) == {}


def test_kserve_multi_node_runtime_asks_for_gpus_through_its_worker_spec():
    """KServe's Hugging Face multi-node runtime requests no GPU in its containers: the controller adds them to the
    head and the workers (addGPUResourceToDeployment)."""
    docs = load("kserve-hf-multinode-rt.yaml")
    assert [t[0] for t in templates(docs)] == ["spec.", "spec.workerSpec."]
    found = verdicts(docs)
    assert len(found[GPU_RULE]) == 2 and all("requests GPUs (workerSpec (multi-node" in m for m in found[GPU_RULE])
    tolerated = mutated(docs, lambda rt: (tolerate(rt["spec"]), tolerate(rt["spec"]["workerSpec"])))
    assert verdicts(tolerated) == {}


# ---- OME --------------------------------------------------------------------------------------------


def test_ome_runtime_engine_and_router():
    """The engine's runner requests nvidia.com/gpu and tolerates only nvidia.com/gpu; the router is a CPU pod."""
    docs = load("ome-qwen3-8b-rt.yaml")
    assert templates(docs) == [
        ("spec.engineConfig.", ["spec.engineConfig.runner ome-container"], False),
        ("spec.routerConfig.", ["spec.routerConfig.runner router"], False),
    ]
    assert mandatory(docs) == {GPU_RULE}
    assert verdicts(mutated(docs, lambda rt: tolerate(rt["spec"]["engineConfig"]))) == {}


def test_ome_service_over_its_runtime():
    """The service names its runtime: its engine pod is the runtime's engine merged with its own (min/max replicas)."""
    runtime, service = load("ome-qwen3-8b-rt.yaml"), load("ome-qwen3-8b-isvc.yaml")
    docs = runtime + service
    assert templates(docs)[0] == ("spec.engine.", ["spec.engine.runner ome-container"], False)
    messages = verdicts(docs)[GPU_RULE]
    assert any(m.startswith("InferenceService qwen3-8b/qwen3-8b spec.engine: requests GPUs (nvidia.com/gpu)") for m in messages)
    own_toleration = mutated(docs, lambda isvc: isvc["spec"]["engine"].update(tolerations=[dict(GPU_TOLERATION)]))
    assert [m for m in verdicts(own_toleration)[GPU_RULE] if m.startswith("InferenceService")] == []


def test_ome_service_alone_is_a_fragment():
    docs = load("ome-qwen3-8b-isvc.yaml")
    assert templates(docs) == [("spec.engine.", [], True), ("spec.router.", [], True)]
    assert verdicts(docs) == {}


def test_ome_rdma_webhook():
    """rdma.ome.io/auto-inject makes OME's webhook add /dev/infiniband, IPC_LOCK and CAP_SYS_ADMIN and, when the
    container leaves it unset, privileged: true."""

    def plain_runner(rt):
        for part in ("leader", "worker"):
            runner = rt["spec"]["engineConfig"][part]["runner"]
            runner.pop("securityContext")
            runner.pop("volumeMounts")

    docs = mutated(load("ome-deepseek-rdma-rt.yaml"), plain_runner)
    found = verdicts(docs)
    assert any("securityContext.privileged is true" in m for m in found["ipc-lock-without-privileged"])
    assert any("mounts /dev/infiniband from the host" in m for m in found["rdma-capable-sku"])
    docs[0]["spec"]["engineConfig"]["annotations"].pop("rdma.ome.io/auto-inject")
    left = verdicts(docs)["ipc-lock-without-privileged"]  # without the webhook: not privileged, and IPC_LOCK is missing
    assert not any("privileged" in m for m in left) and all("add capability IPC_LOCK" in m for m in left)


# ---- Kubeflow Trainer --------------------------------------------------------------------------------


def test_trainjob_over_its_runtime():
    """Trainer's LAMMPS example asks for nvidia.com/gpu per node; its flux-distributed runtime tolerates nothing."""
    docs = load("trainer-flux-runtime.yaml", "trainer-lammps-gpus.yaml")
    assert templates(docs) == [("spec.runtimeRef.node.", ["spec.runtimeRef.node.containers[0] node"], False)]
    found = verdicts(docs)
    assert set(found) == {GPU_RULE}
    assert found[GPU_RULE][0].startswith("TrainJob lammps-flux: requests GPUs (nvidia.com/gpu) but does not tolerate")


def test_trainjob_made_compliant_through_its_runtime_patches():
    def patch(job):
        job["spec"]["runtimePatches"] = [
            {
                "manager": "example.io/platform",
                "trainingRuntimeSpec": {
                    "template": {
                        "spec": {
                            "replicatedJobs": [
                                {
                                    "name": "node",
                                    "template": {"spec": {"template": {"spec": {"tolerations": [dict(GPU_TOLERATION)]}}}},
                                }
                            ]
                        }
                    }
                },
            }
        ]

    docs = mutated(load("trainer-flux-runtime.yaml", "trainer-lammps-gpus.yaml"), patch)
    assert verdicts(docs) == {}


def test_trainjob_without_its_runtime_is_a_fragment():
    docs = load("trainer-lammps-gpus.yaml")
    assert templates(docs) == [("spec.runtimeRef.node.", ["spec.trainer node"], True)]
    assert verdicts(docs) == {}


def test_runtime_patches_merge_into_the_runtime():
    """Trainer's runtime-patches example over torch-distributed: the patch's nodeSelector and tolerations reach the pod."""
    docs = load("trainer-torch-runtime.yaml", "trainer-runtime-patches.yaml")
    found = resources(docs)
    from aks_gpu_inference.policies.manifests import StackIndex

    StackIndex.build(found)
    (template,) = pod_templates(found[-1])
    assert template.spec["nodeSelector"] == {"node-type": "training"}
    assert template.spec["tolerations"][0]["key"] == "training-workload"
    (node,) = template.spec["containers"]
    assert node["image"] == "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime"
    assert node["resources"]["limits"] == {"cpu": "4", "memory": "8Gi"}
    assert verdicts(docs) == {}


# ---- NIM Operator --------------------------------------------------------------------------------------


def test_nimservice_multi_node_pods():
    """Pipeline parallelism 2: a LeaderWorkerSet whose leader and workers get the same container and resources."""
    docs = load("nim-multinode-rdma.yaml")
    assert templates(docs) == [("spec.leader.", ["spec nim-leader"], False), ("spec.worker.", ["spec nim-worker"], False)]
    found = verdicts(docs)
    assert len(found[GPU_RULE]) == 2


def test_nimservice_gpus_from_tensor_parallelism():
    """Without a GPU in spec.resources the operator asks for multiNode.parallelism.tensor GPUs per pod."""

    def no_resources(nim):
        nim["spec"].pop("resources")
        nim["spec"]["tolerations"] = [dict(GPU_TOLERATION)]

    docs = mutated(load("nim-multinode-rdma.yaml"), no_resources)
    (template, _) = pod_templates(resources(docs)[-1])
    assert template.gpu_fields == ("multiNode.parallelism.tensor: 8 (nvidia.com/gpu per pod)",)
    assert GPU_RULE not in verdicts(docs)
    docs[-1]["spec"].pop("tolerations")
    assert "requests GPUs (multiNode.parallelism.tensor: 8 (nvidia.com/gpu per pod))" in verdicts(docs)[GPU_RULE][0]


@pytest.mark.parametrize("file", ["trainer-lammps-gpus.yaml", "ome-qwen3-8b-isvc.yaml"])
def test_runtime_not_scanned_is_said(file):
    from aks_gpu_inference.planner.scan import run

    from ._upstream import UPSTREAM

    (warning,) = [p for p in run([str(UPSTREAM / file)]).problems if p.check == "runtime-not-scanned"]
    assert "which is not among the scanned objects" in warning.message


@pytest.mark.parametrize(
    ("file", "asked"),
    [
        ("nim-kata-sandbox.yaml", "nvidia.com/pgpu"),  # a GPU passed through to a Kata sandbox VM
        ("nim-dra-auto-creation.yaml", "draResources claimCreationSpec gpu.nvidia.com"),  # the class the CRD defaults
    ],
)
def test_nimservice_gpus_asked_for_otherwise(file, asked):
    docs = load(file)
    (message,) = verdicts(docs)[GPU_RULE]
    assert f"requests GPUs ({asked}) but does not tolerate" in message
    assert verdicts(mutated(docs, lambda nim: nim["spec"].update(tolerations=[dict(GPU_TOLERATION)]))) == {}
