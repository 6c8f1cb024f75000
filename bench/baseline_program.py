"""Baseline for bench/plan_bench.py: the stack's raw resources registered directly, as a hand-written
Pulumi program would. Same config (PULUMI_CONFIG and its secrets), same resource names and inputs as the
components, but no ComponentResources, no pydantic validation, no catalog and no memory fit: GPU and model
facts are written down here, for the sizes and models the bench's stacks use."""

import base64
import json
import math
import os

import pulumi
import pulumi_kubernetes as k8s
import yaml
from pulumi_azure_native import authorization, containerservice, managedidentity, monitor, resources, storage

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
        os_sku="Ubuntu2404",
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

pulumi.export("cluster_name", cluster.name)
pulumi.export("resource_group_name", resource_group_name)
pulumi.export("oidc_issuer_url", oidc_issuer_url)
pulumi.export("kubeconfig", kubeconfig)
pulumi.export("gpu_pools", pool_info)
