"""Baseline for bench/plan_bench.py: the stack's raw resources registered directly, as a hand-written
Pulumi program would. Same config (PULUMI_CONFIG and its secrets), same resource names and inputs as the
components, but no ComponentResources, no pydantic validation, no catalog and no memory fit: GPU and model
facts are written down here, for the sizes and models the bench's stacks use."""

import base64
import json
import math
import os
import re
from pathlib import Path

import pulumi
import pulumi_kubernetes as k8s
import yaml
from pulumi_azure_native import (
    applicationinsights,
    authorization,
    cognitiveservices,
    containerservice,
    dashboard,
    managedidentity,
    monitor,
    operationalinsights,
    resources,
    storage,
)

from components import router_config

AKS_RBAC_CLUSTER_ADMIN_ROLE = "b1ff04bb-8a4e-4dc4-8eb5-8693973ce19b"
STORAGE_BLOB_DATA_READER_ROLE = "2a2b9908-6ea1-4ae2-8e65-a410df84e7d1"
MONITORING_DATA_READER_ROLE = "b0d8363b-8ddd-447d-831f-62ca05bff136"
GPU_TAINT = "sku=gpu:NoSchedule"
SPOT_TAINT = "kubernetes.azure.com/scalesetpriority=spot:NoSchedule"
GPU_TOLERATION = {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
SPOT_TOLERATION = {"key": "kubernetes.azure.com/scalesetpriority", "operator": "Equal", "value": "spot", "effect": "NoSchedule"}
AGENTPOOL_LABEL = "kubernetes.azure.com/agentpool"
PROMETHEUS_STREAM = "Microsoft-PrometheusMetrics"
MIG_80GB = {
    "MIG1g": ("1g.10gb", 7),
    "MIG2g": ("2g.20gb", 3),
    "MIG3g": ("3g.40gb", 2),
    "MIG4g": ("4g.40gb", 1),
    "MIG7g": ("7g.80gb", 1),
}
MIG_94GB = {
    "MIG1g": ("1g.12gb", 7),
    "MIG2g": ("2g.24gb", 3),
    "MIG3g": ("3g.47gb", 2),
    "MIG4g": ("4g.47gb", 1),
    "MIG7g": ("7g.94gb", 1),
}
# vm size -> (accelerator label, gpu model label, GPUs per node, MIG profile -> (slice, slices per GPU));
# every size here supports ephemeral OS disks.
GPU_SIZES = {
    "Standard_NC4as_T4_v3": ("nvidia-t4", "T4", 1, {}),
    "Standard_NC24ads_A100_v4": ("nvidia-a100", "A100-80GB", 1, MIG_80GB),
    "Standard_NC40ads_H100_v5": ("nvidia-h100", "H100-NVL-94GB", 1, MIG_94GB),
    "Standard_ND96isr_H100_v5": ("nvidia-h100", "H100-80GB", 8, MIG_80GB),
}
# vm size -> list price in USD per hour (the catalog's), for the router's cost per 1M self-hosted tokens.
GPU_PRICE_USD_PER_HOUR = {
    "Standard_NC24ads_A100_v4": 3.673,
    "Standard_NC40ads_H100_v5": 6.98,
    "Standard_ND96isr_H100_v5": 98.32,
}
# Azure OpenAI model -> (default version, USD per 1M prompt tokens, USD per 1M completion tokens).
OPENAI_MODELS = {
    "gpt-4o": ("2024-11-20", 2.50, 10.00),
    "gpt-4.1": ("2025-04-14", 2.00, 8.00),
    "gpt-4o-mini": ("2024-07-18", 0.15, 0.60),
}
OPENAI_USER_ROLE = "5e0bd9bd-7b93-4f28-af87-19fc36ad61bd"
GRAFANA_ADMIN_ROLE = "22926164-76b3-42b3-bc55-97df8dab3e41"
GRAFANA_VIEWER_ROLE = "60921a7e-fef1-4a43-9b16-a26c52ad4769"
COLLECTOR_CONFIG = {
    "receivers": {"otlp": {"protocols": {"grpc": {"endpoint": "0.0.0.0:4317"}}}},
    "processors": {"batch": {}},
    "exporters": {"azuremonitor": {"connection_string": "${env:APPLICATIONINSIGHTS_CONNECTION_STRING}"}},
    "service": {"pipelines": {"traces": {"receivers": ["otlp"], "processors": ["batch"], "exporters": ["azuremonitor"]}}},
}
REFRESH_SCRIPT = Path(__file__).resolve().parent.parent / "components" / "refresher" / "refresh_token.py"
# Hugging Face id -> weights in GB (bfloat16 checkpoint), for the startup budget and the streamer's concurrency.
MODEL_WEIGHTS_GB = {"meta-llama/Llama-3.1-8B-Instruct": 16.06}

project = pulumi.get_project()
raw = json.loads(os.environ["PULUMI_CONFIG"])
config = {k[len(project) + 1 :]: json.loads(v) if v[:1] in "{[" else v for k, v in raw.items() if k.startswith(f"{project}:")}
location = config["location"]
tags = {"managed-by": "aks-gpu-inference", **config.get("tags", {})}
cluster_cfg = config["cluster"]
system = {"name": "system", "vm_size": "Standard_D4ds_v5", "count": 2, **cluster_cfg.get("system_pool", {})}
name = cluster_cfg["name"]
kubelogin_mode = cluster_cfg.get("kubelogin_mode", "azurecli")
gpu_pools = config.get("gpu_pools", [])
models = config.get("models", [])
keda = cluster_cfg.get("keda") or any(model.get("autoscaling") for model in models)
managed_prometheus = cluster_cfg.get("managed_prometheus", True)

group = resources.ResourceGroup(
    "resource-group", resource_group_name=config["resource_group"]["name"], location=location, tags=tags
)
cluster = containerservice.ManagedCluster(
    f"{name}-aks",
    resource_name_=name,
    resource_group_name=group.name,
    location=location,
    dns_prefix=name.replace("_", "-"),
    kubernetes_version=cluster_cfg.get("kubernetes_version", "1.34"),
    sku={"name": "Base", "tier": cluster_cfg.get("tier", "Standard")},
    identity={"type": "SystemAssigned"},
    agent_pool_profiles=[
        {
            "name": system["name"],
            "mode": "System",
            "vm_size": system["vm_size"],
            "count": system["count"],
            "os_type": "Linux",
            "os_sku": "AzureLinux",
            "type": "VirtualMachineScaleSets",
            "availability_zones": system.get("availability_zones") or None,
            "node_taints": ["CriticalAddonsOnly=true:NoSchedule"],
        }
    ],
    auto_upgrade_profile={
        "upgrade_channel": cluster_cfg.get("upgrade_channel", "patch"),
        "node_os_upgrade_channel": cluster_cfg.get("node_os_upgrade_channel", "NodeImage"),
    },
    oidc_issuer_profile={"enabled": True},
    security_profile={"workload_identity": {"enabled": True}},
    aad_profile={
        "managed": True,
        "enable_azure_rbac": True,
        "admin_group_object_ids": cluster_cfg.get("admin_group_object_ids") or None,
    },
    disable_local_accounts=True,
    azure_monitor_profile={"metrics": {"enabled": managed_prometheus, "kube_state_metrics": {}}},
    ai_toolchain_operator_profile={"enabled": True} if cluster_cfg.get("kaito") else None,
    workload_auto_scaler_profile={"keda": {"enabled": True}} if keda else None,
    network_profile={
        "network_plugin": "azure",
        "network_plugin_mode": "overlay",
        "network_dataplane": "cilium",
        "network_policy": "cilium",
    },
    tags={**tags, **cluster_cfg.get("tags", {})},
    opts=pulumi.ResourceOptions(
        ignore_changes=["agentPoolProfiles"],
        custom_timeouts=pulumi.CustomTimeouts(create="60m", update="60m", delete="60m"),
    ),
)
client = authorization.get_client_config_output()
grant = authorization.RoleAssignment(
    f"{name}-deployer-admin",
    scope=cluster.id,
    principal_id=client.object_id,
    principal_type=cluster_cfg.get("deployer_principal_type", "User"),
    role_definition_id=client.subscription_id.apply(
        lambda sub: f"/subscriptions/{sub}/providers/Microsoft.Authorization/roleDefinitions/{AKS_RBAC_CLUSTER_ADMIN_ROLE}"
    ),
)
resource_group_name = pulumi.Output.from_input(group.name)
oidc_issuer_url = cluster.oidc_issuer_profile.apply(lambda p: p.issuer_url if p else None)
credentials = containerservice.list_managed_cluster_user_credentials_output(
    resource_group_name=resource_group_name,
    resource_name=cluster.name,
    format="exec",
    opts=pulumi.InvokeOutputOptions(depends_on=[grant]),
)


def with_login(kubeconfig_b64: str) -> str:
    kubeconfig = yaml.safe_load(base64.b64decode(kubeconfig_b64))
    for user in kubeconfig.get("users") or []:
        args = user["user"]["exec"]["args"]
        args[args.index("--login") + 1] = kubelogin_mode
    return yaml.safe_dump(kubeconfig, sort_keys=False)


kubeconfig = pulumi.Output.secret(credentials.kubeconfigs[0].value.apply(with_login))
provider = k8s.Provider(f"{name}-k8s", kubeconfig=kubeconfig, enable_server_side_apply=True)
on_cluster = pulumi.ResourceOptions(provider=provider)

# GPU pools; what pods need to land on each (GPU resource, tolerations) is kept for the models below.
pool_info = {}
for pool in gpu_pools:
    accelerator, gpu_model, gpus, mig_slices = GPU_SIZES[pool["vm_size"]]
    labels = {"accelerator": accelerator, "workload": "inference", "aks-gpu-inference/gpu-model": gpu_model}
    if pool.get("rdma"):
        labels["aks-gpu-inference/rdma"] = "true"
    extra = {}
    if "min_count" in pool:
        extra.update(enable_auto_scaling=True, min_count=pool["min_count"], max_count=pool["max_count"])
    if pool.get("spot"):
        extra.update(scale_set_priority="Spot", scale_set_eviction_policy="Delete", spot_max_price=-1)
    containerservice.AgentPool(
        f"{pool['name']}-pool",
        agent_pool_name=pool["name"],
        resource_name_=cluster.name,
        resource_group_name=resource_group_name,
        vm_size=pool["vm_size"],
        count=pool.get("count", 1),
        mode="User",
        os_type="Linux",
        os_sku="Ubuntu",
        os_disk_type="Ephemeral",
        gpu_profile={"driver": "Install"},
        gpu_instance_profile=pool.get("mig_profile"),
        node_taints=[GPU_TAINT, SPOT_TAINT] if pool.get("spot") else [GPU_TAINT],
        node_labels=labels,
        upgrade_settings={
            "max_surge": "0",
            "max_unavailable": "1",
            "drain_timeout_in_minutes": 30,
            "node_soak_duration_in_minutes": 0,
        },
        tags={**tags, **pool.get("tags", {})},
        **extra,
        opts=pulumi.ResourceOptions(
            ignore_changes=["count"] if "min_count" in pool else None,
            custom_timeouts=pulumi.CustomTimeouts(create="60m", update="90m", delete="60m"),
        ),
    )
    gpu_resource = "nvidia.com/gpu"
    if pool.get("mig_profile"):
        mig_slice, per_gpu = mig_slices[pool["mig_profile"]]
        gpu_resource, gpus = f"nvidia.com/mig-{mig_slice}", gpus * per_gpu
    pool_info[pool["name"]] = {
        "vm_size": pool["vm_size"],
        "gpu_resource_name": gpu_resource,
        "gpus_per_node": gpus,
        "rdma_capable": pool["vm_size"] == "Standard_ND96isr_H100_v5",
        "node_selector": {AGENTPOOL_LABEL: pool["name"]},
        "tolerations": [GPU_TOLERATION, SPOT_TOLERATION] if pool.get("spot") else [GPU_TOLERATION],
    }

if gpu_pools:
    tolerations = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}, GPU_TOLERATION]
    if any(pool.get("spot") for pool in gpu_pools):
        tolerations.append(SPOT_TOLERATION)
    k8s.helm.v4.Chart(
        "nvidia-device-plugin-chart",
        chart="nvidia-device-plugin",
        repository_opts={"repo": "https://nvidia.github.io/k8s-device-plugin"},
        version="0.17.0",
        namespace="nvidia-device-plugin",
        values={
            "migStrategy": "mixed" if any(pool.get("mig_profile") for pool in gpu_pools) else "none",
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": AGENTPOOL_LABEL, "operator": "In", "values": sorted(pool_info)}]}
                        ]
                    }
                }
            },
            "tolerations": tolerations,
        },
        opts=on_cluster,
    )

