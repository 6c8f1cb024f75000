"""Local disks of VM sizes and the largest ephemeral OS disk AKS can put on them.

The data lives in ``vm_disks.json`` beside this module, one sourced row per size. This module
imports nothing from Pulumi.

The rule (``rules`` in ``vm_disks.json``):

- An ephemeral OS disk sits on the VM's local storage: the cache disk on older sizes that have one
  (AKS then judges by the cache, not the temp disk), otherwise the temp (resource) disk (Ddsv5,
  Dadsv5, most GPU sizes), otherwise NVMe disks on v6+ series.
- It can be at most that disk's size or 2,040 GiB, whichever is smaller. Trusted Launch and
  confidential VMs keep 1 GiB of it for the VM guest state.
- With no OS disk size given, AKS sizes the ephemeral OS disk to the temp storage when that is at
  least 128 GiB (``Standard_D8ds_v5`` -> 300 GiB); a size larger than the local disk makes AKS
  fall back to a managed OS disk, or fail if Ephemeral was requested.

Sources: azure-aks-docs ``articles/aks/concepts-storage.md``; azure-compute-docs
``articles/virtual-machines/ephemeral-os-disks.md``; the AKS 2025-10-01 API (``osDiskSizeGB`` 0..2048).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

Placement = Literal["cache", "temp", "nvme"]

_PATH = Path(__file__).with_name("vm_disks.json")
_GIB_PER_TIB = 1024
AKS_DEFAULT_EPHEMERAL_MIN_TEMP_GIB = 128
"""AKS sizes a default ephemeral OS disk to the temp storage only when that is at least this large."""


@dataclass(frozen=True)
class VmDisks:
    """The local disks of one VM size."""

    name: str
    cache_gib: int | None
    temp_gib: int | None
    temp_disks: int
    nvme_disks: int
    nvme_total_gib: int | None
    ephemeral_os_disk: bool
    source: str
    verified: bool
    note: str = ""

    @property
    def placement(self) -> Placement | None:
        """Where an ephemeral OS disk goes on this size, or None if it cannot have one."""
        if not self.ephemeral_os_disk:
            return None
        if self.cache_gib:
            return "cache"
        if self.temp_gib:
            return "temp"
        if self.nvme_total_gib:
            return "nvme"
        return None


@cache
def _table() -> dict[str, Any]:
    data = json.loads(_PATH.read_text())
    for key in ("max_gib", "source"):
        if key not in data["rules"]:
            raise ValueError(f"vm_disks.json: rules.{key} is missing")
    names = set()
    for row in data["sizes"]:
        name = row.get("name", "?")
        if not row.get("source"):
            raise ValueError(f"vm_disks.json: {name}: every row needs a source")
        if name in names:
            raise ValueError(f"vm_disks.json: {name}: duplicate row")
        names.add(name)
        for key in ("cache_gib", "temp_gib"):
            if row.get(key) is not None and (not isinstance(row[key], int) or row[key] <= 0):
                raise ValueError(f"vm_disks.json: {name}: {key} must be a positive integer or null")
    return data


MAX_EPHEMERAL_OS_DISK_GIB: int = _table()["rules"]["max_gib"]
"""Azure's cap on an ephemeral OS disk, whatever the local disk size."""


def _row(row: dict[str, Any]) -> VmDisks:
    nvme = row.get("nvme") or {}
    total_tib = nvme.get("total_tib")
    return VmDisks(
        name=row["name"],
        cache_gib=row.get("cache_gib"),
        temp_gib=row.get("temp_gib"),
        temp_disks=row.get("temp_disks", 1 if row.get("temp_gib") else 0),
        nvme_disks=nvme.get("disks", 0),
        nvme_total_gib=None if total_tib is None else int(total_tib * _GIB_PER_TIB),
        ephemeral_os_disk=row["ephemeral_os_disk"],
        source=row["source"],
        verified=row["verified"],
        note=row.get("note", ""),
    )


@cache
def sizes() -> dict[str, VmDisks]:
    """Every VM size in ``vm_disks.json`` by name."""
    return {row["name"]: _row(row) for row in _table()["sizes"]}


def disks(vm_size: str) -> VmDisks:
    """The local disks of ``vm_size``; KeyError naming the known sizes if it is not in the table."""
    try:
        return sizes()[vm_size]
    except KeyError:
        raise KeyError(f"{vm_size!r} is not in vm_disks.json (known: {', '.join(sorted(sizes()))})") from None


def _placement_gib(info: VmDisks) -> int | None:
    if info.placement == "cache":
        return info.cache_gib
    if info.placement == "temp":
        assert info.temp_gib is not None
        # One resource disk holds the OS disk; several temp disks split the total.
        return info.temp_gib // max(info.temp_disks, 1)
    if info.placement == "nvme":
        return info.nvme_total_gib
    return None


def max_ephemeral_os_disk_gib(vm_size: str, *, trusted_launch: bool = False) -> int | None:
    """The largest ephemeral OS disk (GiB) ``vm_size`` can hold, or None if it cannot have one.

    Rule: the disk goes on the cache disk if the size has one, else the temp (resource) disk,
    else NVMe disks (v6+); it is limited to that disk's size and to 2,040 GiB, and Trusted Launch
    keeps 1 GiB back. Sources: azure-compute-docs ``ephemeral-os-disks.md`` and azure-aks-docs
    ``concepts-storage.md`` (cited in ``vm_disks.json``). Rows with ``verified`` false (e.g. the
    GB200/GB300 sizes, whose local-disk units are unclear) give a best reading, not a fact.
    """
    local = _placement_gib(disks(vm_size))
    if local is None:
        return None
    size = min(local, MAX_EPHEMERAL_OS_DISK_GIB)
    return size - 1 if trusted_launch else size


def default_ephemeral_os_disk_gib(vm_size: str) -> int | None:
    """The ephemeral OS disk size AKS picks when no OS disk size is given, or None when AKS's
    documented default does not apply (no ephemeral support, or under 128 GiB of temp storage)."""
    info = disks(vm_size)
    if info.placement != "temp" or info.temp_gib is None or info.temp_gib < AKS_DEFAULT_EPHEMERAL_MIN_TEMP_GIB:
        return None
    return max_ephemeral_os_disk_gib(vm_size)


def rules() -> dict[str, Any]:
    """The sourced placement and sizing rules from ``vm_disks.json``."""
    return dict(_table()["rules"])


DEFAULT_OS_DISK_GB = 128
"""AKS's OS disk size when none is given (azure-aks-docs concepts-storage, ephemeral OS disk)."""


def ephemeral_limit_gib(vm_size: str) -> int | None:
    """The largest ephemeral OS disk ``vm_size`` holds, or None where the disk table does not know the size."""
    return max_ephemeral_os_disk_gib(vm_size) if vm_size in sizes() else None
