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
from .errors import ConfigError
from .gpu_node_pool import GpuNodePool


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
    return Stack(cluster=cluster, gpu_pools=pools)