# Managed Prometheus: workspace, data collection endpoint and rule, and the rule's association with the cluster.
workspace = None
if managed_prometheus:
    workspace = monitor.AzureMonitorWorkspace(
        "prometheus-workspace",
        azure_monitor_workspace_name=f"{name}-prometheus",
        resource_group_name=group.name,
        location=location,
    )
    dce = monitor.DataCollectionEndpoint(
        "prometheus-dce",
        data_collection_endpoint_name="MSProm-prometheus",
        resource_group_name=group.name,
        location=location,
        kind="Linux",
        description="Endpoint for the AKS managed Prometheus metrics add-on",
    )
    dcr = monitor.DataCollectionRule(
        "prometheus-dcr",
        data_collection_rule_name="MSProm-prometheus",
        resource_group_name=group.name,
        location=location,
        kind="Linux",
        description="Forwards the AKS managed Prometheus add-on's metrics to the Azure Monitor workspace",
        data_collection_endpoint_id=dce.id,
        data_sources={"prometheus_forwarder": [{"name": "PrometheusDataSource", "streams": [PROMETHEUS_STREAM]}]},
        destinations={"monitoring_accounts": [{"name": "MonitoringAccount1", "account_resource_id": workspace.id}]},
        data_flows=[{"streams": [PROMETHEUS_STREAM], "destinations": ["MonitoringAccount1"]}],
    )
    monitor.DataCollectionRuleAssociation(
        "prometheus-dcra",
        association_name="ContainerInsightsMetricsExtension",
        resource_uri=cluster.id,
        data_collection_rule_id=dcr.id,
        description="Association of the managed Prometheus data collection rule. Deleting it stops metric collection for this AKS cluster.",
    )
    pulumi.export("prometheus_query_endpoint", workspace.metrics.apply(lambda m: m.prometheus_query_endpoint if m else None))

