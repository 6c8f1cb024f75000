"""The one source of facts about Azure GPU VM sizes.

Components, policies and the planner read sizes from here; nothing else hard-codes a SKU.
The data lives in ``gpu_sizes.json`` beside this module, each row with its ``source``.
This module imports nothing from Pulumi so that ``aks-gpu scan`` stays fast.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

MIG_INSTANCE_PROFILES = ("MIG1g", "MIG2g", "MIG3g", "MIG4g", "MIG7g")
"""The values AKS accepts for an agent pool's ``gpuInstanceProfile``."""

HOURS_PER_MONTH = 730
"""Azure's pricing calculator bills a month as 730 hours."""

# Standard_<family><vCPUs>[-<constrained vCPUs>]<capability letters>[<extra>][_<accelerator>...][_v<n>]
# e.g. Standard_ND96isr_H100_v5, Standard_ND96asr_v4, Standard_ND128isrG5_GB300_v6.
_SIZE_NAME = re.compile(
    r"^Standard_(?P<family>[A-Z]+)(?P<vcpus>\d+)(?:-\d+)?(?P<caps>[a-z]*)(?P<extra>[A-Z][A-Za-z0-9]*)?"
    r"(?P<accelerator>(?:_(?!v\d+$)[A-Za-z0-9]+)*)(?:_(?P<version>v\d+))?$"
)


@dataclass(frozen=True)
class VmSizeName:
    """The parts of an Azure VM size name."""

    family: str
    vcpus: int
    capabilities: str
    accelerator: str
    version: str


def parse_vm_size(vm_size: str) -> VmSizeName:
    """Split an Azure VM size name into family, vCPUs, capability letters, accelerator, version.

    Raises ValueError for a name that does not follow Azure's naming convention.
    """
    match = _SIZE_NAME.match(vm_size)
    if not match:
        raise ValueError(f"{vm_size!r} is not an Azure VM size name (expected e.g. 'Standard_ND96isr_H100_v5')")
    return VmSizeName(
        family=match["family"],
        vcpus=int(match["vcpus"]),
        capabilities=match["caps"],
        accelerator=match["accelerator"].lstrip("_"),
        version=match["version"] or "",
    )


@dataclass(frozen=True)
class GpuSku:
    """One Azure GPU VM size and the facts the project needs about it."""

    name: str
    family: str
    vcpus: int
    ram_gib: float
    gpu_model: str
    gpu_vendor: str
    gpus: int
    gpu_memory_gb: float
    source: str
    gpu_fraction: float = 1.0
    mig: str | None = None
    mig_profiles: dict[str, str] = field(default_factory=dict)
    nvlink: str | None = None
    infiniband_nics: int = 0
    infiniband_gbps: int = 0
    rdma: bool = False
    ephemeral_os_disk: bool = True
    arch: str = "x86_64"
    price_usd_per_hour: float | None = None
    price_date: str | None = None
    price_source: str | None = None
    price_note: str | None = None
    retired: str | None = None
    retired_note: str | None = None

    @property
    def product_names(self) -> list[str]:
        """NVML product names the NVIDIA DRA driver publishes for this GPU model (empty for AMD)."""
        return list(_data()["nvidia_product_names"].get(self.gpu_model, []))

    @property
    def mig_capable(self) -> bool:
        return bool(self.mig_profiles)

    @property
    def resource_name(self) -> str:
        """The extended resource the vendor's device plugin advertises for a whole GPU."""
        return "amd.com/gpu" if self.gpu_vendor == "amd" else "nvidia.com/gpu"

    @property
    def total_gpu_memory_gb(self) -> float:
        return self.gpus * self.gpu_memory_gb

    def monthly_price_usd(self) -> float | None:
        """List price for one node running all month, or None when the catalog has no price."""
        if self.price_usd_per_hour is None:
            return None
        return self.price_usd_per_hour * HOURS_PER_MONTH

    def gpu_resource(self, mig_profile: str | None = None) -> tuple[str, int]:
        """The extended resource a node of this size advertises and how many per node.

        With a MIG instance profile, AKS partitions every GPU uniformly, so the node advertises
        ``nvidia.com/mig-<slice>`` (mixed strategy) and no whole ``nvidia.com/gpu``.
        """
        if mig_profile is None:
            return self.resource_name, self.gpus
        return mig_resource_name(self.name, mig_profile), self.gpus * mig_slices_per_gpu(mig_profile)


class UnknownVmSizeError(ValueError):
    """Raised for a VM size that the catalog does not know as a GPU size."""


@cache
def _data() -> dict:
    return json.loads(Path(__file__).with_name("gpu_sizes.json").read_text())


