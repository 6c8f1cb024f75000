"""ManagedPrometheus under mocks: the workspace, data collection endpoint, rule and association that
`az aks create --enable-azure-monitor-metrics` creates, with the shapes the Azure CLI sends, and every
input it refuses before creating anything."""

import pulumi
import pytest

from aks_gpu_inference.components._base import ComponentInputError
from aks_gpu_inference.components.azure.monitoring import (
    ASSOCIATION_NAME,
    ManagedPrometheus,
    ManagedPrometheusArgs,
    prometheus_problems,
    query_endpoint_of,
)
from aks_gpu_inference.planner.analyzer import analyze
from aks_gpu_inference.planner.engine.program import PlaceholderMocks, RecordingMonitor
from tests.conftest import cluster_context, of_type, one, registered_before_error, run_components

CLUSTER_ID = "/subscriptions/0000/resourceGroups/rg-test/providers/Microsoft.ContainerService/managedClusters/aks-test"
WORKSPACE_ID = "/subscriptions/0000/resourceGroups/rg-mon/providers/Microsoft.Monitor/accounts/amw-shared"
ENDPOINT = "https://amw-test-a1b2.eastus.prometheus.monitor.azure.com"
STREAM = "Microsoft-PrometheusMetrics"


def cluster(**fields):
    """The tests' cluster as ManagedPrometheus sees it: its ID, resource group and region, add-on on."""
    return cluster_context(**({"resource_group_name": "rg-test", "cluster_id": CLUSTER_ID, "location": "eastus"} | fields))


class MetricsMocks(PlaceholderMocks):
    """Mocks that also return what Azure computes for a workspace: its metrics container."""

    def new_resource(self, args):
        resource_id, state = super().new_resource(args)
        if args.typ == "azure-native:monitor:AzureMonitorWorkspace":
            state["metrics"] = {"prometheusQueryEndpoint": ENDPOINT, "internalId": "mac_0000"}
        return resource_id, state

    def call(self, args):
        if args.token == "azure-native:monitor:getAzureMonitorWorkspace":
            assert args.args == {"azureMonitorWorkspaceName": "amw-shared", "resourceGroupName": "rg-mon"}
            return {"location": "westeurope", "metrics": {"prometheusQueryEndpoint": ENDPOINT, "internalId": "mac_1"}}
        return super().call(args)


def build(args=None, mocks=None, **params):
    holder = {}

    def program():
        prom = ManagedPrometheus("prom", args if args is not None else {"workspace_name": "amw-test"}, cluster=cluster(**params))
        holder["prom"] = prom
        pulumi.export("workspace_id", prom.workspace_id)
        pulumi.export("query_endpoint", prom.query_endpoint)
        pulumi.export("dcr_id", prom.dcr_id)

    run = run_components(program, monitor=RecordingMonitor(mocks) if mocks else None)
    return holder["prom"], run


def test_new_workspace_gets_what_az_aks_creates():
    _, run = build()
    component = one(run, "aks-gpu:index:ManagedPrometheus")
    children = [r for r in run.resources if r.parent == component.urn]
    assert sorted(r.type.rsplit(":", 1)[-1] for r in children) == [
        "AzureMonitorWorkspace",
        "DataCollectionEndpoint",
        "DataCollectionRule",
        "DataCollectionRuleAssociation",
    ]
    workspace = one(run, "monitor:AzureMonitorWorkspace").inputs
    assert workspace == {"azureMonitorWorkspaceName": "amw-test", "resourceGroupName": "rg-test", "location": "eastus"}

    dce = one(run, "monitor:DataCollectionEndpoint").inputs
    assert (dce["dataCollectionEndpointName"], dce["kind"], dce["location"], dce["resourceGroupName"]) == (
        "MSProm-prom",
        "Linux",
        "eastus",
        "rg-test",
    )

    dcr = one(run, "monitor:DataCollectionRule").inputs
    assert (dcr["dataCollectionRuleName"], dcr["kind"], dcr["location"]) == ("MSProm-prom", "Linux", "eastus")
    assert dcr["dataCollectionEndpointId"] == "<computed:prom-dce.id>"
    assert dcr["dataSources"] == {"prometheusForwarder": [{"name": "PrometheusDataSource", "streams": [STREAM]}]}
    assert dcr["destinations"] == {
        "monitoringAccounts": [{"name": "MonitoringAccount1", "accountResourceId": "<computed:prom-workspace.id>"}]
    }
    assert dcr["dataFlows"] == [{"streams": [STREAM], "destinations": ["MonitoringAccount1"]}]

    dcra = one(run, "monitor:DataCollectionRuleAssociation").inputs
    assert dcra["associationName"] == ASSOCIATION_NAME == "ContainerInsightsMetricsExtension"
    assert dcra["resourceUri"] == CLUSTER_ID, "the association is scoped to the AKS cluster"
    assert dcra["dataCollectionRuleId"] == "<computed:prom-dcr.id>"
    assert "dataCollectionEndpointId" not in dcra


