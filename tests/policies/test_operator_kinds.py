"""Operator kinds: the rules see the pod templates inside Kubeflow, Volcano, KubeRay, KServe, LWS, KAITO, AIBrix and
NVIDIA Dynamo objects, and Karpenter NodePools count as GPU pools.

Each kind has one small compliant GPU fixture in tests/fixtures/operator_kinds/. For each: the template paths
the rules see, no findings (``evaluate_all`` on the parsed objects, and ``scan_all`` on the file), a GPU pod
without the GPU toleration failing gpu-taints-and-tolerations, a privileged GPU container failing
ipc-lock-without-privileged (both mandatory, both ways), and the fixture against its CRD in shared/upstream/crds
when that CRD is there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from aks_gpu_inference.planner.inputs.upstream import crds_dir, missing_reason
from aks_gpu_inference.planner.kube.crd_files import crd_index
from aks_gpu_inference.planner.kube.crd_schema import validate_object
from aks_gpu_inference.planner.scan import scan_all
from aks_gpu_inference.policies.manifests import (
    TEMPLATE_KINDS,
    UNKNOWN,
    Resource,
    nodepool_gpu_selection,
    nodepool_requirements,
    nodepool_taints,
    pod_templates,
    template_group,
    templates_of,
    token_for_manifest,
)
from aks_gpu_inference.policies.rules import evaluate_all

from ._fixtures import analyze

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "operator_kinds"
UNTOLERATED = "does not tolerate 'sku=gpu:NoSchedule'"
PRIVILEGED = "securityContext.privileged is true"


@dataclass(frozen=True)
class Kind:
    """A row of ``TABLE``; ``operator_tolerates``: the operator adds the GPU toleration itself (KAITO)."""

    file: str
    paths: tuple[str, ...]
    where: str
    crd: str | None
    operator_tolerates: bool = False

    def __str__(self) -> str:
        return self.file.removesuffix(".yaml")

    @property
    def label(self) -> str:
        metadata = subject(load(self.file))["metadata"]
        return f"{subject(load(self.file))['kind']} {metadata['namespace']}/{metadata['name']}"

    @property
    def pod_label(self) -> str:
        """How the rules name the GPU container's pod template: the label, and its path when the kind has several."""
        path = next(p for p in self.paths if self.where.startswith(p))
        return f"{self.label} {path.rstrip('.')}" if len(self.paths) > 1 else self.label

    @property
    def container(self) -> tuple[Any, ...]:
        steps = re.findall(r"[^.\[\]]+|\[\d+\]", self.where.split(" ")[0])
        return tuple(int(s[1:-1]) if s.startswith("[") else s for s in steps)

    @property
    def pod(self) -> tuple[Any, ...]:
        """``...spec.containers[0]`` is in ``...spec``; ``spec.predictor.model`` in ``spec.predictor``."""
        return self.container[:-2] if self.container[-2] == "containers" else self.container[:-1]


