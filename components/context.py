"""What a component needs to know about where it is deployed, passed as one typed value instead of
a row of positional strings that still type-check when swapped.

``AzureScope`` is the resource group and region of Azure resources; ``ClusterContext`` adds the AKS
cluster: its name, resource ID, OIDC issuer, Kubernetes provider and version, and the add-ons that
decide which kinds exist. ``AksCluster.context`` gives one for a cluster the stack manages (or looks
up); for a cluster managed elsewhere, build one from its outputs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pulumi


@dataclass(frozen=True)
class AzureScope:
    """The resource group and Azure region that new Azure resources go into."""

    resource_group_name: pulumi.Input[str]
    """Resource group name (it must exist, or be created earlier in the same program)."""
    location: pulumi.Input[str] | None = None
    """Azure region, e.g. ``eastus``; None where a component only needs the resource group (a
    ``ModelStore`` that uses an existing account)."""


@dataclass(frozen=True)
class ClusterContext:
    """The AKS cluster components deploy into."""

    cluster_name: pulumi.Input[str]
    """Name of the managed cluster (``AksCluster.cluster_name``)."""
    resource_group_name: pulumi.Input[str]
    """Resource group of the cluster (and of the Azure resources made for it)."""
    location: pulumi.Input[str] | None = None
    """Azure region of the cluster; components that create Azure resources beside it need it."""
    provider: Any = None
    """Kubernetes provider for the cluster (``pulumi_kubernetes.Provider``); None uses the ambient kubeconfig.
    A component's ``opts.provider``/``opts.providers`` takes precedence."""
    oidc_issuer_url: pulumi.Input[str] | None = None
    """The cluster's OIDC issuer URL; workload identities need it."""
    cluster_id: pulumi.Input[str] | None = None
    """Resource ID of the cluster; managed Prometheus's data-collection rule needs it."""
    kubernetes_version: str | None = None
    """The cluster's Kubernetes version, if known (``1.35``); DRA needs the pins table's minimum minor or later."""
    kaito_enabled: bool = False
    """Whether the AI toolchain operator add-on runs, so that KAITO's ``Workspace`` kind exists."""
    metrics_addon_enabled: bool = True
    """Whether the managed Prometheus metrics add-on is on."""

    @property
    def scope(self) -> AzureScope:
        """The cluster's resource group and region, for Azure resources made beside it."""
        self.require("ClusterContext", "scope", "location")
        return AzureScope(self.resource_group_name, self.location)

    def require(self, component: str, name: str, *fields: str) -> None:
        """Refuse, naming each missing field, when a component needs context the caller left out."""
        from ._base import raise_problems
        from .core.errors import FieldProblem

        raise_problems(
            component,
            name,
            [FieldProblem(f"cluster.{f}", None, "required by this component") for f in fields if getattr(self, f) is None],
        )