@cache
def skus() -> dict[str, GpuSku]:
    """Every GPU size in the catalog, by exact name."""
    data = _data()
    prices = data["prices"]
    result = {}
    for row in data["sizes"]:
        row = dict(row)
        mig = row.get("mig")
        row["mig_profiles"] = dict(data["mig_profiles"][mig]) if mig else {}
        if row.get("price_usd_per_hour") is not None:
            row["price_date"] = prices["date"]
            row["price_source"] = f"{prices['source']}, region {prices['region']}"
        result[row["name"]] = GpuSku(**row)
    return result


def get_sku(vm_size: str) -> GpuSku:
    """Look up a GPU size by name; the error says why a name is not one and suggests close names."""
    catalog = skus()
    if vm_size in catalog:
        return catalog[vm_size]
    by_lower = {name.lower(): name for name in catalog}
    if vm_size.lower() in by_lower:
        raise UnknownVmSizeError(
            f"{vm_size!r} is not a known size; did you mean {by_lower[vm_size.lower()]!r}? (names are case-sensitive)"
        )
    close = difflib.get_close_matches(vm_size, catalog, n=3, cutoff=0.75)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    try:
        family = parse_vm_size(vm_size).family
    except ValueError:
        family = ""
    if family and not family.startswith("N"):
        return_msg = f"{vm_size!r} is not a GPU VM size (GPU sizes are N-series: NC, ND, NV){hint}"
    else:
        return_msg = f"{vm_size!r} is not a GPU size in the catalog{hint}; known sizes: {', '.join(sorted(catalog))}"
    raise UnknownVmSizeError(return_msg)


def get_current_sku(vm_size: str) -> GpuSku:
    """Like ``get_sku``, but a retired size is an error too (it cannot scale out or be created)."""
    sku = get_sku(vm_size)
    if sku.retired:
        raise UnknownVmSizeError(
            f"{vm_size} was retired on {sku.retired} ({sku.retired_note}); choose a current size such as Standard_NC24ads_A100_v4"
        )
    return sku


def is_rdma_capable(vm_size: str) -> bool:
    """Whether a size has an RDMA (InfiniBand) back-end network.

    Azure marks RDMA with a lower-case ``r`` among the capability letters after the vCPU count
    (``ND96isr``, ``ND96asr``, ``ND96amsr``); "Standard" also contains an r, so the name must be
    parsed. Catalog rows are authoritative; unknown sizes fall back to the parse.
    """
    sku = skus().get(vm_size)
    if sku is not None:
        return sku.rdma
    try:
        return "r" in parse_vm_size(vm_size).capabilities
    except ValueError:
        return False


def mig_slices_per_gpu(mig_profile: str) -> int:
    """How many instances AKS creates per GPU for a ``gpuInstanceProfile`` (uniform layout)."""
    slices = _data()["mig_slices_per_gpu"]
    if mig_profile not in slices:
        raise ValueError(f"{mig_profile!r} is not a MIG instance profile; accepted: {', '.join(MIG_INSTANCE_PROFILES)}")
    return slices[mig_profile]


def mig_resource_name(vm_size: str, mig_profile: str) -> str:
    """The device-plugin resource (mixed strategy) for a MIG profile on a size, e.g. ``nvidia.com/mig-1g.10gb``."""
    sku = get_sku(vm_size)
    if not sku.mig_capable:
        raise ValueError(f"{vm_size} ({sku.gpu_model}) does not support MIG; MIG sizes: {', '.join(mig_capable_sizes())}")
    mig_slices_per_gpu(mig_profile)
    return f"nvidia.com/mig-{sku.mig_profiles[mig_profile]}"


def mig_capable_sizes() -> list[str]:
    return sorted(name for name, sku in skus().items() if sku.mig_capable and not sku.retired)


def current_sizes() -> list[str]:
    """Sizes that are not retired, sorted by name."""
    return sorted(name for name, sku in skus().items() if not sku.retired)


def control_plane_usd_per_hour(tier: str) -> float:
    """Hourly fee of the AKS control plane for a pricing tier (Free, Standard, Premium)."""
    fees = _data()["aks_control_plane"]["usd_per_hour"]
    if tier not in fees:
        raise ValueError(f"{tier!r} is not an AKS pricing tier; accepted: {', '.join(fees)}")
    return fees[tier]


def control_plane_source() -> str:
    return _data()["aks_control_plane"]["source"]


def price_snapshot() -> dict[str, str]:
    """Date, region and source of the catalog's GPU list prices."""
    return dict(_data()["prices"])
