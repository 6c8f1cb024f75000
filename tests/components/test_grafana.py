"""ManagedGrafana under mocks, and the AI gateway dashboard it is meant to show: the JSON parses, its
panels cover every view the stack promises, and every PromQL expression uses only metrics the stack
exports (vLLM through its PodMonitor, Envoy AI Gateway's GenAI metrics, the semantic router)."""

import json
import re

import pulumi
import pytest

from aks_gpu_inference.components.azure.grafana import (
    DASHBOARD_PATH,
    GRAFANA_ROLES,
    ManagedGrafana,
    ManagedGrafanaArgs,
    endpoint_of,
    grafana_problems,
    principal_id_of,
)
from aks_gpu_inference.components.azure.monitoring import ManagedPrometheus
from aks_gpu_inference.components.context import AzureScope
from aks_gpu_inference.planner.engine.program import PlaceholderMocks, RecordingMonitor
from tests.conftest import REPO, cluster_context, of_type, one, refusal_message, run_components
from tests.dashboard_metrics import ALLOWED, VLLM_METRICS, metric_names

WORKSPACE_ID = "/subscriptions/0000/resourceGroups/rg-mon/providers/Microsoft.Monitor/accounts/amw-shared"
CLUSTER_ID = "/subscriptions/0000/resourceGroups/rg-test/providers/Microsoft.ContainerService/managedClusters/aks-test"
ENDPOINT = "https://grafana-test-abcd.eus.grafana.azure.com"
ADMIN = "11111111-2222-3333-4444-555555555555"
VIEWER = "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"
MONITORING_DATA_READER = "b0d8363b-8ddd-447d-831f-62ca05bff136"

# ---------------------------------------------------------------------------------------------------------
# The dashboard
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "expr, names, regexes",
    [
        ("sum by (le, model) (rate(foo_bucket[5m]))", {"foo_bucket"}, set()),
        (
            'histogram_quantile(0.95, sum without (pod) (rate(vllm:x_bucket{ns="a b",le!="1"}[$__rate_interval])))',
            {"vllm:x_bucket"},
            set(),
        ),
        ("a_total / on (job) group_left (instance) b_total * 1e6 + $price or vector(0)", {"a_total", "b_total"}, set()),
        ('rate({__name__=~"x(_y)?_sum", t="by(z)"}[5m]) offset 1h', set(), {"x(_y)?_sum"}),
        ('{__name__="exact_total"} > bool 1', {"exact_total"}, set()),
        ("max_over_time(up[1h:5m]) unless inf", {"up"}, set()),
    ],
)
def test_metric_name_extractor(expr, names, regexes):
    assert metric_names(expr) == (names, regexes)


@pytest.fixture(scope="module")
def board() -> dict:
    return json.loads((REPO / DASHBOARD_PATH).read_text())


def panels(board: dict) -> list[dict]:
    found = []
    for panel in board["panels"]:
        found.append(panel)
        found.extend(panel.get("panels", []))
    return [p for p in found if p["type"] != "row"]


def expressions(board: dict) -> list[tuple[str, str]]:
    return [(p["title"], t["expr"]) for p in panels(board) for t in p["targets"]]


def test_dashboard_is_a_grafana_dashboard_on_a_prometheus_variable(board):
    assert board["schemaVersion"] >= 39 and board["uid"] and board["title"]
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids)), "panel ids are unique"
    for panel in panels(board):
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
        assert panel["targets"] and panel.get("description"), panel["title"]
        for target in panel["targets"]:
            assert target["datasource"]["uid"] == "${datasource}"
        refs = [t["refId"] for t in panel["targets"]]
        assert len(refs) == len(set(refs))


