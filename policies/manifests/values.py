"""The walk every rule and check takes through a manifest: values that may be unknown during a preview,
mappings and sequences stepped through without a KeyError, and the GPU look of a VM size the catalog lacks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aks_gpu_inference.components.core import catalog


class _Unknown:
    """A value the engine will only know after deployment (Pulumi preview)."""

    def __repr__(self) -> str:
        return "<unknown during preview>"


UNKNOWN = _Unknown()


def is_unknown(value: Any) -> bool:
    return value is UNKNOWN


def get(obj: Any, *path: str | int, default: Any = None) -> Any:
    """Walk mappings and sequences; a missing step gives ``default``, an unknown one ``UNKNOWN``."""
    for step in path:
        if is_unknown(obj):
            return UNKNOWN
        if isinstance(step, int):
            if not isinstance(obj, Sequence) or isinstance(obj, str) or step >= len(obj):
                return default
            obj = obj[step]
        else:
            if not isinstance(obj, Mapping) or step not in obj:
                return default
            obj = obj[step]
    return obj


def items(value: Any) -> list[Any]:
    """A sequence as a list; anything else (missing, unknown) as empty."""
    return list(value) if isinstance(value, Sequence) and not isinstance(value, str) else []


def looks_gpu(vm_size: str) -> bool:
    """Whether a size outside the catalog names a GPU family (NC, ND, NV, NCC, NG)."""
    try:
        return catalog.parse_vm_size(vm_size).family in ("NC", "ND", "NV", "NCC", "NG")
    except ValueError:
        return False
