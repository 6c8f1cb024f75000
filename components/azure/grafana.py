"""ManagedGrafana: an Azure Managed Grafana workspace that reads the stack's Azure Monitor workspace
(managed Prometheus), so the AI gateway and vLLM dashboard in ``dashboards/ai-gateway.json`` has data.

The workspace is integrated with the Azure Monitor workspace (``grafanaIntegrations``), which gives it a
``Managed_Prometheus_<workspace>`` data source, and its system-assigned identity gets Monitoring Data
Reader on that workspace so the data source can query it.

ARM has no resource that puts dashboard JSON into a Managed Grafana workspace (the ``DashboardDefinition``
resource of azure-native's ``dashboard`` module belongs to the separate, preview "Azure Managed Dashboard"
resource type, not to ``Microsoft.Dashboard/grafana``). The dashboard is imported once the workspace exists:

    az grafana dashboard import -g <resource group> -n <workspace> --definition dashboards/ai-gateway.json

(Azure CLI ``amg`` extension, run from the repository root by someone with the Grafana Admin or Grafana
Editor role). The component exports exactly that command as ``import_command``.
"""

from __future__ import annotations

import re
from typing import Literal

import pulumi
from pulumi_azure_native import authorization, dashboard
from pydantic import Field, field_validator, model_validator

from .._base import PACKAGE, StrictModel, raise_problems, validate_args
from ..context import AzureScope
from ..core.errors import FieldProblem, FieldProblems
from ..core.names import GUID
from .monitoring import WORKSPACE_ID, ManagedPrometheus
from .workload_identity import BUILT_IN_ROLES, role_definition_id

DASHBOARD_PATH = "dashboards/ai-gateway.json"
"""The dashboard definition, relative to the repository root."""

GRAFANA_ROLES: dict[str, str] = {
    # Azure Managed Grafana docs, "How to share access" (az role assignment create): "For Grafana Admin, enter
    # `Grafana Admin` or `22926164-...`", "For Grafana Viewer, enter `Grafana Viewer` or `60921a7e-...`". The same
    # GUIDs are in Microsoft's Azure/AzureMonitorStarterPacks grafana.bicep.
    "Grafana Admin": "22926164-76b3-42b3-bc55-97df8dab3e41",
    "Grafana Viewer": "60921a7e-fef1-4a43-9b16-a26c52ad4769",
}
"""Built-in roles that let people sign in to a Managed Grafana workspace, by role-definition GUID."""

MONITORING_DATA_READER = BUILT_IN_ROLES["Monitoring Data Reader"]
"""What the workspace identity needs on the Azure Monitor workspace to query its Prometheus metrics."""

# Microsoft.Dashboard/grafana names: 2-23 letters, digits or hyphens, starting with a letter and ending with a
# letter or digit (hashicorp/terraform-provider-azurerm internal/services/dashboard/dashboard_grafana_resource.go:
# ^[a-zA-Z][-a-zA-Z\d]{0,21}[a-zA-Z\d]$).
_WORKSPACE_NAME = re.compile(r"^[A-Za-z][-A-Za-z0-9]{0,21}[A-Za-z0-9]$")


