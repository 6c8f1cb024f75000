"""Azure resources: the AKS cluster and its GPU pools, workload identities, the model store,
managed Prometheus and Grafana, and Azure OpenAI."""

from .._lazy import exporter

_EXPORTS = {
    "AksCluster": ".aks_cluster",
    "AksClusterArgs": ".aks_cluster_args",
    "SystemPoolArgs": ".aks_cluster_args",
    "PlatformPoolArgs": ".aks_cluster_args",
    "ExistingClusterArgs": ".aks_cluster_args",
    "GpuNodePool": ".gpu_node_pool",
    "GpuNodePoolArgs": ".gpu_node_pool_args",
    "WorkloadIdentity": ".workload_identity",
    "WorkloadIdentityArgs": ".workload_identity",
    "ModelStore": ".model_store",
    "ModelStoreArgs": ".model_store",
    "ManagedPrometheus": ".monitoring",
    "ManagedPrometheusArgs": ".monitoring",
    "AzureOpenAI": ".azure_openai",
    "AzureOpenAIArgs": ".azure_openai",
    "OpenAIDeploymentArgs": ".azure_openai",
    "ManagedGrafana": ".grafana",
    "ManagedGrafanaArgs": ".grafana",
}

__all__ = sorted(_EXPORTS)
__getattr__ = exporter(__name__, _EXPORTS)
