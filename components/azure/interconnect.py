"""Rack-scale placement for GB-series pools: the Azure InterconnectGroup a pool's VMs belong to, and the DRA selectors
that keep the pool's RDMA work inside it.

Azure places rack-scale VMs (ND GB200/GB300 v6, 18 per NVL72 rack) in an InterconnectGroup
(``Microsoft.Network/interconnectGroups``, API 2025-07-01: pulumi-azure-native 3.29 ``network.InterconnectGroup``) made
of subgroups, each one InterconnectBlock (``Microsoft.Compute/interconnectBlocks``) of VMs on one InfiniBand fabric and
NVLink rack (kubernetes-sigs/dranet@v1.4.0:examples/azure_aks_examples/README.md, "InterconnectGroup (ICG) and
InterconnectBlock (ICB)").

What AKS lets a pool do with one: nothing directly. No agent-pool property names an interconnect group or block, in
the GA API the SDK writes (containerservice 2025-09-01) nor in the newest preview (2026-08-02-preview,
azure-mgmt-containerservice 41.9.0b1 ``ManagedClusterAgentPoolProfileProperties``: ``proximityPlacementGroupID``,
``capacityReservationGroupID`` and ``hostGroupID`` only); the VMSS-level ``interconnectGroupProfile`` and
``interconnectBlockProfile`` exist in the Compute API from 2026-03-01 (azure-mgmt-compute 39.0.0), on scale sets AKS
owns. So this module

* creates the group (scope InfiniBand, one subgroup profile of the pool's size and rack), which is enforced by ARM;
* labels the pool's nodes with the group's name, which only documents the intent;
* ties the work to it where Kubernetes can enforce it: DRANET v1.4.0 publishes the VM's IMDS
  ``interconnectGroupId`` (the group's ``resourceGuid``) and ``interconnectSubgroupId`` (the subgroup's
  ``internalSubgroupId``) on every NIC (pkg/cloudprovider/azure/azure.go:41-47, 127-147), and every NIC claim of the
  pool selects both, so an RDMA pod only ever gets NICs of a node in that group and subgroup, and stays Pending on a
  node that is not (fails closed). Whether AKS put the VMs there is checked on the cluster (the gates' NVLink gate
  sees it first), never by the plan, whose verdict says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import pulumi
from pydantic import Field

from .._base import StrictModel
from ..core import pins
from ..core.errors import FieldProblem
from ..core.labels import INTERCONNECT_GROUP_ATTRIBUTE as GROUP_ATTRIBUTE
from ..core.labels import INTERCONNECT_LABEL
from ..core.labels import INTERCONNECT_SUBGROUP_ATTRIBUTE as SUBGROUP_ATTRIBUTE

if TYPE_CHECKING:
    from ..context import ClusterContext
    from ..core.catalog import GpuSku

__all__ = ["GROUP_ATTRIBUTE", "INTERCONNECT_LABEL", "SUBGROUP_ATTRIBUTE", "InterconnectArgs", "InterconnectPlacement"]

API_VERSION = pins.azure_api_version("network-interconnect-group")
AZURE_DOMAIN = "azure.dra.net"
SUBGROUP_SCOPE = "VerticalConnect"
"""The subgroup profile's scope an Azure GB300 canary creates its groups with (``subgroupProfile.scope``; the SDK's
``SubgroupProfileScope`` takes None or VerticalConnect)."""
_GUID = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"


class InterconnectArgs(StrictModel):
    """The InterconnectGroup of a rack-scale pool (``gpu_pools[].interconnect``)."""

    name: str = Field(pattern=r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,78}[A-Za-z0-9_])?$")
    """Name of the InterconnectGroup the stack creates in the cluster's resource group (1-80 letters, digits,
    ``-``, ``_``, ``.``; ARM's rule for network resources). Required."""

    subgroup_id: str | None = Field(None, pattern=_GUID)
    """The subgroup (InterconnectBlock) the pool's RDMA work stays in: the ``interconnectSubgroupId`` DRANET publishes
    on the pool's nodes (``kubectl get resourceslices -o yaml``), a GUID. Default None: the group's first subgroup as
    Azure reports it (``subgroups[0].internalSubgroupId``); a group with no subgroup yet stops ``pulumi up`` with a
    message naming this key."""