def test_every_expression_uses_only_metrics_the_stack_exports(board):
    used = set()
    for title, expr in expressions(board):
        names, regexes = metric_names(expr)
        assert names or regexes, f"{title}: no metric in {expr}"
        assert names <= ALLOWED, f"{title}: {names - ALLOWED} not exported by the stack"
        for regex in regexes:
            matched = {m for m in ALLOWED if re.fullmatch(regex, m)}
            assert matched, f"{title}: __name__=~{regex!r} matches no exported metric"
            used |= matched
        used |= names
        assert expr.count("(") == expr.count(")") and expr.count("{") == expr.count("}"), title
    # Both releases' names of the token histogram are selected, nothing more.
    assert {"gen_ai_client_token_usage_sum", "gen_ai_client_token_usage_token_sum"} <= used
    assert used >= VLLM_METRICS


def test_variables_used_in_queries_are_defined(board):
    defined = {v["name"] for v in board["templating"]["list"]} | {"__rate_interval", "__interval", "__range"}
    for title, expr in expressions(board):
        used = set(re.findall(r"\$\{?(\w+)", expr))
        assert used <= defined, f"{title}: undefined {used - defined}"


def test_price_variables_are_documented_numbers(board):
    prices = [v for v in board["templating"]["list"] if v["name"].startswith("price_")]
    assert {v["name"] for v in prices} == {
        "price_input_frontier",
        "price_output_frontier",
        "price_input_self_hosted",
        "price_output_self_hosted",
    }
    for variable in prices:
        float(variable["query"])
        assert "1M" in variable["label"] and variable["description"]


def by_title(board: dict, words: str) -> dict:
    found = [p for p in panels(board) if words.lower() in p["title"].lower()]
    assert len(found) == 1, f"expected one panel titled like {words!r}, got {[p['title'] for p in found]}"
    return found[0]


def test_panels_cover_every_required_view(board):
    rps = by_title(board, "requests per second by route and model")
    assert "gen_ai_request_model" in rps["targets"][0]["expr"] and "gen_ai_operation_name" in rps["targets"][0]["expr"]

    tokens = by_title(board, "tokens per second by model and token type")
    assert "gen_ai_token_type" in tokens["targets"][0]["expr"] and "input|output" in tokens["targets"][0]["expr"]

    for view in ("share of requests", "share of tokens"):
        split = by_title(board, f"cheap vs frontier: {view}")
        exprs = [t["expr"] for t in split["targets"]]
        assert any('=~"$self_hosted_models"' in e for e in exprs) and any('!~"$self_hosted_models"' in e for e in exprs)
        assert "self_hosted_models" in split["description"] and split["fieldConfig"]["defaults"]["unit"] == "percentunit"

    latency = by_title(board, "gateway latency p50 / p95 / p99")
    quantiles = sorted(re.search(r"histogram_quantile\(([\d.]+)", t["expr"]).group(1) for t in latency["targets"])
    assert quantiles == ["0.50", "0.95", "0.99"]
    assert all("gen_ai_server_request_duration_seconds_bucket" in t["expr"] for t in latency["targets"])

    spend = by_title(board, "estimated spend per hour")
    joined = " ".join(t["expr"] for t in spend["targets"])
    for price in ("price_input_frontier", "price_output_frontier", "price_input_self_hosted", "price_output_self_hosted"):
        assert f"${price}" in joined and price in spend["description"]
    assert "3600" in joined and "1e6" in joined and spend["fieldConfig"]["defaults"]["unit"] == "currencyUSD"

    queue = by_title(board, "vllm requests waiting and running per service")
    exprs = " ".join(t["expr"] for t in queue["targets"])
    assert "vllm:num_requests_waiting" in exprs and "vllm:num_requests_running" in exprs
    kv = by_title(board, "vllm kv cache usage per service")
    assert "vllm:kv_cache_usage_perc" in kv["targets"][0]["expr"]
    for panel in (queue, kv):
        assert all("app_kubernetes_io_instance" in t["expr"] for t in panel["targets"]), "per service = per instance label"


def test_self_hosted_default_regex_splits_served_names_from_azure_openai_models(board):
    regex = next(v["query"] for v in board["templating"]["list"] if v["name"] == "self_hosted_models")
    for served in ("Qwen/Qwen2.5-7B-Instruct", "meta-llama/Llama-3.1-8B-Instruct"):
        assert re.fullmatch(regex, served)
    for frontier in ("gpt-4o", "gpt-4o-2024-08-06", "o3-mini"):
        assert not re.fullmatch(regex, frontier)


