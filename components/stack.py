"""Assembles one environment from its typed config: resource group, cluster, GPU pools, exports.

``__main__.py`` calls this; other stacks can too, with a ``StackConfig`` of their own.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
from pulumi_azure_native import resources

from ._base import ComponentInputError
from .aks_cluster import AksCluster
from .config import StackConfig, config_from_env, parse_stack_config
from .device_plugin import NvidiaDevicePlugin
from .dra_device_classes import DraDeviceClasses
from .errors import ConfigError
from .gpu_node_pool import GpuNodePool
from .qualification_gates import QualificationGates
from .rdma_network import RdmaNetwork


def load_stack_config() -> StackConfig:
    """Read and validate this stack's config as the Pulumi engine passed it to the program."""
    raw = config_from_env(pulumi.runtime.get_config_env(), pulumi.get_project())
    try:
        return parse_stack_config(raw, f"Pulumi.{pulumi.get_stack()}.yaml")
    except ConfigError as err:
        raise ComponentInputError(err.context, err.problems) from None


@dataclass
class Stack:
    cluster: AksCluster
    gpu_pools: list[GpuNodePool]
    rdma: RdmaNetwork | None = None
    dra: DraDeviceClasses | None = None
    gates: QualificationGates | None = None
    device_plugin: NvidiaDevicePlugin | None = None


def build_stack(config: StackConfig) -> Stack:
    """Create the resources of one environment and export what operators and other stacks need."""
    tags = {"managed-by": "aks-gpu-inference", **config.tags}
    if config.resource_group.create:
        group = resources.ResourceGroup(
            "resource-group", resource_group_name=config.resource_group.name, location=config.location, tags=tags
        )
        group_name = group.name
    else:
        group_name = pulumi.Output.from_input(config.resource_group.name)

    cluster_args = config.cluster.model_copy(update={"tags": {**tags, **config.cluster.tags}})
    cluster = AksCluster(config.cluster.name, cluster_args, location=config.location, resource_group_name=group_name)
    pools = [
        GpuNodePool(
            pool.name,
            pool.model_copy(update={"tags": {**tags, **pool.tags}}),
            cluster_name=cluster.cluster_name,
            resource_group_name=cluster.resource_group_name,
        )
        for pool in config.gpu_pools
    ]

    by_name = {pool.pool_name: pool for pool in pools}
    stack = Stack(cluster=cluster, gpu_pools=pools)
    section_fields = {"pools", "gates"}
    if config.rdma:
        rdma_args = config.rdma.model_dump(exclude=section_fields)
        if config.rdma.gates and 1 not in rdma_args["partial_node_nics"]:
            rdma_args["partial_node_nics"] = sorted({*rdma_args["partial_node_nics"], 1})  # gates 1 and 3 use one NIC
        stack.rdma = RdmaNetwork(
            "rdma", rdma_args, [by_name[p] for p in config.rdma.pools], cluster.provider, cluster.kubernetes_version
        )
    if config.dra:
        dra_args = config.dra.model_dump(exclude=section_fields)
        if stack.rdma:
            # Claims are namespaced: RDMA pods need their GPU templates next to their NIC templates.
            dra_args.update(namespace=stack.rdma.namespace, create_namespace=False)
        stack.dra = DraDeviceClasses(
            "dra",
            dra_args,
            [by_name[p] for p in config.dra_pools()],
            cluster.provider,
            cluster.kubernetes_version,
            opts=pulumi.ResourceOptions(depends_on=[stack.rdma] if stack.rdma else None),
        )
    # Pools whose GPUs no DRA driver serves need the device plugin to advertise them.
    plugin_pools = [
        p for p in pools if p.sku.gpu_vendor == "nvidia" and p.driver == "aks" and p.pool_name not in config.dra_pools()
    ]
    if plugin_pools:
        stack.device_plugin = NvidiaDevicePlugin("nvidia-device-plugin", config.device_plugin, plugin_pools, cluster.provider)
    if config.rdma and config.rdma.gates:
        gates = config.rdma.gates.model_dump()
        gates["pool"] = gates["pool"] or config.rdma.pools[0]
        stack.gates = QualificationGates("qualify", gates, stack.rdma, cluster.provider, stack.dra)
        pulumi.export("qualification_jobs", stack.gates.jobs)
        pulumi.export("qualification_verdicts", stack.gates.verdict_command)

    pulumi.export("cluster_name", cluster.cluster_name)
    pulumi.export("resource_group_name", cluster.resource_group_name)
    pulumi.export("oidc_issuer_url", cluster.oidc_issuer_url)
    pulumi.export("kubeconfig", cluster.kubeconfig)
    pulumi.export(
        "gpu_pools",
        {
            pool.pool_name: {
                "vm_size": pool.sku.name,
                "gpu_resource_name": pool.gpu_resource_name,
                "gpus_per_node": pool.gpus_per_node,
                "rdma_capable": pool.rdma_capable,
                "node_selector": pool.node_selector,
                "tolerations": pool.tolerations,
            }
            for pool in pools
        },
    )
    return stack
