"""The AKS rules a GPU pool's settings must keep together (``pool_problems``), each naming the field it is about;
each field alone is checked by its type in ``GpuNodePoolArgs``, which calls these as it validates itself."""

from __future__ import annotations

from typing import Protocol

from ..core import catalog, vm_disks
from ..core.errors import FieldProblem
from .interconnect import RackPool, interconnect_problems


class PoolSettings(RackPool, Protocol):
    """What the rules read of a pool (a ``GpuNodePoolArgs``), beyond what its interconnect group reads; a protocol,
    so the pool's args may import this module."""

    mode: str
    os_sku: str
    driver: str
    gpu_management: str
    mig_strategy: str
    mig_profile: str | None
    min_count: int | None
    spot: bool
    spot_eviction_policy: str
    spot_max_price: float
    os_disk_type: str | None
    os_disk_size_gb: int | None
    max_surge: str
    max_unavailable: str

    @property
    def model_fields_set(self) -> set[str]: ...


def pool_problems(args: PoolSettings) -> list[FieldProblem]:
    """Every AKS rule that the pool's settings break together; each field alone is checked by its type."""
    return [
        *_gpu_problems(args),
        *_count_problems(args),
        *_spot_problems(args),
        *_disk_problems(args),
        *_upgrade_problems(args),
        *_managed_problems(args),
        *interconnect_problems(args),
    ]


def _gpu_problems(args: PoolSettings) -> list[FieldProblem]:
    sku, problems = args.sku, []
    if args.mig_profile and not sku.mig_capable:
        problems.append(
            FieldProblem(
                "mig_profile",
                args.mig_profile,
                f"{args.vm_size} ({sku.gpu_model}) has no MIG; MIG-capable sizes: {', '.join(catalog.mig_capable_sizes())}",
            )
        )
    if args.mig_profile and args.driver != "aks":
        problems.append(
            FieldProblem(
                "mig_profile",
                args.mig_profile,
                "AKS partitions MIG only with driver 'aks'; with driver 'none' configure MIG through the GPU Operator's MIG manager instead",
            )
        )
    if sku.gpu_vendor == "amd" and args.driver == "aks":
        problems.append(
            FieldProblem(
                "driver",
                args.driver,
                f"AKS installs NVIDIA drivers only; {args.vm_size} has AMD GPUs: use driver 'none' and AMD's GPU operator",
            )
        )
    if sku.arch == "arm64" and sku.rack_size and args.os_sku != "Ubuntu":
        why = (
            f"AKS's node image for {args.vm_size} is Ubuntu 24.04 arm64 only (Azure/AgentBaker@06836ee2:"
            "vhdbuilder/packer/install-dependencies.sh:914): use 'Ubuntu' (24.04 from Kubernetes 1.35)"
        )
        problems.append(FieldProblem("os_sku", args.os_sku, why))
    if args.rdma and not sku.rdma:
        problems.append(
            FieldProblem("rdma", args.rdma, f"{args.vm_size} is not RDMA-capable; RDMA sizes: {', '.join(catalog.rdma_sizes())}")
        )
    return problems


def _count_problems(args: PoolSettings) -> list[FieldProblem]:
    low, high, problems = args.min_count, args.max_count, []
    if (low is None) != (high is None):
        problems.append(
            FieldProblem(
                "min_count" if low is None else "max_count",
                None,
                "set both min_count and max_count to enable autoscaling, or neither",
            )
        )
    if low is not None and high is not None and low > high:
        problems.append(FieldProblem("min_count", low, f"must be at most max_count ({high})"))
    if low is not None and high is not None and not low <= args.count <= high:
        problems.append(FieldProblem("count", args.count, f"must lie between min_count ({low}) and max_count ({high})"))
    if args.mode == "System" and (args.count < 1 or (low is not None and low < 1)):
        problems.append(FieldProblem("count", args.count, "a system pool needs at least one node"))
    return problems


def _spot_problems(args: PoolSettings) -> list[FieldProblem]:
    problems = []
    if args.mode == "System" and args.spot:
        problems.append(FieldProblem("spot", args.spot, "AKS system pools cannot use Spot VMs; use mode 'User'"))
    if not args.spot and args.spot_max_price != -1:
        problems.append(
            FieldProblem("spot_max_price", args.spot_max_price, "applies to Spot pools only: set spot: true or remove it")
        )
    if not args.spot and args.spot_eviction_policy != "Delete":
        why = "applies to Spot pools only (on-demand nodes are never evicted): set spot: true or remove it"
        problems.append(FieldProblem("spot_eviction_policy", args.spot_eviction_policy, why))
    return problems


def _disk_problems(args: PoolSettings) -> list[FieldProblem]:
    if args.os_disk_type != "Ephemeral":
        return []
    problems = []
    if not args.sku.ephemeral_os_disk:
        problems.append(
            FieldProblem("os_disk_type", args.os_disk_type, f"{args.vm_size} does not support ephemeral OS disks; use 'Managed'")
        )
    limit = vm_disks.ephemeral_limit_gib(args.vm_size)
    if limit is not None and (args.os_disk_size_gb or 0) > limit:
        problems.append(
            FieldProblem(
                "os_disk_size_gb",
                args.os_disk_size_gb,
                f"an ephemeral OS disk on {args.vm_size} lives on its {limit} GiB local disk (components/core/vm_disks.json); "
                f"use at most {limit}, or os_disk_type 'Managed'",
            )
        )
    return problems


def _upgrade_problems(args: PoolSettings) -> list[FieldProblem]:
    if args.max_surge in ("0", "0%") and args.max_unavailable in ("0", "0%"):
        return [
            FieldProblem(
                "max_unavailable",
                args.max_unavailable,
                "with max_surge 0 at least one node must be allowed to be unavailable, or upgrades cannot progress",
            )
        ]
    return []


def _managed_problems(args: PoolSettings) -> list[FieldProblem]:
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
    if args.mig_profile is None and (args.mig_strategy != "mixed" or "mig_strategy" in args.model_fields_set):
        why = "a pool of whole GPUs has no MIG slices to advertise, so it would reach no resource: set mig_profile, or leave mig_strategy out"
        problems.append(FieldProblem("mig_strategy", args.mig_strategy, why))
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
