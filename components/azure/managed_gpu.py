"""AKS-managed GPU pools (preview): AKS runs the driver, the device plugin, the DCGM exporter and GPU
health checks itself (``gpuProfile.nvidia.managementMode: Managed``).

The pinned azure-native SDK (3.29) creates agent pools with containerservice API 2025-09-01, whose
``GPUProfile`` has only ``driver``; ``nvidia.managementMode`` and ``nvidia.migStrategy`` first appear in
2026-01-02-preview (azure-rest-api-specs@05c1891c31193483396c3c1999dc7d40fe73d357:
specification/containerservice/resource-manager/Microsoft.ContainerService/aks/preview/2026-01-02-preview/managedClusters.json,
``NvidiaGPUProfile``). A managed pool is therefore created through azure-native's generic
``resources.Resource`` with that API version explicitly: the same ARM PUT the typed resource makes,
at a version that has the fields, and nothing generated locally that a fresh clone would lack
(``pulumi package add azure-native containerservice 2026-01-02-preview`` would need the CLI at
install time). What AKS refuses for these pools (learn.microsoft.com/azure/aks/aks-managed-gpu-nodes,
MicrosoftDocs/azure-aks-docs@f63267b4aedcfd2f0b368b34fe5ea1ca97c86bea:articles/aks/aks-managed-gpu-nodes.md,
Limitations) is refused here before anything is created.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core import pins
from ..core.errors import FieldProblem

if TYPE_CHECKING:
    from .gpu_node_pool_args import GpuNodePoolArgs

API_VERSION = pins.azure_api_version("containerservice-managed-gpu")
"""The first containerservice API version with ``gpuProfile.nvidia`` (see the module docstring)."""

FEATURE = "Microsoft.ContainerService/ManagedGPUExperiencePreview"
"""The subscription feature managed GPU pools need: ``az feature register --namespace
Microsoft.ContainerService --name ManagedGPUExperiencePreview`` (aks-managed-gpu-nodes.md)."""

DCGM_PORT = 19400
"""Where the managed DCGM exporter serves its metrics on each node (aks-managed-gpu-nodes.md)."""

DCGM_SCRAPE_SETTINGS = {
    "schema-version": "v1",
    "config-version": "ver1",
    "default-scrape-settings-enabled": "dcgmexporter = true",
}
"""Managed Prometheus's settings ConfigMap (``ama-metrics-settings-configmap`` in ``kube-system``) that turns
on scraping of every managed GPU pool's DCGM exporter (MicrosoftDocs/azure-aks-docs@9788cf58f17c742c9d2854b0dc4bbdf6c283f432:
articles/aks/monitor-gpu-metrics.md)."""


def managed_pool_problems(args: GpuNodePoolArgs) -> list[FieldProblem]:
    """What AKS refuses for a managed GPU pool, and settings that only mean something on one."""
    if args.gpu_management != "managed":
        if args.mig_strategy != "mixed":
            return [
                FieldProblem(
                    "mig_strategy", args.mig_strategy, "only managed GPU pools take a MIG strategy (gpu_management: managed)"
                )
            ]
        return []
    problems = []
    if args.autoscaling:
        problems.append(
            FieldProblem(
                "min_count",
                args.min_count,
                "AKS does not support the cluster autoscaler on managed GPU pools (preview): set count and scale the pool by hand",
            )
        )
    if args.driver != "aks":
        problems.append(FieldProblem("driver", args.driver, "a managed GPU pool needs the AKS-installed driver (driver: aks)"))
    if args.sku.arch == "arm64":
        why = (
            f"{args.vm_size} is an arm64 (Grace) size, and AKS documents its managed GPU experience for none "
            "(aks-managed-gpu-nodes.md; AgentBaker's GPU size maps have no GB entry, and its GB node image runs its own "
            "device plugin and DCGM exporter): serve the GPUs through DRA (the dra section), as DRANET's AKS GB300 "
            "example does"
        )
        problems.append(FieldProblem("gpu_management", "managed", why))
    if args.sku.gpu_vendor != "nvidia":
        problems.append(
            FieldProblem(
                "gpu_management", "managed", f"AKS manages NVIDIA GPUs only; {args.vm_size} has {args.sku.gpu_vendor} GPUs"
            )
        )
    return problems


def gpu_resource(args: GpuNodePoolArgs) -> tuple[str, int]:
    """What a node advertises: under the single MIG strategy every slice is a ``nvidia.com/gpu``."""
    name, count = args.sku.gpu_resource(args.mig_profile)
    if args.gpu_management == "managed" and args.mig_profile and args.mig_strategy == "single":
        return args.sku.resource_name, count
    return name, count


def pool_properties(args: GpuNodePoolArgs, os_disk: tuple[str | None, int | None]) -> dict[str, Any]:
    """The agent pool's ARM properties at ``API_VERSION``: what the typed ``AgentPool`` sends, plus ``nvidia``."""
    nvidia: dict[str, str] = {"managementMode": "Managed"}
    if args.mig_profile:
        nvidia["migStrategy"] = args.mig_strategy.capitalize()
    properties: dict[str, Any] = {
        "vmSize": args.vm_size,
        "count": args.count,
        "mode": args.mode,
        "osType": "Linux",
        "osSKU": args.os_sku,
        "osDiskType": os_disk[0],
        "osDiskSizeGB": os_disk[1],
        "gpuProfile": {"driver": "Install", "nvidia": nvidia},
        "gpuInstanceProfile": args.mig_profile,
        "nodeTaints": args.node_taints(),
        "nodeLabels": args.node_labels(),
        "availabilityZones": args.availability_zones or None,
        "capacityReservationGroupID": args.capacity_reservation_group_id,
        "upgradeSettings": {
            "maxSurge": args.max_surge,
            "maxUnavailable": args.max_unavailable,
            "drainTimeoutInMinutes": args.drain_timeout_minutes,
            "nodeSoakDurationInMinutes": args.node_soak_minutes,
        },
    }
    if args.spot:
        properties.update(
            scaleSetPriority="Spot", scaleSetEvictionPolicy=args.spot_eviction_policy, spotMaxPrice=args.spot_max_price
        )
    return {k: v for k, v in properties.items() if v is not None}


def scrape_dcgm_exporters(resource_name: str, provider: Any, depends_on: list[Any]) -> Any:
    """Turn on managed Prometheus's scraping of the managed pools' DCGM exporters.

    A server-side-apply patch of ``ama-metrics-settings-configmap`` (it may already exist: the metrics
    add-on reads it, users edit it), so only the keys set here change hands.
    """
    import pulumi
    import pulumi_kubernetes as k8s

    return k8s.core.v1.ConfigMapPatch(
        resource_name,
        metadata={"name": "ama-metrics-settings-configmap", "namespace": "kube-system"},
        data=dict(DCGM_SCRAPE_SETTINGS),
        opts=pulumi.ResourceOptions(provider=provider, depends_on=depends_on),
    )
