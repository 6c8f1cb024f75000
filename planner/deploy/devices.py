"""What each node pool advertises: the GPU (or MIG) resources of the NVIDIA device plugin or GPU operator that
would run there, or of the device plugin AKS itself runs on a pool with the managed GPU experience, as the
scheduling checks need them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aks_gpu_inference.planner.deploy.model import DeployModel
from aks_gpu_inference.planner.deploy.scheduling import selector_problems
from aks_gpu_inference.policies.manifests import items

DEVICE_PLUGIN_IMAGES = ("nvcr.io/nvidia/k8s-device-plugin",)
"""Images of the NVIDIA device plugin, which advertises ``nvidia.com/gpu`` or MIG slices where it runs."""
GPU_OPERATOR_IMAGES = ("nvcr.io/nvidia/gpu-operator",)


def advertise(model: DeployModel) -> None:
    """Fill each pool's extended resources from the device plugins that would run on it."""
    operator = any(_image_in(spec, GPU_OPERATOR_IMAGES) for _obj, spec in _specs(model))
    plugin_specs = [spec for obj, spec in _specs(model) if obj.kind == "DaemonSet" and _image_in(spec, DEVICE_PLUGIN_IMAGES)]
    for pool in model.pools:
        sku = pool.sku
        if sku is None or sku.gpu_vendor != "nvidia":
            continue
        served = pool.aks_managed_gpus or operator or any(not selector_problems(spec, pool) for spec in plugin_specs)
        if served:
            resource, per_node = sku.gpu_resource(pool.mig_profile)
            pool.extended[resource] = per_node


def _specs(model: DeployModel):
    for obj, template in model.pods():
        yield obj, template.spec


def _image_in(spec: Mapping[str, Any], prefixes: tuple[str, ...]) -> bool:
    return any(
        str(c.get("image", "")).startswith(prefixes)
        for list_name in ("containers", "initContainers")
        for c in items(spec.get(list_name))
        if isinstance(c, Mapping)
    )
