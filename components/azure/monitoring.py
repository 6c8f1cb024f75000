"""ManagedPrometheus: the Azure side of AKS managed Prometheus. The cluster's metrics add-on
(``azureMonitorProfile.metrics.enabled``) runs the ama-metrics agent, but the agent ships nothing
until its cluster is associated with a data collection rule that forwards Prometheus metrics to an
Azure Monitor workspace. This component creates what ``az aks create --enable-azure-monitor-metrics``
creates: workspace (or a reference to one), data collection endpoint, data collection rule and the
rule's association with the cluster.

Shapes follow the Azure CLI's own onboarding code (Azure/azure-cli,
``src/azure-cli/azure/cli/command_modules/acs/azuremonitormetrics/dc/{dce_api,dcr_api,dcra_api,defaults}.py``)
and Microsoft's templates (Azure/prometheus-collector ``AddonBicepTemplate/FullAzureMonitorMetricsProfile.bicep``).
"""

from __future__ import annotations

import re

import pulumi
from pulumi_azure_native import monitor
from pydantic import Field, field_validator, model_validator

from .._base import PACKAGE, StrictModel, raise_problems, validate_args
from ..context import ClusterContext
from ..core.errors import FieldProblem

PROMETHEUS_STREAM = "Microsoft-PrometheusMetrics"
"""The only stream a ``prometheusForwarder`` data source carries (SDK enum KnownPrometheusForwarderDataSourceStreams)."""

DESTINATION = "MonitoringAccount1"
"""Name of the workspace destination inside the rule; the data flow refers to it. Same as the Azure CLI."""

DATA_SOURCE = "PrometheusDataSource"
"""Name of the ``prometheusForwarder`` data source. Same as the Azure CLI."""

ASSOCIATION_NAME = "ContainerInsightsMetricsExtension"
"""The association name the Azure CLI gives the metrics add-on's rule (``get_default_dcra_name`` in
azure-cli ``azuremonitormetrics/dc/defaults.py``). Reusing it means a cluster onboarded by hand and one
onboarded here cannot silently carry two Prometheus associations: creating a second one fails instead."""

# Microsoft.Monitor/accounts name pattern from the REST spec (bicep-types-az
# generated/monitor/microsoft.monitor/2023-04-03/types.md): ^(?!-)[a-zA-Z0-9-]+[^-]$
_WORKSPACE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9]$")
# Data collection endpoints: at most 44 characters, letters, digits and hyphens, ending in a letter or
# digit (azure-cli defaults.py sanitize_name: "DCR = 64, DCE = 44"; Azure/ARO-HCP#457). One name serves
# endpoint and rule, as in the CLI, so the stricter endpoint rule applies to both.
_COLLECTION_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]{0,42}[A-Za-z0-9]$")

WORKSPACE_ID = re.compile(
    r"^/subscriptions/[^/]+/resourceGroups/(?P<group>[^/]+)/providers/Microsoft\.Monitor/accounts/(?P<name>[^/]+)$",
    re.IGNORECASE,
)
"""The resource ID of an Azure Monitor workspace; ``group`` and ``name`` capture its resource group and name."""


