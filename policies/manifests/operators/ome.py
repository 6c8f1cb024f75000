"""OME's pods (ome.io/v1beta1, sgl-project/ome@v0.1.5): a ClusterServingRuntime's or ServingRuntime's engine,
decoder and router, and an InferenceService's, merged over its runtime's when that runtime is at hand.

From sgl-project/ome@v0.1.5:
- pkg/apis/ome/v1beta1/servingruntime_types.go: the runtime spec inlines a ServingRuntimePodSpec (containers,
  tolerations, hostNetwork...) with ``workers``, and has ``engineConfig``, ``decoderConfig`` and ``routerConfig``;
  inference_service.go: EngineSpec and DecoderSpec inline a PodSpec and ComponentExtensionSpec (labels,
  annotations), with ``runner`` (a container), ``leader`` and ``worker`` (a PodSpec and a runner each); RouterSpec
  has no leader or worker.
- pkg/controller/v1beta1/inferenceservice/utils/merging.go MergeEngineSpec, MergeDecoderSpec, MergeRouterSpec:
  the service's component is strategic-merged over the runtime's (the service wins), and a component the service
  leaves out is not deployed; utils/deployment.go DetermineEngineDeploymentMode: a leader or worker makes it
  multi-node.
- components/engine.go reconcilePodSpec / reconcileWorkerPodSpec and reconcilers/common/podspec_reconciler.go:
  multi-node, the leader pod is the leader's PodSpec (else the component's) and the worker pod the worker's, each
  with its runner merged into the container of the runner's name (appended when there is none); otherwise the
  component's own PodSpec and runner. The component's labels and annotations go on its pods.
- pkg/webhook/admission/pod/rdma_injector.go: a pod annotated ``rdma.ome.io/auto-inject: "true"`` gets /dev/infiniband
  from the host, and its container named by ``rdma.ome.io/container-name`` (default ``ome-container``) gets the
  profile's NCCL variables, IPC_LOCK and CAP_SYS_ADMIN, and ``privileged: true`` unless it sets privileged itself.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from aks_gpu_inference.policies.manifests.merge import merge
from aks_gpu_inference.policies.manifests.values import UNKNOWN, get, is_unknown, items
from aks_gpu_inference.policies.manifests.walk import Found, metadata_of

_COMPONENTS = {"engine": "engineConfig", "decoder": "decoderConfig", "router": "routerConfig"}
"""An InferenceService's components, with the runtime's key for each."""
_NOT_POD = {"runner", "leader", "worker", "labels", "annotations", "size", "acceleratorOverride", "config"}
_NOT_POD |= {"minReplicas", "maxReplicas", "scaleTarget", "scaleMetric", "containerConcurrency", "timeoutSeconds"}
_NOT_POD |= {"canaryTrafficPercent", "minAvailable", "maxUnavailable", "deploymentStrategy", "kedaConfig"}

AUTO_INJECT, CONTAINER_NAME = "rdma.ome.io/auto-inject", "rdma.ome.io/container-name"
_INJECTED_VOLUMES = [
    {"name": "dshm", "emptyDir": {"medium": "Memory"}},
    {"name": "devinf", "hostPath": {"path": "/dev/infiniband"}},
]
_INJECTED_MOUNTS = [{"name": "dshm", "mountPath": "/dev/shm"}, {"name": "devinf", "mountPath": "/dev/infiniband"}]
_INJECTED_ENV = {"NCCL_IB_HCA": "=mlx5_0,mlx5_1,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7,mlx5_8", "NCCL_IB_GID_INDEX": "3"}
"""Two of the oci-roce profile's variables: the HCAs it names select InfiniBand verbs."""


def _pod(holder: Mapping[str, Any], runner: Any, runner_path: str) -> tuple[dict[str, Any], dict[int, str]]:
    """The pod spec of a component (or its leader or worker) with its runner merged in by name."""
    spec = {key: value for key, value in holder.items() if key not in _NOT_POD}
    if not isinstance(runner, Mapping):
        return spec, {}
    containers = list(items(spec.get("containers")))
    at = next((i for i, c in enumerate(containers) if isinstance(c, Mapping) and c.get("name") == runner.get("name")), None)
    if at is None:
        containers.append(dict(runner))
        at = len(containers) - 1
    else:
        containers[at] = merge(containers[at], runner)
    return {**spec, "containers": containers}, {at: runner_path}


