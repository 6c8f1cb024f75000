"""aks-gpu-inference components: Pulumi ComponentResources for GPU inference on AKS.

Exports are loaded on first use, so ``from components import catalog`` (the command line's scan
and fit paths) does not import the Pulumi SDKs.
"""

from importlib import import_module

_EXPORTS = {
    "AksCluster": ".aks_cluster",
    "AksClusterArgs": ".aks_cluster",
    "SystemPoolArgs": ".aks_cluster",
    "ExistingClusterArgs": ".aks_cluster",
    "GpuNodePool": ".gpu_node_pool",
    "GpuNodePoolArgs": ".gpu_node_pool",
    "NvidiaDevicePlugin": ".device_plugin",
    "NvidiaDevicePluginArgs": ".device_plugin",
    "DraDeviceClasses": ".dra_device_classes",
    "DraDeviceClassesArgs": ".dra_device_classes",
    "GpuOperatorArgs": ".dra_device_classes",
    "RdmaNetwork": ".rdma_network",
    "RdmaNetworkArgs": ".rdma_network",
    "RdmaPodSpec": ".pod_contract",
    "QualificationGates": ".qualification_gates",
    "QualificationGatesArgs": ".qualification_gates",
    "WorkloadIdentity": ".workload_identity",
    "WorkloadIdentityArgs": ".workload_identity",
    "ModelStore": ".model_store",
    "ModelStoreArgs": ".model_store",
    "ManagedPrometheus": ".monitoring",
    "ManagedPrometheusArgs": ".monitoring",
    "KaitoWorkspace": ".kaito_workspace",
    "KaitoWorkspaceArgs": ".kaito_workspace",
    "VllmService": ".vllm_service",
    "VllmServiceArgs": ".vllm_service",
    "AzureOpenAI": ".azure_openai",
    "AzureOpenAIArgs": ".azure_openai",
    "AiGateway": ".ai_gateway",
    "AiGatewayArgs": ".ai_gateway",
    "GatewayBackend": ".ai_gateway",
    "SemanticRouter": ".semantic_router",
    "RouterConfigArgs": ".router_config",
    "EntraTokenRefresher": ".token_refresher",
    "TraceCollector": ".tracing",
    "TracingEndpoint": ".ai_gateway",
    "ManagedGrafana": ".grafana",
    "ManagedGrafanaArgs": ".grafana",
    "SemanticRouterGateway": ".semantic_router_gateway",
    "SemanticRouterGatewayArgs": ".semantic_router_gateway",
    "StackConfig": ".config",
    "load_stack_config": ".stack",
    "ConfigError": ".errors",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'components' has no attribute {name!r}")
    return getattr(import_module(_EXPORTS[name], __name__), name)