# Models: keyless weight store, identities, KEDA's identity, namespaces and the vLLM objects.
endpoints = {}
if models:
    settings = pulumi.Config()
    api_key = settings.require_secret("vllm_api_key")
    hf_token = settings.get_secret("hf_token") if any(m.get("source") == "huggingface" for m in models) else None
    role_prefix = client.subscription_id.apply(
        lambda sub: f"/subscriptions/{sub}/providers/Microsoft.Authorization/roleDefinitions"
    )

    store_cfg = config.get("model_store")
    if store_cfg:
        store_sku = store_cfg.get("sku", "Premium_LRS")
        container_name = store_cfg.get("container", "models")
        account = storage.StorageAccount(
            "model-store-account",
            account_name=store_cfg["account_name"],
            resource_group_name=group.name,
            location=location,
            sku={"name": store_sku},
            kind="BlockBlobStorage" if store_sku == "Premium_LRS" else "StorageV2",
            allow_shared_key_access=False,
            allow_blob_public_access=False,
            default_to_o_auth_authentication=True,
            minimum_tls_version="TLS1_2",
            enable_https_traffic_only=True,
            tags=store_cfg.get("tags") or None,
        )
        container = storage.BlobContainer(
            "model-store-container",
            account_name=store_cfg["account_name"],
            container_name=container_name,
            resource_group_name=group.name,
            public_access="None",
            opts=pulumi.ResourceOptions(depends_on=[account]),
        )
        container_scope = account.id.apply(lambda account_id: f"{account_id}/blobServices/default/containers/{container_name}")

    if any(m.get("autoscaling") for m in models):
        keda_identity = managedidentity.UserAssignedIdentity("keda-identity", resource_group_name=group.name, location=location)
        managedidentity.FederatedIdentityCredential(
            "keda-federation",
            resource_name_=keda_identity.name,
            resource_group_name=group.name,
            issuer=oidc_issuer_url,
            subject="system:serviceaccount:kube-system:keda-operator",
            audiences=["api://AzureADTokenExchange"],
        )
        authorization.RoleAssignment(
            "keda-reads-prometheus",
            scope=workspace.id,
            principal_id=keda_identity.principal_id,
            principal_type="ServicePrincipal",
            role_definition_id=role_prefix.apply(lambda prefix: f"{prefix}/{MONITORING_DATA_READER_ROLE}"),
        )
        query_endpoint = workspace.metrics.apply(lambda m: m.prometheus_query_endpoint if m else None)

    namespaces = {}
    for namespace in dict.fromkeys(m.get("namespace", "gpu-inference") for m in models):
        namespaces[namespace] = k8s.core.v1.Namespace(
            f"namespace-{namespace}",
            metadata={"name": namespace, "labels": {"pod-security.kubernetes.io/enforce": "restricted"}},
            opts=on_cluster,
        )

    for model in models:
        service = model["name"]
        namespace = model.get("namespace", "gpu-inference")
        model_id = model["model"]
        blob = model.get("source", "blob") == "blob"
        pool = pool_info[model["pool"]]
        tp = model.get("tensor_parallel_size", 1)
        dtype = model.get("dtype", "auto")
        scaling = model.get("autoscaling")
        labels = {"app.kubernetes.io/name": "vllm", "app.kubernetes.io/instance": service}
        pod_labels = dict(labels)
        annotations = {}
        if blob:
            identity = managedidentity.UserAssignedIdentity(
                f"{service}-identity", resource_group_name=group.name, location=location
            )
            managedidentity.FederatedIdentityCredential(
                f"{service}-federation",
                resource_name_=identity.name,
                resource_group_name=group.name,
                issuer=oidc_issuer_url,
                subject=f"system:serviceaccount:{namespace}:{service}",
                audiences=["api://AzureADTokenExchange"],
            )
            grant = authorization.RoleAssignment(
                f"{service}-model-store-read",
                scope=container_scope,
                principal_id=identity.principal_id,
                principal_type="ServicePrincipal",
                role_definition_id=role_prefix.apply(lambda prefix: f"{prefix}/{STORAGE_BLOB_DATA_READER_ROLE}"),
                opts=pulumi.ResourceOptions(depends_on=[container]),
            )
            annotations = identity.client_id.apply(lambda client_id: {"azure.workload.identity/client-id": client_id})
            pod_labels["azure.workload.identity/use"] = "true"

        waits = [namespaces[namespace], *([grant] if blob else [])]
        model_opts = pulumi.ResourceOptions(provider=provider, depends_on=waits)
        account_sa = k8s.core.v1.ServiceAccount(
            f"{service}-sa",
            metadata={"name": service, "namespace": namespace, "labels": labels, "annotations": annotations},
            automount_service_account_token=blob,
            opts=model_opts,
        )
        string_data = {"api-key": pulumi.Output.secret(api_key)}
        if not blob:
            string_data["hf-token"] = pulumi.Output.secret(hf_token)
        secret = k8s.core.v1.Secret(
            f"{service}-secret",
            metadata={"name": f"{service}-secrets", "namespace": namespace, "labels": labels},
            type="Opaque",
            string_data=string_data,
            opts=model_opts,
        )

        weights_gb = MODEL_WEIGHTS_GB[model_id] / (2 if dtype == "fp8" else 1)
        load_seconds = int(weights_gb / (1.0 if blob else 0.15)) + 180
        env = [
            {"name": "VLLM_API_KEY", "valueFrom": {"secretKeyRef": {"name": f"{service}-secrets", "key": "api-key"}}},
            {"name": "HOME", "value": "/home/vllm"},
            {"name": "USER", "value": "vllm"},
            {"name": "HF_HOME", "value": "/home/vllm/.cache/huggingface"},
        ]
        if blob:
            concurrency = int(min(64, max(16, 2 ** math.ceil(math.log2(max(MODEL_WEIGHTS_GB[model_id], 1))))))
            vllm_model = f"az://{container_name}/{model.get('model_path') or model_id}"
            loader = ["--load-format", "runai_streamer", "--model-loader-extra-config", json.dumps({"concurrency": concurrency})]
            env.append({"name": "AZURE_STORAGE_ACCOUNT_NAME", "value": store_cfg["account_name"]})
        else:
            vllm_model, loader = model_id, []
            env.append({"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": f"{service}-secrets", "key": "hf-token"}}})
        vllm_args = [
            "--model", vllm_model, *loader,
            "--served-model-name", model.get("served_model_name") or model_id,
            "--host", "0.0.0.0", "--port", "8000",
            "--tensor-parallel-size", str(tp),
            "--max-model-len", str(model.get("max_model_len", 8192)),
            "--gpu-memory-utilization", str(model.get("gpu_memory_utilization", 0.9)),
        ]  # fmt: skip
        if dtype == "fp8":
            vllm_args += ["--quantization", "fp8"]
        if model.get("kv_cache_dtype") == "fp8":
            vllm_args += ["--kv-cache-dtype", "fp8"]
        if model.get("enable_prefix_caching", True):
            vllm_args.append("--enable-prefix-caching")
        if model.get("max_num_seqs"):
            vllm_args += ["--max-num-seqs", str(model["max_num_seqs"])]
        vllm_args += model.get("extra_args", [])
        memory = model.get("memory", "64Gi")
        probe = {"httpGet": {"path": "/health", "port": "http"}, "periodSeconds": 10, "timeoutSeconds": 5}
        timeout = f"{load_seconds // 60 + 15}m"
        deployment = k8s.apps.v1.Deployment(
            f"{service}-engine",
            metadata={"name": service, "namespace": namespace, "labels": labels},
            spec={
                "replicas": scaling.get("min_replicas", 1) if scaling else model.get("replicas", 1),
                "selector": {"matchLabels": labels},
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}},
                "template": {
                    "metadata": {"labels": pod_labels},
                    "spec": {
                        "serviceAccountName": service,
                        "nodeSelector": pool["node_selector"],
                        "tolerations": pool["tolerations"],
                        "securityContext": {
                            "runAsNonRoot": True,
                            "runAsUser": 1000,
                            "runAsGroup": 1000,
                            "fsGroup": 1000,
                            "seccompProfile": {"type": "RuntimeDefault"},
                        },
                        "terminationGracePeriodSeconds": 120,
                        "containers": [
                            {
                                "name": "vllm",
                                "image": model.get("image", "vllm/vllm-openai:v0.32.0"),
                                "args": vllm_args,
                                "ports": [{"name": "http", "containerPort": 8000}],
                                "env": env,
                                "resources": {
                                    "requests": {"cpu": model.get("cpu", "8"), "memory": memory, pool["gpu_resource_name"]: tp},
                                    "limits": {"memory": memory, pool["gpu_resource_name"]: tp},
                                },
                                "startupProbe": {**probe, "failureThreshold": math.ceil(load_seconds / 10) + 6},
                                "readinessProbe": {**probe, "failureThreshold": 3},
                                "livenessProbe": {**probe, "periodSeconds": 20, "failureThreshold": 3},
                                "securityContext": {
                                    "allowPrivilegeEscalation": False,
                                    "capabilities": {"drop": ["ALL"]},
                                    "readOnlyRootFilesystem": False,
                                },
                                "volumeMounts": [
                                    {"name": "dshm", "mountPath": "/dev/shm"},
                                    {"name": "home", "mountPath": "/home/vllm"},
                                ],
                            }
                        ],
                        "volumes": [
                            {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": f"{max(2, 4 * tp)}Gi"}},
                            {"name": "home", "emptyDir": {}},
                        ],
                    },
                },
            },
            opts=pulumi.ResourceOptions(
                provider=provider,
                depends_on=[*waits, account_sa, secret],
                ignore_changes=["spec.replicas"] if scaling else None,
                custom_timeouts=pulumi.CustomTimeouts(create=timeout, update=timeout),
            ),
        )
        k8s.core.v1.Service(
            f"{service}-service",
            metadata={"name": service, "namespace": namespace, "labels": labels},
            spec={"selector": labels, "ports": [{"name": "http", "port": 8000, "targetPort": "http"}]},
            opts=model_opts,
        )
        k8s.policy.v1.PodDisruptionBudget(
            f"{service}-pdb",
            metadata={"name": service, "namespace": namespace, "labels": labels},
            spec={"maxUnavailable": 1, "selector": {"matchLabels": labels}, "unhealthyPodEvictionPolicy": "AlwaysAllow"},
            opts=model_opts,
        )
        k8s.apiextensions.CustomResource(
            f"{service}-podmonitor",
            api_version="azmonitoring.coreos.com/v1",
            kind="PodMonitor",
            metadata={"name": service, "namespace": namespace, "labels": labels},
            spec={
                "selector": {"matchLabels": labels},
                "podTargetLabels": ["app.kubernetes.io/instance"],
                "podMetricsEndpoints": [{"port": "http", "path": "/metrics", "interval": "30s"}],
                "labelLimit": 63,
                "labelNameLengthLimit": 511,
                "labelValueLengthLimit": 1023,
            },
            opts=model_opts,
        )
        if scaling:
            auth = k8s.apiextensions.CustomResource(
                f"{service}-keda-auth",
                api_version="keda.sh/v1alpha1",
                kind="TriggerAuthentication",
                metadata={"name": f"{service}-prometheus", "namespace": namespace},
                spec={"podIdentity": {"provider": "azure-workload", "identityId": keda_identity.client_id}},
                opts=model_opts,
            )
            k8s.apiextensions.CustomResource(
                f"{service}-scaler",
                api_version="keda.sh/v1alpha1",
                kind="ScaledObject",
                metadata={"name": service, "namespace": namespace},
                spec={
                    "scaleTargetRef": {"name": service},
                    "minReplicaCount": scaling.get("min_replicas", 1),
                    "maxReplicaCount": scaling.get("max_replicas", 4),
                    "cooldownPeriod": 600,
                    "advanced": {
                        "horizontalPodAutoscalerConfig": {"behavior": {"scaleDown": {"stabilizationWindowSeconds": 600}}}
                    },
                    "triggers": [
                        {
                            "type": "prometheus",
                            "metadata": {
                                "serverAddress": query_endpoint,
                                "query": f'sum(vllm:num_requests_waiting{{namespace="{namespace}",app_kubernetes_io_instance="{service}"}})',
                                "threshold": str(scaling.get("waiting_requests_target", 5)),
                            },
                            "authenticationRef": {"name": f"{service}-prometheus"},
                        }
                    ],
                },
                opts=pulumi.ResourceOptions(provider=provider, depends_on=[*waits, auth, deployment]),
            )
        endpoints[service] = f"http://{service}.{namespace}.svc.cluster.local:8000/v1"
    pulumi.export("model_endpoints", endpoints)


