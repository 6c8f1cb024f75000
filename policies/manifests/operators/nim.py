"""NVIDIA NIM Operator NIMService pods (apps.nvidia.com/v1alpha1), as its operator builds them.

From NVIDIA/k8s-nim-operator@v3.1.2:
- api/apps/v1alpha1/nimservice_types.go: GetDeploymentParams (one pod: container ``<name>-ctr`` of
  image.repository:image.tag with command, args, env and resources; tolerations, nodeSelector, affinity,
  runtimeClassName; spec.annotations on the pod, GetNIMServiceAnnotations) and GetLWSParams (multi-node when
  multiNode.parallelism.pipeline > 1, IsMultiNode: a LeaderWorkerSet whose leader ``nim-leader`` and workers
  ``nim-worker`` get the same image, resources, tolerations and nodeSelector, but no affinity); init and sidecar
  containers from spec.initContainers and spec.sidecarContainers (GetInitContainers, GetSidecarContainers).
- internal/controller/platform/standalone/nimservice.go addGPUResources: without draResources and without a GPU in
  spec.resources, the operator requests nvidia.com/gpu itself, multiNode.parallelism.tensor of them per pod when
  multi-node; internal/shared/resourceclaims.go: each draResources entry becomes a pod claim every main container
  consumes (UpdateContainerResourceClaims).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from aks_gpu_inference.components.core.labels import GPU_DEVICE_CLASS, GPU_DEVICE_CLASSES, is_gpu_resource
from aks_gpu_inference.policies.manifests.values import get, is_unknown, items
from aks_gpu_inference.policies.manifests.walk import Found

_POD_FIELDS = ("tolerations", "nodeSelector", "runtimeClassName")
"""The spec fields the operator copies onto the pod as they are."""


def _image(image: Any) -> Any:
    repository, tag = get(image, "repository"), get(image, "tag")
    if is_unknown(repository) or is_unknown(tag):
        return repository if is_unknown(repository) else tag
    return f"{repository}:{tag}" if isinstance(repository, str) and isinstance(tag, str) else repository


def _extra_containers(spec: Any, key: str) -> list[dict[str, Any]]:
    return [
        {**{k: c[k] for k in ("name", "command", "args", "env") if k in c}, "image": _image(c.get("image"))}
        for c in items(get(spec, key))
        if isinstance(c, Mapping)
    ]


def _claims(spec: Any) -> tuple[list[dict[str, Any]], tuple[str, ...]]:
    """Pod claims of ``draResources`` that name a claim or template, and the device classes of those it creates."""
    claims, created = [], []
    for index, resource in enumerate(items(get(spec, "draResources"))):
        for key in ("resourceClaimName", "resourceClaimTemplateName"):
            if isinstance(get(resource, key), str):
                claims.append({"name": f"draResources[{index}]", key: resource[key]})
        for device in items(get(resource, "claimCreationSpec", "devices")):
            device_class = get(device, "deviceClassName")  # api/apps/v1alpha1/dra_types.go: default gpu.nvidia.com
            created.append(device_class if isinstance(device_class, str) else GPU_DEVICE_CLASS)
    return claims, tuple(created)


def nim_service(props: Mapping[str, Any]) -> Iterator[Found]:
    spec = get(props, "spec")
    if not isinstance(spec, Mapping):
        return
    name = get(props, "metadata", "name", default="nimservice")
    claims, created = _claims(spec)
    resources = spec.get("resources")
    container: dict[str, Any] = {"image": _image(spec.get("image"))}
    container |= {k: spec[k] for k in ("command", "args", "env") if k in spec}
    if resources is not None:
        container["resources"] = resources
    if claims:
        container["resources"] = {
            **(get(container, "resources", default={}) or {}),
            "claims": [{"name": c["name"]} for c in claims],
        }
    pod: dict[str, Any] = {key: spec[key] for key in _POD_FIELDS if key in spec}
    if claims:
        pod["resourceClaims"] = claims
    metadata = {"annotations": spec["annotations"]} if "annotations" in spec else {}
    multi_node = get(spec, "multiNode")
    pipeline = get(multi_node, "parallelism", "pipeline")
    gpus = _operator_gpus(spec, resources, multi_node, created)
    init, sidecars = _extra_containers(spec, "initContainers"), _extra_containers(spec, "sidecarContainers")
    if isinstance(pipeline, int) and pipeline > 1:
        for role in ("leader", "worker"):
            containers = [{"name": f"nim-{role}", **container}, *sidecars]
            yield Found(
                f"spec.{role}.", metadata, {**pod, "initContainers": init, "containers": containers}, {0: "spec"}, gpu_fields=gpus
            )
        return
    if "affinity" in spec:
        pod["affinity"] = spec["affinity"]
    containers = [{"name": f"{name}-ctr", **container}, *sidecars]
    yield Found("spec.", metadata, {**pod, "initContainers": init, "containers": containers}, {0: "spec"}, gpu_fields=gpus)


def _operator_gpus(spec: Mapping[str, Any], resources: Any, multi_node: Any, created: tuple[str, ...]) -> tuple[str, ...]:
    """GPUs the operator asks for besides spec.resources: nvidia.com/gpu when none is there and no DRA resource,
    and the device classes of the claims it creates."""
    sections = [get(resources, section) for section in ("requests", "limits")]
    requested = [n for section in sections if isinstance(section, Mapping) for n in section if is_gpu_resource(n)]
    found = [f"draResources claimCreationSpec {c}" for c in created if c in GPU_DEVICE_CLASSES]
    tensor = get(multi_node, "parallelism", "tensor")
    if not requested and not items(spec.get("draResources")) and isinstance(tensor, int) and tensor > 0:
        found.append(f"multiNode.parallelism.tensor: {tensor} (nvidia.com/gpu per pod)")
    return tuple(found)
