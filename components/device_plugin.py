"""NvidiaDevicePlugin: advertises ``nvidia.com/gpu`` (or MIG slices) on pools whose driver AKS installs.

AKS's GA GPU path (``gpuProfile.driver: Install``) installs the driver only; without a device
plugin the nodes advertise no GPUs and every GPU pod stays Pending (AKS "Use GPUs" docs). Pools
whose GPUs go through DRA must not get it: the DRA driver and the device plugin would hand the same
GPU to two pods.
"""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from ._base import PACKAGE, Children, StrictModel, fail, node_agent_namespace, validate_args
from .gpu_node_pool import AGENTPOOL_LABEL, GpuNodePool

CHART_REPO = "https://nvidia.github.io/k8s-device-plugin"


class NvidiaDevicePluginArgs(StrictModel):
    """The NVIDIA device plugin chart."""

    chart_version: str = "0.17.0"
    """``nvidia-device-plugin`` chart version. Default ``0.17.0``."""

    namespace: str = "nvidia-device-plugin"
    """Namespace of the DaemonSet. Default ``nvidia-device-plugin``."""

    create_namespace: bool = True
    """Create the namespace (Pod Security ``privileged``: the plugin mounts the kubelet's device-plugin
    socket folder from the host). Default True; a Helm Chart never creates its namespace."""


class NvidiaDevicePlugin(pulumi.ComponentResource):
    """The device plugin DaemonSet, pinned to the given pools, tolerating their taints."""

    pools: list[str]

    def __init__(
        self,
        name: str,
        args: NvidiaDevicePluginArgs | dict | None,
        pools: list[GpuNodePool],
        provider: k8s.Provider,
        opts: pulumi.ResourceOptions | None = None,
    ):
        """
        :param name: Logical name; the chart is ``<name>-chart``.
        :param args: Chart settings, an ``NvidiaDevicePluginArgs`` or a dict of its fields.
        :param pools: NVIDIA pools with ``driver: aks`` whose GPUs are not allocated through DRA.
        :param provider: Kubernetes provider of the cluster.
        :param opts: Standard Pulumi resource options.
        """
        args = validate_args(NvidiaDevicePluginArgs, args, "NvidiaDevicePlugin", name)
        for pool in pools:
            if pool.sku.gpu_vendor != "nvidia" or pool.driver != "aks":
                fail(
                    "NvidiaDevicePlugin",
                    name,
                    "pools",
                    pool.pool_name,
                    "the device plugin serves NVIDIA pools whose driver AKS installs (driver 'aks')",
                )
        super().__init__(f"{PACKAGE}:index:NvidiaDevicePlugin", name, None, opts)
        children = Children(self, opts, provider)
        namespace = pulumi.Output.from_input(args.namespace)
        if args.create_namespace:
            created = node_agent_namespace(
                f"{name}-namespace",
                args.namespace,
                children.opts(),
                "the device plugin mounts /var/lib/kubelet/device-plugins from the host",
            )
            namespace = created.metadata["name"]
        self.pools = sorted(p.pool_name for p in pools)
        tolerations = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
        for pool in pools:
            tolerations += [t for t in pool.tolerations if t not in tolerations]
        mig = any(p.gpu_resource_name.startswith("nvidia.com/mig-") for p in pools)
        self.chart = k8s.helm.v4.Chart(
            f"{name}-chart",
            chart="nvidia-device-plugin",
            repository_opts={"repo": CHART_REPO},
            version=args.chart_version,
            namespace=namespace,
            values={
                # "mixed" names each MIG slice (nvidia.com/mig-1g.10gb), matching GpuNodePool.gpu_resource_name.
                "migStrategy": "mixed" if mig else "none",
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {"matchExpressions": [{"key": AGENTPOOL_LABEL, "operator": "In", "values": self.pools}]}
                            ]
                        }
                    }
                },
                "tolerations": tolerations,
            },
            opts=children.opts(),
        )
        self.register_outputs({"pools": self.pools})