# ---------------------------------------------------------------------------------------------------------
# The component
# ---------------------------------------------------------------------------------------------------------


class GrafanaMocks(PlaceholderMocks):
    """Mocks that also return what Azure computes for a Grafana workspace: identity and endpoint."""

    def new_resource(self, args):
        resource_id, state = super().new_resource(args)
        if args.typ == "azure-native:dashboard:Grafana":
            state["identity"] = {**state["identity"], "principalId": "grafana-principal", "tenantId": "tenant"}
            state["properties"] = {**state["properties"], "endpoint": ENDPOINT}
        return resource_id, state


def build(args=None, prometheus=WORKSPACE_ID, resource_group_name="rg-test"):
    holder = {}

    def program():
        source = prometheus() if callable(prometheus) else prometheus
        grafana = ManagedGrafana(
            "grafana",
            args if args is not None else {"workspace_name": "grafana-test"},
            scope=AzureScope(resource_group_name, "eastus"),
            prometheus=source,
        )
        holder["grafana"] = grafana
        for key in ("endpoint", "grafana_id", "principal_id", "import_command", "dashboard_path"):
            pulumi.export(key, getattr(grafana, key))

    run = run_components(program, monitor=RecordingMonitor(GrafanaMocks()))
    return holder["grafana"], run


def test_workspace_is_integrated_with_the_monitor_workspace():
    _, run = build()
    component = one(run, "aks-gpu:index:ManagedGrafana")
    children = [r for r in run.resources if r.parent == component.urn]
    assert sorted(r.type for r in children) == [
        "azure-native:authorization:RoleAssignment",
        "azure-native:authorization:RoleAssignment",
        "azure-native:dashboard:Grafana",
    ]
    grafana = one(run, "dashboard:Grafana").inputs
    assert grafana == {
        "workspaceName": "grafana-test",
        "resourceGroupName": "rg-test",
        "location": "eastus",
        "identity": {"type": "SystemAssigned"},
        "sku": {"name": "Standard"},
        "properties": {
            "grafanaMajorVersion": "12",
            "publicNetworkAccess": "Enabled",
            "grafanaIntegrations": {"azureMonitorWorkspaceIntegrations": [{"azureMonitorWorkspaceResourceId": WORKSPACE_ID}]},
        },
    }


def test_grafana_identity_reads_the_monitor_workspace():
    _, run = build()
    reader = one_named(run, "grafana-monitoring-reader")
    assert reader["scope"] == WORKSPACE_ID
    assert reader["principalId"] == "grafana-principal"
    assert reader["principalType"] == "ServicePrincipal"
    assert reader["roleDefinitionId"] == (
        f"/subscriptions/<computed:subscriptionId>/providers/Microsoft.Authorization/roleDefinitions/{MONITORING_DATA_READER}"
    )


def test_outputs():
    grafana, run = build()
    assert run.outputs["endpoint"] == ENDPOINT
    assert run.outputs["grafana_id"] == "<computed:grafana-grafana.id>"
    assert run.outputs["principal_id"] == "grafana-principal"
    assert run.outputs["dashboard_path"] == DASHBOARD_PATH == "dashboards/ai-gateway.json"
    assert (REPO / DASHBOARD_PATH).is_file()
    command = "az grafana dashboard import -g rg-test -n grafana-test --definition dashboards/ai-gateway.json"
    assert grafana.import_command == command and run.outputs["import_command"] == command


def test_import_command_follows_a_computed_resource_group():
    grafana, run = build(resource_group_name=pulumi.Output.from_input("rg-computed"))
    assert isinstance(grafana.import_command, pulumi.Output)
    assert run.outputs["import_command"].startswith("az grafana dashboard import -g rg-computed -n grafana-test ")


