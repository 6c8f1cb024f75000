"""Values as the engine gives them: every number a float (``plain`` gives whole numbers back their int type),
and a Kubernetes resource's inputs as the manifest Pulumi would send (``kubernetes_object``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aks_gpu_inference.planner.engine.program import Registered


def plain(value: Any) -> Any:
    """The engine sends every number as a float; give whole numbers back their int type."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def kubernetes_object(resource: Registered) -> dict[str, Any]:
    """The manifest Pulumi would send to the API server for a Kubernetes resource, in the usual key order
    (``apiVersion``, ``kind``, ``metadata``, then the rest as the program gave them)."""
    inputs = {k: v for k, v in plain(resource.inputs).items() if not k.startswith("__")}
    metadata = inputs.get("metadata") or {}
    first = {"apiVersion": inputs.get("apiVersion"), "kind": inputs.get("kind"), "metadata": {"name": resource.name, **metadata}}
    return {**{k: v for k, v in first.items() if v is not None}, **{k: v for k, v in inputs.items() if k not in first}}