TABLE = """
fixture                    | CRD in shared/upstream/crds (- if none)          | the GPU container under test, as the rules name it                                  | every pod template path, in order
mpijob.yaml                | kubeflow.org_mpijobs.yaml                        | spec.mpiReplicaSpecs.Worker.template.spec.containers[0] worker                      | spec.mpiReplicaSpecs.Launcher.template.spec. spec.mpiReplicaSpecs.Worker.template.spec.
pytorchjob.yaml            | -                                                | spec.pytorchReplicaSpecs.Worker.template.spec.containers[0] pytorch                 | spec.pytorchReplicaSpecs.Master.template.spec. spec.pytorchReplicaSpecs.Worker.template.spec.
trainingruntime.yaml       | -                                                | spec.template.spec.replicatedJobs[0].template.spec.template.spec.containers[0] node | spec.template.spec.replicatedJobs[0].template.spec.template.spec.
tfjob.yaml                 | -                                                | spec.tfReplicaSpecs.Worker.template.spec.containers[0] tensorflow                   | spec.tfReplicaSpecs.Chief.template.spec. spec.tfReplicaSpecs.Worker.template.spec.
volcanojob.yaml            | -                                                | spec.tasks[1].template.spec.containers[0] mpiworker                                 | spec.tasks[0].template.spec. spec.tasks[1].template.spec.
raycluster.yaml            | ray.io_rayclusters.yaml                          | spec.workerGroupSpecs[0].template.spec.containers[0] ray-worker                     | spec.headGroupSpec.template.spec. spec.workerGroupSpecs[0].template.spec.
rayjob.yaml                | ray.io_rayjobs.yaml                              | spec.rayClusterSpec.workerGroupSpecs[0].template.spec.containers[0] ray-worker      | spec.rayClusterSpec.headGroupSpec.template.spec. spec.rayClusterSpec.workerGroupSpecs[0].template.spec. spec.submitterPodTemplate.spec.
rayservice.yaml            | ray.io_rayservices.yaml                          | spec.rayClusterConfig.workerGroupSpecs[0].template.spec.containers[0] ray-worker    | spec.rayClusterConfig.headGroupSpec.template.spec. spec.rayClusterConfig.workerGroupSpecs[0].template.spec.
inferenceservice.yaml      | serving.kserve.io_inferenceservices.yaml         | spec.predictor.model kserve-container                                               | spec.predictor.
llminferenceservice.yaml   | -                                                | spec.template.containers[0] main                                                    | spec.template. spec.prefill.template.
stormservice.yaml          | -                                                | spec.template.spec.roles[1].template.spec.containers[0] decode                      | spec.template.spec.roles[0].template.spec. spec.template.spec.roles[1].template.spec.
leaderworkerset.yaml       | leaderworkerset.x-k8s.io_leaderworkersets.yaml   | spec.leaderWorkerTemplate.workerTemplate.spec.containers[0] worker                  | spec.leaderWorkerTemplate.leaderTemplate.spec. spec.leaderWorkerTemplate.workerTemplate.spec.
disaggregatedset.yaml      | disaggregatedset.x-k8s.io_disaggregatedsets.yaml | spec.roles[1].spec.leaderWorkerTemplate.workerTemplate.spec.containers[0] decode    | spec.roles[0].spec.leaderWorkerTemplate.workerTemplate.spec. spec.roles[1].spec.leaderWorkerTemplate.workerTemplate.spec.
dynamographdeployment.yaml | nvidia.com_dynamographdeployments.yaml           | spec.services.VllmDecodeWorker.extraPodSpec.mainContainer main                      | spec.services.Frontend.extraPodSpec. spec.services.VllmDecodeWorker.extraPodSpec.
workspace.yaml             | kaito.sh_workspaces.yaml                         | inference.template.spec.containers[0] engine                                        | inference.template.spec.
"""
OPERATOR_TOLERATES = {"workspace.yaml"}
KINDS = [
    Kind(file, tuple(paths.split()), where, None if crd == "-" else crd, file in OPERATOR_TOLERATES)
    for file, crd, where, paths in (map(str.strip, row.split("|")) for row in TABLE.strip().splitlines()[1:])
]
BY_FILE = {k.file: k for k in KINDS}


def load(file: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all((FIXTURES / file).read_text()) if doc]


def subject(docs: list[dict[str, Any]]) -> dict[str, Any]:
    """The object under test: the file's last object (DeviceClasses and claim templates come first)."""
    return docs[-1]


def resources(docs: list[dict[str, Any]]) -> list[Resource]:
    return [
        Resource(token_for_manifest(d["apiVersion"], d["kind"]), d["metadata"]["name"], d, f"f:{i}") for i, d in enumerate(docs)
    ]


def at(obj: Any, steps: tuple[Any, ...]) -> Any:
    for step in steps:
        obj = obj[step]
    return obj


def untolerated(kind: Kind, docs: list[dict[str, Any]]) -> None:
    at(subject(docs), kind.pod).pop("tolerations", None)


def privileged(kind: Kind, docs: list[dict[str, Any]]) -> None:
    at(subject(docs), kind.container).setdefault("securityContext", {})["privileged"] = True


BOTH = pytest.mark.parametrize("run", ["pure", "scan", "analyzer"])


