"""Where each Kubernetes kind keeps its pod templates: the built-in workloads and the operator kinds GPU
stacks run (Kubeflow, Volcano, KubeRay, KServe, LWS, KAITO, AIBrix, vLLM production-stack, NVIDIA Dynamo);
and Karpenter NodePools, which are pools, not pods.

Pure functions over plain mappings with engine wire names. ``templates_of`` gives one ``Found`` per pod
template: a readable location (``spec.workerGroupSpecs[0].template.spec.``), the pod metadata and the
pod spec, ``UNKNOWN`` when it cannot be known during preview (a wildcard over an unknown list or map
shows as ``[*]`` / ``*``), so that fail-closed rules can say so. Operators that keep a container outside
``spec.containers`` (an InferenceService's ``predictor.model``, a Dynamo service's ``mainContainer``)
have it appended to ``containers``, its real location in ``moved``; KAITO's edits to the pod (added
tolerations, replaced affinity) are applied, and the pod a VLLMRuntime's operator builds is built here, so
the rules see the pod that will run.

Field paths come from the CRDs of the pinned releases in ``shared/upstream/crds`` unless noted:
``kubeflow.org_mpijobs`` (mpi-operator v0.8.0), ``ray.io_{rayclusters,rayjobs,rayservices}`` (kuberay
v1.7.0), ``serving.kserve.io_inferenceservices`` (kserve v0.20.0), ``leaderworkerset.x-k8s.io_*`` and
``disaggregatedset.x-k8s.io_*`` (lws v0.10.0), ``kaito.sh_workspaces`` (kaito v0.6.0).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple

from aks_gpu_inference.components.core.labels import NVIDIA_GPU
from aks_gpu_inference.policies.manifests.values import UNKNOWN, get, is_unknown, items, looks_gpu


class Found(NamedTuple):
    path: str
    """Where the pod spec is, ending in a dot: ``spec.mpiReplicaSpecs.Worker.template.spec.``."""
    metadata: Any
    spec: Any
    """The pod spec (a mapping), or ``UNKNOWN`` during preview."""
    moved: Mapping[int, str] = {}
    """Indexes of ``spec["containers"]`` that the resource keeps elsewhere, with their real locations."""


Finder = Callable[[Mapping[str, Any]], Iterator[Found]]

_TOKEN = re.compile(r"kubernetes:(?:([\w.-]+)/)?([\w.-]+):(\w+)")


def api_of(token: str) -> tuple[str, str, str] | None:
    """(group, version, kind) of a ``kubernetes:<group>/<version>:<Kind>`` type token; core is ``core``."""
    match = _TOKEN.fullmatch(token)
    if match is None or token.startswith("kubernetes:helm.sh/"):
        return None
    return match[1] or "core", match[2], match[3]


def _walk(obj: Any, steps: tuple[str, ...], where: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """(location parts, value) of every match of ``steps``: ``*`` is every value of a map, ``[]`` every item of a list."""
    if not steps:
        yield where, obj
        return
    step, rest = steps[0], steps[1:]
    if step in ("*", "[]") and is_unknown(obj):
        yield from _walk(UNKNOWN, rest, (*where, "*" if step == "*" else "[*]"))
    elif step == "[]":
        for index, item in enumerate(items(obj)):
            yield from _walk(item, rest, (*where, f"[{index}]"))
    elif step == "*":
        for key, value in obj.items() if isinstance(obj, Mapping) else ():
            yield from _walk(value, rest, (*where, str(key)))
    else:
        yield from _walk(get(obj, step), rest, (*where, step))


def _dotted(parts: tuple[str, ...]) -> str:
    """``("spec", "workerGroupSpecs", "[0]", "template", "spec")`` as ``spec.workerGroupSpecs[0].template.spec.``."""
    text = ""
    for part in parts:
        text += part if part.startswith("[") or not text else "." + part
    return text + "." if text else ""


def _pod_template_specs(*paths: tuple[str, ...]) -> Finder:
    """Pods from PodTemplateSpecs (``metadata`` + ``spec``) at ``paths``."""

    def find(props: Mapping[str, Any]) -> Iterator[Found]:
        for steps in paths:
            for where, template in _walk(props, steps):
                yield Found(_dotted((*where, "spec")), get(template, "metadata", default={}) or {}, get(template, "spec"))

    return find


def _with_container(spec: Mapping[str, Any], extra: list[tuple[str, Any]]) -> tuple[dict[str, Any], dict[int, str]]:
    """``spec`` with containers kept elsewhere (location, container) appended to ``containers``."""
    own = spec.get("containers")
    if not extra or is_unknown(own):
        return dict(spec), {}
    return {**spec, "containers": [*items(own), *(c for _, c in extra)]}, {
        len(items(own)) + i: where for i, (where, _) in enumerate(extra)
    }


# ---- KServe InferenceService v1beta1 ----------------------------------------------------------

# Keys of a component that hold one container spec each (serving.kserve.io_inferenceservices, kserve v0.20.0).
_KSERVE_CONTAINERS = {
    "predictor": (
        "model",
        "huggingface",
        "lightgbm",
        "onnx",
        "paddle",
        "pmml",
        "pytorch",
        "sklearn",
        "tensorflow",
        "triton",
        "xgboost",
    ),
    "transformer": (),
    "explainer": ("art",),
}
KSERVE_CONTAINER = "kserve-container"
"""The name KServe gives a framework container (``constants.InferenceServiceContainerName``)."""


def _inference_service(props: Mapping[str, Any]) -> Iterator[Found]:
    """Each component (``spec.predictor``, ``spec.transformer``, ``spec.explainer``, ``spec.canary[i].predictor``)
    is itself a pod spec; ``spec.predictor.workerSpec`` is the pod spec of multi-node workers."""
    components = [(("spec", name), name) for name in _KSERVE_CONTAINERS]
    components.append((("spec", "canary", "[]", "predictor"), "predictor"))
    for steps, role in components:
        for where, component in _walk(props, steps):
            path = _dotted(where)
            if is_unknown(component):
                yield Found(path, {}, UNKNOWN)
            if not isinstance(component, Mapping):
                continue
            extra = [
                (f"{path}{key}", {"name": KSERVE_CONTAINER, **c} if isinstance(c, Mapping) else c)
                for key in _KSERVE_CONTAINERS[role]
                if (c := component.get(key)) is not None
            ]
            spec, moved = _with_container(component, extra)
            metadata = {key: component[key] for key in ("labels", "annotations") if key in component}
            yield Found(path, metadata, spec, moved)
            if role == "predictor" and component.get("workerSpec") is not None:
                yield Found(f"{path}workerSpec.", {}, component["workerSpec"])


# ---- shorthand resources: {cpu, memory, gpu, gpuType} -----------------------------------------


def _shorthand_resources(item: Mapping[str, Any]) -> dict[str, Any]:
    """A resource list from an operator's shorthand: ``gpu`` becomes ``gpuType`` (``nvidia.com/gpu`` when
    unset or unknown) as both operators that use it do (Dynamo's ``getGPUResourceName``, production-stack's
    ``deploymentForVLLMRuntime``); an empty ``gpu`` asks for none. Dynamo's ``custom`` entries are added as they are."""
    found = {name: item[name] for name in ("cpu", "memory") if item.get(name) not in (None, "")}
    if item.get("gpu") not in (None, ""):
        gpu_type = item.get("gpuType")
        found[gpu_type if isinstance(gpu_type, str) and gpu_type else NVIDIA_GPU] = item["gpu"]
    custom = item.get("custom")
    return {**found, **(custom if isinstance(custom, Mapping) else {})}


