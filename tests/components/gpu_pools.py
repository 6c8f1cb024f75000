"""GPU pool facts as ``GpuNodePool`` derives them from its args, without the Pulumi engine: the
input of components.gpu's pure validators and builders (``components.gpu.pools.GpuPool``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aks_gpu_inference.components import GpuNodePoolArgs
from aks_gpu_inference.components.azure import managed_gpu
from aks_gpu_inference.components.core import catalog
from aks_gpu_inference.components.core.catalog import GpuSku
from aks_gpu_inference.components.core.labels import AGENTPOOL_LABEL

H100 = "Standard_ND96isr_H100_v5"
H200 = "Standard_ND96isr_H200_v5"
A100 = "Standard_NC24ads_A100_v4"
MI300X = "Standard_ND96isr_MI300X_v5"


@dataclass(frozen=True)
class PoolFacts:
    pool_name: str
    sku: GpuSku
    driver: str
    gpu_resource_name: str
    gpus_per_node: int
    max_nodes: int
    rdma_capable: bool
    node_selector: dict[str, str]
    tolerations: list[dict[str, str]]
    gpu_management: str = "unmanaged"
    interconnect: Any = None


def pool_facts(name: str = "h100", vm_size: str = H100, **args) -> PoolFacts:
    """The facts of a pool ``GpuNodePool(name, {"name": name, "vm_size": vm_size, **args})`` would expose."""
    pool = GpuNodePoolArgs(name=name, vm_size=vm_size, **args)
    sku = catalog.get_sku(vm_size)
    resource, per_node = managed_gpu.gpu_resource(pool)
    return PoolFacts(
        pool_name=name,
        sku=sku,
        driver=pool.driver,
        gpu_resource_name=resource,
        gpus_per_node=per_node,
        max_nodes=pool.max_count if pool.autoscaling else pool.count,
        rdma_capable=sku.rdma,
        node_selector={AGENTPOOL_LABEL: name},
        tolerations=pool.tolerations(),
        gpu_management=pool.gpu_management,
    )
