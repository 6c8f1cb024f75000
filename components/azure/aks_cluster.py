"""AksCluster: an AKS cluster set up for GPU inference (NodeImage OS upgrades, workload identity,
Entra ID with Azure RBAC, managed Prometheus, optional KAITO), or a reference to an existing one,
plus a Kubernetes provider for everything that runs on it."""

from __future__ import annotations

import base64
import re
from typing import Annotated, Literal

import pulumi
import pulumi_kubernetes as k8s
import yaml
from pulumi_azure_native import authorization, containerservice
from pydantic import AfterValidator, Field, field_validator, model_validator

from .._base import PACKAGE, StrictModel, fail, validate_args
from ..context import AzureScope, ClusterContext

AKS_RBAC_CLUSTER_ADMIN_ROLE = "b1ff04bb-8a4e-4dc4-8eb5-8693973ce19b"
"""Built-in role 'Azure Kubernetes Service RBAC Cluster Admin' (Azure built-in roles reference)."""

_CLUSTER_NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9_-]{0,61}[A-Za-z0-9])?$")
_POOL_NAME = re.compile(r"^[a-z][a-z0-9]{0,11}$")


def _check_pool_name(value: str) -> str:
    if not _POOL_NAME.match(value):
        raise ValueError("AKS Linux pool names are 1-12 lowercase letters or digits, starting with a letter")
    return value


PoolName = Annotated[str, AfterValidator(_check_pool_name)]


class SystemPoolArgs(StrictModel):
    """The cluster's small system pool, which runs cluster add-ons and never GPU work."""

    name: PoolName = "system"
    """Pool name (1-12 lowercase letters or digits). Default ``system``."""

    vm_size: str = "Standard_D4ds_v5"
    """VM size. Default ``Standard_D4ds_v5``: 4 vCPUs is AKS's recommended minimum for system pools."""

    count: int = Field(2, ge=1, le=100)
    """Node count. Default 2 so that add-ons survive one node's upgrade or failure."""

    availability_zones: list[Literal["1", "2", "3"]] = Field(default_factory=list)
    """Zones for the system nodes. Default none (any zone)."""

    spot: bool = False
    """Always False: AKS refuses Spot VMs in system pools. Present so a stack file that asks gets a clear error."""

    @field_validator("spot")
    @classmethod
    def _no_spot(cls, value: bool) -> bool:
        if value:
            raise ValueError("AKS system pools cannot use Spot VMs; put Spot capacity in a GPU (User) pool")
        return value


class PlatformPoolArgs(StrictModel):
    """A general-purpose CPU user pool for platform workloads: gateways, routers, collectors,
    controllers and operators. The system pool keeps ``CriticalAddonsOnly`` (AKS's advice) and GPU
    pools keep their taint, so without this pool such pods have nowhere to run."""

    name: PoolName = "platform"
    """Pool name (1-12 lowercase letters or digits). Default ``platform``."""

    vm_size: str = "Standard_D4ds_v5"
    """VM size. Default ``Standard_D4ds_v5``: 4 vCPUs, 16 GiB, enough for the gateway path's controllers."""

    min_count: int = Field(1, ge=1, le=100)
    """Fewest nodes the autoscaler keeps. Default 1: platform pods must always have a node."""

    max_count: int = Field(3, ge=1, le=100)
    """Most nodes the autoscaler adds. Default 3."""

    availability_zones: list[Literal["1", "2", "3"]] = Field(default_factory=list)
    """Zones for the nodes. Default none (any zone)."""

    @model_validator(mode="after")
    def _check_counts(self) -> PlatformPoolArgs:
        if self.min_count > self.max_count:
            raise ValueError(f"min_count {self.min_count} is above max_count {self.max_count}")
        return self


class ExistingClusterArgs(StrictModel):
    """Use a cluster that already exists instead of creating one."""

    name: str
    """Name of the existing AKS cluster."""

    resource_group: str
    """Resource group that holds it."""


