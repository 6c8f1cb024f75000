"""Baseline for bench/plan_bench.py: the stack's raw resources registered directly, as a hand-written
Pulumi program would. Same config (PULUMI_CONFIG), same resource names and inputs as the components,
but no ComponentResources, no pydantic validation and no catalog: GPU facts are written down here."""

import base64
import json
import os

import pulumi
import pulumi_kubernetes as k8s
import yaml
from pulumi_azure_native import authorization, containerservice, resources

AKS_RBAC_CLUSTER_ADMIN_ROLE = "b1ff04bb-8a4e-4dc4-8eb5-8693973ce19b"
GPU_TAINT = "sku=gpu:NoSchedule"
SPOT_TAINT = "kubernetes.azure.com/scalesetpriority=spot:NoSchedule"
# vm size -> (accelerator label, gpu model label); every size here supports ephemeral OS disks.
GPU_SIZES = {
    "Standard_NC4as_T4_v3": ("nvidia-t4", "T4"),
    "Standard_NC24ads_A100_v4": ("nvidia-a100", "A100-80GB"),
    "Standard_NC40ads_H100_v5": ("nvidia-h100", "H100-NVL-94GB"),
    "Standard_ND96isr_H100_v5": ("nvidia-h100", "H100-80GB"),
}

project = pulumi.get_project()
raw = json.loads(os.environ["PULUMI_CONFIG"])
config = {k[len(project) + 1 :]: json.loads(v) if v[:1] in "{[" else v for k, v in raw.items() if k.startswith(f"{project}:")}
location = config["location"]
tags = {"managed-by": "aks-gpu-inference", **config.get("tags", {})}
cluster_cfg = config["cluster"]
system = {"name": "system", "vm_size": "Standard_D4ds_v5", "count": 2, **cluster_cfg.get("system_pool", {})}
name = cluster_cfg["name"]
kubelogin_mode = cluster_cfg.get("kubelogin_mode", "azurecli")

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
    azure_monitor_profile={"metrics": {"enabled": cluster_cfg.get("managed_prometheus", True), "kube_state_metrics": {}}},
    ai_toolchain_operator_profile={"enabled": True} if cluster_cfg.get("kaito") else None,
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
    role_definition_id=client.subscription_id.apply(
        lambda sub: f"/subscriptions/{sub}/providers/Microsoft.Authorization/roleDefinitions/{AKS_RBAC_CLUSTER_ADMIN_ROLE}"
    ),
)
resource_group_name = pulumi.Output.from_input(group.name)
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

for pool in config.get("gpu_pools", []):
    accelerator, gpu_model = GPU_SIZES[pool["vm_size"]]
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

gpu_pools = config.get("gpu_pools", [])
if gpu_pools:
    tolerations = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    tolerations.append({"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"})
    if any(pool.get("spot") for pool in gpu_pools):
        tolerations.append(
            {"key": "kubernetes.azure.com/scalesetpriority", "operator": "Equal", "value": "spot", "effect": "NoSchedule"}
        )
    names = sorted(pool["name"] for pool in gpu_pools)
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
                            {"matchExpressions": [{"key": "kubernetes.azure.com/agentpool", "operator": "In", "values": names}]}
                        ]
                    }
                }
            },
            "tolerations": tolerations,
        },
        opts=pulumi.ResourceOptions(provider=provider),
    )

pulumi.export("cluster_name", cluster.name)
pulumi.export("resource_group_name", resource_group_name)
pulumi.export("oidc_issuer_url", cluster.oidc_issuer_profile.apply(lambda p: p.issuer_url if p else None))
pulumi.export("kubeconfig", kubeconfig)
