"""GpuNodePool: one AKS user agent pool of a catalog GPU size, tainted, labelled and ready for
the serving components, with every AKS rule checked before the pool is created."""

from __future__ import annotations

from dataclasses import fields

import pulumi
from pulumi_azure_native import containerservice, resources

from .._base import PACKAGE, validate_args
from ..context import ClusterContext
from ..core import catalog
from . import managed_gpu
from .gpu_node_pool_args import GpuNodePoolArgs, os_disk
from .interconnect import InterconnectPlacement, create_group
from .pool_facts import pool_facts

# A GPU pool takes longer than the default to provision and drain.
POOL_TIMEOUTS = pulumi.CustomTimeouts(create="60m", update="90m", delete="60m")


class GpuNodePool(pulumi.ComponentResource):
    """A separate AKS ``AgentPool`` for one GPU size (never an inline ``agentPoolProfiles`` edit).

    Outputs are what the serving components need: ``node_selector`` and ``tolerations`` to place
    pods, ``gpu_resource_name`` and ``gpus_per_node`` to request GPUs, ``rdma_capable``.
    """

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
    interconnect: InterconnectPlacement | None
    """The InterconnectGroup placement the pool's NIC claims select, for a rack-scale pool with ``interconnect``."""
    agent_pool: containerservice.AgentPool | resources.Resource

    def __init__(
        self,
        name: str,
        args: GpuNodePoolArgs | dict,
        opts: pulumi.ResourceOptions | None = None,
        *,
        cluster: ClusterContext,
    ):
        """
        :param name: Logical name of the component; child resources are named ``<name>-pool``.
        :param args: The pool's settings, a ``GpuNodePoolArgs`` or a dict of its fields.
        :param opts: Standard Pulumi resource options.
        :param cluster: The AKS cluster that owns the pool (``AksCluster.context``); its name and
            resource group are used.
        """
        args = validate_args(GpuNodePoolArgs, args, "GpuNodePool", name)
        super().__init__(f"{PACKAGE}:index:GpuNodePool", name, None, opts)
        self.interconnect = create_group(name, args, cluster, self) if args.interconnect else None
        if args.gpu_management == "managed":
            self.agent_pool = self._managed_pool(name, args, cluster)
        else:
            self.agent_pool = self._agent_pool(name, args, cluster)

        facts = pool_facts(args)  # the same facts the stack checks other components against before this pool exists
        for fact in fields(facts):
            if fact.name != "interconnect":  # the group's own, set above
                setattr(self, fact.name, getattr(facts, fact.name))
        self.register_outputs(
            {
                "pool_name": self.pool_name,
                "node_selector": self.node_selector,
                "gpu_resource_name": self.gpu_resource_name,
                "gpus_per_node": self.gpus_per_node,
                "rdma_capable": self.rdma_capable,
            }
        )

    def _managed_pool(self, name: str, args: GpuNodePoolArgs, cluster: ClusterContext) -> resources.Resource:
        """The pool through the generic ARM resource at the preview API version that has ``gpuProfile.nvidia``."""
        return resources.Resource(
            f"{name}-pool",
            resource_name_=args.name,
            resource_group_name=cluster.resource_group_name,
            resource_provider_namespace="Microsoft.ContainerService",
            parent_resource_path=pulumi.Output.concat("managedClusters/", cluster.cluster_name),
            resource_type="agentPools",
            api_version=managed_gpu.API_VERSION,
            properties=managed_gpu.pool_properties(args, os_disk(args)),
            tags=args.tags or None,
            # AKS refuses an update of managementMode, migStrategy or driver ("create a new node pool").
            opts=pulumi.ResourceOptions(parent=self, custom_timeouts=POOL_TIMEOUTS),
        )

    def _agent_pool(self, name: str, args: GpuNodePoolArgs, cluster: ClusterContext) -> containerservice.AgentPool:
        disk_type, disk_size = os_disk(args)

        autoscale = {}
        if args.autoscaling:
            autoscale = {"enable_auto_scaling": True, "min_count": args.min_count, "max_count": args.max_count}
        spot = {}
        if args.spot:
            spot = {
                "scale_set_priority": "Spot",
                "scale_set_eviction_policy": args.spot_eviction_policy,
                "spot_max_price": args.spot_max_price,
            }

        return containerservice.AgentPool(
            f"{name}-pool",
            agent_pool_name=args.name,
            resource_name_=cluster.cluster_name,
            resource_group_name=cluster.resource_group_name,
            vm_size=args.vm_size,
            count=args.count,
            mode=args.mode,
            os_type="Linux",
            os_sku=args.os_sku,
            os_disk_type=disk_type,
            os_disk_size_gb=disk_size,
            gpu_profile={"driver": "Install" if args.driver == "aks" else "None"},
            gpu_instance_profile=args.mig_profile,
            node_taints=args.node_taints(),
            node_labels=args.node_labels(),
            availability_zones=args.availability_zones or None,
            capacity_reservation_group_id=args.capacity_reservation_group_id,
            upgrade_settings={
                "max_surge": args.max_surge,
                "max_unavailable": args.max_unavailable,
                "drain_timeout_in_minutes": args.drain_timeout_minutes,
                "node_soak_duration_in_minutes": args.node_soak_minutes,
            },
            tags=args.tags or None,
            **autoscale,
            **spot,
            opts=pulumi.ResourceOptions(
                parent=self,
                # The autoscaler owns the node count once enabled; without this every `pulumi up`
                # would try to reset it.
                ignore_changes=["count"] if args.autoscaling else None,
                custom_timeouts=POOL_TIMEOUTS,
            ),
        )