class AksClusterArgs(StrictModel):
    """Settings of the AKS cluster. Defaults follow the seeds' production advice."""

    name: str
    """Cluster name: 1-63 letters, digits, hyphens or underscores. Required."""

    kubernetes_version: str | None = Field("1.35", pattern=r"^1\.\d{2}(\.\d+)?$")
    """Kubernetes version. Default ``1.35``: AKS ended support for 1.34 (the first with
    ``resource.k8s.io/v1`` DRA, which seed 004 qualified) in November 2026; see
    ``components/core/lifecycle.json``. After a version change, re-run the qualification gates."""

    tier: Literal["Free", "Standard", "Premium"] = "Standard"
    """Control-plane pricing tier. Default ``Standard``: financially backed SLA and a control plane
    that scales; ``Free`` is for experiments with fewer than 10 nodes."""

    upgrade_channel: Literal["rapid", "stable", "patch", "node-image", "none"] = "patch"
    """Kubernetes auto-upgrade channel. Default ``patch``: security patches without surprise minor upgrades."""

    node_os_upgrade_channel: Literal["NodeImage", "SecurityPatch", "Unmanaged", "None"] = "NodeImage"
    """Node OS upgrade channel. Default ``NodeImage``: kernel and NVIDIA driver move together as one
    tested VHD. ``Unmanaged`` lets unattended-upgrades bump the kernel under the driver and leaves
    ``nvidia.com/gpu: 0`` after reboot (seed 002 gotcha 5); the policy pack rejects it."""

    system_pool: SystemPoolArgs = Field(default_factory=SystemPoolArgs)
    """The system pool. Default: two ``Standard_D4ds_v5`` nodes."""

    platform_pool: PlatformPoolArgs | None = Field(default_factory=PlatformPoolArgs)
    """The CPU user pool for platform workloads. Default: ``Standard_D4ds_v5``, 1-3 nodes. Set null
    only when the cluster has another untainted user pool for them."""

    kaito: bool = False
    """Enable the AI toolchain operator (KAITO) add-on. Default False."""

    keda: bool = False
    """Enable the AKS KEDA add-on (``workloadAutoScalerProfile.keda``). Default False; VllmService
    autoscaling needs it, and the stack turns it on when a model autoscales."""

    managed_prometheus: bool = True
    """Enable the Azure Monitor managed Prometheus metrics add-on. Default True: GPU and vLLM
    metrics drive autoscaling and dashboards."""

    admin_group_object_ids: list[str] = Field(default_factory=list)
    """Entra ID groups whose members are cluster admins. Default none."""

    grant_deployer_admin: bool = True
    """Give the identity running ``pulumi up`` the 'Azure Kubernetes Service RBAC Cluster Admin' role
    on the cluster. Default True: local accounts are disabled, so without it Pulumi cannot create the
    Kubernetes objects that the other components render."""

    deployer_principal_type: Literal["User", "ServicePrincipal", "Group"] = "User"
    """Kind of identity that runs ``pulumi up``, for the role assignment above. Default ``User`` (a
    person after ``az login``); CI signing in as a service principal or managed identity must say
    ``ServicePrincipal``, or Azure rejects the assignment with UnmatchedPrincipalType."""

    kubelogin_mode: Literal["azurecli", "workloadidentity", "msi", "spn", "azd"] = "azurecli"
    """How the generated kubeconfig's ``kubelogin`` exec plugin signs in. Default ``azurecli``: the
    same ``az login`` that Pulumi's Azure provider uses; CI with OIDC federation uses
    ``workloadidentity``. ``kubelogin`` must be on PATH wherever ``pulumi up`` runs."""

    existing: ExistingClusterArgs | None = None
    """Use this existing cluster instead of creating one. Default None (create). The settings above,
    except ``kubelogin_mode``, are then not applied."""

    tags: dict[str, str] = Field(default_factory=dict)
    """Azure tags for the cluster. Default none."""

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        if not _CLUSTER_NAME.match(value):
            raise ValueError("AKS cluster names are 1-63 letters, digits, '-' or '_', starting and ending with a letter or digit")
        return value

    @field_validator("admin_group_object_ids")
    @classmethod
    def _check_groups(cls, value: list[str]) -> list[str]:
        for group in value:
            if not re.fullmatch(r"[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}", group):
                raise ValueError(f"{group!r} is not an Entra ID object ID (expected a GUID)")
        return value


def kubeconfig_for_login(kubeconfig_b64: str, login: str) -> str:
    """Decode an AKS exec-format kubeconfig and make its ``kubelogin`` use the given login mode.

    AKS returns ``--login devicecode``, which cannot run unattended under ``pulumi up``.
    """
    config = yaml.safe_load(base64.b64decode(kubeconfig_b64))
    for user in config.get("users") or []:
        exec_ = (user.get("user") or {}).get("exec")
        if not exec_:
            continue
        args = list(exec_.get("args") or [])
        if "--login" in args:
            args[args.index("--login") + 1] = login
        else:
            args += ["--login", login]
        exec_["args"] = args
    return yaml.safe_dump(config, sort_keys=False)


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
    tier: str
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
        if not args.existing and scope is None:
            fail("AksCluster", name, "scope", scope, "required to create a cluster (or set existing= to use one)")
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
            self.kubernetes_version = None
            self.tier = "existing"
        else:
            self.managed_cluster = self._create(name, args, location, resource_group_name, child)
            self.cluster_name = self.managed_cluster.name
            self.resource_group_name = pulumi.Output.from_input(resource_group_name)
            self.oidc_issuer_url = self.managed_cluster.oidc_issuer_profile.apply(lambda p: p.issuer_url if p else None)
            self.cluster_id = self.managed_cluster.id
            self.location = location
            self.kubernetes_version = args.kubernetes_version
            self.tier = args.tier
            if args.platform_pool:
                self._platform_pool(name, args.platform_pool, resource_group_name, child)

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
        self.kaito_enabled = args.kaito
        self.metrics_addon_enabled = args.managed_prometheus
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

    def _platform_pool(self, name: str, pool: PlatformPoolArgs, resource_group_name, child) -> None:
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

    def _create(self, name, args: AksClusterArgs, location, resource_group_name, child) -> containerservice.ManagedCluster:
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
                    ignore_changes=["agentPoolProfiles"],
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
                role_definition_id=client.subscription_id.apply(
                    lambda sub: (
                        f"/subscriptions/{sub}/providers/Microsoft.Authorization/roleDefinitions/{AKS_RBAC_CLUSTER_ADMIN_ROLE}"
                    )
                ),
                opts=child,
            )
            self._admin_grants = [grant]
        return cluster