def run_rules(run: str, docs, tmp_path: Path, config=None) -> list[tuple[str, str, str]]:
    """(rule, level, message) of every finding: ``evaluate_all`` on the objects, the real analyzer on them,
    or ``scan_all`` on them as a file."""
    if run == "pure":
        found, _ = evaluate_all(resources(docs), config)
    elif run == "analyzer":  # pulumi_policy's own analyzer, as `pulumi preview --policy-pack` runs the pack
        return [(v.policy, v.enforcement, v.message) for v in analyze(resources(docs), config)]
    else:
        (tmp_path / "manifest.yaml").write_text(yaml.safe_dump_all(docs, sort_keys=False))
        _, found, _ = scan_all([str(tmp_path / "manifest.yaml")], config)
    return [(f.rule.name, f.level, f.violation.message) for f in found]


# ---- per kind ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS, ids=str)
def test_template_paths(kind):
    docs = load(kind.file)
    templates = pod_templates(resources(docs)[-1])
    assert [t.path for t in templates] == list(kind.paths)
    assert kind.where in {where for t in templates for where, _ in t.containers()}


@BOTH
@pytest.mark.parametrize("kind", KINDS, ids=str)
def test_compliant(kind, run, tmp_path):
    assert run_rules(run, load(kind.file), tmp_path) == []


@BOTH
@pytest.mark.parametrize("kind", KINDS, ids=str)
def test_untolerated_gpu_pod(kind, run, tmp_path):
    docs = load(kind.file)
    untolerated(kind, docs)
    found = [f for f in run_rules(run, docs, tmp_path) if f[0] == "gpu-taints-and-tolerations"]
    if kind.operator_tolerates:
        assert found == []  # KAITO adds sku=gpu:NoSchedule itself; another taint is not tolerated:
        found = run_rules(run, docs, tmp_path, {"gpu-taints-and-tolerations": {"taint": "gpu=true:NoSchedule"}})
        assert [(r, level) for r, level, _ in found] == [("gpu-taints-and-tolerations", "mandatory")]
        assert f"{kind.pod_label}: requests GPUs (nvidia.com/gpu)" in found[0][2]
        return
    assert len(found) == 1, found
    _, level, message = found[0]
    assert level == "mandatory"
    assert message.startswith(f"{kind.pod_label}: requests GPUs (nvidia.com/gpu)") and UNTOLERATED in message


@BOTH
@pytest.mark.parametrize("kind", KINDS, ids=str)
def test_privileged_gpu_container(kind, run, tmp_path):
    docs = load(kind.file)
    privileged(kind, docs)
    found = run_rules(run, docs, tmp_path)
    assert [(r, level) for r, level, _ in found] == [("ipc-lock-without-privileged", "mandatory")], found
    assert found[0][2].startswith(f"{kind.label} {kind.where}: {PRIVILEGED}")


@pytest.mark.slow
@pytest.mark.skipif(crds_dir() is None, reason=missing_reason())
@pytest.mark.parametrize("kind", [*KINDS, "nodepool.yaml"], ids=str)
def test_fixture_against_crd(kind):
    file, crd = (kind, None) if isinstance(kind, str) else (kind.file, kind.crd)
    index = crd_index(crds_dir())
    obj = subject(load(file))
    if crd is None:
        assert index.for_object(obj) is None, "a CRD is now pinned: name it in KINDS"
        return
    group = obj["apiVersion"].split("/")[0]
    assert index.path(group, obj["kind"]).name == crd
    result = validate_object(index, obj)
    assert result is not None and result.errors == []