# ---- NVIDIA Dynamo DynamoGraphDeployment v1beta1 and v1alpha1 -----------------------------------
# From ai-dynamo/dynamo deploy/operator, at index commits with no release tag (no tagged copy can be had here,
# see shared/upstream/DYNAMO.md): api/v1alpha1/common.go (commit 015d780b) has ExtraPodSpec inline a PodSpec
# plus mainContainer, and ResourceItem cpu, memory, gpu, gpuType, custom; internal/controller_common/resource.go
# (015d780b) GetResourcesConfig turns limits.gpu and requests.gpu into getGPUResourceName: gpuType, else
# consts.KubeResourceGPUNvidia (nvidia.com/gpu). Another index copy of that file (9b67cf4f) drops requests.gpu;
# reading both asks for the toleration whenever either version would schedule GPUs.


def _dynamo_main(container: Any, resources: Any) -> Any:
    """The main container with the service's ``resources`` applied (here they win over the container's own
    ``resources``; the operator's merge order is not checked)."""
    if is_unknown(container):
        return UNKNOWN
    main = dict(container) if isinstance(container, Mapping) else {}
    if resources is None:
        return main
    if is_unknown(resources):
        return {**main, "resources": UNKNOWN}
    own = get(main, "resources", default={})
    merged = dict(own) if isinstance(own, Mapping) else {}
    for section in ("requests", "limits"):
        item, before = get(resources, section), get(merged, section, default={})
        if isinstance(item, Mapping):
            merged[section] = {**(before if isinstance(before, Mapping) else {}), **_shorthand_resources(item)}
    if isinstance(resources, Mapping) and "claims" in resources:
        merged["claims"] = resources["claims"]
    return {**main, "resources": merged}


