"""AksCluster: an AKS cluster set up for GPU inference (NodeImage OS upgrades, workload identity,
Entra ID with Azure RBAC, managed Prometheus, optional KAITO), or a reference to an existing one,
plus a Kubernetes provider for everything that runs on it."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s
from pulumi_azure_native import authorization, containerservice

from .._base import PACKAGE, raise_problems, validate_args
from ..context import AzureScope, ClusterContext
from ..core.errors import FieldProblem
from .aks_cluster_args import AksClusterArgs, MaintenanceWindowArgs, PlatformPoolArgs
from .kubeconfig import kubeconfig_for_login
from .workload_identity import role_definition_id

AKS_RBAC_CLUSTER_ADMIN_ROLE = "b1ff04bb-8a4e-4dc4-8eb5-8693973ce19b"
"""Built-in role 'Azure Kubernetes Service RBAC Cluster Admin' (Azure built-in roles reference)."""
MAINTENANCE_CONFIGS = {"upgrade": "aksManagedAutoUpgradeSchedule", "node_os": "aksManagedNodeOSUpgradeSchedule"}
"""The maintenance configuration names that gate the two auto-upgrade channels: the name selects what a configuration
schedules (Azure/azure-rest-api-specs Microsoft.ContainerService aks stable 2025-09-01
examples/MaintenanceConfigurationsCreate_Update_MaintenanceWindow.json; az aks maintenanceconfiguration accepts only
these two and ``default``). pulumi-azure-native 3.29 writes ``MaintenanceConfiguration`` at 2025-09-01, the pins table's
``containerservice`` version; ``durationHours`` is 4 to 24 there."""


def maintenance_configs(args: AksClusterArgs) -> dict[str, dict]:
    """``config name -> maintenanceWindow`` for each channel that upgrades something (``none``, ``None`` and
    ``Unmanaged`` have nothing for a window to gate); empty without ``maintenance_window``."""
    window = args.maintenance_window
    if window is None:
        return {}
    names = []
    if args.upgrade_channel != "none":
        names.append(MAINTENANCE_CONFIGS["upgrade"])
    if args.node_os_upgrade_channel in ("NodeImage", "SecurityPatch"):
        names.append(MAINTENANCE_CONFIGS["node_os"])
    return {name: _window(window) for name in names}


def _window(window: MaintenanceWindowArgs) -> dict:
    spans = [{"start": span.start.isoformat(), "end": span.end.isoformat()} for span in window.not_allowed]
    return {
        "schedule": {"weekly": {"day_of_week": window.day_of_week, "interval_weeks": 1}},
        "duration_hours": window.duration_hours,
        "start_time": window.start_time,
        "utc_offset": window.utc_offset,
        **({"not_allowed_dates": spans} if spans else {}),
    }


def cluster_facts(args: AksClusterArgs, scope: AzureScope, pending: str | None = None) -> ClusterContext:
    """What the cluster will be, from its args alone: its names, region, Kubernetes version and add-ons. ``AksCluster``
    takes the same from here; what only Azure knows (the OIDC issuer, the resource ID) is ``pending``."""
    existing = args.existing
    return ClusterContext(
        cluster_name=existing.name if existing else args.name,
        resource_group_name=existing.resource_group if existing else scope.resource_group_name,
        location=scope.location,
        oidc_issuer_url=pending,
        cluster_id=pending,
        kubernetes_version=None if existing else args.kubernetes_version,  # an existing cluster's is not read offline
        kaito_enabled=args.kaito,
        metrics_addon_enabled=args.managed_prometheus,
    )


def cluster_problems(args: AksClusterArgs, scope: AzureScope | None) -> list[FieldProblem]:
    """Every reason the cluster cannot be built from ``args`` and ``scope`` (the args alone are checked by their model)."""
    if args.existing is None and scope is None:
        return [FieldProblem("scope", None, "required to create a cluster (or set existing= to use one)")]
    return []


class AksCluster(pulumi.ComponentResource):
    """An AKS cluster ready for GPU pools, or a handle on an existing one.

    Outputs: ``cluster_name``, ``resource_group_name``, ``oidc_issuer_url`` (for workload identity
    federation), ``kubeconfig`` (a secret) and ``provider`` (a Kubernetes provider for this cluster).
    """

    cluster_name: pulumi.Output[str]
    cluster_id: pulumi.Output[str]
    resource_group_name: pulumi.Output[str]
    oidc_issuer_url: pulumi.Output[str]
    kubeconfig: pulumi.Output[str]
    provider: k8s.Provider
    kubernetes_version: str | None
    location: pulumi.Input[str]
    kaito_enabled: bool
    metrics_addon_enabled: bool
    managed_cluster: containerservice.ManagedCluster | None

    def __init__(
        self,
        name: str,
        args: AksClusterArgs | dict,
        opts: pulumi.ResourceOptions | None = None,
        *,
        scope: AzureScope | None = None,
    ):
        """
        :param name: Logical name; children are named ``<name>-aks``, ``<name>-k8s`` and so on.
        :param args: Cluster settings, an ``AksClusterArgs`` or a dict of its fields.
        :param opts: Standard Pulumi resource options.
        :param scope: Resource group and region of a new cluster; required unless ``args.existing`` is set.
        """
        args = validate_args(AksClusterArgs, args, "AksCluster", name)
        raise_problems("AksCluster", name, cluster_problems(args, scope))
        location = scope.location if scope else None
        resource_group_name = scope.resource_group_name if scope else None
        super().__init__(f"{PACKAGE}:index:AksCluster", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self._admin_grants: list[pulumi.Resource] = []
        self._platform: list[pulumi.Resource] = []

        if args.existing:
            self.managed_cluster = None
            self.cluster_name = pulumi.Output.from_input(args.existing.name)
            self.resource_group_name = pulumi.Output.from_input(args.existing.resource_group)
            found = containerservice.get_managed_cluster_output(
                resource_group_name=args.existing.resource_group,
                resource_name=args.existing.name,
                opts=pulumi.InvokeOutputOptions(parent=self),
            )
            self.oidc_issuer_url = found.oidc_issuer_profile.apply(lambda p: p.issuer_url if p else None)
            self.cluster_id = found.id
            self.location = location if location is not None else found.location
        else:
            self.managed_cluster = self._create(name, args, location, resource_group_name, child)
            self.cluster_name = self.managed_cluster.name
            self.resource_group_name = pulumi.Output.from_input(resource_group_name)
            self.oidc_issuer_url = self.managed_cluster.oidc_issuer_profile.apply(lambda p: p.issuer_url if p else None)
            self.cluster_id = self.managed_cluster.id
            self.location = location
            if args.platform_pool:
                self._platform_pool(name, args.platform_pool, resource_group_name, child)
            for config, window in maintenance_configs(args).items():
                containerservice.MaintenanceConfiguration(
                    f"{name}-{config}",
                    config_name=config,
                    resource_name_=self.managed_cluster.name,
                    resource_group_name=resource_group_name,
                    maintenance_window=window,
                    opts=child,
                )

        credentials = containerservice.list_managed_cluster_user_credentials_output(
            resource_group_name=self.resource_group_name,
            resource_name=self.cluster_name,
            format="exec",
            opts=pulumi.InvokeOutputOptions(parent=self, depends_on=self._admin_grants),
        )
        self.kubeconfig = pulumi.Output.secret(
            credentials.kubeconfigs[0].value.apply(lambda v: kubeconfig_for_login(v, args.kubelogin_mode))
        )
        self.provider = k8s.Provider(
            f"{name}-k8s",
            kubeconfig=self.kubeconfig,
            # Server-side apply lets several components own fields of one object and surfaces
            # admission-webhook rejections at preview time.
            enable_server_side_apply=True,
            # Objects created through the provider wait for a node that can run platform pods.
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=self._platform)),
        )
        facts = cluster_facts(args, AzureScope(resource_group_name, location))
        self.kubernetes_version, self.kaito_enabled = facts.kubernetes_version, facts.kaito_enabled
        self.metrics_addon_enabled = facts.metrics_addon_enabled
        self.register_outputs(
            {
                "cluster_name": self.cluster_name,
                "resource_group_name": self.resource_group_name,
                "oidc_issuer_url": self.oidc_issuer_url,
                "kubeconfig": self.kubeconfig,
            }
        )

    @property
    def context(self) -> ClusterContext:
        """What components deployed into this cluster need: pass it as their ``cluster=``."""
        return ClusterContext(
            cluster_name=self.cluster_name,
            resource_group_name=self.resource_group_name,
            location=self.location,
            provider=self.provider,
            oidc_issuer_url=self.oidc_issuer_url,
            cluster_id=self.cluster_id,
            kubernetes_version=self.kubernetes_version,
            kaito_enabled=self.kaito_enabled,
            metrics_addon_enabled=self.metrics_addon_enabled,
        )

    def _platform_pool(
        self, name: str, pool: PlatformPoolArgs, resource_group_name: pulumi.Input[str], child: pulumi.ResourceOptions
    ) -> None:
        self._platform = [
            containerservice.AgentPool(
                f"{name}-platform",
                agent_pool_name=pool.name,
                resource_name_=self.managed_cluster.name,
                resource_group_name=resource_group_name,
                mode="User",
                vm_size=pool.vm_size,
                os_type="Linux",
                os_sku="AzureLinux",
                type="VirtualMachineScaleSets",
                enable_auto_scaling=True,
                count=pool.min_count,
                min_count=pool.min_count,
                max_count=pool.max_count,
                availability_zones=pool.availability_zones or None,
                node_labels={"aks-gpu-inference/pool": "platform"},
                # The autoscaler owns the node count once the pool exists.
                opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(ignore_changes=["count"])),
            )
        ]

    def _create(
        self,
        name: str,
        args: AksClusterArgs,
        location: pulumi.Input[str],
        resource_group_name: pulumi.Input[str],
        child: pulumi.ResourceOptions,
    ) -> containerservice.ManagedCluster:
        system = args.system_pool
        cluster = containerservice.ManagedCluster(
            f"{name}-aks",
            resource_name_=args.name,
            resource_group_name=resource_group_name,
            location=location,
            dns_prefix=args.name.replace("_", "-"),
            kubernetes_version=args.kubernetes_version,
            sku={"name": "Base", "tier": args.tier},
            identity={"type": "SystemAssigned"},
            agent_pool_profiles=[
                {
                    "name": system.name,
                    "mode": "System",
                    "vm_size": system.vm_size,
                    "count": system.count,
                    "os_type": "Linux",
                    "os_sku": "AzureLinux",
                    "type": "VirtualMachineScaleSets",
                    "availability_zones": system.availability_zones or None,
                    # Keeps application pods on user pools; AKS add-ons tolerate this taint.
                    "node_taints": ["CriticalAddonsOnly=true:NoSchedule"],
                }
            ],
            auto_upgrade_profile={
                "upgrade_channel": args.upgrade_channel,
                "node_os_upgrade_channel": args.node_os_upgrade_channel,
            },
            oidc_issuer_profile={"enabled": True},
            security_profile={"workload_identity": {"enabled": True}},
            aad_profile={
                "managed": True,
                "enable_azure_rbac": True,
                "admin_group_object_ids": args.admin_group_object_ids or None,
            },
            disable_local_accounts=True,
            azure_monitor_profile={"metrics": {"enabled": args.managed_prometheus, "kube_state_metrics": {}}},
            ai_toolchain_operator_profile={"enabled": True} if args.kaito else None,
            workload_auto_scaler_profile={"keda": {"enabled": True}} if args.keda else None,
            network_profile={
                "network_plugin": "azure",
                "network_plugin_mode": "overlay",
                "network_dataplane": "cilium",
                "network_policy": "cilium",
            },
            tags=args.tags or None,
            opts=pulumi.ResourceOptions.merge(
                child,
                pulumi.ResourceOptions(
                    # GPU pools are separate AgentPool resources; after a refresh they show up in
                    # agentPoolProfiles, and a cluster PUT that touches the inline list puts every
                    # pool into Scaling (pulumi-azure-native#2719, #4264).
                    # Under rapid and stable, AKS moves the minor version itself: the cluster is created at the
                    # default minor and the version is AKS's from then on (aks_cluster_args refuses one written here).
                    ignore_changes=[
                        "agentPoolProfiles",
                        *(["kubernetesVersion"] if args.upgrade_channel in ("rapid", "stable") else []),
                    ],
                    custom_timeouts=pulumi.CustomTimeouts(create="60m", update="60m", delete="60m"),
                ),
            ),
        )
        if args.grant_deployer_admin:
            client = authorization.get_client_config_output(opts=pulumi.InvokeOutputOptions(parent=self))
            grant = authorization.RoleAssignment(
                f"{name}-deployer-admin",
                scope=cluster.id,
                principal_id=client.object_id,
                principal_type=args.deployer_principal_type,
                role_definition_id=client.subscription_id.apply(lambda sub: role_definition_id(sub, AKS_RBAC_CLUSTER_ADMIN_ROLE)),
                opts=child,
            )
            self._admin_grants = [grant]
        return cluster