class ManagedPrometheusArgs(StrictModel):
    """Where managed Prometheus stores metrics, and the names of the collection resources."""

    workspace_name: str | None = None
    """Name of a new Azure Monitor workspace (letters, digits and hyphens, not starting or ending with
    a hyphen). Default None; give exactly one of ``workspace_name`` and ``existing_workspace_id``."""

    existing_workspace_id: str | None = None
    """Resource ID of an Azure Monitor workspace to send metrics to instead of creating one
    (``/subscriptions/<id>/resourceGroups/<rg>/providers/Microsoft.Monitor/accounts/<name>``). Default
    None. It is looked up through the Azure provider's subscription to read its query endpoint and
    region, so a workspace in another subscription needs a provider for that subscription in ``opts``."""

    collection_name: str | None = None
    """Name of the data collection endpoint and of the data collection rule (2-44 letters, digits or
    hyphens, starting and ending with a letter or digit). Default None: ``MSProm-<component name>``,
    the Azure CLI's ``MSProm-`` prefix on a name that never changes, so the resources keep their identity."""

    tags: dict[str, str] = Field(default_factory=dict)
    """Azure tags for every resource created. Default none."""

    @field_validator("workspace_name")
    @classmethod
    def _check_workspace_name(cls, value: str | None) -> str | None:
        if value is not None and not _WORKSPACE_NAME.match(value):
            raise ValueError(
                "Azure Monitor workspace names are letters, digits and hyphens, at least 2 characters, "
                "not starting or ending with a hyphen"
            )
        return value

    @field_validator("existing_workspace_id")
    @classmethod
    def _check_workspace_id(cls, value: str | None) -> str | None:
        if value is not None and not WORKSPACE_ID.match(value):
            raise ValueError(
                "expected an Azure Monitor workspace resource ID, "
                "/subscriptions/<id>/resourceGroups/<rg>/providers/Microsoft.Monitor/accounts/<name>"
            )
        return value

    @field_validator("collection_name")
    @classmethod
    def _check_collection_name(cls, value: str | None) -> str | None:
        if value is not None and not _COLLECTION_NAME.match(value):
            raise ValueError(
                "data collection endpoint names are 2-44 letters, digits or hyphens, starting and ending with a letter or digit"
            )
        return value

    @model_validator(mode="after")
    def _one_workspace(self) -> ManagedPrometheusArgs:
        if (self.workspace_name is None) == (self.existing_workspace_id is None):
            raise FieldProblem(
                "workspace_name",
                self.workspace_name,
                "give exactly one of workspace_name (create a workspace) and existing_workspace_id (use one)",
            )
        return self


def query_endpoint_of(metrics: object) -> str | None:
    """The workspace's Prometheus query endpoint from its ``metrics`` output, or None when not (yet) known."""
    if metrics is None:
        return None
    if isinstance(metrics, dict) and "prometheusQueryEndpoint" in metrics:
        return metrics["prometheusQueryEndpoint"]
    return getattr(metrics, "prometheus_query_endpoint", None)


def collection_name(name: str, args: ManagedPrometheusArgs) -> str:
    """The name of the data collection endpoint and rule: ``args.collection_name`` or ``MSProm-<component name>``."""
    return args.collection_name or f"MSProm-{name}"


def prometheus_problems(name: str, args: ManagedPrometheusArgs, cluster: ClusterContext) -> list[FieldProblem]:
    """Every reason component ``name`` cannot be built from ``args`` for ``cluster`` (the args alone are checked by their model)."""
    problems = []
    if cluster.cluster_id is None:
        problems.append(FieldProblem("cluster.cluster_id", None, "required by this component"))
    if not cluster.metrics_addon_enabled:
        problems.append(
            FieldProblem(
                "cluster.metrics_addon_enabled",
                False,
                "the cluster's managed Prometheus add-on is off (AksCluster managed_prometheus: false), so no agent would "
                "send to this workspace; turn the add-on on or drop ManagedPrometheus",
            )
        )
    if args.workspace_name is not None and cluster.location is None:
        problems.append(FieldProblem("cluster.location", None, "required to create a workspace (or set existing_workspace_id)"))
    collection = collection_name(name, args)
    if not _COLLECTION_NAME.match(collection):
        problems.append(
            FieldProblem(
                "collection_name",
                collection,
                "the default MSProm-<component name> is not a valid data collection endpoint name (2-44 letters, digits "
                "or hyphens, starting and ending with a letter or digit); set collection_name",
            )
        )
    return problems


