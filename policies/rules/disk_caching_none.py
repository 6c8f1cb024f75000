"""Azure Disk storage classes set ``cachingMode: None``.

Seed 002 gotcha 4: host caching on data disks of N-series nodes can lock up I/O while CUDA
kernels do direct DMA; the Azure Disk CSI driver defaults to ReadOnly caching, so the parameter
must be explicit. Unknown values are skipped.
"""

from __future__ import annotations

from collections.abc import Mapping

from aks_gpu_inference.policies.manifests import StackIndex, Violation, get, is_unknown, kube_kind
from aks_gpu_inference.policies.rules._rule import Rule

NAME = "azure-disk-caching-none"
PROVISIONERS = ("disk.csi.azure.com", "kubernetes.io/azure-disk")


def _check(index: StackIndex, _config: dict):
    for r in index.resources:
        if kube_kind(r) != "StorageClass" or get(r.props, "provisioner") not in PROVISIONERS:
            continue
        parameters = get(r.props, "parameters", default={})
        if is_unknown(parameters):
            continue
        if not isinstance(parameters, Mapping):
            parameters = {}
        caching = next((v for k, v in parameters.items() if str(k).lower() == "cachingmode"), None)
        if caching != "None" and not is_unknown(caching):
            shown = "not set (the driver defaults to ReadOnly)" if caching is None else repr(caching)
            yield Violation(
                NAME, r, f"{r.label}: parameters.cachingMode is {shown}; set cachingMode: None for disks on GPU nodes"
            )


RULE = Rule(
    name=NAME,
    description="Azure Disk storage classes used by GPU workloads set cachingMode: None.",
    why="Azure Disk StorageClasses set `cachingMode: None` (the CSI default is ReadOnly; host caching and GPU DMA lock up I/O, seed 002).",
    fix="add the parameter",
    enforcement="advisory",
    scope="resource",
    unknowns="skips",
    config={},
    check=_check,
)