def test_managed_prometheus_component_is_accepted():
    def prometheus():
        return ManagedPrometheus(
            "prom", {"workspace_name": "amw-test"}, cluster=cluster_context(resource_group_name="rg-test", cluster_id=CLUSTER_ID)
        )

    _, run = build(prometheus=prometheus)
    workspace = "<computed:prom-workspace.id>"
    integration = one(run, "dashboard:Grafana").inputs["properties"]["grafanaIntegrations"]
    assert integration == {"azureMonitorWorkspaceIntegrations": [{"azureMonitorWorkspaceResourceId": workspace}]}
    assert one_named(run, "grafana-monitoring-reader")["scope"] == workspace
    urns = {r.type.rsplit(":", 1)[-1]: r.urn for r in run.resources}
    assert urns["AzureMonitorWorkspace"] in one(run, "dashboard:Grafana").options["dependsOn"]


def test_people_get_grafana_roles_on_the_workspace():
    args = {
        "workspace_name": "grafana-test",
        "major_version": "12",
        "public_network_access": False,
        "admin_principal_ids": [ADMIN.upper()],
        "viewer_principal_ids": [VIEWER],
        "principal_type": "User",
        "tags": {"env": "dev"},
    }
    _, run = build(args)
    grafana = one(run, "dashboard:Grafana").inputs
    assert grafana["properties"]["grafanaMajorVersion"] == "12"
    assert grafana["properties"]["publicNetworkAccess"] == "Disabled"
    assert grafana["tags"] == {"env": "dev"}
    assignments = {r.name: r.inputs for r in of_type(run, "authorization:RoleAssignment")}
    assert set(assignments) == {
        "grafana-monitoring-reader",
        "grafana-deployer-admin",
        f"grafana-admin-{ADMIN}",
        f"grafana-viewer-{VIEWER}",
    }
    for name, principal, role in (
        (f"grafana-admin-{ADMIN}", ADMIN, "Grafana Admin"),
        (f"grafana-viewer-{VIEWER}", VIEWER, "Grafana Viewer"),
    ):
        assignment = assignments[name]
        assert assignment["scope"] == "<computed:grafana-grafana.id>"
        assert assignment["principalId"] == principal
        assert assignment["principalType"] == "User"
        assert assignment["roleDefinitionId"].endswith(f"/roleDefinitions/{GRAFANA_ROLES[role]}")
    _, run = build({"workspace_name": "grafana-test", "admin_principal_ids": [ADMIN]})
    assert one_named(run, f"grafana-admin-{ADMIN}")["principalType"] == "Group", "groups by default"
    assert GRAFANA_ROLES == {
        "Grafana Admin": "22926164-76b3-42b3-bc55-97df8dab3e41",
        "Grafana Viewer": "60921a7e-fef1-4a43-9b16-a26c52ad4769",
    }


def test_the_deployer_can_sign_in_by_default():
    """Before: no Grafana role for anybody, so nobody could sign in to the new workspace."""
    _, run = build()
    deployer = one_named(run, "grafana-deployer-admin")
    assert deployer["scope"] == "<computed:grafana-grafana.id>"
    assert deployer["principalId"] == "<computed:objectId>"
    assert deployer["principalType"] == "User"
    assert deployer["roleDefinitionId"].endswith(f"/roleDefinitions/{GRAFANA_ROLES['Grafana Admin']}")
    _, run = build({"workspace_name": "grafana-test", "deployer_principal_type": "ServicePrincipal"})
    assert one_named(run, "grafana-deployer-admin")["principalType"] == "ServicePrincipal"


def test_a_workspace_nobody_can_sign_in_to_is_refused():
    with pytest.raises(ValueError, match="nobody can sign in"):
        ManagedGrafanaArgs(workspace_name="grafana-test", grant_deployer_admin=False)
    _, run = build({"workspace_name": "grafana-test", "grant_deployer_admin": False, "admin_principal_ids": [ADMIN]})
    assignments = {r.name for r in of_type(run, "authorization:RoleAssignment")}
    assert assignments == {"grafana-monitoring-reader", f"grafana-admin-{ADMIN}"}, "the admin signs in, not the deployer"