def test_fixtures_cover_every_operator_kind():
    built_in = {"Pod", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob"}
    covered = {subject(load(k.file))["kind"] for k in KINDS} | {"VLLMRuntime"}  # in test_operator_kinds_more.py
    covered |= {"TrainJob", "NIMService", "ServingRuntime", "ClusterServingRuntime"}  # in test_operator_reach.py
    covered |= {"ClusterTrainingRuntime"}  # as a TrainingRuntime:
    assert covered | built_in == TEMPLATE_KINDS
    assert template_group("Deployment") is None and template_group("MPIJob") == "kubeflow.org"
    found = templates_of("kubernetes:trainer.kubeflow.org/v1alpha1:ClusterTrainingRuntime", subject(load("trainingruntime.yaml")))
    assert [f.path for f in found] == list(BY_FILE["trainingruntime.yaml"].paths)


# ---- the headline case ----------------------------------------------------------------


@BOTH
def test_privileged_untolerated_mpi_worker_gives_mandatory_findings(run, tmp_path):
    kind = BY_FILE["mpijob.yaml"]
    docs = load(kind.file)
    untolerated(kind, docs)
    privileged(kind, docs)
    found = run_rules(run, docs, tmp_path)
    assert sorted((r, level) for r, level, _ in found) == [
        ("gpu-taints-and-tolerations", "mandatory"),
        ("ipc-lock-without-privileged", "mandatory"),
    ]
    messages = {r: m for r, _, m in found}
    assert UNTOLERATED in messages["gpu-taints-and-tolerations"]
    assert f"{kind.where}: {PRIVILEGED}" in messages["ipc-lock-without-privileged"]


# ---- unknown during preview -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("token", "props", "unknown_path"),
    [
        ("kubernetes:ray.io/v1:RayCluster", {"spec": {"workerGroupSpecs": UNKNOWN}}, "spec.workerGroupSpecs[*].template.spec."),
        (
            "kubernetes:kubeflow.org/v2beta1:MPIJob",
            {"spec": {"mpiReplicaSpecs": UNKNOWN}},
            "spec.mpiReplicaSpecs.*.template.spec.",
        ),
        ("kubernetes:ray.io/v1:RayService", {"spec": UNKNOWN}, "spec.rayClusterConfig.workerGroupSpecs[*].template.spec."),
        ("kubernetes:serving.kserve.io/v1beta1:InferenceService", {"spec": {"predictor": UNKNOWN}}, "spec.predictor."),
        (
            "kubernetes:nvidia.com/v1alpha1:DynamoGraphDeployment",
            {"spec": {"services": UNKNOWN}},
            "spec.services.*.extraPodSpec.",
        ),
        ("kubernetes:apps/v1:Deployment", {"spec": {"template": UNKNOWN}}, "spec.template.spec."),
    ],
)
def test_unknown_templates_fail_closed(token, props, unknown_path):
    r = Resource(token, "x", {"metadata": {"name": "x", "namespace": "llm"}, **props}, "urn:x")
    templates = pod_templates(r)
    assert unknown_path in [t.path for t in templates if t.unknown]
    messages = [f.violation.message for f in evaluate_all([r])[0] if f.rule.name == "ipc-lock-without-privileged"]
    assert any(f"{unknown_path.rstrip('.')}" in m and "is unknown during preview" in m for m in messages), messages


def test_unknown_moved_container_fails_closed():
    props = {"metadata": {"name": "x", "namespace": "llm"}, "spec": {"predictor": {"containers": [], "model": UNKNOWN}}}
    (template,) = pod_templates(Resource("kubernetes:serving.kserve.io/v1beta1:InferenceService", "x", props))
    assert not template.unknown and template.unknown_parts() == ["spec.predictor.model"]
    props["spec"]["predictor"] = {"containers": UNKNOWN, "pytorch": {"image": "pytorch:2"}}
    (template,) = pod_templates(Resource("kubernetes:serving.kserve.io/v1beta1:InferenceService", "x", props))
    assert template.unknown_parts() == ["spec.predictor.containers"]


# ---- kind details ----------------------------------------------------------------------------


def test_inference_service_components():
    gpu = {"resources": {"limits": {"nvidia.com/gpu": 1}}}
    props = {
        "spec": {
            "predictor": {"containers": [{"name": "sidecar", "image": "a:1"}], "pytorch": gpu, "workerSpec": {"containers": []}},
            "transformer": {"containers": [{"name": "t", "image": "t:1"}], "labels": {"app": "t"}},
            "explainer": {"art": {"image": "art:1"}},
            "canary": [{"predictor": {"model": gpu}}],
        }
    }
    found = templates_of("kubernetes:serving.kserve.io/v1beta1:InferenceService", props)
    paths = "spec.predictor. spec.predictor.workerSpec. spec.transformer. spec.explainer. spec.canary[0].predictor."
    assert [f.path for f in found] == paths.split()
    assert [c["name"] for c in found[0].spec["containers"]] == ["sidecar", "kserve-container"]
    assert found[0].moved == {1: "spec.predictor.pytorch"} and found[3].moved == {0: "spec.explainer.art"}
    assert found[2].metadata == {"labels": {"app": "t"}}
    assert templates_of("kubernetes:serving.kserve.io/v1alpha1:InferenceService", props) == []


