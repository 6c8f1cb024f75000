"""A team's own stack: a T4 pool and a namespace on a shared cluster, built from the library."""

import pulumi
import pulumi_kubernetes as k8s

from aks_gpu_inference.components import AksCluster, GpuNodePool

config = pulumi.Config()
cluster = AksCluster(
    "shared",
    {
        "name": config.require("cluster_name"),
        "existing": {"name": config.require("cluster_name"), "resource_group": config.require("cluster_resource_group")},
    },
)
pool = GpuNodePool(
    "t4",
    {"name": "t4batch", "vm_size": "Standard_NC4as_T4_v3", "count": 0, "min_count": 0, "max_count": 3, "workload": "batch"},
    cluster=cluster.context,
)
namespace = k8s.core.v1.Namespace(
    "batch",
    metadata={"name": "batch-inference", "labels": {"pod-security.kubernetes.io/enforce": "restricted"}},
    opts=pulumi.ResourceOptions(provider=cluster.provider),
)

pulumi.export("gpu_pool", pool.pool_name)
pulumi.export("node_selector", pool.node_selector)
pulumi.export("namespace", namespace.metadata.name)
