"""The one source of facts about Azure GPU VM sizes.

Components, policies and the planner read sizes from here; nothing else hard-codes a SKU.
The data lives in ``gpu_sizes.json`` beside this module, each row with its ``source``; list prices per
region are ``vm_prices``' (re-exported here).
This module imports nothing from Pulumi so that ``aks-gpu scan`` stays fast.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from datetime import date
from functools import cache
from pathlib import Path

from .vm_prices import HOURS_PER_MONTH as HOURS_PER_MONTH
from .vm_prices import REFERENCE_REGION as REFERENCE_REGION
from .vm_prices import no_price as no_price
from .vm_prices import price_known as price_known
from .vm_prices import price_regions as price_regions
from .vm_prices import price_snapshot as price_snapshot
from .vm_prices import price_source as price_source
from .vm_prices import regions_selling as regions_selling
from .vm_prices import vm_price as vm_price

MIG_INSTANCE_PROFILES = ("MIG1g", "MIG2g", "MIG3g", "MIG4g", "MIG7g")
"""The values AKS accepts for an agent pool's ``gpuInstanceProfile``."""

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
    ib_write_bw_gbps: float | None = None
    """ib_write_bw's average on one NIC where a measurement on Azure is published and falls well short of the line
    rate (``infiniband_gbps``); the qualification gate's bar is taken from it then."""
    rack_size: int | None = None
    """VMs in one rack-scale NVLink domain (an NVL72 rack: 18 GB-series VMs), or None for sizes whose NVLink ends at
    the VM. Such a size's VMs are placed in Azure interconnect groups, one subgroup per rack."""
    price_usd_per_hour: float | None = None
    """List price in ``REFERENCE_REGION``; a stack's region: ``vm_price(name, region)``."""
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


DATA_FILE = Path(__file__).with_name("gpu_sizes.json")
"""The GPU sizes' facts (prices per region are in ``vm_prices.json``, generated by ``tools/azure_region_data.py``)."""


@cache
def _data() -> dict:
    return json.loads(DATA_FILE.read_text())


@cache
def skus() -> dict[str, GpuSku]:
    """Every GPU size in the catalog, by exact name."""
    data, snapshot = _data(), price_snapshot(REFERENCE_REGION)
    result = {}
    for row in data["sizes"]:
        row = dict(row)
        mig = row.get("mig")
        row["mig_profiles"] = dict(data["mig_profiles"][mig]) if mig else {}
        hourly = vm_price(row["name"], REFERENCE_REGION)
        if hourly is not None:
            row.update(price_usd_per_hour=hourly, price_date=snapshot["date"], price_source=snapshot["source"])
        result[row["name"]] = GpuSku(**row)
    return result


def is_retired(sku: GpuSku) -> bool:
    """Whether a size is retired: by the catalog's ``retired`` date or, as of today, by the lifecycle table."""
    if sku.retired:
        return True
    from . import lifecycle  # imports nothing back; the table has dated VM size retirements

    status = lifecycle.status("vm_size", sku.name, date.today())
    return status is not None and status.state == "retired"


def close_sizes(vm_size: str, names: list[str] | None = None, n: int = 3) -> list[str]:
    """Current catalog sizes (never a retired one) whose names are close to ``vm_size``, closest first."""
    return difflib.get_close_matches(vm_size, names if names is not None else current_sizes(), n=n, cutoff=0.75)


def get_sku(vm_size: str) -> GpuSku:
    """Look up a GPU size by name; the error says why a name is not one and suggests close current
    names (a retired size is never suggested: it cannot be created)."""
    catalog = skus()
    if vm_size in catalog:
        return catalog[vm_size]
    current = current_sizes()
    by_lower = {name.lower(): name for name in current}
    if vm_size.lower() in by_lower:
        raise UnknownVmSizeError(
            f"{vm_size!r} is not a known size; did you mean {by_lower[vm_size.lower()]!r}? (names are case-sensitive)"
        )
    close = close_sizes(vm_size, current)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    try:
        family = parse_vm_size(vm_size).family
    except ValueError:
        family = ""
    if family and not family.startswith("N"):
        return_msg = f"{vm_size!r} is not a GPU VM size (GPU sizes are N-series: NC, ND, NV){hint}"
    else:
        return_msg = f"{vm_size!r} is not a GPU size in the catalog{hint}; known sizes: {', '.join(current)}"
    raise UnknownVmSizeError(return_msg)


def get_current_sku(vm_size: str) -> GpuSku:
    """Like ``get_sku``, but a retired size is an error too (it cannot scale out or be created)."""
    sku = get_sku(vm_size)
    if is_retired(sku):
        when = f" on {sku.retired}" if sku.retired else ""
        why = f" ({sku.retired_note})" if sku.retired_note else ""
        similar = [s for s in close_sizes(vm_size, n=2) if s != vm_size] or ["Standard_NC24ads_A100_v4"]
        raise UnknownVmSizeError(f"{vm_size} was retired{when}{why}; choose a current size such as {' or '.join(similar)}")
    return sku


