"""Model serving: vLLM (aggregated or prefill/decode), NVIDIA Dynamo and KAITO workspaces."""

from .._lazy import exporter

_EXPORTS = {
    "KaitoWorkspace": ".kaito_workspace",
    "KaitoWorkspaceArgs": ".kaito_workspace",
    "VllmService": ".vllm_service",
    "VllmServiceArgs": ".vllm_service_args",
    "ActiveHours": ".vllm_service_args",
    "AutoscalingArgs": ".vllm_service_args",
    "DisaggregationArgs": ".vllm_service_args",
    "GpuPlacement": ".vllm_service_args",
    "VllmSecrets": ".vllm_service_args",
    "ScalingMonitor": ".vllm_service_args",
    "AzureServices": ".vllm_service_args",
    "DynamoInference": ".dynamo_inference",
    "DynamoInferenceArgs": ".dynamo_args",
    "DynamoPlatformArgs": ".dynamo_args",
    "DynamoWorkerArgs": ".dynamo_args",
    "DynamoModelCacheArgs": ".dynamo_args",
    "DynamoPlacement": ".dynamo_args",
    "DynamoSecrets": ".dynamo_args",
}

__all__ = sorted(_EXPORTS)
__getattr__ = exporter(__name__, _EXPORTS)
