"""The vCPU quota a stack needs, per region and quota family, at its pools' maximum node counts.

Read from the resources the plan registered (what ``pulumi up`` would ask Azure for), not from the
stack file: every AKS agent pool, the system pool inside the managed cluster, pools created
through the generic ARM resource, and the GPU nodes KAITO provisions for its workspaces. A pool needs its maximum node count plus the surge nodes an
upgrade adds (``upgradeSettings.maxSurge``), because a surge node that finds no quota stalls the
upgrade. On-demand pools draw on their family's quota and on the region's total; Spot pools on the
region's Spot quota only.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from aks_gpu_inference.components.core import catalog, quota


@dataclass(frozen=True)
class PoolDemand:
    """One node pool's share of the quota."""

    pool: str
    vm_size: str
    nodes: int
    """Maximum nodes, surge included."""
    vcpus_per_node: int | None
    spot: bool

    @property
    def vcpus(self) -> int | None:
        return None if self.vcpus_per_node is None else self.vcpus_per_node * self.nodes


@dataclass
class QuotaNeed:
    """vCPUs one usages row (a family, ``cores`` or ``lowPriorityCores``) must allow in a region."""

    region: str
    name: str
    """The usages API's ``name.value``: a family name, ``cores`` or ``lowPriorityCores``."""
    vcpus: int = 0
    pools: list[str] = field(default_factory=list)
    known: bool = True
    """False when a pool's family or vCPU count is not in the offline tables (preflight asks Azure)."""


def _surge(max_surge: object, nodes: int) -> int:
    """Nodes an upgrade adds: an absolute count, or a percentage of the pool rounded up (AKS's rule)."""
    text = str(max_surge or "").strip()
    if not text:
        return 1  # AKS's default surge for a pool without upgradeSettings is one node
    if text.endswith("%"):
        return math.ceil(nodes * float(text[:-1]) / 100)
    return int(float(text))


def _vcpus(vm_size: str) -> int | None:
    try:
        return catalog.get_sku(vm_size).vcpus
    except catalog.UnknownVmSizeError:
        try:
            return catalog.parse_vm_size(vm_size).vcpus
        except ValueError:
            return None


def _demand(name: str, pool: dict) -> PoolDemand:
    autoscaled = pool.get("enableAutoScaling") and pool.get("maxCount") is not None
    nodes = int(pool.get("maxCount") if autoscaled else pool.get("count") or 0)
    surge = _surge((pool.get("upgradeSettings") or {}).get("maxSurge"), nodes) if nodes else 0
    vm_size = str(pool.get("vmSize", ""))
    return PoolDemand(name, vm_size, nodes + surge, _vcpus(vm_size), pool.get("scaleSetPriority") == "Spot")


def pool_demands(resources) -> list[PoolDemand]:
    """Every node pool the plan registers, with its maximum node count (surge included): the cluster's own
    pools first, then the separate agent pools by name (the engine registers them in no fixed order)."""
    inside, separate = [], []
    for r in resources:
        if r.type == "azure-native:containerservice:ManagedCluster":
            for profile in r.inputs.get("agentPoolProfiles") or []:
                inside.append(_demand(str(profile.get("name")), profile))
        elif r.type == "azure-native:containerservice:AgentPool":
            separate.append(_demand(str(r.inputs.get("agentPoolName", r.name)), r.inputs))
        elif r.type == "azure-native:resources:Resource" and r.inputs.get("resourceType") == "agentPools":
            separate.append(_demand(str(r.inputs.get("resourceName", r.name)), r.inputs.get("properties") or {}))
        elif (nodes := kaito_nodes(r)) is not None:
            separate.append(PoolDemand(nodes[0], nodes[1], nodes[2], _vcpus(nodes[1]), False))
    return inside + sorted(separate, key=lambda d: d.pool)


KAITO_WORKSPACE = "kubernetes:kaito.sh/v1beta1:Workspace"


def kaito_nodes(record) -> tuple[str, str, int] | None:
    """(label, VM size, nodes) of the GPU nodes KAITO's provisioner creates for a Workspace
    (``resource.instanceType`` x ``resource.count``, kaito@v0.6.0 api/v1beta1/workspace_types.go); None otherwise.
    They draw on the same quota as a node pool of that size, and cost the same."""
    if record.type != KAITO_WORKSPACE:
        return None
    resource = record.inputs.get("resource") or {}
    name = (record.inputs.get("metadata") or {}).get("name") or record.name
    size = resource.get("instanceType")
    return (f"kaito {name}", str(size), int(resource.get("count") or 1)) if size else None


def needs(resources, region: str) -> list[QuotaNeed]:
    """The usages rows the stack draws on in ``region``, largest first; the regional totals last."""
    return rows_for(pool_demands(resources), region)


def rows_for(demands: list[PoolDemand], region: str, family_of: Callable[[str], str | None] = quota.family_of) -> list[QuotaNeed]:
    """``needs`` for given pool demands; ``family_of`` names a size's family (preflight passes Azure's answer)."""
    rows: dict[str, QuotaNeed] = {}

    def add(name: str, demand: PoolDemand, known: bool = True) -> None:
        row = rows.setdefault(name, QuotaNeed(region, name))
        row.vcpus += demand.vcpus or 0
        row.pools.append(demand.pool)
        row.known = row.known and known and demand.vcpus is not None

    for demand in demands:
        if demand.nodes == 0:
            continue
        if demand.spot:
            add(quota.SPOT, demand)
            continue
        family = family_of(demand.vm_size)
        add(family or f"family of {demand.vm_size}", demand, known=family is not None)
        add(quota.REGIONAL, demand)
    totals = [rows.pop(n) for n in (quota.REGIONAL, quota.SPOT) if n in rows]
    return sorted(rows.values(), key=lambda r: -r.vcpus) + totals


def region_of(resources, fallback: str | None = None) -> str | None:
    """The managed cluster's region, else ``fallback`` (an existing cluster registers no ManagedCluster)."""
    for r in resources:
        if r.type == "azure-native:containerservice:ManagedCluster" and r.inputs.get("location"):
            return str(r.inputs["location"])
    return fallback
