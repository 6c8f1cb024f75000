"""The agent pools a run registers, whichever way: an ``AgentPool`` of the SDK's API version, or the generic ARM
resource an AKS-managed GPU pool needs (its preview API version is beyond the SDK's)."""

from __future__ import annotations

from typing import Any

from aks_gpu_inference.planner.engine.program import Registered


def agent_pool(record: Registered) -> tuple[str, dict[str, Any]] | None:
    """(pool name, its ARM properties) of a standalone agent pool; None for any other resource."""
    if record.type.startswith("azure-native:containerservice") and record.type.endswith(":AgentPool"):
        inputs = record.inputs
        return str(inputs.get("agentPoolName", record.name)), inputs
    inputs = record.inputs
    generic = (
        record.type == "azure-native:resources:Resource"
        and str(inputs.get("resourceProviderNamespace", "")).lower() == "microsoft.containerservice"
        and str(inputs.get("resourceType", "")).lower() == "agentpools"
    )
    if not generic:
        return None
    return str(inputs.get("resourceName", record.name)), inputs.get("properties") or {}


def aks_managed_gpus(props: dict[str, Any]) -> bool:
    """AKS's managed GPU experience: AKS itself runs the device plugin and DCGM on the pool's nodes."""
    return (props.get("gpuProfile") or {}).get("nvidia", {}).get("managementMode") == "Managed"
