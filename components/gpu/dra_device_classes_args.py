"""The args of DraDeviceClasses and the combinations of args and pools it refuses, as a pure function:
two drivers on one node, a driver nobody installs, MIG slices named like whole GPUs, a device
plugin beside the DRA driver, claim templates no node can satisfy."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import Field, field_validator

from .._base import StrictModel
from ..core import pins
from ..core.errors import FieldProblem
from ..core.labels import NVIDIA_GPU, is_mig_resource
from ..core.names import DNS_LABEL
from .dra_api import kubernetes_version_problems
from .pools import GpuPool

HOST_DRIVER_ROOT = "/"
"""Where AKS (``gpuProfile.driver: Install``) puts the NVIDIA driver: on the host itself."""
OPERATOR_DRIVER_ROOT = "/run/nvidia/driver"
"""Where the GPU Operator's driver container mounts the driver."""


class GpuOperatorArgs(StrictModel):
    """The NVIDIA GPU Operator, for pools created with ``driver: none`` (seed 002 section 3)."""

    chart_version: str = pins.chart("gpu-operator").version
    """``gpu-operator`` chart version from helm.ngc.nvidia.com. Default: the pins table's (the AKS DRA blog's pin)."""

    driver: bool = True
    """Let the operator install the driver container. Default True: that is why a pool says ``driver: none``.
    Refused when any pool has ``driver: aks``: two drivers on one node."""

    device_plugin: bool = False
    """Deploy the NVIDIA device plugin. Default False: the DRA driver advertises the GPUs, and both at
    once would hand the same GPU to two pods. Set True only with ``install_driver: false``."""

    mig_strategy: Literal["mixed", "single"] = "mixed"
    """How the device plugin names MIG slices. Default ``mixed`` (``nvidia.com/mig-<slice>``); ``single``
    advertises slices as ``nvidia.com/gpu``, indistinguishable from whole GPUs, and is refused with MIG pools."""


class DraDeviceClassesArgs(StrictModel):
    """The NVIDIA DRA driver, per-model DeviceClasses and ResourceClaimTemplates."""

    namespace: str = Field("gpu-inference", pattern=DNS_LABEL.pattern)
    """Namespace of the ResourceClaimTemplates (claims are namespaced; pods use templates in their own
    namespace). Default ``gpu-inference``."""

    create_namespace: bool = True
    """Create the namespace (Pod Security ``baseline``). Default True; False when another component
    (such as RdmaNetwork) owns it."""

    install_driver: bool = True
    """Install the NVIDIA GPU DRA driver. Default True; False when the cluster already runs it."""

    chart_version: str = pins.chart("dra-driver-nvidia-gpu").version
    """``dra-driver-nvidia-gpu`` chart version (no ``v`` prefix). Default: the pins table's."""

    gpu_counts: list[int] = Field(default_factory=lambda: [1])
    """Claim templates ``gpu-<n>`` for n GPUs of any model. Default ``[1]``."""

    gpu_operator: GpuOperatorArgs | None = None
    """Also install the NVIDIA GPU Operator. Default None (AKS installs the driver)."""

    @field_validator("gpu_counts")
    @classmethod
    def _positive(cls, value: list[int]) -> list[int]:
        if any(n < 1 for n in value):
            raise ValueError("GPU counts are whole numbers of at least 1")
        return sorted(set(value))


def driver_root(pool: GpuPool) -> str:
    """Where the DRA driver finds the NVIDIA driver on ``pool``'s nodes."""
    return OPERATOR_DRIVER_ROOT if pool.driver == "none" else HOST_DRIVER_ROOT


def dra_device_classes_problems(
    args: DraDeviceClassesArgs, pools: Sequence[GpuPool], kubernetes_version: str | None
) -> list[FieldProblem]:
    """Every combination of ``args`` and ``pools`` that double-installs or never works; empty if none."""
    problems = kubernetes_version_problems(kubernetes_version)
    if not pools:
        return [*problems, FieldProblem("pools", [], "give at least one NVIDIA GPU pool")]
    mixed = len({driver_root(pool) for pool in pools}) > 1
    if mixed:
        # Per-pool driver advice would contradict itself: whatever fits one pool is wrong for the other.
        why = (
            "mixes AKS-installed and operator-installed drivers; the DRA driver has one driver root, and no single "
            "gpu_operator setting suits both. Use one driver strategy for DRA pools"
        )
        problems.append(FieldProblem("pools", sorted(p.pool_name for p in pools), why))
    for pool in pools:
        problems += _pool_problems(pool, args.gpu_operator, driver_advice=not mixed)
    why = "AKS's device plugin already advertises a managed GPU pool's GPUs; the DRA driver beside it would hand them out twice"
    problems += [FieldProblem("pools", p.pool_name, why) for p in pools if p.gpu_management == "managed"]
    operator = args.gpu_operator
    if operator and operator.device_plugin and args.install_driver:
        why = (
            "the DRA driver already advertises these GPUs; the device plugin beside it would hand one GPU to two pods. "
            "Keep device_plugin false, or set install_driver false"
        )
        problems.append(FieldProblem("gpu_operator.device_plugin", True, why))
    largest = max((p.gpus_per_node for p in pools if p.gpu_resource_name == NVIDIA_GPU), default=0)
    too_many = [n for n in args.gpu_counts if n > largest]
    if too_many:
        why = f"no pool has that many whole GPUs per node (largest: {largest})"
        problems.append(FieldProblem("gpu_counts", too_many, why))
    return problems


def _pool_problems(pool: GpuPool, operator: GpuOperatorArgs | None, driver_advice: bool) -> list[FieldProblem]:
    sku, name = pool.sku, pool.pool_name
    if sku.gpu_vendor != "nvidia":
        why = f"{sku.name} has {sku.gpu_vendor.upper()} GPUs; the NVIDIA DRA driver serves NVIDIA GPUs only"
        # The other checks are about NVIDIA's driver, which this pool never gets.
        return [FieldProblem("pools", name, why)]
    problems = []
    if driver_advice:
        problems += _driver_problems(pool, operator)
    if is_mig_resource(pool.gpu_resource_name) and operator and operator.mig_strategy == "single":
        why = (
            f"pool {name} is MIG-partitioned; 'single' advertises its slices as nvidia.com/gpu, next to whole GPUs "
            "elsewhere. Use 'mixed'"
        )
        problems.append(FieldProblem("gpu_operator.mig_strategy", "single", why))
    return problems


def _driver_problems(pool: GpuPool, operator: GpuOperatorArgs | None) -> list[FieldProblem]:
    """Two drivers on one node, or none at all."""
    operator_driver = bool(operator and operator.driver)
    if pool.driver == "aks" and operator_driver:
        why = (
            f"pool {pool.pool_name} already gets its driver from AKS (driver 'aks'); two drivers on one node break both. "
            "Set gpu_operator.driver false, or create the pool with driver 'none'"
        )
        return [FieldProblem("gpu_operator.driver", True, why)]
    if pool.driver == "none" and not operator_driver:
        why = f"pool {pool.pool_name} has driver 'none', so nothing installs its NVIDIA driver"
        if operator is not None:  # the operator is there, told not to install the driver
            return [FieldProblem("gpu_operator.driver", False, f"{why}; set gpu_operator.driver true")]
        return [FieldProblem("gpu_operator", None, f"{why}; add gpu_operator (driver true)")]
    return []
