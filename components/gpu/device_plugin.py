"""NvidiaDevicePlugin: advertises ``nvidia.com/gpu`` (or MIG slices) on pools whose driver AKS installs.

AKS's GA GPU path (``gpuProfile.driver: Install``) installs the driver only; without a device
plugin the nodes advertise no GPUs and every GPU pod stays Pending (AKS "Use GPUs" docs). Pools
whose GPUs go through DRA must not get it: the DRA driver and the device plugin would hand the same
GPU to two pods.

The project owns this DaemonSet instead of installing the ``nvidia-device-plugin`` chart: chart
0.17.0 always renders a second, privileged DaemonSet, the MPS control daemon
(``templates/daemonset-mps-control-daemon.yml``, gated only by ``devicePlugin.enabled``), which
these pools never use and which no chart value removes. The DaemonSet below is the chart's
device-plugin DaemonSet (``templates/daemonset-device-plugin.yml`` at v0.17.0) as it renders for these values.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pulumi
import pulumi_kubernetes as k8s
from pydantic import Field

from .._base import PACKAGE, Children, StrictModel, kubernetes_provider, node_agent_namespace, raise_problems, validate_args
from ..core import pins
from ..core.endpoints import INSTANCE_LABEL
from ..core.errors import FieldProblem
from ..core.labels import NVIDIA_GPU_TOLERATION, is_mig_resource
from ..core.security import restricted_container
from .pools import GpuPool, pool_affinity, pool_tolerations

if TYPE_CHECKING:
    from ..azure.gpu_node_pool import GpuNodePool
    from ..context import ClusterContext

IMAGE = pins.image_pin("nvidia-device-plugin").name
"""NVIDIA's device plugin image (the chart's ``image.repository``; tag ``v<version>``)."""
MPS_ROOT = "/run/nvidia/mps"


class NvidiaDevicePluginArgs(StrictModel):
    """The NVIDIA device plugin DaemonSet."""

    version: str = Field(pins.chart("nvidia-device-plugin").version, pattern=r"^\d+\.\d+\.\d+$")
    """Device plugin release; the image is ``nvcr.io/nvidia/k8s-device-plugin:v<version>``. Default: the pins table's."""

    namespace: str = "nvidia-device-plugin"
    """Namespace of the DaemonSet. Default ``nvidia-device-plugin``."""

    create_namespace: bool = True
    """Create the namespace (Pod Security ``privileged``: the plugin mounts the kubelet's device-plugin
    socket folder from the host, which baseline forbids). Default True."""


def device_plugin_problems(pools: Sequence[GpuPool]) -> list[FieldProblem]:
    """Every pool the device plugin must not serve: not NVIDIA, or a driver AKS does not install."""
    why = "the device plugin serves NVIDIA pools whose driver AKS installs (driver 'aks')"
    managed = (
        "AKS runs its own device plugin on a managed GPU pool (gpu_management: managed); a second one would hand GPUs out twice"
    )
    return [
        FieldProblem("pools", p.pool_name, managed if p.gpu_management == "managed" else why)
        for p in pools
        if p.sku.gpu_vendor != "nvidia" or p.driver != "aks" or p.gpu_management == "managed"
    ]


def daemonset_spec(name: str, version: str, pools: Sequence[GpuPool]) -> dict[str, Any]:
    """The chart's device-plugin DaemonSet spec, on exactly ``pools``, tolerating their taints."""
    labels = daemonset_labels(name)
    mig = any(is_mig_resource(p.gpu_resource_name) for p in pools)
    return {
        "selector": {"matchLabels": labels},
        "updateStrategy": {"type": "RollingUpdate"},
        "template": {
            "metadata": {"labels": labels},
            "spec": {
                "priorityClassName": "system-node-critical",
                "affinity": pool_affinity(sorted(p.pool_name for p in pools)),
                "tolerations": pool_tolerations(pools, NVIDIA_GPU_TOLERATION),
                "containers": [_container(version, mig)],
                "volumes": [
                    {"name": "device-plugin", "hostPath": {"path": "/var/lib/kubelet/device-plugins"}},
                    {"name": "mps-root", "hostPath": {"path": MPS_ROOT, "type": "DirectoryOrCreate"}},
                    {"name": "mps-shm", "hostPath": {"path": f"{MPS_ROOT}/shm"}},
                    {"name": "cdi-root", "hostPath": {"path": "/var/run/cdi", "type": "DirectoryOrCreate"}},
                ],
            },
        },
    }


def daemonset_labels(name: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": "nvidia-device-plugin", INSTANCE_LABEL: name}


def _container(version: str, mig: bool) -> dict[str, Any]:
    env = [{"name": "MPS_ROOT", "value": MPS_ROOT}]
    if mig:
        # "mixed" names each MIG slice (nvidia.com/mig-1g.10gb), matching GpuNodePool.gpu_resource_name.
        env += [{"name": "MIG_STRATEGY", "value": "mixed"}, {"name": "NVIDIA_MIG_MONITOR_DEVICES", "value": "all"}]
    env += [
        {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
        {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "compute,utility"},
    ]
    return {
        "name": "nvidia-device-plugin-ctr",
        "image": f"{IMAGE}:v{version}",
        "imagePullPolicy": "IfNotPresent",
        "command": ["nvidia-device-plugin"],
        "env": env,
        # The chart's rule (_helpers.tpl securityContext): SYS_ADMIN only where it must enumerate MIG
        # devices, otherwise nothing at all. Never privileged.
        "securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}} if mig else restricted_container(read_only_root=False),
        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}},
        "volumeMounts": [
            {"name": "device-plugin", "mountPath": "/var/lib/kubelet/device-plugins"},
            {"name": "mps-shm", "mountPath": "/dev/shm"},
            {"name": "mps-root", "mountPath": "/mps"},
            {"name": "cdi-root", "mountPath": "/var/run/cdi"},
        ],
    }


class NvidiaDevicePlugin(pulumi.ComponentResource):
    """The device plugin DaemonSet, pinned to the given pools, tolerating their taints."""

    pools: list[str]

    def __init__(
        self,
        name: str,
        args: NvidiaDevicePluginArgs | dict | None = None,
        opts: pulumi.ResourceOptions | None = None,
        *,
        pools: list[GpuNodePool],
        cluster: ClusterContext,
    ):
        """
        :param name: Logical name; children are ``<name>-namespace`` and ``<name>-daemonset``.
        :param args: Settings, an ``NvidiaDevicePluginArgs`` or a dict of its fields; None for the defaults.
        :param opts: Standard Pulumi resource options; a Kubernetes ``provider`` here wins over the cluster's.
        :param pools: NVIDIA pools with ``driver: aks`` whose GPUs are not allocated through DRA.
        :param cluster: The cluster; its Kubernetes provider runs the DaemonSet.
        """
        args = validate_args(NvidiaDevicePluginArgs, args, "NvidiaDevicePlugin", name)
        raise_problems("NvidiaDevicePlugin", name, device_plugin_problems(pools))
        super().__init__(f"{PACKAGE}:index:NvidiaDevicePlugin", name, None, opts)
        children = Children(self, opts, kubernetes_provider(opts, cluster.provider))
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
        k8s.apps.v1.DaemonSet(
            f"{name}-daemonset",
            metadata={"name": "nvidia-device-plugin", "namespace": namespace, "labels": daemonset_labels(name)},
            spec=daemonset_spec(name, args.version, pools),
            opts=children.opts(),
        )
        self.register_outputs({"pools": self.pools})