def test_dynamo_resources_reach_the_main_container():
    service = {
        "labels": {"a": "1"},
        "extraPodMetadata": {"labels": {"b": "2"}},
        "resources": {
            "requests": {"cpu": "4", "gpu": "2", "gpuType": "amd.com/gpu"},
            "limits": {"gpu": "2", "custom": {"rdma/ib": "1"}},
            "claims": [{"name": "nics"}],
        },
        "extraPodSpec": {"mainContainer": {"name": "main", "resources": {"limits": {"memory": "8Gi"}}}},
    }
    (found,) = templates_of("kubernetes:nvidia.com/v1alpha1:DynamoGraphDeployment", {"spec": {"services": {"w": service}}})
    assert found.metadata == {"labels": {"a": "1", "b": "2"}}
    assert found.spec["containers"][0]["resources"] == {
        "limits": {"memory": "8Gi", "nvidia.com/gpu": "2", "rdma/ib": "1"},
        "requests": {"cpu": "4", "amd.com/gpu": "2"},
        "claims": [{"name": "nics"}],
    }
    assert templates_of("kubernetes:nvidia.com/v1beta1:DynamoGraphDeployment", {"spec": {"services": {"w": service}}}) == []


def test_dynamo_v1beta1_components_are_pod_templates():
    """v1beta1 (the 1.6.1 operator's storage version): each ``spec.components[].podTemplate`` is a PodTemplateSpec."""
    template = {"metadata": {"labels": {"a": "1"}}, "spec": {"containers": [{"name": "main", "image": "x:1"}]}}
    props = {"spec": {"components": [{"name": "decode", "type": "decode", "podTemplate": template}]}}
    (found,) = templates_of("kubernetes:nvidia.com/v1beta1:DynamoGraphDeployment", props)
    assert (found.path, found.metadata, found.spec) == (
        "spec.components[0].podTemplate.spec.",
        template["metadata"],
        template["spec"],
    )
    assert templates_of("kubernetes:nvidia.com/v1alpha1:DynamoGraphDeployment", props) == []
    assert templates_of("kubernetes:nvidia.com/v2:DynamoGraphDeployment", props) == []


def test_kaito_template_gets_kaitos_tolerations_and_node_affinity():
    obj = subject(load("workspace.yaml"))
    (found,) = templates_of("kubernetes:kaito.sh/v1beta1:Workspace", obj)
    assert {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"} in found.spec["tolerations"]
    terms = found.spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [{"key": "apps", "operator": "In", "values": ["custom"]}]}]
    assert "tolerations" not in obj["inference"]["template"]["spec"]  # the input is not changed
    assert templates_of("kubernetes:kaito.sh/v1beta1:Workspace", {"inference": {"preset": {"name": "phi-4"}}}) == []


OTHERS = [
    "kubernetes:example.com/v1:Workspace",
    "kubernetes:example.com/v1:MPIJob",
    "kubernetes:helm.sh/v4:Chart",
    "azure-native:x:Y",
]


@pytest.mark.parametrize("token", OTHERS)
def test_other_groups_have_no_templates(token):
    assert templates_of(token, {"spec": {"mpiReplicaSpecs": {"Worker": {"template": {"spec": {}}}}}}) == []


# ---- Karpenter NodePool -----------------------------------------------------------------------

NODEPOOL = "kubernetes:karpenter.sh/v1:NodePool"


def nodepool(requirements: Any = (), taints: Any = ()) -> Resource:
    spec = {"requirements": list(requirements) if isinstance(requirements, tuple) else requirements, "taints": taints}
    return Resource(NODEPOOL, "gpu", {"metadata": {"name": "gpu"}, "spec": {"template": {"spec": spec}}}, "urn:np")


