"""Model serving: vLLM (aggregated or prefill/decode) and KAITO workspaces."""

from .._lazy import exporter

_EXPORTS = {
    "KaitoWorkspace": ".kaito_workspace",
    "KaitoWorkspaceArgs": ".kaito_workspace",
    "VllmService": ".vllm_service",
    "VllmServiceArgs": ".vllm_service",
}

__all__ = sorted(_EXPORTS)
__getattr__ = exporter(__name__, _EXPORTS)