# v1beta1 (the 1.6.1 operator's storage version): one pod per ``spec.components[]``, its ``podTemplate``
# (the ai-dynamo 1.6.1 wheel's DGD templates; the operator keeps the template's spec and labels).
_DYNAMO_V1BETA1 = _pod_template_specs(("spec", "components", "[]", "podTemplate"))


def _dynamo_v1alpha1(props: Mapping[str, Any]) -> Iterator[Found]:
    """v1alpha1: one pod per ``spec.services.<name>``: ``extraPodSpec`` as the pod spec, plus its ``mainContainer``."""
    for where, service in _walk(props, ("spec", "services", "*")):
        path = _dotted((*where, "extraPodSpec"))
        extra = get(service, "extraPodSpec", default={}) or {}
        if is_unknown(extra):
            yield Found(path, {}, UNKNOWN)
        if not isinstance(service, Mapping) or not isinstance(extra, Mapping):
            continue
        pod = {key: value for key, value in extra.items() if key != "mainContainer"}
        main = _dynamo_main(extra.get("mainContainer"), service.get("resources"))
        spec, moved = _with_container(pod, [(f"{path}mainContainer", main)])
        labels = {}
        for holder in (service, get(service, "extraPodMetadata")):
            if isinstance(get(holder, "labels"), Mapping):
                labels.update(holder["labels"])
        yield Found(path, {"labels": labels} if labels else {}, spec, moved)


# ---- KAITO Workspace --------------------------------------------------------------------------

# kaito v0.6.0 pkg/workspace/manifests/manifests.go GenerateDeploymentManifestWithPodTemplate: the
# template's tolerations get these appended (pkg/workspace/inference/preset_inferences.go) and its
# affinity is replaced by a node affinity on resource.labelSelector.matchLabels.
KAITO_TOLERATIONS = (
    {"effect": "NoSchedule", "operator": "Exists", "key": NVIDIA_GPU},
    {"effect": "NoSchedule", "value": "gpu", "key": "sku", "operator": "Equal"},
)


def _workspace(props: Mapping[str, Any]) -> Iterator[Found]:
    """``inference.template`` (a PodTemplateSpec, top level, not under spec) when present; preset
    workspaces have no template and their pods are KAITO's own."""
    for found in _pod_template_specs(("inference", "template"))(props):
        spec = found.spec
        if isinstance(spec, Mapping):
            tolerations = spec.get("tolerations")
            match = get(props, "resource", "labelSelector", "matchLabels")
            terms = UNKNOWN
            if not is_unknown(match):
                expressions = [{"key": k, "operator": "In", "values": [v]} for k, v in (match or {}).items()]
                terms = {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": expressions}]}
                }
            spec = {
                **spec,
                "tolerations": tolerations if is_unknown(tolerations) else [*items(tolerations), *map(dict, KAITO_TOLERATIONS)],
                "affinity": {"nodeAffinity": terms},
            }
        yield found._replace(spec=spec)


# ---- KServe LLMInferenceService v1alpha1 and v1alpha2 -------------------------------------------
# kserve/kserve@v0.20.0:config/crd/full/llmisvc/serving.kserve.io_llminferenceservices.yaml and
# pkg/apis/serving/v1alpha2/llm_inference_service_types.go WorkloadSpec: ``template`` (the main, head or decode
# pod) and ``worker`` (multi-node workers) are PodSpecs, ``labels``/``annotations`` go on the workload's pods; the
# spec inlines one WorkloadSpec and ``prefill`` is another. Fields merged in from ``baseRefs``
# (LLMInferenceServiceConfig objects) are not seen: a toleration kept only there reads as missing.

_LLMISVC_WORKLOADS = (("spec",), ("spec", "prefill"))


def _llm_inference_service(props: Mapping[str, Any]) -> Iterator[Found]:
    for steps in _LLMISVC_WORKLOADS:
        workload = get(props, *steps)
        metadata = {k: workload[k] for k in ("labels", "annotations") if k in workload} if isinstance(workload, Mapping) else {}
        for key in ("template", "worker"):
            spec = get(workload, key)
            if spec is not None:
                yield Found(_dotted((*steps, key)), metadata, spec)