class ManagedGrafanaArgs(StrictModel):
    """The Managed Grafana workspace and who may use it."""

    workspace_name: str
    """Name of the Grafana workspace, also the first label of its endpoint (``https://<name>-<hash>.<region>.grafana.azure.com``):
    2-23 letters, digits or hyphens, starting with a letter and ending with a letter or digit. Required."""

    major_version: str = "12"
    """Grafana major version (``grafanaMajorVersion``). Default ``"12"``: Azure Managed Grafana retired
    Grafana 11 on 2026-06-15 (``components/core/lifecycle.json``; the plan checks the date)."""

    public_network_access: bool = True
    """Whether the workspace endpoint is reachable from the internet (``publicNetworkAccess``). Default True; with
    False it needs a private endpoint, which this component does not create."""

    grant_deployer_admin: bool = True
    """Give the identity running ``pulumi up`` the Grafana Admin role on the workspace, as ``az grafana create``
    does for its caller. Default True, so that somebody can sign in and import the dashboard. With False,
    ``admin_principal_ids`` must name at least one admin."""

    deployer_principal_type: Literal["User", "ServicePrincipal"] = "User"
    """What the identity running ``pulumi up`` is: ``User`` (a person signed in with ``az login``, the default)
    or ``ServicePrincipal`` (CI). ARM refuses an assignment whose principal is of another type."""

    admin_principal_ids: list[str] = Field(default_factory=list)
    """Entra ID object IDs (users, groups or service principals) given the Grafana Admin role on the workspace,
    besides the deployer. Default none."""

    viewer_principal_ids: list[str] = Field(default_factory=list)
    """Entra ID object IDs given the Grafana Viewer role on the workspace. Default none."""

    principal_type: Literal["Group", "User", "ServicePrincipal"] = "Group"
    """What the object IDs in ``admin_principal_ids`` and ``viewer_principal_ids`` are. Default ``"Group"``
    (grant Entra ID groups, not people one by one). ARM refuses an assignment whose principal is of another
    type (UnmatchedPrincipalType), and the provider would otherwise send ``User``."""

    tags: dict[str, str] = Field(default_factory=dict)
    """Azure tags for the workspace. Default none."""

    @field_validator("workspace_name")
    @classmethod
    def _check_workspace_name(cls, value: str) -> str:
        if not _WORKSPACE_NAME.match(value):
            raise ValueError(
                "Managed Grafana workspace names are 2-23 letters, digits or hyphens, starting with a letter and ending with a letter or digit"
            )
        return value

    @field_validator("major_version")
    @classmethod
    def _check_major_version(cls, value: str) -> str:
        if not value.isdigit():
            raise ValueError("expected a Grafana major version such as '11'")
        return value

    @field_validator("admin_principal_ids", "viewer_principal_ids")
    @classmethod
    def _check_principals(cls, value: list[str]) -> list[str]:
        bad = [v for v in value if not GUID.match(v)]
        if bad:
            raise ValueError(f"expected Entra ID object IDs (GUIDs), got {bad}")
        if len(set(v.lower() for v in value)) != len(value):
            raise ValueError("the same object ID is listed twice")
        return [v.lower() for v in value]

    @model_validator(mode="after")
    def _somebody_signs_in(self) -> ManagedGrafanaArgs:
        if not self.grant_deployer_admin and not self.admin_principal_ids:
            raise FieldProblem(
                "admin_principal_ids",
                [],
                "with grant_deployer_admin false, name at least one Grafana admin: otherwise nobody can sign in",
            )
        problems = []
        if "principal_type" in self.model_fields_set and not (self.admin_principal_ids or self.viewer_principal_ids):
            why = "says what admin_principal_ids and viewer_principal_ids are, and there are none: leave it out"
            problems.append(FieldProblem("principal_type", self.principal_type, why))
        if "deployer_principal_type" in self.model_fields_set and not self.grant_deployer_admin:
            why = (
                "says what the deployer is for its Grafana Admin role, which grant_deployer_admin false leaves out: leave it out"
            )
            problems.append(FieldProblem("deployer_principal_type", self.deployer_principal_type, why))
        if problems:
            raise FieldProblems(problems)
        return self


def principal_id_of(identity: object) -> str | None:
    """The system-assigned identity's principal ID from the workspace's ``identity`` output, or None when not known."""
    if identity is None:
        return None
    # Output types subclass dict and warn on key access, so only a plain dict is read by key.
    if type(identity) is dict:
        return identity.get("principalId")
    return getattr(identity, "principal_id", None)


def endpoint_of(properties: object) -> str | None:
    """The workspace URL from its ``properties`` output, or None when not (yet) known."""
    if properties is None:
        return None
    # Output types subclass dict and warn on key access, so only a plain dict is read by key.
    if type(properties) is dict:
        return properties.get("endpoint")
    return getattr(properties, "endpoint", None)


def grafana_problems(prometheus: object, scope: AzureScope) -> list[FieldProblem]:
    """Every reason a Grafana workspace cannot be built in ``scope`` to read ``prometheus``."""
    problems = []
    if isinstance(prometheus, str) and not WORKSPACE_ID.match(prometheus):
        problems.append(
            FieldProblem(
                "prometheus",
                prometheus,
                "expected a ManagedPrometheus or an Azure Monitor workspace resource ID, "
                "/subscriptions/<id>/resourceGroups/<rg>/providers/Microsoft.Monitor/accounts/<name>",
            )
        )
    elif not isinstance(prometheus, (ManagedPrometheus, str, pulumi.Output)):
        problems.append(
            FieldProblem(
                "prometheus",
                prometheus,
                "expected a ManagedPrometheus or an Azure Monitor workspace resource ID; Grafana needs a workspace to read",
            )
        )
    if scope.location is None:
        problems.append(FieldProblem("scope.location", None, "required: the region of the Grafana workspace"))
    return problems


def workspace_id_of(prometheus: ManagedPrometheus | pulumi.Input[str]) -> pulumi.Input[str]:
    """The resource ID of the Azure Monitor workspace that ``prometheus`` is or names."""
    return prometheus.workspace_id if isinstance(prometheus, ManagedPrometheus) else prometheus


