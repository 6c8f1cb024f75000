"""The memory each catalog GPU reports to CUDA (``gpu_memory.json`` beside this module, one source per row),
which is the budget the fit starts from, and the memory of a MIG slice by its name."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from .model_facts import GB, GIB


@cache
def gpu_memory_table() -> dict[str, dict]:
    """``gpu_memory.json``: per catalog ``gpu_model``, the memory the device reports (``device_gib``) and its source."""
    return json.loads(Path(__file__).with_name("gpu_memory.json").read_text())["gpus"]


def device_memory_gib(gpu_model: str, catalog_gb: float, gpu_fraction: float = 1.0) -> float:
    """GiB a GPU of the catalog reports to CUDA: ``gpu_memory.json``, scaled by a vGPU's share; without a
    published figure, the catalog's GB read as 1e9 bytes (which is less than any HBM GPU reports)."""
    row = gpu_memory_table().get(gpu_model)
    if row is None:
        return catalog_gb * GB / GIB
    return row["device_gib"] * gpu_fraction


def mig_slice_gb(slice_name: str) -> float:
    """Memory of a MIG slice from its name: ``"1g.10gb"`` -> 10."""
    return float(slice_name.rsplit(".", 1)[1].removesuffix("gb"))
