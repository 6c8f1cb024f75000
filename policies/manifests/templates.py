"""Where each Kubernetes kind keeps its pod templates: the built-in workloads and the operator kinds GPU
stacks run (Kubeflow, Volcano, KubeRay, KServe, LWS, KAITO, AIBrix, vLLM production-stack, NVIDIA Dynamo, NIM,
OME), each operator family in its module under ``operators/``.

Pure functions over plain mappings with engine wire names. ``templates_of`` gives one ``Found`` per pod
template: a readable location (``spec.workerGroupSpecs[0].template.spec.``), the pod metadata and the
pod spec, ``UNKNOWN`` when it cannot be known during preview (a wildcard over an unknown list or map
shows as ``[*]`` / ``*``), so that fail-closed rules can say so. Operators that keep a container outside
``spec.containers`` (an InferenceService's ``predictor.model``, a Dynamo service's ``mainContainer``)
have it appended to ``containers``, its real location in ``moved``; operators that build or edit the pod
(KAITO, VLLMRuntime, NIMService, OME, a TrainJob over its runtime) have it built here, so the rules see the pod
that will run.

Field paths come from the CRDs of the pinned releases in ``shared/upstream/crds`` unless noted:
``kubeflow.org_mpijobs`` (mpi-operator v0.8.0), ``ray.io_{rayclusters,rayjobs,rayservices}`` (kuberay
v1.7.0), ``serving.kserve.io_inferenceservices`` (kserve v0.20.0), ``leaderworkerset.x-k8s.io_*`` and
``disaggregatedset.x-k8s.io_*`` (lws v0.10.0), ``kaito.sh_workspaces`` (kaito v0.6.0).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from aks_gpu_inference.policies.manifests.operators import dynamo, kaito, kserve, nim, ome, ray, trainer, vllm_stack
from aks_gpu_inference.policies.manifests.values import is_unknown
from aks_gpu_inference.policies.manifests.walk import Finder, Found, pod_template_specs

_TOKEN = re.compile(r"kubernetes:(?:([\w.-]+)/)?([\w.-]+):(\w+)")


def api_of(token: str) -> tuple[str, str, str] | None:
    """(group, version, kind) of a ``kubernetes:<group>/<version>:<Kind>`` type token; core is ``core``."""
    match = _TOKEN.fullmatch(token)
    if match is None or token.startswith("kubernetes:helm.sh/"):
        return None
    return match[1] or "core", match[2], match[3]


# Kinds that are not read, because one object does not say what its pods are: Argo Workflow
# (argoproj/argo-workflows@v4.1.2:workflow/controller/workflowpod.go): a container, script or containerSet
# template's tolerations are its own, else those of the steps/DAG template it is called from (one template can run
# under several), else spec.tolerations (lines 1374-1379); podSpecPatch strings at both levels can change
# tolerations and resources, and templateRef / workflowTemplateRef take templates from other objects.

_LWS = ("leaderWorkerTemplate",)

# kind: (API group, or None for any; API versions, or None for any; finder, or a finder per API version)
_KINDS: dict[str, tuple[str | None, frozenset[str] | None, Finder | Mapping[str, Finder]]] = {
    "Pod": (None, None, pod_template_specs(())),
    "Deployment": (None, None, pod_template_specs(("spec", "template"))),
    "StatefulSet": (None, None, pod_template_specs(("spec", "template"))),
    "DaemonSet": (None, None, pod_template_specs(("spec", "template"))),
    "ReplicaSet": (None, None, pod_template_specs(("spec", "template"))),
    "Job": (None, None, pod_template_specs(("spec", "template"))),
    "CronJob": (None, None, pod_template_specs(("spec", "jobTemplate", "spec", "template"))),
    "LeaderWorkerSet": (None, None, pod_template_specs(("spec", *_LWS, "leaderTemplate"), ("spec", *_LWS, "workerTemplate"))),
    "DisaggregatedSet": (
        "disaggregatedset.x-k8s.io",
        None,
        pod_template_specs(*(("spec", "roles", "[]", "spec", *_LWS, t) for t in ("leaderTemplate", "workerTemplate"))),
    ),
    "MPIJob": ("kubeflow.org", None, pod_template_specs(("spec", "mpiReplicaSpecs", "*", "template"))),
    # kubeflow/training-operator@v1.9.0:manifests/base/crds/kubeflow.org_pytorchjobs.yaml (not in shared/upstream)
    "PyTorchJob": ("kubeflow.org", None, pod_template_specs(("spec", "pytorchReplicaSpecs", "*", "template"))),
    # kubeflow/training-operator@v1.9.0:manifests/base/crds/kubeflow.org_tfjobs.yaml (not in shared/upstream)
    "TFJob": ("kubeflow.org", None, pod_template_specs(("spec", "tfReplicaSpecs", "*", "template"))),
    "TrainingRuntime": ("trainer.kubeflow.org", None, trainer.RUNTIME),
    "ClusterTrainingRuntime": ("trainer.kubeflow.org", None, trainer.RUNTIME),
    "TrainJob": ("trainer.kubeflow.org", None, lambda props: trainer.train_job(props, None)),
    "RayCluster": ("ray.io", None, ray.cluster("spec")),
    "RayJob": ("ray.io", None, ray.ray_job),
    "RayService": ("ray.io", None, ray.cluster("spec", "rayClusterConfig")),
    "InferenceService": ("serving.kserve.io", frozenset({"v1beta1"}), kserve.inference_service),
    "LLMInferenceService": ("serving.kserve.io", frozenset({"v1alpha1", "v1alpha2"}), kserve.llm_inference_service),
    "ServingRuntime": ("serving.kserve.io", frozenset({"v1alpha1"}), kserve.serving_runtime),
    "ClusterServingRuntime": ("serving.kserve.io", frozenset({"v1alpha1"}), kserve.serving_runtime),
    # vllm-project/aibrix@v0.7.0:config/crd/orchestration/orchestration.aibrix.ai_stormservices.yaml (not in
    # shared/upstream): spec.template is a RoleSet template, each of its spec.roles[] has a PodTemplateSpec.
    "StormService": (
        "orchestration.aibrix.ai",
        None,
        pod_template_specs(("spec", "template", "spec", "roles", "[]", "template")),
    ),
    "VLLMRuntime": ("production-stack.vllm.ai", None, vllm_stack.vllm_runtime),
    "Workspace": ("kaito.sh", None, kaito.workspace),
    "DynamoGraphDeployment": ("nvidia.com", None, {"v1alpha1": dynamo.v1alpha1, "v1beta1": dynamo.V1BETA1}),
    "NIMService": ("apps.nvidia.com", None, nim.nim_service),
}

# Operator kinds named like another kind: (group, kind): (API versions, finder).
_NAMESAKES: dict[tuple[str, str], tuple[frozenset[str] | None, Finder]] = {
    # volcano-sh/volcano@v1.15.1:config/crd/volcano/bases/batch.volcano.sh_jobs.yaml (not in shared/upstream)
    ("batch.volcano.sh", "Job"): (None, pod_template_specs(("spec", "tasks", "[]", "template"))),
    ("ome.io", "ClusterServingRuntime"): (None, ome.runtime),
    ("ome.io", "ServingRuntime"): (None, ome.runtime),
    ("ome.io", "InferenceService"): (None, lambda props: ome.inference_service(props, None)),
}

# Kinds built over a runtime (``bases``): the finder given that runtime's props.
_OVER_BASE: dict[tuple[str, str], Callable[[Mapping[str, Any], Mapping[str, Any]], Iterator[Found]]] = {
    ("trainer.kubeflow.org", "TrainJob"): trainer.train_job,
    ("ome.io", "InferenceService"): ome.inference_service,
}

TEMPLATE_KINDS: frozenset[str] = frozenset(_KINDS)
"""Kinds whose pod templates the rules see (the operator kinds only in their API group, see ``template_group``)."""


def template_group(kind: str) -> str | None:
    """The API group a kind of ``TEMPLATE_KINDS`` must have; None for the built-in kinds (any group)."""
    return _KINDS[kind][0]


def templates_of(token: str, props: Mapping[str, Any], base: Mapping[str, Any] | None = None) -> list[Found]:
    """Every pod template of a resource (its type token and input properties); empty for other kinds. ``base`` is the
    runtime the resource is built over (``bases.find_base``), when it is at hand."""
    api = api_of(token)
    if api is None or not isinstance(props, Mapping):
        return []
    if (api[0], api[2]) in _NAMESAKES:
        versions, find = _NAMESAKES[api[0], api[2]]
        group: str | None = api[0]
    elif api[2] in _KINDS:
        group, versions, find = _KINDS[api[2]]
    else:
        return []
    if isinstance(find, Mapping):
        versions, find = frozenset(find), find.get(api[1])
    if (group is not None and api[0] != group) or (versions is not None and api[1] not in versions) or find is None:
        return []
    if base is not None and (api[0], api[2]) in _OVER_BASE:
        over = _OVER_BASE[api[0], api[2]]
        found = list(over(props, base))
    else:
        found = list(find(props))
    return [f for f in found if isinstance(f.spec, Mapping) or is_unknown(f.spec)]
