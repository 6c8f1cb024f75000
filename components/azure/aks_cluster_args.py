"""The settings of an AKS cluster for GPU inference: the cluster itself, its system pool, the CPU
pool for platform workloads, or the existing cluster to use instead. Plain values, checked on their own;
``AksCluster`` checks what needs more than the args."""

from __future__ import annotations

import re
from datetime import date
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, field_validator, model_validator

from .._base import AvailabilityZones, StrictModel
from ..core import pins
from ..core.errors import FieldProblem
from ..core.names import AKS_POOL_NAME, GUID

_CLUSTER_NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9_-]{0,61}[A-Za-z0-9])?$")


def _check_pool_name(value: str) -> str:
    if not AKS_POOL_NAME.match(value):
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

    availability_zones: AvailabilityZones = Field(default_factory=list)
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

    availability_zones: AvailabilityZones = Field(default_factory=list)
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


class DateSpanArgs(StrictModel):
    """A range of days, both ends included."""

    start: date
    """First day (YYYY-MM-DD). Required."""

    end: date
    """Last day (YYYY-MM-DD), on or after ``start``. Required."""


class MaintenanceWindowArgs(StrictModel):
    """AKS planned maintenance: the one weekly window in which the auto-upgrade channels may upgrade the cluster
    (``aksManagedAutoUpgradeSchedule``) and reimage its nodes (``aksManagedNodeOSUpgradeSchedule``)."""

    day_of_week: Literal["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"] = "Sunday"
    """Day the window opens. Default Sunday."""

    start_time: str = Field("00:00", pattern=r"^([01]\d|2[0-3]):[0-5]\d$")
    """Time it opens, ``HH:MM`` in ``utc_offset``. Default ``00:00``."""

    duration_hours: int = Field(4, ge=4, le=24)
    """How long it stays open. Default 4, the shortest AKS accepts (4 to 24)."""

    utc_offset: str = Field("+00:00", pattern=r"^[+-](0\d|1[0-4]):[0-5]\d$")
    """Offset of ``start_time`` and ``not_allowed`` from UTC. Default ``+00:00``."""

    not_allowed: list[DateSpanArgs] = Field(default_factory=list)
    """Days on which no upgrade may start even inside the window, e.g. the days of a long training run. Default none."""


class AksClusterArgs(StrictModel):
    """Settings of the AKS cluster. Defaults follow the seeds' production advice."""

    name: str
    """Cluster name: 1-63 letters, digits, hyphens or underscores. Required."""

    kubernetes_version: str | None = Field(pins.default_kubernetes_minor(), pattern=r"^1\.\d{2}(\.\d+)?$")
    """Kubernetes version. Default: the pins table's ``kubernetes.default_minor`` (with why), in AKS standard
    support (``components/core/lifecycle.json``). After a version change, re-run the qualification gates."""

    tier: Literal["Free", "Standard", "Premium"] = "Standard"
    """Control-plane pricing tier. Default ``Standard``: financially backed SLA and a control plane
    that scales; ``Free`` is for experiments with fewer than 10 nodes."""

    upgrade_channel: Literal["rapid", "stable", "patch", "node-image", "none"] = "patch"
    """Kubernetes auto-upgrade channel. Default ``patch``: security patches without surprise minor upgrades, so
    ``kubernetes_version`` names a minor (``1.35``), never a patch. Under ``rapid`` and ``stable`` AKS also moves
    the minor: leave ``kubernetes_version`` out, and the cluster's version is AKS's after creation."""

    node_os_upgrade_channel: Literal["NodeImage", "SecurityPatch", "Unmanaged", "None"] = "NodeImage"
    """Node OS upgrade channel. Default ``NodeImage``: kernel and NVIDIA driver move together as one
    tested VHD. ``Unmanaged`` lets unattended-upgrades bump the kernel under the driver and leaves
    ``nvidia.com/gpu: 0`` after reboot (seed 002 gotcha 5); the policy pack rejects it."""

    maintenance_window: MaintenanceWindowArgs | None = None
    """When the channels above may act. Default None: whenever AKS releases (no planned maintenance). A node image
    upgrade drains every node in turn, and a training run loses its Ray head to it; with a window, upgrades wait for
    it (AKS may still upgrade a cluster on an unsupported Kubernetes version outside it, overriding disruption
    budgets: learn.microsoft.com/azure/aks/upgrade-conceptual)."""

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
            if not GUID.fullmatch(group):
                raise ValueError(f"{group!r} is not an Entra ID object ID (expected a GUID)")
        return value

    @model_validator(mode="after")
    def _version_against_the_channel(self) -> AksClusterArgs:
        """A version AKS's auto-upgrade channel moves away from: the next ``pulumi up`` would ask AKS for a
        downgrade, which it refuses. The ``patch`` channel moves patches (so ``1.35.0`` drifts), ``rapid`` and
        ``stable`` minors too (so any version written here drifts)."""
        version, channel = self.kubernetes_version, self.upgrade_channel
        if self.existing is not None or version is None:
            return self
        patch_pinned = version.count(".") == 2
        if patch_pinned and channel in ("patch", "rapid", "stable"):
            minor = version.rsplit(".", 1)[0]
            raise FieldProblem(
                "kubernetes_version",
                version,
                f"a patch version under upgrade_channel {channel!r}: AKS moves the cluster to newer patches, and the "
                f"next pulumi up would ask for a downgrade to {version}, which AKS refuses; give the minor only "
                f"({minor!r}), or set upgrade_channel 'none' to apply patches yourself",
            )
        if channel in ("rapid", "stable") and "kubernetes_version" in self.model_fields_set:
            raise FieldProblem(
                "kubernetes_version",
                version,
                f"a version under upgrade_channel {channel!r}: AKS moves the cluster to newer minor versions, and the "
                f"next pulumi up would ask for a downgrade to {version}, which AKS refuses; leave kubernetes_version "
                "out under this channel (the cluster starts at the pins table's default minor and AKS owns the version "
                "from then on), or use upgrade_channel 'patch' to stay on a minor you choose",
            )
        return self