# ---- vLLM production-stack VLLMRuntime v1alpha1 ---------------------------------------------------
# vllm-project/production-stack@vllm-stack-0.1.12: operator/api/v1alpha1/{vllmruntime_types.go,common.go}
# (DeploymentConfig toleration, nodeSelectorTerms, runtimeClass, resources {cpu, memory, gpu, gpuType}, image,
# podAnnotations, sidecarConfig) and operator/internal/controller/vllmruntime_controller.go, whose
# deploymentForVLLMRuntime builds the one pod: a "vllm" container whose requests and limits get gpuType (default
# nvidia.com/gpu) = gpu (lines 640-649), tolerations = toleration (802), a required node affinity on
# nodeSelectorTerms (743-750), pod labels app=<name> (392) and podAnnotations, the sidecar when enabled
# (buildSidecarContainer, GPUs likewise at 891-898; the 0 GPUs it sets when gpu is empty ask for none and are left
# out here).


def _vllm_container(name: Any, config: Any) -> Any:
    """A container as the operator builds it from ``image`` and ``resources``; UNKNOWN when ``config`` is."""
    if is_unknown(config):
        return UNKNOWN
    image = get(config, "image", default={})
    parts = [get(image, "registry", default=""), get(image, "name", default="")]
    resources = get(config, "resources", default={})
    container: dict[str, Any] = {"name": name}
    if any(map(is_unknown, parts)):
        container["image"] = UNKNOWN
    elif all(isinstance(part, str) for part in parts) and any(parts):
        container["image"] = "/".join(parts)
    if is_unknown(resources):
        container["resources"] = UNKNOWN
    elif isinstance(resources, Mapping) and (found := _shorthand_resources(resources)):
        container["resources"] = {"requests": found, "limits": dict(found)}
    return container


def _vllm_runtime(props: Mapping[str, Any]) -> Iterator[Found]:
    path = "spec.deploymentConfig."
    config = get(props, "spec", "deploymentConfig")
    if is_unknown(config):
        yield Found(path, {}, UNKNOWN)
    if not isinstance(config, Mapping):
        return
    spec: dict[str, Any] = {}
    if (tolerations := config.get("toleration")) is not None:
        spec["tolerations"] = tolerations
    if (terms := config.get("nodeSelectorTerms")) is not None:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}
    if config.get("runtimeClass"):
        spec["runtimeClassName"] = config["runtimeClass"]
    extra = [(path.rstrip("."), _vllm_container("vllm", config))]
    sidecar = config.get("sidecarConfig")
    if is_unknown(sidecar) or get(sidecar, "enabled") is True or is_unknown(get(sidecar, "enabled")):
        extra.append((f"{path}sidecarConfig", _vllm_container(get(sidecar, "name", default="sidecar"), sidecar)))
    spec, moved = _with_container({**spec, "containers": []}, extra)
    name, annotations = get(props, "metadata", "name"), config.get("podAnnotations")
    metadata = {"labels": {"app": name}} if isinstance(name, str) else {}
    if annotations is not None:
        metadata["annotations"] = annotations
    yield Found(path, metadata, spec, moved)


# ---- read elsewhere, or not at all ------------------------------------------------------------
# Kinds that run GPU pods but stay "unknown kind" warnings in the scan, because one object does not say what
# its pods are:
# - Kubeflow Trainer TrainJob (kubeflow/trainer@v2.3.0:pkg/apis/trainer/v1alpha1/trainjob_types.go,
#   pkg/runtime/core/trainingruntime.go): its pods are its runtimeRef's (Cluster)TrainingRuntime template, another
#   object and often a cluster-wide one, strategic-merged with runtimePatches, with trainer.resourcesPerNode put on
#   the trainer job's "node" container; the tolerations are the runtime's unless a patch replaces them. The
#   runtimes themselves are read below.
# - Argo Workflow (argoproj/argo-workflows@v4.1.2:workflow/controller/workflowpod.go): a container, script or
#   containerSet template's tolerations are its own, else those of the steps/DAG template it is called from (one
#   template can run under several), else spec.tolerations (lines 1374-1379); podSpecPatch strings at both levels
#   can change tolerations and resources, and templateRef / workflowTemplateRef take templates from other objects.


# ---- the table --------------------------------------------------------------------------------