def _inject_rdma(spec: dict[str, Any], annotations: Any) -> dict[str, Any]:
    """The pod as OME's RDMA webhook leaves it (``rdma_injector.go`` InjectRDMA)."""
    if get(annotations, AUTO_INJECT) != "true":
        return spec
    target = get(annotations, CONTAINER_NAME) or "ome-container"
    containers = list(items(spec.get("containers")))
    at = next((i for i, c in enumerate(containers) if isinstance(c, Mapping) and c.get("name") == target), None)
    if at is None:
        return spec  # the webhook skips a pod without that container
    volumes = list(items(spec.get("volumes")))
    volumes += [v for v in _INJECTED_VOLUMES if v["name"] not in {get(o, "name") for o in volumes}]
    container = dict(containers[at])
    container["env"] = [*items(container.get("env")), *({"name": k, "value": v} for k, v in _INJECTED_ENV.items())]
    mounts = list(items(container.get("volumeMounts")))
    container["volumeMounts"] = mounts + [m for m in _INJECTED_MOUNTS if m["name"] not in {get(o, "name") for o in mounts}]
    context = dict(get(container, "securityContext", default={}) or {})
    added = list(items(get(context, "capabilities", "add")))
    context["capabilities"] = {
        **(get(context, "capabilities", default={}) or {}),
        "add": added + [c for c in ("IPC_LOCK", "CAP_SYS_ADMIN") if c not in added],
    }
    context.setdefault("privileged", True)
    container["securityContext"] = context
    containers[at] = container
    return {**spec, "volumes": volumes, "containers": containers}


def component(path: str, holder: Any, fragment: bool = False) -> Iterator[Found]:
    """The pods of one engine, decoder or router spec at ``path`` (ending in a dot)."""
    if is_unknown(holder):
        yield Found(path, {}, UNKNOWN)
    if not isinstance(holder, Mapping):
        return
    metadata = metadata_of(holder)
    parts = [("leader", holder.get("leader")), ("worker", holder.get("worker"))]
    if not any(isinstance(part, Mapping) for _, part in parts):
        parts = [("", holder)]
    for name, part in parts:
        if name == "leader" and not isinstance(part, Mapping):
            part, name = holder, ""  # no leader: the leader pod is the component's own
        if not isinstance(part, Mapping):
            continue
        where = f"{path}{name}." if name else path
        spec, moved = _pod(part, part.get("runner"), f"{where}runner")
        spec = _inject_rdma(spec, metadata.get("annotations"))
        yield Found(where, metadata, spec, moved, fragment=fragment)


def runtime(props: Mapping[str, Any]) -> Iterator[Found]:
    """A ClusterServingRuntime's or ServingRuntime's pods: its components, and the pod its spec inlines."""
    spec = get(props, "spec")
    for key in ("engineConfig", "decoderConfig", "routerConfig"):
        yield from component(f"spec.{key}.", get(spec, key))
    for steps in (("spec",), ("spec", "workers")):
        pod = get(props, *steps)
        if isinstance(pod, Mapping) and "containers" in pod:
            keep = {k: v for k, v in pod.items() if k in ("containers", "volumes", "nodeSelector", "affinity", "tolerations")}
            keep |= {
                k: v for k, v in pod.items() if k in ("imagePullSecrets", "schedulerName", "hostIPC", "dnsPolicy", "hostNetwork")
            }
            yield Found(".".join(steps) + ".", metadata_of(pod), keep)


def inference_service(props: Mapping[str, Any], runtime_props: Mapping[str, Any] | None = None) -> Iterator[Found]:
    """An InferenceService's pods: each component it names, merged over its runtime's when the runtime is given;
    without it the component is only part of a pod (a fragment)."""
    for key, runtime_key in _COMPONENTS.items():
        own = get(props, "spec", key)
        if own is None or is_unknown(own):
            yield from component(f"spec.{key}.", own)
            continue
        base = get(runtime_props, "spec", runtime_key) if runtime_props is not None else None
        merged = merge(base, own) if isinstance(base, Mapping) and isinstance(own, Mapping) else own
        yield from component(f"spec.{key}.", merged, fragment=runtime_props is None)