def one_named(run, name: str) -> dict:
    return next(r.inputs for r in run.resources if r.name == name)


@pytest.mark.parametrize(
    "read, value, expected",
    [
        (principal_id_of, None, None),
        (principal_id_of, {"principalId": "p"}, "p"),
        (principal_id_of, type("Identity", (), {"principal_id": "p"})(), "p"),
        (endpoint_of, None, None),
        (endpoint_of, {"endpoint": ENDPOINT}, ENDPOINT),
        (endpoint_of, type("Properties", (), {})(), None),
    ],
)
def test_outputs_are_read_defensively(read, value, expected):
    assert read(value) == expected


@pytest.mark.parametrize(
    "args, params, expected",
    [
        ({}, {}, "workspace_name: required key is missing"),
        ({"workspace_name": "g"}, {}, "workspace_name='g': Managed Grafana workspace names are 2-23 letters, digits or hyphens"),
        ({"workspace_name": "g" * 24}, {}, "workspace_name='" + "g" * 24 + "': Managed Grafana workspace names are 2-23"),
        ({"workspace_name": "1grafana"}, {}, "workspace_name='1grafana': Managed Grafana workspace names"),
        ({"workspace_name": "grafana-"}, {}, "workspace_name='grafana-'"),
        ({"workspace_name": "grafana_test"}, {}, "workspace_name='grafana_test'"),
        (
            {"workspace_name": "grafana-test", "major_version": "11.2"},
            {},
            "major_version='11.2': expected a Grafana major version",
        ),
        (
            {"workspace_name": "grafana-test", "admin_principal_ids": ["alice@contoso.com"]},
            {},
            "expected Entra ID object IDs (GUIDs)",
        ),
        (
            {"workspace_name": "grafana-test", "viewer_principal_ids": [VIEWER, VIEWER.upper()]},
            {},
            "the same object ID is listed twice",
        ),
        ({"workspace_name": "grafana-test", "sku": "Essential"}, {}, "sku='Essential': unknown key"),
        ({"workspace_name": "grafana-test", "principal_type": "Device"}, {}, "principal_type='Device'"),
        (
            {"workspace_name": "grafana-test"},
            {"prometheus": "/subscriptions/0000/resourceGroups/rg/providers/Microsoft.OperationalInsights/workspaces/law"},
            # Values longer than 80 characters are cut in messages.
            "prometheus='/subscriptions/0000/resourceGroups/rg/providers/Microsoft.OperationalInsights/…: expected a ManagedPrometheus",
        ),
        ({"workspace_name": "grafana-test"}, {"prometheus": None}, "prometheus=None: expected a ManagedPrometheus"),
        ({"workspace_name": "grafana-test"}, {"location": None}, "scope.location=None: required"),
    ],
)
def test_bad_input_is_refused_before_anything_is_created(args, params, expected):
    params = {"prometheus": WORKSPACE_ID, "location": "eastus"} | params

    def program():
        ManagedGrafana("grafana", args, scope=AzureScope("rg-test", params["location"]), prometheus=params["prometheus"])

    message = refusal_message(program, "ManagedGrafana", "grafana", lambda t: t.startswith("azure-native:"))
    assert expected in message


def test_grafana_problems_reports_every_problem_at_once():
    law = "/subscriptions/0000/resourceGroups/rg/providers/Microsoft.OperationalInsights/workspaces/law"
    assert [p.field for p in grafana_problems(law, AzureScope("rg", None))] == ["prometheus", "scope.location"]
    assert [p.field for p in grafana_problems(42, AzureScope("rg", "eastus"))] == ["prometheus"]
    assert grafana_problems(WORKSPACE_ID, AzureScope("rg", "eastus")) == []
    assert grafana_problems(pulumi.Output.from_input(WORKSPACE_ID), AzureScope("rg", "eastus")) == []