def gpu_has_nvlink(gpu_model: str) -> bool | None:
    """Whether some catalog size joins this GPU model's GPUs with NVLink (True), none does (False), or the catalog
    does not know the model (None)."""
    sizes = [sku for sku in skus().values() if sku.gpu_model == gpu_model]
    return any(sku.nvlink and "NVLink" in sku.nvlink for sku in sizes) if sizes else None


def node_arch(vm_size: str) -> str:
    """The CPU architecture of a node of any size as Kubernetes labels it (``kubernetes.io/arch``): the catalog's for
    GPU sizes (the GB-series are NVIDIA Grace, arm64), else Azure's ``p`` capability letter (Ampere Altra and Cobalt
    sizes, ``Standard_D8pds_v5``) for arm64."""
    sku = skus().get(vm_size)
    if sku is not None:
        return "arm64" if sku.arch == "arm64" else "amd64"
    try:
        return "arm64" if "p" in parse_vm_size(vm_size).capabilities else "amd64"
    except ValueError:
        return "amd64"


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
    return sorted(name for name, sku in skus().items() if sku.mig_capable and not is_retired(sku))


def current_sizes() -> list[str]:
    """Sizes that are not retired, sorted by name."""
    return sorted(name for name, sku in skus().items() if not is_retired(sku))


def control_plane_usd_per_hour(tier: str) -> float:
    """Hourly fee of the AKS control plane for a pricing tier (Free, Standard, Premium)."""
    fees = _data()["aks_control_plane"]["usd_per_hour"]
    if tier not in fees:
        raise ValueError(f"{tier!r} is not an AKS pricing tier; accepted: {', '.join(fees)}")
    return fees[tier]


def control_plane_source() -> str:
    return _data()["aks_control_plane"]["source"]


@cache
def _azure_vm_sizes() -> dict:
    return json.loads(Path(__file__).with_name("azure_vm_sizes.json").read_text())


def azure_vm_sizes() -> frozenset[str]:
    """Every VM size name Azure offers in some region (``azure_vm_sizes.json``, with its source)."""
    return frozenset(_azure_vm_sizes()["sizes"])


def _active_vcpus(vm_size: str) -> int | None:
    """vCPUs of a size from its name; a constrained size (``Standard_E8-2ds_v5``) counts its active ones."""
    constrained = re.match(r"^Standard_[A-Z]+\d+-(\d+)", vm_size)
    if constrained:
        return int(constrained[1])
    try:
        return parse_vm_size(vm_size).vcpus
    except ValueError:
        return None


def node_size_problem(vm_size: str, system: bool = False) -> str | None:
    """Why AKS would refuse ``vm_size`` for a node pool (a system pool if ``system``), or None.

    Unknown names are judged against ``azure_vm_sizes.json`` (the Resource SKUs API's names in every
    region); suggestions are close names there, never a retired or AKS-restricted size.
    """
    data = _azure_vm_sizes()
    restricted = set(data["aks_restricted"]["sizes"])
    gpu = skus().get(vm_size)
    if gpu is not None and is_retired(gpu):
        try:
            get_current_sku(vm_size)
        except UnknownVmSizeError as err:
            return str(err)
    if vm_size in restricted:
        return f"AKS does not allow {vm_size} in node pools (too small to run a node); use e.g. Standard_D4ds_v5"
    known = azure_vm_sizes()
    if vm_size not in known:
        retired = {name for name, sku in skus().items() if is_retired(sku)}
        candidates = sorted(known - restricted - retired)
        by_lower = {name.lower(): name for name in candidates}
        if vm_size.lower() in by_lower:
            return f"not a VM size name; did you mean {by_lower[vm_size.lower()]!r}? (names are case-sensitive)"
        close = close_sizes(vm_size, candidates)
        hint = f"did you mean {' or '.join(repr(c) for c in close)}?" if close else "expected e.g. 'Standard_D4ds_v5'"
        return (
            f"not a VM size Azure offers in any region (components/core/azure_vm_sizes.json); {hint} "
            "(if Azure added it after that list was taken, add it there)"
        )
    rule = data["system_pool"]
    vcpus = _active_vcpus(vm_size)
    if system and vm_size.removeprefix("Standard_").startswith(tuple(rule["excluded_families"])):
        return "AKS does not support B-series (burstable) VMs in system pools; use e.g. Standard_D4ds_v5"
    if system and vcpus is not None and vcpus < rule["min_vcpus"]:
        return (
            f"AKS system pools need at least {rule['min_vcpus']} vCPUs and 4 GB of memory; {vm_size} has {vcpus} vCPUs: "
            "use e.g. Standard_D4ds_v5"
        )
    return None


def rdma_sizes() -> list[str]:
    """The current RDMA-capable sizes of the catalog, for messages that name the alternatives."""
    return sorted(name for name, sku in skus().items() if sku.rdma and not sku.retired)