def trace_collector(namespace, group_name, location, on_cluster):
    """An OTLP collector in ``namespace`` that ships traces to a workspace-based Application Insights."""
    logs = operationalinsights.Workspace(
        "otel-collector-logs",
        resource_group_name=group_name,
        location=location,
        sku={"name": "PerGB2018"},
        retention_in_days=30,
    )
    insights = applicationinsights.Component(
        "otel-collector-insights",
        resource_group_name=group_name,
        location=location,
        kind="web",
        application_type="web",
        workspace_resource_id=logs.id,
        ingestion_mode="LogAnalytics",
    )
    secret = k8s.core.v1.Secret(
        "otel-collector-connection",
        metadata={"name": "otel-collector-connection", "namespace": namespace},
        type="Opaque",
        string_data={"connectionString": pulumi.Output.secret(insights.connection_string)},
        opts=on_cluster,
    )
    config_map = k8s.core.v1.ConfigMap(
        "otel-collector-config",
        metadata={"name": "otel-collector-config", "namespace": namespace},
        data={"config.yaml": yaml.safe_dump(COLLECTOR_CONFIG, sort_keys=False)},
        opts=on_cluster,
    )
    labels = {"app.kubernetes.io/name": "otel-collector", "app.kubernetes.io/instance": "otel-collector"}
    container = {
        "name": "collector",
        "image": "otel/opentelemetry-collector-contrib:0.115.1",
        "args": ["--config=/conf/config.yaml"],
        "ports": [{"name": "otlp-grpc", "containerPort": 4317}],
        "env": [
            {
                "name": "APPLICATIONINSIGHTS_CONNECTION_STRING",
                "valueFrom": {"secretKeyRef": {"name": "otel-collector-connection", "key": "connectionString"}},
            }
        ],
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}},
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "readOnlyRootFilesystem": True,
        },
        "volumeMounts": [{"name": "conf", "mountPath": "/conf", "readOnly": True}],
    }
    k8s.apps.v1.Deployment(
        "otel-collector-deployment",
        metadata={"name": "otel-collector", "namespace": namespace, "labels": labels},
        spec={
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "securityContext": {"runAsNonRoot": True, "runAsUser": 10001, "seccompProfile": {"type": "RuntimeDefault"}},
                    "containers": [container],
                    "volumes": [{"name": "conf", "configMap": {"name": "otel-collector-config"}}],
                },
            },
        },
        opts=pulumi.ResourceOptions.merge(on_cluster, pulumi.ResourceOptions(depends_on=[secret, config_map])),
    )
    k8s.core.v1.Service(
        "otel-collector-service",
        metadata={"name": "otel-collector", "namespace": namespace, "labels": labels},
        spec={"selector": labels, "ports": [{"name": "otlp-grpc", "port": 4317, "targetPort": "otlp-grpc"}]},
        opts=on_cluster,
    )