def test_every_flow_goes_from_a_declared_stream_to_a_declared_destination():
    _, run = build()
    dcr = one(run, "monitor:DataCollectionRule").inputs
    destinations = {d["name"] for kind in dcr["destinations"].values() for d in kind}
    streams = {s for source in dcr["dataSources"]["prometheusForwarder"] for s in source["streams"]}
    for flow in dcr["dataFlows"]:
        assert set(flow["destinations"]) <= destinations
        assert set(flow["streams"]) <= streams


def test_rule_and_association_wait_for_what_they_reference():
    _, run = build()
    urns = {r.type.rsplit(":", 1)[-1]: r.urn for r in run.resources}
    assert {urns["DataCollectionEndpoint"], urns["AzureMonitorWorkspace"]} <= set(
        one(run, "monitor:DataCollectionRule").options["dependsOn"]
    )
    assert urns["DataCollectionRule"] in one(run, "monitor:DataCollectionRuleAssociation").options["dependsOn"]


def test_outputs_carry_the_workspace_id_rule_id_and_query_endpoint():
    prom, run = build(mocks=MetricsMocks())
    assert run.outputs["workspace_id"] == "<computed:prom-workspace.id>"
    assert run.outputs["dcr_id"] == "<computed:prom-dcr.id>"
    assert run.outputs["query_endpoint"] == ENDPOINT
    assert prom.workspace is not None


def test_existing_workspace_is_referenced_not_created():
    prom, run = build({"existing_workspace_id": WORKSPACE_ID}, mocks=MetricsMocks(), location=None)
    assert of_type(run, "AzureMonitorWorkspace") == [] and prom.workspace is None
    dcr = one(run, "monitor:DataCollectionRule").inputs
    assert dcr["destinations"]["monitoringAccounts"][0]["accountResourceId"] == WORKSPACE_ID
    # The endpoint and rule go in the workspace's region, read from the workspace.
    assert one(run, "monitor:DataCollectionEndpoint").inputs["location"] == "westeurope"
    assert dcr["location"] == "westeurope"
    assert run.outputs["workspace_id"] == WORKSPACE_ID
    assert run.outputs["query_endpoint"] == ENDPOINT


def test_existing_workspace_region_can_be_given():
    _, run = build({"existing_workspace_id": WORKSPACE_ID}, location="northeurope")
    assert one(run, "monitor:DataCollectionEndpoint").inputs["location"] == "northeurope"
    assert one(run, "monitor:DataCollectionRule").inputs["location"] == "northeurope"


def test_collection_name_and_tags_are_configurable():
    _, run = build({"workspace_name": "amw-test", "collection_name": "MSProm-eastus-aks-test", "tags": {"env": "dev"}})
    for suffix, key in (
        ("DataCollectionEndpoint", "dataCollectionEndpointName"),
        ("DataCollectionRule", "dataCollectionRuleName"),
    ):
        resource = one(run, f"monitor:{suffix}").inputs
        assert resource[key] == "MSProm-eastus-aks-test"
        assert resource["tags"] == {"env": "dev"}
    assert one(run, "monitor:AzureMonitorWorkspace").inputs["tags"] == {"env": "dev"}


