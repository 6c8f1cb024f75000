"""What a GPU node pool is, as plain data computed from its args alone (``pool_facts``): its name, size, the GPUs a
node advertises, how many nodes it can have, how pods are placed on it. ``GpuNodePool`` takes its attributes from
these facts, and the stack checks every component against them before any resource exists
(``components/stack/component_checks.py``); both satisfy ``gpu.pools.GpuPool``."""

from __future__ import annotations

from dataclasses import dataclass

from ..core import catalog
from ..core.labels import AGENTPOOL_LABEL
from .gpu_node_pool_args import GpuNodePoolArgs
from .managed_gpu import gpu_resource


@dataclass(frozen=True)
class PoolFacts:
    pool_name: str
    node_selector: dict[str, str]
    tolerations: list[dict[str, str]]
    gpu_resource_name: str
    gpus_per_node: int
    rdma_capable: bool
    driver: str
    mig_profile: str | None
    gpu_management: str
    max_nodes: int
    sku: catalog.GpuSku
    interconnect: None = None
    """The InterconnectGroup placement exists only once the group does (``GpuNodePool.interconnect``)."""


def pool_facts(args: GpuNodePoolArgs) -> PoolFacts:
    resource, per_node = gpu_resource(args)
    return PoolFacts(
        pool_name=args.name,
        node_selector={AGENTPOOL_LABEL: args.name},
        tolerations=args.tolerations(),
        gpu_resource_name=resource,
        gpus_per_node=per_node,
        rdma_capable=args.sku.rdma,
        driver=args.driver,
        mig_profile=args.mig_profile,
        gpu_management=args.gpu_management,
        max_nodes=args.max_count if args.autoscaling else args.count,
        sku=args.sku,
    )
