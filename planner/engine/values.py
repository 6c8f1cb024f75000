"""Values as the engine gives them: every number a float (``plain`` gives whole numbers back their int type),
and a Kubernetes resource's inputs as the manifest Pulumi would send (``kubernetes_object``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from planner.engine.program import Registered


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
    """The manifest Pulumi would send to the API server for a Kubernetes resource."""
    obj = {k: v for k, v in plain(resource.inputs).items() if not k.startswith("__")}
    metadata = obj.setdefault("metadata", {})
    metadata.setdefault("name", resource.name)
    return obj