_RAY = (("headGroupSpec", "template"), ("workerGroupSpecs", "[]", "template"))
_LWS = ("leaderWorkerTemplate",)

# kind: (API group, or None for any; API versions, or None for any; finder, or a finder per API version)
_KINDS: dict[str, tuple[str | None, frozenset[str] | None, Finder | Mapping[str, Finder]]] = {
    "Pod": (None, None, _pod_template_specs(())),
    "Deployment": (None, None, _pod_template_specs(("spec", "template"))),
    "StatefulSet": (None, None, _pod_template_specs(("spec", "template"))),
    "DaemonSet": (None, None, _pod_template_specs(("spec", "template"))),
    "ReplicaSet": (None, None, _pod_template_specs(("spec", "template"))),
    "Job": (None, None, _pod_template_specs(("spec", "template"))),
    "CronJob": (None, None, _pod_template_specs(("spec", "jobTemplate", "spec", "template"))),
    "LeaderWorkerSet": (None, None, _pod_template_specs(("spec", *_LWS, "leaderTemplate"), ("spec", *_LWS, "workerTemplate"))),
    "DisaggregatedSet": (
        "disaggregatedset.x-k8s.io",
        None,
        _pod_template_specs(*(("spec", "roles", "[]", "spec", *_LWS, t) for t in ("leaderTemplate", "workerTemplate"))),
    ),
    "MPIJob": ("kubeflow.org", None, _pod_template_specs(("spec", "mpiReplicaSpecs", "*", "template"))),
    # kubeflow/training-operator@v1.9.0:manifests/base/crds/kubeflow.org_pytorchjobs.yaml (not in shared/upstream)
    "PyTorchJob": ("kubeflow.org", None, _pod_template_specs(("spec", "pytorchReplicaSpecs", "*", "template"))),
    # kubeflow/training-operator@v1.9.0:manifests/base/crds/kubeflow.org_tfjobs.yaml (not in shared/upstream)
    "TFJob": ("kubeflow.org", None, _pod_template_specs(("spec", "tfReplicaSpecs", "*", "template"))),
    # kubeflow/trainer@v2.3.0:manifests/base/crds/trainer.kubeflow.org_{,cluster}trainingruntimes.yaml (not in
    # shared/upstream). A TrainJob itself carries no pod template, only partial patches of its runtime's.
    **{
        kind: (
            "trainer.kubeflow.org",
            None,
            _pod_template_specs(("spec", "template", "spec", "replicatedJobs", "[]", "template", "spec", "template")),
        )
        for kind in ("TrainingRuntime", "ClusterTrainingRuntime")
    },
    "RayCluster": ("ray.io", None, _pod_template_specs(*(("spec", *p) for p in _RAY))),
    "RayJob": (
        "ray.io",
        None,
        _pod_template_specs(*(("spec", "rayClusterSpec", *p) for p in _RAY), ("spec", "submitterPodTemplate")),
    ),
    "RayService": ("ray.io", None, _pod_template_specs(*(("spec", "rayClusterConfig", *p) for p in _RAY))),
    "InferenceService": ("serving.kserve.io", frozenset({"v1beta1"}), _inference_service),
    "LLMInferenceService": ("serving.kserve.io", frozenset({"v1alpha1", "v1alpha2"}), _llm_inference_service),
    # vllm-project/aibrix@v0.7.0:config/crd/orchestration/orchestration.aibrix.ai_stormservices.yaml (not in
    # shared/upstream): spec.template is a RoleSet template, each of its spec.roles[] has a PodTemplateSpec.
    "StormService": (
        "orchestration.aibrix.ai",
        None,
        _pod_template_specs(("spec", "template", "spec", "roles", "[]", "template")),
    ),
    "VLLMRuntime": ("production-stack.vllm.ai", None, _vllm_runtime),
    "Workspace": ("kaito.sh", None, _workspace),
    "DynamoGraphDeployment": ("nvidia.com", None, {"v1alpha1": _dynamo_v1alpha1, "v1beta1": _DYNAMO_V1BETA1}),
}

# Operator kinds named like a built-in kind (which matches in any group): (group, kind): (API versions, finder).
_NAMESAKES: dict[tuple[str, str], tuple[frozenset[str] | None, Finder]] = {
    # volcano-sh/volcano@v1.15.1:config/crd/volcano/bases/batch.volcano.sh_jobs.yaml (not in shared/upstream)
    ("batch.volcano.sh", "Job"): (None, _pod_template_specs(("spec", "tasks", "[]", "template"))),
}