def requirement(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": operator, **({"values": list(values)} if values else {})}


@pytest.mark.parametrize(
    ("req", "selected"),
    [
        (requirement("karpenter.azure.com/sku-family", "In", "N"), "karpenter.azure.com/sku-family In ['N']"),
        (requirement("karpenter.azure.com/sku-family", "In", "D"), None),
        (requirement("karpenter.azure.com/sku-gpu-count", "Gt", "0"), "karpenter.azure.com/sku-gpu-count Gt ['0']"),
        (requirement("karpenter.azure.com/sku-gpu-count", "In", "0"), None),
        (requirement("karpenter.azure.com/sku-gpu-manufacturer", "Exists"), "karpenter.azure.com/sku-gpu-manufacturer Exists"),
        (requirement("karpenter.azure.com/sku-name", "In", "Standard_ND96isr_H100_v5"), "karpenter.azure.com/sku-name In"),
        (requirement("node.kubernetes.io/instance-type", "In", "Standard_NC24ads_A100_v4"), "node.kubernetes.io/instance-type"),
        (requirement("node.kubernetes.io/instance-type", "In", "Standard_D8s_v5"), None),
        (requirement("karpenter.azure.com/sku-name", "NotIn", "Standard_ND96isr_H100_v5"), None),
    ],
)
def test_nodepool_gpu_selection(req, selected):
    found = nodepool_gpu_selection(nodepool([req]))
    assert found == selected if selected is None else found.startswith(selected)


def test_nodepool_helpers():
    np = nodepool(taints=[{"key": "sku", "value": "gpu", "effect": "NoSchedule"}, {"key": "d", "effect": "NoExecute"}])
    assert nodepool_taints(np) == ["sku=gpu:NoSchedule", "d:NoExecute"]
    assert nodepool_taints(nodepool(taints=UNKNOWN)) is UNKNOWN
    assert nodepool_taints(nodepool(taints=[{"key": UNKNOWN, "effect": "NoSchedule"}])) == [UNKNOWN]
    assert nodepool_requirements(nodepool(UNKNOWN)) is UNKNOWN
    assert nodepool_gpu_selection(nodepool(UNKNOWN)) is None  # skipped, like an unknown vmSize
    other = Resource("kubernetes:apps/v1:Deployment", "d", {})
    assert nodepool_taints(other) is None and nodepool_requirements(other) is None and nodepool_gpu_selection(other) is None


GPU_FAMILY = requirement("karpenter.azure.com/sku-family", "In", "N")


@pytest.mark.parametrize(
    ("np", "expected"),
    [
        (nodepool([GPU_FAMILY], [{"key": "sku", "value": "gpu", "effect": "NoSchedule"}]), None),
        (nodepool([requirement("karpenter.azure.com/sku-family", "In", "D")]), None),
        (nodepool([GPU_FAMILY]), "lacks the taint 'sku=gpu:NoSchedule'; taints: none"),
        (nodepool([GPU_FAMILY], [{"key": "sku", "value": "gpu", "effect": "PreferNoSchedule"}]), "['sku=gpu:PreferNoSchedule']"),
        (nodepool([GPU_FAMILY], UNKNOWN), "taints: unknown during preview (fails closed)"),
    ],
)
def test_gpu_nodepool_carries_the_taint(np, expected):
    found = [(f.level, f.violation.message) for f in evaluate_all([np])[0] if f.rule.name == "gpu-taints-and-tolerations"]
    if expected is None:
        assert found == []
    else:
        ((level, message),), prefix = found, "NodePool gpu spec.template.spec.taints: NodePool selecting GPU sizes"
        assert level == "mandatory" and message.startswith(prefix) and expected in message


@BOTH
def test_nodepool_fixture(run, tmp_path):
    docs = load("nodepool.yaml")
    assert run_rules(run, docs, tmp_path) == []
    del docs[0]["spec"]["template"]["spec"]["taints"]
    found = run_rules(run, docs, tmp_path)
    assert [(r, level) for r, level, _ in found] == [("gpu-taints-and-tolerations", "mandatory")]
    assert "NodePool gpu spec.template.spec.taints" in found[0][2]