# Gateway: Azure OpenAI, the token refresher's identity, Envoy (AI) Gateway, the semantic router, Grafana.
gateway_section = config.get("gateway")
if gateway_section:
    gw_cfg = gateway_section["gateway"]
    aoai_cfg = gateway_section["azure_openai"]
    settings = pulumi.Config()
    keys = settings.require_secret_object("gateway_client_keys")
    client_ids = gw_cfg["client_ids"]
    client_keys = {c: keys.apply(lambda k, c=c: k[c]) for c in client_ids}
    api_key = settings.require_secret("vllm_api_key")
    gw_ns = gw_cfg.get("namespace", "ai-gateway")
    gw = gw_cfg.get("gateway_name", "ai-gateway")
    tracing = gateway_section.get("tracing", True)
    aoai_name = aoai_cfg["account_name"]
    aoai_host = f"{aoai_name}.openai.azure.com"
    eg_ns, aigw_ns, router_ns = "envoy-gateway-system", "envoy-ai-gateway-system", "vllm-semantic-router-system"

    aoai = cognitiveservices.Account(
        "gateway-openai-account",
        account_name=aoai_name,
        resource_group_name=group.name,
        location=location,
        kind="OpenAI",
        sku={"name": "S0"},
        properties={
            "custom_sub_domain_name": aoai_name,
            "disable_local_auth": not aoai_cfg.get("local_auth", False),
            "public_network_access": aoai_cfg.get("public_network_access", "Enabled"),
        },
        tags=aoai_cfg.get("tags") or None,
    )
    previous = aoai
    deployments = []
    for d in aoai_cfg.get("deployments", []):
        version, prompt_price, completion_price = OPENAI_MODELS[d["model"]]
        deployments.append((d["name"], d.get("prompt_per_1m", prompt_price), d.get("completion_per_1m", completion_price)))
        previous = cognitiveservices.Deployment(
            f"gateway-openai-deployment-{d['name']}",
            account_name=aoai_name,
            resource_group_name=group.name,
            deployment_name=d["name"],
            properties={
                "model": {"format": "OpenAI", "name": d["model"], "version": d.get("version", version)},
                "version_upgrade_option": d.get("version_upgrade_option", "OnceCurrentVersionExpired"),
            },
            sku={"name": d.get("sku", "GlobalStandard"), "capacity": d.get("capacity", 50)},
            opts=pulumi.ResourceOptions(depends_on=[previous]),
        )

    refresher_identity = managedidentity.UserAssignedIdentity(
        "gateway-aoai-token-identity", resource_group_name=group.name, location=location
    )
    managedidentity.FederatedIdentityCredential(
        "gateway-aoai-token-federation",
        resource_name_=refresher_identity.name,
        resource_group_name=group.name,
        issuer=oidc_issuer_url,
        subject=f"system:serviceaccount:{gw_ns}:aoai-token",
        audiences=["api://AzureADTokenExchange"],
    )
    aoai_grant = authorization.RoleAssignment(
        "gateway-aoai-token-gateway-openai-use",
        scope=aoai.id,
        principal_id=refresher_identity.principal_id,
        principal_type="ServicePrincipal",
        role_definition_id=client.subscription_id.apply(
            lambda sub: f"/subscriptions/{sub}/providers/Microsoft.Authorization/roleDefinitions/{OPENAI_USER_ROLE}"
        ),
        opts=pulumi.ResourceOptions(depends_on=[aoai]),
    )

    # Backends: (name, model, hostname, port, namespace or None); self-hosted first, then Azure OpenAI.
    backends = [
        (m["name"], m.get("served_model_name") or m["model"], f"{m['name']}.{m.get('namespace', 'gpu-inference')}.svc.cluster.local", 8000, m.get("namespace", "gpu-inference"))
        for m in models
    ]  # fmt: skip
    backends += [("aoai-" + re.sub(r"[^a-z0-9-]", "-", d[0].lower()), d[0], aoai_host, 443, None) for d in deployments]

    # AI gateway: every object below is collected for the PodMonitors, which wait for all of them.
    gw_objects = []
    ns_objects = {
        key: k8s.core.v1.Namespace(f"gateway-gateway-ns-{key}", metadata={"name": value}, opts=on_cluster)
        for key, value in (("eg", eg_ns), ("aigw", aigw_ns), ("gateway", gw_ns))
    }
    gw_objects += ns_objects.values()
    redis_labels = {"app.kubernetes.io/name": "redis", "app.kubernetes.io/instance": f"{gw}-ratelimit"}
    in_eg = pulumi.ResourceOptions(provider=provider, depends_on=[ns_objects["eg"]])
    redis = [
        k8s.apps.v1.Deployment(
            "gateway-gateway-redis",
            metadata={"name": "redis", "namespace": eg_ns, "labels": redis_labels},
            spec={
                "replicas": 1,
                "selector": {"matchLabels": redis_labels},
                "template": {
                    "metadata": {"labels": redis_labels},
                    "spec": {
                        "automountServiceAccountToken": False,
                        "securityContext": {
                            "runAsNonRoot": True,
                            "runAsUser": 999,
                            "runAsGroup": 999,
                            "fsGroup": 999,
                            "seccompProfile": {"type": "RuntimeDefault"},
                        },
                        "containers": [
                            {
                                "name": "redis",
                                "image": gw_cfg.get("redis_image", "redis:7.4.1-alpine"),
                                "args": ["--save", "", "--appendonly", "no"],
                                "ports": [{"name": "redis", "containerPort": 6379}],
                                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}},
                                "readinessProbe": {"tcpSocket": {"port": "redis"}, "periodSeconds": 5},
                                "livenessProbe": {"tcpSocket": {"port": "redis"}, "periodSeconds": 20},
                                "securityContext": {
                                    "allowPrivilegeEscalation": False,
                                    "capabilities": {"drop": ["ALL"]},
                                    "readOnlyRootFilesystem": True,
                                },
                                "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                            }
                        ],
                        "volumes": [{"name": "data", "emptyDir": {}}],
                    },
                },
            },
            opts=in_eg,
        ),
        k8s.core.v1.Service(
            "gateway-gateway-redis-service",
            metadata={"name": "redis", "namespace": eg_ns, "labels": redis_labels},
            spec={
                "selector": redis_labels,
                "ports": [{"name": "redis", "port": 6379, "targetPort": "redis", "protocol": "TCP"}],
            },
            opts=in_eg,
        ),
        k8s.networking.v1.NetworkPolicy(
            "gateway-gateway-redis-netpol",
            metadata={"name": "redis", "namespace": eg_ns},
            spec={
                "podSelector": {"matchLabels": redis_labels},
                "policyTypes": ["Ingress"],
                "ingress": [{"from": [{"podSelector": {}}], "ports": [{"protocol": "TCP", "port": 6379}]}],
            },
            opts=in_eg,
        ),
    ]
    gw_objects += redis
    include_all = {"includeAll": True}
    eg_chart = k8s.helm.v4.Chart(
        "gateway-gateway-envoy-gateway",
        chart="oci://docker.io/envoyproxy/gateway-helm",
        version=gw_cfg.get("eg_version", "v1.8.2"),
        namespace=eg_ns,
        values={
            "config": {
                "envoyGateway": {
                    "extensionApis": {"enableEnvoyPatchPolicy": True, "enableBackend": True},
                    "extensionManager": {
                        "hooks": {
                            "xdsTranslator": {
                                "translation": {key: dict(include_all) for key in ("listener", "route", "cluster", "secret")},
                                "post": ["Translation", "Cluster", "Route"],
                            }
                        },
                        "service": {"fqdn": {"hostname": f"ai-gateway-controller.{aigw_ns}.svc.cluster.local", "port": 1063}},
                    },
                    "rateLimit": {"backend": {"type": "Redis", "redis": {"url": f"redis.{eg_ns}.svc.cluster.local:6379"}}},
                }
            }
        },
        opts=pulumi.ResourceOptions(provider=provider, depends_on=[ns_objects["eg"], *redis]),
    )
    aigw_version = gw_cfg.get("aigw_version", "v1.1.0")
    crds_chart = k8s.helm.v4.Chart(
        "gateway-gateway-ai-gateway-crds",
        chart="oci://docker.io/envoyproxy/ai-gateway-crds-helm",
        version=aigw_version,
        namespace=aigw_ns,
        opts=pulumi.ResourceOptions(provider=provider, depends_on=[ns_objects["aigw"]]),
    )
    aigw_chart = k8s.helm.v4.Chart(
        "gateway-gateway-ai-gateway",
        chart="oci://docker.io/envoyproxy/ai-gateway-helm",
        version=aigw_version,
        namespace=aigw_ns,
        opts=pulumi.ResourceOptions(provider=provider, depends_on=[ns_objects["aigw"], crds_chart, eg_chart]),
    )
    gw_objects += [eg_chart, crds_chart, aigw_chart]
    after_charts = [ns_objects["gateway"], eg_chart, crds_chart, aigw_chart]

    def gw_custom(resource, api_version, kind, spec, namespaced=True, needs=(), obj_name=gw):
        obj = k8s.apiextensions.CustomResource(
            f"gateway-gateway-{resource}",
            api_version=api_version,
            kind=kind,
            metadata={"name": obj_name, **({"namespace": gw_ns} if namespaced else {})},
            spec=spec,
            opts=pulumi.ResourceOptions(provider=provider, depends_on=[*after_charts, *needs]),
        )
        gw_objects.append(obj)
        return obj

    gateway_ref = {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": gw}
    gw_custom(
        "gatewayclass",
        "gateway.networking.k8s.io/v1",
        "GatewayClass",
        {"controllerName": "gateway.envoyproxy.io/gatewayclass-controller"},
        namespaced=False,
    )
    lb_annotations = {}
    if gw_cfg.get("internal_load_balancer", True):
        lb_annotations["service.beta.kubernetes.io/azure-load-balancer-internal"] = "true"
    if gw_cfg.get("load_balancer_ip"):
        lb_annotations["service.beta.kubernetes.io/azure-load-balancer-ipv4"] = gw_cfg["load_balancer_ip"]
    envoy_proxy = {"provider": {"type": "Kubernetes", "kubernetes": {"envoyService": {"annotations": lb_annotations}}}}
    if tracing:
        envoy_proxy["telemetry"] = {
            "tracing": {
                "samplingRate": 100,
                "provider": {
                    "type": "OpenTelemetry",
                    "backendRefs": [{"name": "otel-collector", "namespace": gw_ns, "port": 4317}],
                },
            }
        }
    gw_custom("envoyproxy", "gateway.envoyproxy.io/v1alpha1", "EnvoyProxy", envoy_proxy)
    gw_custom(
        "gateway",
        "gateway.networking.k8s.io/v1",
        "Gateway",
        {
            "gatewayClassName": gw,
            "listeners": [{"name": "http", "protocol": "HTTP", "port": 80}],
            "infrastructure": {"parametersRef": {"group": "gateway.envoyproxy.io", "kind": "EnvoyProxy", "name": gw}},
        },
    )
    gw_custom(
        "client-traffic",
        "gateway.envoyproxy.io/v1alpha1",
        "ClientTrafficPolicy",
        {"targetRefs": [gateway_ref], "connection": {"bufferLimit": gw_cfg.get("buffer_limit", "50Mi")}},
    )
    client_keys_secret = k8s.core.v1.Secret(
        "gateway-gateway-client-keys",
        metadata={"name": f"{gw}-client-keys", "namespace": gw_ns},
        type="Opaque",
        string_data={c: pulumi.Output.secret(client_keys[c]) for c in client_ids},
        opts=pulumi.ResourceOptions(provider=provider, depends_on=[ns_objects["gateway"]]),
    )
    gw_objects.append(client_keys_secret)
    gw_custom(
        "security",
        "gateway.envoyproxy.io/v1alpha1",
        "SecurityPolicy",
        {
            "targetRefs": [gateway_ref],
            "apiKeyAuth": {
                "credentialRefs": [{"name": f"{gw}-client-keys"}],
                "extractFrom": [{"headers": ["authorization"]}],
                "forwardClientIDHeader": "x-user-id",
            },
        },
        needs=[client_keys_secret],
    )
    gw_custom(
        "token-limits",
        "gateway.envoyproxy.io/v1alpha1",
        "BackendTrafficPolicy",
        {
            "targetRefs": [gateway_ref],
            "rateLimit": {
                "type": "Global",
                "global": {
                    "rules": [
                        {
                            "clientSelectors": [{"headers": [{"name": "x-user-id", "type": "Distinct"}]}],
                            "limit": {"requests": gw_cfg.get("token_limit_per_hour", 1_000_000), "unit": "Hour"},
                            "cost": {
                                "request": {"from": "Number", "number": 0},
                                "response": {
                                    "from": "Metadata",
                                    "metadata": {"namespace": "io.envoy.ai_gateway", "key": "llm_total_token"},
                                },
                            },
                        }
                    ]
                },
            },
        },
    )
    for backend, _, host, port, model_ns in backends:
        secret_name = f"{backend}-api-key" if model_ns else f"{backend}-entra-token"
        needs = []
        if model_ns:
            needs = [
                k8s.core.v1.Secret(
                    f"gateway-gateway-{backend}-api-key",
                    metadata={"name": secret_name, "namespace": gw_ns},
                    type="Opaque",
                    string_data={"apiKey": pulumi.Output.secret(api_key)},
                    opts=pulumi.ResourceOptions(provider=provider, depends_on=[ns_objects["gateway"]]),
                )
            ]
            gw_objects += needs
        backend_ref = {"name": backend, "kind": "Backend", "group": "gateway.envoyproxy.io"}
        gw_custom(
            f"{backend}-backend",
            "gateway.envoyproxy.io/v1alpha1",
            "Backend",
            {"endpoints": [{"fqdn": {"hostname": host, "port": port}}]},
            obj_name=backend,
        )
        if port == 443:
            gw_custom(
                f"{backend}-backendtlspolicy",
                "gateway.networking.k8s.io/v1",
                "BackendTLSPolicy",
                {
                    "targetRefs": [{"group": "gateway.envoyproxy.io", "kind": "Backend", "name": backend}],
                    "validation": {"wellKnownCACertificates": "System", "hostname": host},
                },
                obj_name=backend,
            )
        schema = {"name": "OpenAI"} if model_ns else {"name": "AzureOpenAI", "version": "2025-01-01-preview"}
        gw_custom(
            f"{backend}-aiservicebackend",
            "aigateway.envoyproxy.io/v1beta1",
            "AIServiceBackend",
            {"schema": schema, "backendRef": backend_ref},
            obj_name=backend,
        )
        gw_custom(
            f"{backend}-backendsecuritypolicy",
            "aigateway.envoyproxy.io/v1beta1",
            "BackendSecurityPolicy",
            {
                "targetRefs": [{"group": "aigateway.envoyproxy.io", "kind": "AIServiceBackend", "name": backend}],
                "type": "APIKey",
                "apiKey": {"secretRef": {"name": secret_name}},
            },
            needs=needs,
            obj_name=backend,
        )
    gw_custom(
        "route",
        "aigateway.envoyproxy.io/v1beta1",
        "AIGatewayRoute",
        {
            "parentRefs": [{"name": gw, "kind": "Gateway"}],
            "rules": [
                {
                    "matches": [{"headers": [{"type": "Exact", "name": "x-ai-eg-model", "value": model}]}],
                    "backendRefs": [{"name": backend}],
                }
                for backend, model, *_ in backends
            ],
            "llmRequestCosts": [
                {"metadataKey": "llm_input_token", "type": "InputToken"},
                {"metadataKey": "llm_output_token", "type": "OutputToken"},
                {"metadataKey": "llm_total_token", "type": "TotalToken"},
            ],
        },
    )
    # Only the gateway's data plane (and kube-system: metrics, KEDA) reaches the vLLM pods.
    peers = [eg_ns, *[n for n in gw_cfg.get("ingress_peer_namespaces", ["kube-system"]) if n != eg_ns]]
    for backend, _, _, port, model_ns in sorted(b for b in backends if b[4]):
        policy = re.sub(r"[^a-z0-9-]+", "-", backend.lower())[:40].strip("-") or "backend"
        gw_objects.append(
            k8s.networking.v1.NetworkPolicy(
                f"gateway-gateway-netpol-{model_ns}-{policy}",
                metadata={"name": f"{gw}-only-{policy}"[:63].strip("-."), "namespace": model_ns},
                spec={
                    "podSelector": {"matchLabels": {"app.kubernetes.io/instance": backend}},
                    "policyTypes": ["Ingress"],
                    "ingress": [
                        {
                            "from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": p}}} for p in peers],
                            "ports": [{"protocol": "TCP", "port": port}],
                        }
                    ],
                },
                opts=on_cluster,
            )
        )

    if tracing:
        trace_collector(gw_ns, group.name, location, pulumi.ResourceOptions(provider=provider, depends_on=gw_objects))

    # Token refresher: keeps the Azure OpenAI backends' Secrets filled with an Entra token.
    after_gateway = pulumi.ResourceOptions(provider=provider, depends_on=[aoai_grant, *gw_objects])
    entra_secrets = [f"{b[0]}-entra-token" for b in backends if not b[4]]
    refresher_objects = [
        k8s.core.v1.Secret(
            f"aoai-token-{secret_name}",
            metadata={"name": secret_name, "namespace": gw_ns},
            type="Opaque",
            string_data={"apiKey": "pending-first-refresh"},
            opts=pulumi.ResourceOptions.merge(after_gateway, pulumi.ResourceOptions(ignore_changes=["stringData", "data"])),
        )
        for secret_name in entra_secrets
    ]
    refresher_objects.append(
        k8s.core.v1.ServiceAccount(
            "aoai-token-sa",
            metadata={
                "name": "aoai-token",
                "namespace": gw_ns,
                "annotations": refresher_identity.client_id.apply(lambda cid: {"azure.workload.identity/client-id": cid}),
            },
            opts=after_gateway,
        )
    )
    refresher_objects.append(
        k8s.rbac.v1.Role(
            "aoai-token-role",
            metadata={"name": "aoai-token", "namespace": gw_ns},
            rules=[{"apiGroups": [""], "resources": ["secrets"], "resourceNames": entra_secrets, "verbs": ["get", "patch"]}],
            opts=after_gateway,
        )
    )
    k8s.rbac.v1.RoleBinding(
        "aoai-token-binding",
        metadata={"name": "aoai-token", "namespace": gw_ns},
        role_ref={"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "aoai-token"},
        subjects=[{"kind": "ServiceAccount", "name": "aoai-token", "namespace": gw_ns}],
        opts=after_gateway,
    )
    refresher_objects.append(
        k8s.core.v1.ConfigMap(
            "aoai-token-script",
            metadata={"name": "aoai-token-script", "namespace": gw_ns},
            data={"refresh_token.py": REFRESH_SCRIPT.read_text()},
            opts=after_gateway,
        )
    )
    refresher_env = {
        "TOKEN_SCOPE": "https://cognitiveservices.azure.com/.default",
        "SECRET_NAMESPACE": gw_ns,
        "SECRET_NAMES": ",".join(entra_secrets),
        "SECRET_KEY": "apiKey",
    }
    refresher_pod = {
        "metadata": {"labels": {"app.kubernetes.io/name": "token-refresher", "azure.workload.identity/use": "true"}},
        "spec": {
            "serviceAccountName": "aoai-token",
            "restartPolicy": "OnFailure",
            "securityContext": {"runAsNonRoot": True, "runAsUser": 65534, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [
                {
                    "name": "refresh",
                    "image": "python:3.12.7-slim",
                    "command": ["python", "/script/refresh_token.py"],
                    "env": [{"name": k, "value": v} for k, v in refresher_env.items()],
                    "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "64Mi"}},
                    "securityContext": {
                        "allowPrivilegeEscalation": False,
                        "capabilities": {"drop": ["ALL"]},
                        "readOnlyRootFilesystem": True,
                    },
                    "volumeMounts": [{"name": "script", "mountPath": "/script", "readOnly": True}],
                }
            ],
            "volumes": [{"name": "script", "configMap": {"name": "aoai-token-script"}}],
        },
    }
    k8s.batch.v1.CronJob(
        "aoai-token-cronjob",
        metadata={"name": "aoai-token", "namespace": gw_ns},
        spec={
            "schedule": "*/20 * * * *",
            "concurrencyPolicy": "Forbid",
            "successfulJobsHistoryLimit": 1,
            "failedJobsHistoryLimit": 3,
            "jobTemplate": {"spec": {"backoffLimit": 3, "template": refresher_pod}},
        },
        opts=pulumi.ResourceOptions(provider=provider, depends_on=[aoai_grant, *gw_objects, *refresher_objects]),
    )
    k8s.batch.v1.Job(
        "aoai-token-first",
        metadata={"name": "aoai-token-first", "namespace": gw_ns},
        spec={"backoffLimit": 8, "ttlSecondsAfterFinished": 3600, "template": refresher_pod},
        opts=pulumi.ResourceOptions(
            provider=provider,
            depends_on=[aoai_grant, *gw_objects, *refresher_objects],
            custom_timeouts=pulumi.CustomTimeouts(create="15m"),
        ),
    )

    # Semantic router: self-hosted models priced at their share of the VM, then the Azure OpenAI deployments.
    tokens_per_second = gateway_section.get("self_hosted_tokens_per_second", 1500)
    router_models = []
    for m in models:
        vm_size = pool_info[m["pool"]]["vm_size"]
        share = GPU_PRICE_USD_PER_HOUR[vm_size] * m.get("tensor_parallel_size", 1) / GPU_SIZES[vm_size][2]
        cost = round(router_config.self_hosted_cost_per_million(share, tokens_per_second), 4)
        router_models.append(
            router_config.RouterModel(
                name=m.get("served_model_name") or m["model"],
                kind="self-hosted",
                endpoint=f"{m['name']}.{m.get('namespace', 'gpu-inference')}.svc.cluster.local:8000",
                prompt_usd_per_million=cost,
                completion_usd_per_million=cost,
            )
        )
    for deployment_name, prompt_price, completion_price in deployments:
        router_models.append(
            router_config.RouterModel(
                name=deployment_name,
                kind="azure-openai",
                endpoint=f"{aoai_host}:443",
                prompt_usd_per_million=prompt_price,
                completion_usd_per_million=completion_price,
            )
        )
    cheap = router_models[0].name
    router_values = router_config.render(
        router_config.RouterConfigArgs(
            models=router_models,
            decisions=gateway_section["decisions"]
            if gateway_section.get("decisions") is not None
            else router_config.default_decisions(cheap, deployments[0][0]),
            default_model=gateway_section.get("default_model") or cheap,
            guards=gateway_section.get("guards", {}),
            cache=gateway_section.get("cache", {}),
            tracing_endpoint=f"otel-collector.{gw_ns}.svc.cluster.local:4317" if tracing else None,
        )
    )
    after_gateway_only = pulumi.ResourceOptions(provider=provider, depends_on=gw_objects)
    router_namespace = k8s.core.v1.Namespace(
        "gateway-router-namespace",
        metadata={"name": router_ns, "labels": {"pod-security.kubernetes.io/enforce": "restricted"}},
        opts=after_gateway_only,
    )
    in_router_ns = pulumi.ResourceOptions(provider=provider, depends_on=[*gw_objects, router_namespace])
    k8s.helm.v4.Chart(
        "gateway-router-chart",
        name="semantic-router",
        chart=router_config.VSR_CHART,
        version=router_config.VSR_CHART_VERSION,
        namespace=router_ns,
        values={"image": {"tag": f"v{router_config.VSR_VERSION}"}, "configOverride": router_values},
        opts=in_router_ns,
    )
    k8s.networking.v1.NetworkPolicy(
        "gateway-router-ingress",
        metadata={"name": "semantic-router", "namespace": router_ns},
        spec={
            "podSelector": {},
            "policyTypes": ["Ingress"],
            "ingress": [
                {
                    "from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": eg_ns}}}],
                    "ports": [{"port": router_config.VSR_EXTPROC_PORT, "protocol": "TCP"}],
                },
                {
                    "from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}}}],
                    "ports": [{"port": 9190, "protocol": "TCP"}],
                },
            ],
        },
        opts=in_router_ns,
    )
    router_host = f"semantic-router.{router_ns}.svc.cluster.local"
    pulumi.CustomResource(
        "kubernetes:gateway.envoyproxy.io/v1alpha1:EnvoyPatchPolicy",
        "gateway-router-extproc",
        {
            "apiVersion": "gateway.envoyproxy.io/v1alpha1",
            "kind": "EnvoyPatchPolicy",
            "metadata": {"name": f"{gw}-semantic-router", "namespace": gw_ns},
            "spec": {
                "targetRef": gateway_ref,
                "type": "JSONPatch",
                "jsonPatches": [
                    {
                        "type": "type.googleapis.com/envoy.config.listener.v3.Listener",
                        "name": f"{gw_ns}/{gw}/http",
                        "operation": {
                            "op": "add",
                            "path": "/default_filter_chain/filters/0/typed_config/http_filters/0",
                            "value": {
                                "name": "semantic-router-extproc",
                                "typedConfig": {
                                    "@type": "type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor",
                                    "allow_mode_override": True,
                                    "grpcService": {"envoyGrpc": {"clusterName": "semantic-router"}, "timeout": "60s"},
                                    "message_timeout": "60s",
                                    "processing_mode": {
                                        "request_header_mode": "SEND",
                                        "request_body_mode": "BUFFERED",
                                        "request_trailer_mode": "SKIP",
                                        "response_header_mode": "SEND",
                                        "response_body_mode": "BUFFERED",
                                        "response_trailer_mode": "SKIP",
                                    },
                                },
                            },
                        },
                    },
                    {
                        "type": "type.googleapis.com/envoy.config.cluster.v3.Cluster",
                        "name": "semantic-router",
                        "operation": {
                            "op": "add",
                            "path": "",
                            "value": {
                                "name": "semantic-router",
                                "type": "STRICT_DNS",
                                "connect_timeout": "10s",
                                "lb_policy": "ROUND_ROBIN",
                                "http2_protocol_options": {},
                                "load_assignment": {
                                    "cluster_name": "semantic-router",
                                    "endpoints": [
                                        {
                                            "lb_endpoints": [
                                                {
                                                    "endpoint": {
                                                        "address": {
                                                            "socket_address": {
                                                                "address": router_host,
                                                                "port_value": router_config.VSR_EXTPROC_PORT,
                                                            }
                                                        }
                                                    }
                                                }
                                            ]
                                        }
                                    ],
                                },
                            },
                        },
                    },
                ],
            },
        },
        opts=after_gateway_only,
    )

    # Managed Prometheus scrapes the Envoy proxies and the router.
    monitor_targets = {
        "gateway": (
            eg_ns,
            {"gateway.envoyproxy.io/owning-gateway-name": gw},
            [("metrics", "/stats/prometheus"), ("aigw-metrics", "/metrics")],
        ),
        "router": (router_ns, {"app.kubernetes.io/instance": "semantic-router"}, [("metrics", "/metrics")]),
    }
    for role, (namespace, selector, endpoints) in monitor_targets.items():
        k8s.apiextensions.CustomResource(
            f"gateway-{role}-podmonitor",
            api_version="azmonitoring.coreos.com/v1",
            kind="PodMonitor",
            metadata={"name": f"gateway-{role}", "namespace": namespace},
            spec={
                "selector": {"matchLabels": selector},
                "podMetricsEndpoints": [{"port": port, "path": path, "interval": "30s"} for port, path in endpoints],
                "labelLimit": 63,
                "labelNameLengthLimit": 511,
                "labelValueLengthLimit": 1023,
            },
            opts=pulumi.ResourceOptions(provider=provider, depends_on=gw_objects),
        )

    gw_address = f"kubectl get gateway {gw} -n {gw_ns} -o jsonpath='{{.status.addresses[0].value}}'"
    pulumi.export("gateway_endpoint", f"http://{gw_cfg['load_balancer_ip']}/v1" if gw_cfg.get("load_balancer_ip") else None)
    pulumi.export("gateway_address_command", gw_address)
    pulumi.export("gateway_routes", {model: backend for backend, model, *_ in backends})
    pulumi.export(
        "gateway_cost_per_million",
        {m.name: {"prompt": m.prompt_usd_per_million, "completion": m.completion_usd_per_million} for m in router_models},
    )

    grafana_cfg = gateway_section.get("grafana")
    if grafana_cfg:
        grafana = dashboard.Grafana(
            "gateway-grafana-grafana",
            workspace_name=grafana_cfg["workspace_name"],
            resource_group_name=group.name,
            location=location,
            identity={"type": "SystemAssigned"},
            sku={"name": "Standard"},
            properties={
                "grafana_major_version": grafana_cfg.get("major_version", "11"),
                "public_network_access": "Enabled" if grafana_cfg.get("public_network_access", True) else "Disabled",
                "grafana_integrations": {
                    "azure_monitor_workspace_integrations": [{"azure_monitor_workspace_resource_id": workspace.id}]
                },
            },
            tags=grafana_cfg.get("tags") or None,
        )
        grafana_roles = {"admin": GRAFANA_ADMIN_ROLE, "viewer": GRAFANA_VIEWER_ROLE}
        authorization.RoleAssignment(
            "gateway-grafana-monitoring-reader",
            scope=workspace.id,
            principal_id=grafana.identity.apply(lambda i: getattr(i, "principal_id", None) if i is not None else None),
            principal_type="ServicePrincipal",
            role_definition_id=client.subscription_id.apply(
                lambda sub: (
                    f"/subscriptions/{sub}/providers/Microsoft.Authorization/roleDefinitions/{MONITORING_DATA_READER_ROLE}"
                )
            ),
        )
        for kind, role in grafana_roles.items():
            for principal in grafana_cfg.get(f"{kind}_principal_ids", []):
                authorization.RoleAssignment(
                    f"gateway-grafana-{kind}-{principal.lower()}",
                    scope=grafana.id,
                    principal_id=principal.lower(),
                    principal_type=grafana_cfg.get("principal_type", "Group"),
                    role_definition_id=client.subscription_id.apply(
                        lambda sub, role=role: f"/subscriptions/{sub}/providers/Microsoft.Authorization/roleDefinitions/{role}"
                    ),
                )
        dashboard_import = (
            f"az grafana dashboard import -g {{}} -n {grafana_cfg['workspace_name']} --definition dashboards/ai-gateway.json"
        )
        pulumi.export(
            "grafana_endpoint", grafana.properties.apply(lambda p: getattr(p, "endpoint", None) if p is not None else None)
        )
        pulumi.export("dashboard_import", resource_group_name.apply(dashboard_import.format))

pulumi.export("cluster_name", cluster.name)
pulumi.export("resource_group_name", resource_group_name)
pulumi.export("oidc_issuer_url", oidc_issuer_url)
pulumi.export("kubeconfig", kubeconfig)
pulumi.export("gpu_pools", pool_info)