TEMPLATE_KINDS: frozenset[str] = frozenset(_KINDS)
"""Kinds whose pod templates the rules see (the operator kinds only in their API group, see ``template_group``)."""


def template_group(kind: str) -> str | None:
    """The API group a kind of ``TEMPLATE_KINDS`` must have; None for the built-in kinds (any group)."""
    return _KINDS[kind][0]


def templates_of(token: str, props: Mapping[str, Any]) -> list[Found]:
    """Every pod template of a resource (its type token and input properties); empty for other kinds."""
    api = api_of(token)
    if api is None or api[2] not in _KINDS or not isinstance(props, Mapping):
        return []
    group, versions, find = _KINDS[api[2]]
    if (api[0], api[2]) in _NAMESAKES:
        group, (versions, find) = api[0], _NAMESAKES[api[0], api[2]]
    if isinstance(find, Mapping):
        versions, find = frozenset(find), find.get(api[1])
    if (group is not None and api[0] != group) or (versions is not None and api[1] not in versions):
        return []
    return [found for found in find(props) if isinstance(found.spec, Mapping) or is_unknown(found.spec)]


# ---- Karpenter / AKS node auto-provisioning NodePool (karpenter.sh/v1) ------------------------
# Azure/karpenter-provider-azure@v1.14.2: pkg/apis/crds/karpenter.sh_nodepools.yaml (spec.template.spec.taints,
# .requirements) and pkg/apis/v1beta1/labels.go (the karpenter.azure.com/sku-* labels; sku-family is N for GPU).

GPU_REQUIREMENT_KEYS = ("karpenter.azure.com/sku-gpu-name", "karpenter.azure.com/sku-gpu-manufacturer")
SIZE_KEYS = ("karpenter.azure.com/sku-name", "node.kubernetes.io/instance-type")


def is_nodepool(token: str) -> bool:
    api = api_of(token)
    return api is not None and api[0] == "karpenter.sh" and api[2] == "NodePool"


def nodepool_requirements(resource: Any) -> Any:
    """``spec.template.spec.requirements`` of a NodePool (UNKNOWN during preview); None for other resources."""
    return get(resource.props, "spec", "template", "spec", "requirements", default=[]) if is_nodepool(resource.type) else None


def nodepool_taints(resource: Any) -> Any:
    """A NodePool's ``spec.template.spec.taints`` as ``key=value:Effect`` strings, like an AKS pool's
    ``nodeTaints``; UNKNOWN (the list) or UNKNOWN entries during preview; None for other resources."""
    if not is_nodepool(resource.type):
        return None
    taints = get(resource.props, "spec", "template", "spec", "taints", default=[])
    if is_unknown(taints):
        return UNKNOWN
    shown = []
    for taint in items(taints):
        parts = [get(taint, name, default="") for name in ("key", "value", "effect")]
        if is_unknown(taint) or any(map(is_unknown, parts)):
            shown.append(UNKNOWN)
        else:
            key, value, effect = (str(p) for p in parts)
            shown.append(f"{key}={value}:{effect}" if value else f"{key}:{effect}")
    return shown


def nodepool_gpu_selection(resource: Any) -> str | None:
    """The requirement by which a NodePool selects GPU VM sizes (``karpenter.azure.com/sku-family In [N]``),
    or None: not a NodePool, no such requirement, or requirements unknown during preview (skipped)."""
    for requirement in items(nodepool_requirements(resource)):
        key, operator, values = (get(requirement, name) for name in ("key", "operator", "values"))
        values = [v for v in items(values) if isinstance(v, str)]
        gpu = (
            (key in GPU_REQUIREMENT_KEYS and operator in ("In", "Exists"))
            or (key == "karpenter.azure.com/sku-family" and operator == "In" and "N" in values)
            or (key in SIZE_KEYS and operator == "In" and any(looks_gpu(v) for v in values))
            or (key == "karpenter.azure.com/sku-gpu-count" and _counts_gpus(operator, values))
        )
        if gpu:
            return f"{key} {operator}" + (f" {values}" if values else "")
    return None


def _counts_gpus(operator: Any, values: list[str]) -> bool:
    numbers = [int(v) for v in values if v.isdigit()]
    return bool(numbers) and (
        (operator == "Gt") or (operator == "Gte" and min(numbers) >= 1) or (operator == "In" and all(n > 0 for n in numbers))
    )