class RackPool(Protocol):
    """What the group reads of its pool (a ``GpuNodePoolArgs``); a protocol, so the pool's args may import this module."""

    interconnect: InterconnectArgs | None
    vm_size: str
    count: int
    max_count: int | None
    rdma: bool
    tags: dict[str, str]

    @property
    def autoscaling(self) -> bool: ...
    @property
    def sku(self) -> GpuSku: ...


def interconnect_problems(args: RackPool) -> list[FieldProblem]:
    """A group on a size without rack-scale NVLink, or a pool larger than one subgroup (one rack)."""
    if args.interconnect is None:
        return []
    sku, nodes = args.sku, args.max_count if args.autoscaling else args.count
    if sku.rack_size is None:
        why = f"{args.vm_size} has no rack-scale NVLink; interconnect groups hold rack-scale sizes (ND GB200/GB300 v6)"
        return [FieldProblem("interconnect", args.interconnect.name, why)]
    problems = []
    if nodes > sku.rack_size:
        why = (
            f"one subgroup (a rack) holds {sku.rack_size} {args.vm_size} VMs and the pool's work stays in one subgroup; "
            f"use at most {sku.rack_size} nodes, or a second pool with its own group"
        )
        problems.append(FieldProblem("max_count" if args.autoscaling else "count", nodes, why))
    if not args.rdma:
        why = "the group is kept through the pool's NIC claims (DRANET's interconnect attributes): set rdma: true"
        problems.append(FieldProblem("rdma", args.rdma, why))
    return problems


@dataclass(frozen=True)
class InterconnectPlacement:
    """What a pool's NIC claims select: the group's ``resourceGuid`` and the subgroup's ``internalSubgroupId``."""

    group_name: str
    group_guid: pulumi.Input[str]
    subgroup_id: pulumi.Input[str]

    def selectors(self) -> list[pulumi.Input[str]]:
        """CEL for a NIC request: the device's node is in the group and the subgroup. The ``in`` test first: a node
        outside every group publishes no such attribute, and a missing key would be an evaluation error, which aborts
        the allocation instead of passing the node over."""
        return [
            pulumi.Output.from_input(value).apply(lambda v, a=attribute: attribute_cel(a, v))
            for attribute, value in ((GROUP_ATTRIBUTE, self.group_guid), (SUBGROUP_ATTRIBUTE, self.subgroup_id))
        ]


def attribute_cel(attribute: str, value: str) -> str:
    """CEL that admits a device whose ``azure.dra.net`` ``attribute`` is ``value``, and no device without it."""
    domain = f'device.attributes["{AZURE_DOMAIN}"]'
    return f'"{attribute}" in {domain} && {domain}["{attribute}"] == "{value}"'


def _first_subgroup(group: str, subgroups: Any) -> str:
    for subgroup in subgroups or []:
        found = getattr(subgroup, "internal_subgroup_id", None)
        if found:
            return found
    raise ValueError(
        f"InterconnectGroup {group} has no subgroup yet, so the pool's NIC claims cannot name one: set "
        "gpu_pools[].interconnect.subgroup_id to the interconnectSubgroupId DRANET publishes on the pool's nodes"
    )


def create_group(name: str, args: RackPool, cluster: ClusterContext, parent: pulumi.Resource) -> InterconnectPlacement:
    """The InterconnectGroup of the pool (InfiniBand scope, one subgroup profile: the pool's size, a rack of VMs) and
    the placement its NIC claims select."""
    from pulumi_azure_native import network

    settings = args.interconnect
    group = network.InterconnectGroup(
        f"{name}-interconnect",
        interconnect_group_name=settings.name,
        resource_group_name=cluster.resource_group_name,
        location=cluster.location,
        scope="InfiniBand",
        subgroup_profile={"vm_size": args.vm_size, "scope": SUBGROUP_SCOPE, "size": args.sku.rack_size},
        tags=args.tags or None,
        opts=pulumi.ResourceOptions(parent=parent),
    )
    subgroup = settings.subgroup_id or group.subgroups.apply(lambda s: _first_subgroup(settings.name, s))
    return InterconnectPlacement(settings.name, group.resource_guid, subgroup)