@pytest.mark.parametrize(
    "metrics, expected",
    [
        (None, None),
        ({"prometheusQueryEndpoint": ENDPOINT}, ENDPOINT),
        (type("Metrics", (), {"prometheus_query_endpoint": ENDPOINT})(), ENDPOINT),
        (type("Metrics", (), {})(), None),
    ],
)
def test_query_endpoint_is_read_defensively(metrics, expected):
    assert query_endpoint_of(metrics) == expected


@pytest.mark.parametrize(
    "args, params, expected",
    [
        ({}, {}, "workspace_name=None: give exactly one of workspace_name (create a workspace) and existing_workspace_id"),
        (
            {"workspace_name": "amw", "existing_workspace_id": WORKSPACE_ID},
            {},
            "workspace_name='amw': give exactly one of workspace_name",
        ),
        ({"workspace_name": "-amw"}, {}, "workspace_name='-amw': Azure Monitor workspace names are letters, digits and hyphens"),
        ({"workspace_name": "amw_test"}, {}, "workspace_name='amw_test'"),
        (
            {
                "existing_workspace_id": "/subscriptions/0000/resourceGroups/rg/providers/Microsoft.OperationalInsights/workspaces/law"
            },
            {},
            "expected an Azure Monitor workspace resource ID",
        ),
        (
            {"workspace_name": "amw", "collection_name": "x" * 45},
            {},
            "collection_name='" + "x" * 45 + "': data collection endpoint names are 2-44",
        ),
        ({"workspace_name": "amw", "collection_name": "MSProm_bad"}, {}, "collection_name='MSProm_bad'"),
        ({"workspace_name": "amw", "retention_days": 30}, {}, "retention_days=30: unknown key"),
        ({"workspace_name": "amw"}, {"location": None}, "cluster.location=None: required to create a workspace"),
        (
            {"workspace_name": "amw"},
            {"metrics_addon_enabled": False},
            "cluster.metrics_addon_enabled=False: the cluster's managed Prometheus add-on is off",
        ),
        ({"workspace_name": "amw"}, {"cluster_id": None}, "cluster.cluster_id=None: required by this component"),
    ],
)
def test_bad_input_is_refused_before_anything_is_created(args, params, expected):
    def program():
        ManagedPrometheus("prom", args, cluster=cluster(**params))

    assert registered_before_error(program, ComponentInputError) == []
    with pytest.raises(ComponentInputError, match="ManagedPrometheus 'prom': invalid arguments") as caught:
        run_components(program)
    assert expected in str(caught.value)


def test_a_long_component_name_needs_an_explicit_collection_name():
    name = "prometheus-for-the-production-inference-cluster"

    def program():
        ManagedPrometheus(name, {"workspace_name": "amw"}, cluster=cluster(resource_group_name="rg"))

    assert registered_before_error(program, ComponentInputError) == []
    with pytest.raises(ComponentInputError, match=f"collection_name='MSProm-{name}': the default MSProm-<component name>"):
        run_components(program)


def test_prometheus_problems_reports_every_problem_at_once():
    name = "prometheus-for-the-production-inference-cluster"
    args = ManagedPrometheusArgs(workspace_name="amw")
    context = cluster(cluster_id=None, location=None, metrics_addon_enabled=False)
    assert [p.field for p in prometheus_problems(name, args, context)] == [
        "cluster.cluster_id",
        "cluster.metrics_addon_enabled",
        "cluster.location",
        "collection_name",
    ]
    assert prometheus_problems("prom", args, cluster()) == []
    existing = ManagedPrometheusArgs(existing_workspace_id=WORKSPACE_ID, collection_name="MSProm-shared")
    assert prometheus_problems(name, existing, cluster(location=None)) == [], "an existing workspace brings its region"


def test_policy_pack_has_no_mandatory_objection():
    _, run = build()
    assert [v for v in analyze(run) if v.mandatory] == []
