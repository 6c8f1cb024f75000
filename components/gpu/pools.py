"""What the GPU components read from a GPU node pool, and where their node agents run on a set of
pools: node affinity by agent pool and the tolerations of the pools' taints. Plain data, no Pulumi,
so that validators and manifest builders are testable without the engine."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol

from ..core.labels import AGENTPOOL_LABEL

if TYPE_CHECKING:
    from ..azure.interconnect import InterconnectPlacement
    from ..core.catalog import GpuSku


class GpuPool(Protocol):
    """The plain facts of a GPU node pool that the GPU components read; ``GpuNodePool`` has them all."""

    pool_name: str
    """The AKS agent pool name."""
    sku: GpuSku
    """The catalog row of the pool's VM size."""
    driver: str
    """Who installs the NVIDIA driver: ``aks`` or ``none``."""
    gpu_resource_name: str
    """The extended resource a node advertises: ``nvidia.com/gpu`` or ``nvidia.com/mig-<slice>``."""
    gpus_per_node: int
    """How many of ``gpu_resource_name`` one node advertises."""
    max_nodes: int
    """The most nodes the pool can have (its count, or the autoscaler's maximum)."""
    gpu_management: str
    """``managed`` when AKS runs the GPU software itself (device plugin, DCGM exporter), else ``unmanaged``."""
    rdma_capable: bool
    """Whether the size has InfiniBand NICs for RDMA."""
    node_selector: dict[str, str]
    """The node selector that pins a pod to the pool."""
    tolerations: list[dict[str, str]]
    """The tolerations of the pool's taints."""
    interconnect: InterconnectPlacement | None
    """The InterconnectGroup and subgroup a rack-scale pool's NIC claims select, or None."""


class NicNetwork(Protocol):
    """What checks read from an RDMA network: ``RdmaNetwork`` has it, and so do its facts (``network_facts``)."""

    namespace: str
    nics: dict[str, int]
    pools: dict[str, GpuPool]


class GpuClaimTemplates(Protocol):
    """What checks read from the DRA GPU claims: ``DraDeviceClasses`` has it, and so do its facts (``dra_facts``)."""

    namespace: str
    templates: dict[str, str]
    channel_templates: dict[str, str]


def pool_affinity(pool_names: list[str]) -> dict[str, Any]:
    """Node affinity that admits exactly the nodes of the named agent pools."""
    term = {"matchExpressions": [{"key": AGENTPOOL_LABEL, "operator": "In", "values": pool_names}]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}


def pool_tolerations(pools: Iterable[GpuPool], first: dict[str, str]) -> list[dict[str, str]]:
    """``first``, then every toleration of the pools once. A keyless ``Exists`` toleration tolerates
    every taint of its effect, so the pools' tolerations of that effect are left out after it."""
    blanket = "key" not in first and first.get("operator") == "Exists"
    result = [dict(first)]
    for pool in pools:
        result += [t for t in pool.tolerations if t not in result and not (blanket and t.get("effect") == first.get("effect"))]
    return result
