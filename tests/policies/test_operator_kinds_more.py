"""Operator kinds read since the GPU-kinds issue (classes 5 and 6): the scan no longer calls them unknown, and the
shorthand GPU requests of vLLM production-stack's VLLMRuntime and Dynamo read as ``nvidia.com/gpu``.

TFJob, Volcano Job, LLMInferenceService and StormService keep a pod spec of their own and sit in the table of
test_operator_kinds.py; the VLLMRuntime has none (its operator builds the pod from ``spec.deploymentConfig``), so
its cases are here. Argo Workflow stays an unknown kind (why: ``policies/manifests/templates.py``); TrainJob,
NIMService and OME's kinds are read since (test_operator_reach.py).
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from aks_gpu_inference.planner.scan import run
from aks_gpu_inference.policies.manifests import UNKNOWN, Resource, pod_templates, templates_of
from aks_gpu_inference.policies.rules import evaluate_all

from .test_operator_kinds import BOTH, BY_FILE, UNTOLERATED, load, resources, run_rules, subject, untolerated

VLLM = "kubernetes:production-stack.vllm.ai/v1alpha1:VLLMRuntime"
NEW_KINDS = ["tfjob.yaml", "volcanojob.yaml", "llminferenceservice.yaml", "stormservice.yaml"]


def unknown_kind_warnings(docs: list[dict], tmp_path: Path) -> list[str]:
    (tmp_path / "manifest.yaml").write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return [p.message for p in run([str(tmp_path / "manifest.yaml")]).problems if p.check == "unknown-kind-devices"]


@pytest.mark.parametrize("file", [*NEW_KINDS, "vllmruntime.yaml"])
def test_no_unknown_kind_warning(file, tmp_path):
    docs = load(file)
    assert unknown_kind_warnings(docs, tmp_path) == []
    if file in BY_FILE:
        untolerated(BY_FILE[file], docs)
    else:
        del subject(docs)["spec"]["deploymentConfig"]["toleration"]
    assert unknown_kind_warnings(docs, tmp_path) == []


# ---- VLLMRuntime ------------------------------------------------------------------------------


def vllm(**config) -> dict:
    obj = copy.deepcopy(subject(load("vllmruntime.yaml")))
    obj["spec"]["deploymentConfig"].update(config)
    return obj


def test_vllm_runtime_pod():
    (template,) = pod_templates(resources([vllm()])[0])
    assert template.path == "spec.deploymentConfig."
    assert [where for where, _ in template.containers()] == ["spec.deploymentConfig vllm"]
    (container,) = template.spec["containers"]
    assert container["image"] == "docker.io/lmcache/vllm-openai:2025-05-27-v1"
    gpu = {"cpu": "5", "memory": "32Gi", "nvidia.com/gpu": "1"}
    assert container["resources"] == {"requests": gpu, "limits": gpu}
    assert template.spec["tolerations"] == subject(load("vllmruntime.yaml"))["spec"]["deploymentConfig"]["toleration"]
    assert template.metadata == {"labels": {"app": "llama"}}


@BOTH
def test_vllm_runtime_compliant(run, tmp_path):
    assert run_rules(run, load("vllmruntime.yaml"), tmp_path) == []


@BOTH
def test_vllm_runtime_untolerated_gpu(run, tmp_path):
    docs = load("vllmruntime.yaml")
    del subject(docs)["spec"]["deploymentConfig"]["toleration"]
    found = run_rules(run, docs, tmp_path)
    assert [(r, level) for r, level, _ in found] == [("gpu-taints-and-tolerations", "mandatory")], found
    assert found[0][2].startswith("VLLMRuntime llm/llama: requests GPUs (nvidia.com/gpu)") and UNTOLERATED in found[0][2]


@pytest.mark.parametrize(
    ("resources", "gpus"),
    [
        ({"gpu": "2", "gpuType": "amd.com/gpu"}, ["amd.com/gpu"]),
        ({"gpu": "1", "gpuType": UNKNOWN}, ["nvidia.com/gpu"]),
        ({"gpu": UNKNOWN}, ["nvidia.com/gpu"]),
        ({"gpu": "", "cpu": "4"}, []),
        ({"cpu": "4"}, []),
    ],
)
def test_vllm_runtime_gpu_shorthand(resources, gpus):
    (template,) = pod_templates(Resource(VLLM, "llama", vllm(resources=resources, toleration=[])))
    assert sorted(template.spec["containers"][0].get("resources", {}).get("limits", {}).keys() - {"cpu"}) == gpus
    findings = [f for f in evaluate_all([template.resource])[0] if f.rule.name == "gpu-taints-and-tolerations"]
    assert len(findings) == (1 if gpus else 0)


def test_vllm_runtime_sidecar_and_node_affinity():
    terms = [{"matchExpressions": [{"key": "agentpool", "operator": "In", "values": ["gpu"]}]}]
    sidecar = {"enabled": True, "image": {"registry": "docker.io", "name": "lmcache/sidecar:v1"}, "resources": {"gpu": "1"}}
    (template,) = templates_of(VLLM, vllm(sidecarConfig=sidecar, nodeSelectorTerms=terms, runtimeClass="nvidia"))
    assert [c["name"] for c in template.spec["containers"]] == ["vllm", "sidecar"]
    assert template.moved == {0: "spec.deploymentConfig", 1: "spec.deploymentConfig.sidecarConfig"}
    assert template.spec["containers"][1]["resources"]["limits"] == {"nvidia.com/gpu": "1"}
    assert template.spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == {
        "nodeSelectorTerms": terms
    }
    assert template.spec["runtimeClassName"] == "nvidia"
    (template,) = templates_of(VLLM, vllm(sidecarConfig={**sidecar, "enabled": False}))
    assert [c["name"] for c in template.spec["containers"]] == ["vllm"]


def test_vllm_runtime_unknown_fails_closed():
    r = Resource(VLLM, "llama", {"metadata": {"name": "llama", "namespace": "llm"}, "spec": {"deploymentConfig": UNKNOWN}})
    (template,) = pod_templates(r)
    assert template.unknown and template.path == "spec.deploymentConfig."
    r = Resource(VLLM, "llama", vllm(toleration=UNKNOWN))
    messages = [f.violation.message for f in evaluate_all([r])[0] if f.rule.name == "gpu-taints-and-tolerations"]
    assert messages == ["VLLMRuntime llm/llama: tolerations are unknown during preview (fails closed)"]
    (template,) = pod_templates(Resource(VLLM, "llama", vllm(resources=UNKNOWN)))
    assert template.spec["containers"][0]["resources"] is UNKNOWN


# ---- Dynamo's shorthand ---------------------------------------------------------------------------


def test_dynamo_empty_gpu_asks_for_none():
    service = {"resources": {"limits": {"gpu": "", "cpu": "2"}}, "extraPodSpec": {"mainContainer": {"name": "main"}}}
    (found,) = templates_of("kubernetes:nvidia.com/v1alpha1:DynamoGraphDeployment", {"spec": {"services": {"w": service}}})
    assert found.spec["containers"][0]["resources"] == {"limits": {"cpu": "2"}}


# ---- kind details -----------------------------------------------------------------------------


def test_volcano_job_is_not_a_batch_job():
    tasks = {"tasks": [{"name": "w", "template": {"spec": {"containers": []}}}]}
    template = {"template": {"spec": {"containers": []}}}
    assert [f.path for f in templates_of("kubernetes:batch.volcano.sh/v1alpha1:Job", {"spec": tasks})] == [
        "spec.tasks[0].template.spec."
    ]
    assert templates_of("kubernetes:batch.volcano.sh/v1alpha1:Job", {"spec": template}) == []
    assert templates_of("kubernetes:batch/v1:Job", {"spec": tasks}) == []
    assert [f.path for f in templates_of("kubernetes:batch/v1:Job", {"spec": template})] == ["spec.template.spec."]


def test_llm_inference_service_workloads():
    pod = {"containers": [{"name": "main", "image": "vllm/vllm-openai:v0.10.1"}]}
    props = {
        "spec": {
            "labels": {"a": "1"},
            "template": pod,
            "worker": pod,
            "prefill": {"annotations": {"b": "2"}, "template": pod, "worker": pod},
        }
    }
    for version in ("v1alpha1", "v1alpha2"):
        found = templates_of(f"kubernetes:serving.kserve.io/{version}:LLMInferenceService", props)
        assert [f.path for f in found] == ["spec.template.", "spec.worker.", "spec.prefill.template.", "spec.prefill.worker."]
        assert [f.metadata for f in found] == [{"labels": {"a": "1"}}] * 2 + [{"annotations": {"b": "2"}}] * 2
    assert templates_of("kubernetes:serving.kserve.io/v1beta1:LLMInferenceService", props) == []
    unknown = templates_of("kubernetes:serving.kserve.io/v1alpha1:LLMInferenceService", {"spec": {"prefill": UNKNOWN}})
    assert [(f.path, f.spec) for f in unknown] == [("spec.prefill.template.", UNKNOWN), ("spec.prefill.worker.", UNKNOWN)]


# ---- still unknown kinds ----------------------------------------------------------------------

GPU = {"limits": {"nvidia.com/gpu": 1}}
STILL_UNKNOWN = [
    # argoproj/argo-workflows@v4.1.2: tolerations resolve per call site, podSpecPatch can change the pod
    {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Workflow",
        "metadata": {"name": "train", "namespace": "llm"},
        "spec": {
            "entrypoint": "main",
            "templates": [{"name": "main", "container": {"image": "pytorch/pytorch:2.7.1", "resources": GPU}}],
        },
    },
]


@pytest.mark.parametrize("obj", STILL_UNKNOWN, ids=lambda o: o["kind"])
def test_still_unknown_kinds_are_warned(obj, tmp_path):
    assert pod_templates(resources([obj])[0]) == []
    (message,) = unknown_kind_warnings([obj], tmp_path)
    assert f"kind {obj['kind']} ({obj['apiVersion']}) is unknown to the guardrail rules" in message