class ManagedPrometheus(pulumi.ComponentResource):
    """Azure Monitor workspace, data collection endpoint and rule, and the rule's association with an
    AKS cluster, so that the cluster's managed Prometheus add-on has somewhere to send metrics.

    The endpoint and rule live in the workspace's region and the cluster's resource group, as the Azure CLI
    places them. The subscription needs the Microsoft.Monitor, Microsoft.Insights and
    Microsoft.AlertsManagement resource providers registered.

    Outputs: ``workspace_id``, ``query_endpoint`` (the workspace's PromQL endpoint, for Grafana and
    other Prometheus clients), ``dcr_id`` and ``dce_id``.
    """

    workspace_id: pulumi.Output[str]
    query_endpoint: pulumi.Output[str | None]
    dcr_id: pulumi.Output[str]
    dce_id: pulumi.Output[str]
    workspace: monitor.AzureMonitorWorkspace | None

    def __init__(
        self,
        name: str,
        args: ManagedPrometheusArgs | dict,
        opts: pulumi.ResourceOptions | None = None,
        *,
        cluster: ClusterContext,
    ):
        """
        :param name: Logical name; children are named ``<name>-workspace``, ``<name>-dce``, ``<name>-dcr``, ``<name>-dcra``.
        :param args: Settings, a ``ManagedPrometheusArgs`` or a dict of its fields.
        :param opts: Standard Pulumi resource options.
        :param cluster: The AKS cluster whose metrics add-on ships to the workspace (``AksCluster.context``):
            its ``cluster_id`` (required), its resource group (for the new workspace, endpoint and rule), its
            ``location`` (the region of a new workspace and of the endpoint and rule; required when creating a
            workspace, and with ``existing_workspace_id`` None means the workspace's own region) and
            ``metrics_addon_enabled``, which must be True: without the add-on nothing would use these resources.
        """
        args = validate_args(ManagedPrometheusArgs, args, "ManagedPrometheus", name)
        raise_problems("ManagedPrometheus", name, prometheus_problems(name, args, cluster))
        resource_group_name, location = cluster.resource_group_name, cluster.location
        collection = collection_name(name, args)
        super().__init__(f"{PACKAGE}:index:ManagedPrometheus", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        tags = args.tags or None

        if args.workspace_name is not None:
            self.workspace = monitor.AzureMonitorWorkspace(
                f"{name}-workspace",
                azure_monitor_workspace_name=args.workspace_name,
                resource_group_name=resource_group_name,
                location=location,
                tags=tags,
                opts=child,
            )
            self.workspace_id = self.workspace.id
            self.query_endpoint = self.workspace.metrics.apply(query_endpoint_of)
            region = pulumi.Output.from_input(location)
        else:
            self.workspace = None
            match = WORKSPACE_ID.match(args.existing_workspace_id)
            found = monitor.get_azure_monitor_workspace_output(
                azure_monitor_workspace_name=match["name"],
                resource_group_name=match["group"],
                opts=pulumi.InvokeOutputOptions(parent=self),
            )
            self.workspace_id = pulumi.Output.from_input(args.existing_workspace_id)
            self.query_endpoint = found.metrics.apply(query_endpoint_of)
            region = pulumi.Output.from_input(location) if location is not None else found.location

        dce = monitor.DataCollectionEndpoint(
            f"{name}-dce",
            data_collection_endpoint_name=collection,
            resource_group_name=resource_group_name,
            location=region,
            kind="Linux",
            description="Endpoint for the AKS managed Prometheus metrics add-on",
            tags=tags,
            opts=child,
        )
        dcr = monitor.DataCollectionRule(
            f"{name}-dcr",
            data_collection_rule_name=collection,
            resource_group_name=resource_group_name,
            location=region,
            kind="Linux",
            description="Forwards the AKS managed Prometheus add-on's metrics to the Azure Monitor workspace",
            data_collection_endpoint_id=dce.id,
            data_sources={"prometheus_forwarder": [{"name": DATA_SOURCE, "streams": [PROMETHEUS_STREAM]}]},
            destinations={"monitoring_accounts": [{"name": DESTINATION, "account_resource_id": self.workspace_id}]},
            data_flows=[{"streams": [PROMETHEUS_STREAM], "destinations": [DESTINATION]}],
            tags=tags,
            opts=child,
        )
        monitor.DataCollectionRuleAssociation(
            f"{name}-dcra",
            association_name=ASSOCIATION_NAME,
            resource_uri=cluster.cluster_id,
            data_collection_rule_id=dcr.id,
            description="Association of the managed Prometheus data collection rule. Deleting it stops metric collection for this AKS cluster.",
            opts=child,
        )
        self.dce_id = dce.id
        self.dcr_id = dcr.id
        self.register_outputs(
            {
                "workspace_id": self.workspace_id,
                "query_endpoint": self.query_endpoint,
                "dcr_id": self.dcr_id,
                "dce_id": self.dce_id,
            }
        )
