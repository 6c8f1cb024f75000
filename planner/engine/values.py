"""Values as the engine gives them: every number a float (``plain`` gives whole numbers back their int type, once,
as ``program`` records them), and a Kubernetes resource's inputs as the manifest Pulumi would send
(``kubernetes_object``)."""

from __future__ import annotations

from typing import Any, Protocol


class Recorded(Protocol):
    """A resource as the plan recorded it (``program.Registered``); a protocol, so ``program`` may import this module."""

    name: str
    inputs: dict[str, Any]


def plain(value: Any) -> Any:
    """The engine sends every number as a float; give whole numbers back their int type."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def kubernetes_object(resource: Recorded) -> dict[str, Any]:
    """The manifest Pulumi would send to the API server for a Kubernetes resource, in the usual key order
    (``apiVersion``, ``kind``, ``metadata``, then the rest as the program gave them)."""
    inputs = {k: v for k, v in resource.inputs.items() if not k.startswith("__")}
    metadata = inputs.get("metadata") or {}
    first = {"apiVersion": inputs.get("apiVersion"), "kind": inputs.get("kind"), "metadata": {"name": resource.name, **metadata}}
    return {**{k: v for k, v in first.items() if v is not None}, **{k: v for k, v in inputs.items() if k not in first}}