class ManagedGrafana(pulumi.ComponentResource):
    """An Azure Managed Grafana workspace (Standard SKU, system-assigned identity) integrated with the Azure
    Monitor workspace of ``ManagedPrometheus``, with Monitoring Data Reader for its identity on that workspace
    Grafana Admin for the identity that deploys it (``grant_deployer_admin``) and, optionally, Grafana Admin /
    Grafana Viewer role assignments for more people.

    The subscription needs the Microsoft.Dashboard resource provider registered.

    Outputs: ``endpoint`` (the workspace URL), ``grafana_id``, ``principal_id`` (the workspace identity),
    ``import_command`` (the ``az grafana dashboard import`` command for ``dashboards/ai-gateway.json``; a plain
    string when the scope's resource group is one) and ``dashboard_path``.
    """

    endpoint: pulumi.Output[str | None]
    grafana_id: pulumi.Output[str]
    principal_id: pulumi.Output[str | None]
    import_command: str | pulumi.Output[str]
    dashboard_path: str
    grafana: dashboard.Grafana

    def __init__(
        self,
        name: str,
        args: ManagedGrafanaArgs | dict,
        opts: pulumi.ResourceOptions | None = None,
        *,
        scope: AzureScope,
        prometheus: ManagedPrometheus | str | pulumi.Output[str],
    ):
        """
        :param name: Logical name; children are named ``<name>-grafana``, ``<name>-monitoring-reader``,
            ``<name>-deployer-admin``, ``<name>-admin-<object id>`` and ``<name>-viewer-<object id>``.
        :param args: Settings, a ``ManagedGrafanaArgs`` or a dict of its fields.
        :param opts: Standard Pulumi resource options.
        :param scope: Resource group and region of the Grafana workspace.
        :param prometheus: The ``ManagedPrometheus`` component, or the resource ID of an Azure Monitor workspace
            (``/subscriptions/<id>/resourceGroups/<rg>/providers/Microsoft.Monitor/accounts/<name>``).
        """
        args = validate_args(ManagedGrafanaArgs, args, "ManagedGrafana", name)
        raise_problems("ManagedGrafana", name, grafana_problems(prometheus, scope))
        workspace_id = workspace_id_of(prometheus)
        resource_group_name = scope.resource_group_name
        super().__init__(f"{PACKAGE}:index:ManagedGrafana", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)

        self.grafana = dashboard.Grafana(
            f"{name}-grafana",
            workspace_name=args.workspace_name,
            resource_group_name=resource_group_name,
            location=scope.location,
            identity={"type": "SystemAssigned"},
            sku={"name": "Standard"},
            properties={
                "grafana_major_version": args.major_version,
                "public_network_access": "Enabled" if args.public_network_access else "Disabled",
                "grafana_integrations": {
                    "azure_monitor_workspace_integrations": [{"azure_monitor_workspace_resource_id": workspace_id}]
                },
            },
            tags=args.tags or None,
            opts=child,
        )
        self.grafana_id = self.grafana.id
        self.principal_id = self.grafana.identity.apply(principal_id_of)
        self.endpoint = self.grafana.properties.apply(endpoint_of)

        client_config = authorization.get_client_config_output(opts=pulumi.InvokeOutputOptions(parent=self))

        def role_definition(guid: str) -> pulumi.Output[str]:
            return client_config.subscription_id.apply(lambda sub: role_definition_id(sub, guid))

        authorization.RoleAssignment(
            f"{name}-monitoring-reader",
            scope=workspace_id,
            principal_id=self.principal_id,
            # A system-assigned identity is a service principal; declaring it skips the directory lookup that
            # fails with PrincipalNotFound while the new identity replicates.
            principal_type="ServicePrincipal",
            role_definition_id=role_definition(MONITORING_DATA_READER),
            opts=child,
        )
        if args.grant_deployer_admin:
            authorization.RoleAssignment(
                f"{name}-deployer-admin",
                scope=self.grafana.id,
                principal_id=client_config.object_id,
                principal_type=args.deployer_principal_type,
                role_definition_id=role_definition(GRAFANA_ROLES["Grafana Admin"]),
                opts=child,
            )
        for kind, role, principals in (
            ("admin", "Grafana Admin", args.admin_principal_ids),
            ("viewer", "Grafana Viewer", args.viewer_principal_ids),
        ):
            for principal in principals:
                authorization.RoleAssignment(
                    f"{name}-{kind}-{principal}",
                    scope=self.grafana.id,
                    principal_id=principal,
                    principal_type=args.principal_type,
                    role_definition_id=role_definition(GRAFANA_ROLES[role]),
                    opts=child,
                )

        self.dashboard_path = DASHBOARD_PATH
        if isinstance(resource_group_name, str):
            self.import_command = import_command(resource_group_name, args.workspace_name)
        else:
            self.import_command = pulumi.Output.from_input(resource_group_name).apply(
                lambda group: import_command(group, args.workspace_name)
            )
        self.register_outputs(
            {
                "endpoint": self.endpoint,
                "grafana_id": self.grafana_id,
                "principal_id": self.principal_id,
                "import_command": self.import_command,
                "dashboard_path": self.dashboard_path,
            }
        )


def import_command(resource_group_name: str, workspace_name: str) -> str:
    """The Azure CLI command that imports the dashboard into the workspace (run from the repository root)."""
    return f"az grafana dashboard import -g {resource_group_name} -n {workspace_name} --definition {DASHBOARD_PATH}"
