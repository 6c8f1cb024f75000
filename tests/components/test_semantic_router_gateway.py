"""SemanticRouterGateway as the dev stack renders it: one keyless, authenticated endpoint whose router sends
easy prompts to the self-hosted model and hard ones to Azure OpenAI (seed 000)."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest

from aks_gpu_inference.components._base import ComponentInputError
from aks_gpu_inference.components.azure.grafana import DASHBOARD_PATH
from aks_gpu_inference.components.azure.workload_identity import BUILT_IN_ROLES
from aks_gpu_inference.components.core import catalog
from aks_gpu_inference.components.core.errors import ConfigError
from aks_gpu_inference.components.gateway import router_config, router_render
from aks_gpu_inference.components.gateway.semantic_router_gateway import SemanticRouterGateway
from aks_gpu_inference.components.gateway.semantic_router_gateway_args import (
    GatewaySecrets,
    SemanticRouterGatewayArgs,
    SharedServices,
    frontier_backends,
    router_config_args,
    semantic_router_gateway_problems,
)
from aks_gpu_inference.components.stack.config import parse_stack_config
from aks_gpu_inference.planner.engine.values import kubernetes_object
from tests.conftest import (
    PROJECT,
    REPO,
    cluster_context,
    of_type,
    one,
    refusal_message,
    run_stack,
    secret_config,
    stack_config,
)
from tests.crd_check import check_gateway_references, policy_targets
from tests.dashboard_metrics import ALLOWED, GATEWAY_METRICS, ROUTER_METRICS, VLLM_METRICS, metric_names
from tests.router_rules import route

OPENAI_USER_GUID = "5e0bd9bd-7b93-4f28-af87-19fc36ad61bd"
REFRESHER_SUBJECT = "system:serviceaccount:ai-gateway:aoai-token"


@pytest.fixture(scope="module")
def dev():
    """The dev stack's run, its Kubernetes objects, and the RouterConfigArgs the router's config was rendered from."""
    rendered: list[router_config.RouterConfigArgs] = []
    render = router_render.render

    def recording(args):
        rendered.append(args)
        return render(args)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(router_render, "render", recording)
        run = run_stack(stack_config("dev"), "dev")  # a fresh run: the recording must see the render
    assert len(rendered) == 1, "one router config per gateway"
    objects = [kubernetes_object(r) for r in run.resources if r.is_kubernetes and not r.type.startswith("kubernetes:helm.sh/")]
    return run, objects, rendered[0]


def of_kind(objects: list[dict], kind: str) -> list[dict]:
    return [o for o in objects if o["kind"] == kind]


def numbers_as_floats(value):
    """The engine's wire format carries every number as a double; compare configs with that in mind."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, dict):
        return {k: numbers_as_floats(v) for k, v in value.items()}
    return [numbers_as_floats(v) for v in value]


# ---- Azure OpenAI without keys, reached with a refreshed Entra token --------------------------------


def test_the_azure_openai_account_has_local_auth_disabled(dev):
    run, _, _ = dev
    account = one(run, "cognitiveservices:Account")
    assert account.inputs["kind"] == "OpenAI"
    assert account.inputs["properties"]["disableLocalAuth"] is True


def test_the_token_refresher_identity_is_an_openai_user_on_the_account(dev):
    run, objects, _ = dev
    (credential,) = [r for r in of_type(run, "FederatedIdentityCredential") if r.inputs["subject"] == REFRESHER_SUBJECT]
    assert credential.inputs["issuer"] == "<computed:oidcIssuerURL>"
    assert credential.inputs["audiences"] == ["api://AzureADTokenExchange"]
    identity = re.fullmatch(r"<computed:(.+)\.name>", credential.inputs["resourceName"])[1]

    account = one(run, "cognitiveservices:Account")
    (grant,) = [r for r in of_type(run, "RoleAssignment") if r.inputs.get("principalId") == f"<computed:{identity}.principalId>"]
    assert BUILT_IN_ROLES["Cognitive Services OpenAI User"] == OPENAI_USER_GUID
    assert grant.inputs["roleDefinitionId"].endswith(f"/providers/Microsoft.Authorization/roleDefinitions/{OPENAI_USER_GUID}")
    assert grant.inputs["scope"] == f"<computed:{account.name}.id>"
    assert grant.inputs["principalType"] == "ServicePrincipal"

    # The pods that fetch the token run as exactly that federated account.
    (account_obj,) = [
        o
        for o in of_kind(objects, "ServiceAccount")
        if (o["metadata"]["namespace"], o["metadata"]["name"]) == ("ai-gateway", "aoai-token")
    ]
    assert account_obj["metadata"]["annotations"] == {"azure.workload.identity/client-id": f"<computed:{identity}.clientId>"}
    for pod in refresher_pods(objects):
        assert pod["spec"]["serviceAccountName"] == "aoai-token"
        assert pod["metadata"]["labels"]["azure.workload.identity/use"] == "true"


def refresher_pods(objects: list[dict]) -> list[dict]:
    """The pod templates of the refresher's CronJob and its deploy-time Job."""
    (cron,) = [o for o in of_kind(objects, "CronJob") if o["metadata"]["name"] == "aoai-token"]
    jobs = [o for o in of_kind(objects, "Job") if o["metadata"]["namespace"] == "ai-gateway"]
    assert jobs, "a Job fills the Secrets at deploy time"
    return [cron["spec"]["jobTemplate"]["spec"]["template"]] + [j["spec"]["template"] for j in jobs]


def azure_openai_secret_names(objects: list[dict]) -> set[str]:
    """The Secrets the BackendSecurityPolicies of AzureOpenAI-schema backends read."""
    azure = {o["metadata"]["name"] for o in of_kind(objects, "AIServiceBackend") if o["spec"]["schema"]["name"] == "AzureOpenAI"}
    names = set()
    for obj in of_kind(objects, "BackendSecurityPolicy"):
        spec = obj["spec"]
        if {t["name"] for t in spec["targetRefs"]} & azure:
            assert spec["type"] == "APIKey", "the refreshed Entra token is sent as the bearer credential"
            names.add(spec["apiKey"]["secretRef"]["name"])
    return names


def test_the_refresher_fills_exactly_the_secrets_the_azure_openai_policies_read(dev):
    _, objects, _ = dev
    wanted = azure_openai_secret_names(objects)
    assert wanted == {"aoai-gpt-5-5-entra-token"}
    for pod in refresher_pods(objects):
        (container,) = pod["spec"]["containers"]
        env = {e["name"]: e.get("value") for e in container["env"]}
        assert set(env["SECRET_NAMES"].split(",")) == wanted
        assert env["SECRET_NAMESPACE"] == "ai-gateway"
        assert env["SECRET_KEY"] == "apiKey", "the key Envoy AI Gateway reads"
        assert env["TOKEN_SCOPE"] == "https://cognitiveservices.azure.com/.default"
    (role,) = [o for o in of_kind(objects, "Role") if o["metadata"]["name"] == "aoai-token"]
    (rule,) = role["rules"]
    assert set(rule["resourceNames"]) == wanted and set(rule["verbs"]) == {"get", "patch"}
    secrets = {o["metadata"]["name"]: o for o in of_kind(objects, "Secret") if o["metadata"]["namespace"] == "ai-gateway"}
    for name in wanted:
        assert set(secrets[name]["stringData"]) == {"apiKey"}


def test_every_backend_security_policy_reads_a_secret_that_exists(dev):
    _, objects, _ = dev
    secrets = {(o["metadata"]["namespace"], o["metadata"]["name"]): o for o in of_kind(objects, "Secret")}
    for obj in of_kind(objects, "BackendSecurityPolicy"):
        ref = obj["spec"]["apiKey"]["secretRef"]
        secret = secrets[(ref.get("namespace") or obj["metadata"]["namespace"], ref["name"])]
        assert set(secret["stringData"]) == {"apiKey"}


# ---- routing --------------------------------------------------------------------------------------


def routed_models(objects: list[dict]) -> dict[str, str]:
    """AIGatewayRoute rules: model header value -> AIServiceBackend."""
    (route,) = of_kind(objects, "AIGatewayRoute")
    routes = {}
    for rule in route["spec"]["rules"]:
        (match,) = rule["matches"]
        (header,) = match["headers"]
        assert header["name"] == "x-ai-eg-model" and header.get("type") == "Exact"
        (backend,) = rule["backendRefs"]
        routes[header["value"]] = backend["name"]
    return routes


def test_route_rules_and_router_models_agree(dev):
    run, objects, args = dev
    routes = routed_models(objects)
    router_models = {m.name for m in args.models}
    assert set(routes) == router_models == {"llama-8b", "gpt-5.5"}
    assert run.outputs["gateway_routes"] == routes
    # The router rewrites `model` to the provider model id; the route must match that too.
    (chart,) = [r for r in of_type(run, "helm.sh/v4:Chart") if r.name.endswith("router-chart")]
    override = chart.inputs["values"]["config"]
    assert {m["provider_model_id"] for m in override["providers"]["models"]} == set(routes)
    assert {c["name"] for c in override["routing"]["modelCards"]} == set(routes)
    assert override["providers"]["defaults"]["default_model"] in routes
    for decision in override["routing"]["decisions"]:
        for ref in decision.get("modelRefs", []):
            assert ref["model"] in routes, decision["name"]


def test_the_chart_receives_the_config_rendered_from_these_args(dev):
    run, _, args = dev
    (chart,) = [r for r in of_type(run, "helm.sh/v4:Chart") if r.name.endswith("router-chart")]
    assert numbers_as_floats(chart.inputs["values"]["config"]) == numbers_as_floats(router_render.render(args))


@pytest.mark.parametrize(
    "categories, prompt, model",
    [
        # README: "Summarize this ticket in one sentence: ..." with model "MoM".
        ({"other"}, "Summarize this ticket in one sentence: the printer is jammed again.", "llama-8b"),
        ({"math"}, "What is the derivative of x^3 sin x?", "gpt-5.5"),
        ({"law"}, "Is a verbal contract binding here?", "gpt-5.5"),
        ({"business"}, "Draft a short status update for the team.", "llama-8b"),
        # router_config.default_decisions: hard keywords outrank easy ones.
        ({"other"}, "Summarize this proof step by step.", "gpt-5.5"),
        ({"history"}, "Prove that the treaty was signed in 1648.", "gpt-5.5"),
        # Nothing matches: the cheap default.
        (set(), "hello", "llama-8b"),
    ],
)
def test_the_router_sends_example_prompts_to_the_intended_model(dev, categories, prompt, model):
    run, objects, args = dev
    assert args.default_model == "llama-8b"
    (chart,) = [r for r in of_type(run, "helm.sh/v4:Chart") if r.name.endswith("router-chart")]
    chosen = route(chart.inputs["values"]["config"], categories, prompt)
    assert chosen == model
    assert chosen in routed_models(objects), "the chosen model has a route"


# ---- no anonymous route, no secret in plain text -------------------------------------------------------


def test_no_route_is_anonymous(dev):
    _, objects, _ = dev
    check_gateway_references(objects)
    (gateway,) = of_kind(objects, "Gateway")
    ns, name = gateway["metadata"]["namespace"], gateway["metadata"]["name"]
    guarded = []
    for obj in of_kind(objects, "SecurityPolicy"):
        spec = obj["spec"]
        if spec.get("apiKeyAuth") and any((t["kind"], t["name"]) == ("Gateway", name) for t in policy_targets(spec)):
            assert obj["metadata"]["namespace"] == ns
            guarded.append(spec["apiKeyAuth"])
    (auth,) = guarded
    assert auth.get("forwardClientIDHeader"), "budgets count per client id"
    (ref,) = auth["credentialRefs"]
    assert ref.get("kind") in (None, "Secret") and ref.get("group") in (None, "")
    (keys,) = [o for o in of_kind(objects, "Secret") if (o["metadata"]["namespace"], o["metadata"]["name"]) == (ns, ref["name"])]
    client_ids = stack_config("dev")[f"{PROJECT}:gateway"]["gateway"]["client_ids"]
    assert set(keys["stringData"]) == set(client_ids) == {"agent"}
    # Every route hangs off that Gateway (and only there).
    for obj in of_kind(objects, "AIGatewayRoute"):
        assert {(p.get("kind"), p["name"]) for p in obj["spec"]["parentRefs"]} == {("Gateway", name)}


def test_no_secret_appears_in_plain_text(dev):
    run, objects, _ = dev
    recorded = json.dumps([r.inputs for r in run.resources], default=str) + json.dumps(run.outputs, default=str)
    placeholders = set(re.findall(r"<secret:[^>]+>", json.dumps(secret_config())))
    assert any("gateway_client_keys" in p for p in placeholders) and any("vllm_api_key" in p for p in placeholders)
    assert "<secret:" not in recorded, "no secret placeholder leaks unmasked"
    for secret in of_kind(objects, "Secret"):
        data = secret.get("stringData")
        assert data == "<secret>" or set(data.values()) == {"<secret>"}, secret["metadata"]["name"]


# ---- the dashboard -------------------------------------------------------------------------------------


def test_gateway_and_router_send_traces_to_the_collector_service(dev):
    run, objects, args = dev
    (service,) = [o for o in of_kind(objects, "Service") if o["metadata"]["name"] == "otel-collector"]
    namespace, port = service["metadata"]["namespace"], service["spec"]["ports"][0]["port"]
    (proxy,) = of_kind(objects, "EnvoyProxy")
    assert proxy["metadata"]["namespace"] == namespace, "same namespace: no ReferenceGrant needed"
    provider = proxy["spec"]["telemetry"]["tracing"]["provider"]
    assert provider["type"] == "OpenTelemetry"
    assert provider["backendRefs"] == [{"name": "otel-collector", "namespace": namespace, "port": port}]
    assert args.tracing_endpoint == f"otel-collector.{namespace}.svc.cluster.local:{port}"
    (chart,) = [r for r in run.resources if r.name == "gateway-router-chart"]
    exporter = chart.inputs["values"]["config"]["global"]["services"]["observability"]["tracing"]["exporter"]
    assert exporter["endpoint"] == args.tracing_endpoint
    (deployment,) = [o for o in of_kind(objects, "Deployment") if o["metadata"]["name"] == "otel-collector"]
    assert deployment["spec"]["selector"]["matchLabels"] == service["spec"]["selector"]
    assert [c["containerPort"] for c in deployment["spec"]["template"]["spec"]["containers"][0]["ports"]] == [port]
    insights = [r for r in run.resources if r.type == "azure-native:applicationinsights:Component"]
    assert len(insights) == 1 and insights[0].inputs["ingestionMode"] == "LogAnalytics"


def test_tracing_off_leaves_out_the_collector_and_the_exporters():
    config = stack_config("dev")
    config[f"{PROJECT}:gateway"]["tracing"] = False
    run = run_stack(config, "dev")
    assert not [r for r in run.resources if "otel-collector" in r.name]
    assert not [r for r in run.resources if r.type.startswith("azure-native:applicationinsights")]
    (proxy,) = [kubernetes_object(r) for r in run.resources if r.type.endswith(":EnvoyProxy")]
    assert "telemetry" not in proxy["spec"]
    (chart,) = [r for r in run.resources if r.name == "gateway-router-chart"]
    assert "services" not in chart.inputs["values"]["config"]["global"], "no router tracing section"


def test_the_dashboard_parses_and_reads_only_exported_metrics(dev):
    run, objects, _ = dev
    assert str(DASHBOARD_PATH) in run.outputs["dashboard_import"]
    board = json.loads((REPO / DASHBOARD_PATH).read_text())
    used: set[str] = set()
    for panel in [p for top in board["panels"] for p in [top, *top.get("panels", [])] if p["type"] != "row"]:
        for target in panel["targets"]:
            names, regexes = metric_names(target["expr"])
            assert names <= ALLOWED, f"{panel['title']}: {names - ALLOWED}"
            used |= names | {m for r in regexes for m in ALLOWED if re.fullmatch(r, m)}
    assert used & VLLM_METRICS and used & GATEWAY_METRICS and used & ROUTER_METRICS
    # Each family is scraped by a PodMonitor this stack renders: the model, the Envoy proxies (Envoy's
    # own stats and the GenAI metrics of the AI Gateway's extproc sidecar), the router.
    monitors = {
        (o["metadata"]["namespace"], e["port"], e["path"])
        for o in of_kind(objects, "PodMonitor")
        for e in o["spec"]["podMetricsEndpoints"]
    }
    assert {
        ("envoy-gateway-system", "metrics", "/stats/prometheus"),
        ("envoy-gateway-system", "aigw-admin", "/metrics"),
        ("vllm-semantic-router-system", "metrics", "/metrics"),
    } <= monitors
    assert any(ns == "gpu-inference" and path == "/metrics" for ns, _, path in monitors)


# ---- refusals --------------------------------------------------------------------------------------------


def project_keys(config: dict) -> dict:
    return {k.split(":", 1)[1]: v for k, v in config.items() if k.startswith(f"{PROJECT}:")}


def test_a_gateway_without_models_is_refused_by_the_config():
    config = project_keys(stack_config("dev"))
    config.pop("models")
    with pytest.raises(ConfigError) as caught:
        parse_stack_config(config)
    assert "gateway" in str(caught.value)
    assert "routes to self-hosted models: add at least one entry to models" in str(caught.value)


@pytest.mark.parametrize("served", ["Llama 8B", "meta-llama/Llama-3.1-8B-Instruct", "LLAMA-8B"])
def test_a_served_model_name_the_router_cannot_use_is_refused(served):
    config = stack_config("dev")
    config[f"{PROJECT}:models"][0]["served_model_name"] = served
    with pytest.raises(ConfigError) as caught:
        run_stack(config, "dev")
    message = str(caught.value)
    # Refused by the stack config, with the key's full path, before any component runs.
    assert message.startswith("Pulumi.dev.yaml is invalid")
    assert f"models[0].served_model_name={served!r}: routed model names are lower-case" in message


def test_a_router_config_problem_names_its_key_without_pydantic_internals():
    """Before: decisions='see below' and pydantic's input_value dump."""
    config = stack_config("dev")
    config["aks-gpu-inference:gateway"]["decisions"] = [
        {"name": "x", "categories": ["math"], "model": "gpt-5.5", "use_reasoning": True}
    ]
    with pytest.raises(ComponentInputError) as caught:
        run_stack(config)
    message = str(caught.value)
    assert (
        "decisions[0].use_reasoning=True: decision 'x' asks for reasoning but model 'gpt-5.5' has no reasoning_family" in message
    )
    assert "input_value" not in message and "see below" not in message


# ---- the checks, without the engine ---------------------------------------------------------------------


def gateway_args(**changes) -> SemanticRouterGatewayArgs:
    return SemanticRouterGatewayArgs.model_validate({**stack_config("dev")[f"{PROJECT}:gateway"], **changes})


def fake_vllm(served: str, vm_size: str = "Standard_NC24ads_A100_v4") -> SimpleNamespace:
    """A VllmService on a size; Standard_ND96isr_H200_v5 has no list price in eastus."""
    sku = SimpleNamespace(name=vm_size, gpus=catalog.get_sku(vm_size).gpus)
    return SimpleNamespace(
        service_name="llama-8b",
        namespace="gpu-inference",
        served_model_name=served,
        pool_sku=sku,
        fit=SimpleNamespace(tp=1),
        gpus_per_decoder=1,
    )


def test_every_gateway_problem_is_reported_at_once():
    """Before: the first problem stopped the check, so each fix revealed the next."""
    models = {"llama-8b": fake_vllm("Llama 8B", "Standard_ND96isr_H200_v5")}
    problems = semantic_router_gateway_problems(gateway_args(), models, GatewaySecrets(), SharedServices())
    assert [p.field for p in problems] == ["models", "models", "secrets.vllm_api_key", "router_models_volume", "grafana"]
    assert "routed model names are lower-case letters" in str(problems[0])
    assert "no price known for Standard_ND96isr_H200_v5 in eastus" in str(problems[1])
    assert "the router needs its classifier models without internet access" in str(problems[3])
    assert str(problems[4]) == "grafana='set': needs the stack's managed Prometheus workspace"
    nothing = semantic_router_gateway_problems(
        gateway_args(grafana=None), {}, GatewaySecrets(), SharedServices(model_store=object())
    )
    assert [str(p) for p in nothing] == ["models=[]: route to at least one self-hosted model (the cheap path)"]
    fine = SharedServices(model_store=object(), prometheus="/subscriptions/0/amw")
    assert (
        semantic_router_gateway_problems(gateway_args(), {"llama-8b": fake_vllm("llama-8b")}, GatewaySecrets("key"), fine) == []
    )


def test_the_router_is_configured_from_the_gateways_models_and_prices():
    config = router_config_args("gateway", gateway_args(), {"llama-8b": fake_vllm("llama-8b")}, SharedServices())
    assert [(m.name, m.kind, m.endpoint) for m in config.models] == [
        ("llama-8b", "self-hosted", "llama-8b.gpu-inference.svc.cluster.local:8000"),
        ("gpt-5.5", "azure-openai", "aks-gpu-dev-openai.openai.azure.com:443"),
    ]
    # eastus's 3.673 USD an hour over 1500 tokens a second; westeurope's 4.775 there.
    assert config.models[0].prompt_usd_per_million == round(3.673 / (1500 * 3600) * 1_000_000, 4)
    there = router_config_args(
        "gateway", gateway_args(), {"llama-8b": fake_vllm("llama-8b")}, SharedServices(), region="westeurope"
    )
    assert there.models[0].prompt_usd_per_million == round(4.775 / (1500 * 3600) * 1_000_000, 4)
    assert config.default_model == "llama-8b"
    assert config.tracing_endpoint == "otel-collector.ai-gateway.svc.cluster.local:4317"
    assert [b.name for b in frontier_backends(gateway_args())] == ["aoai-gpt-5-5"]


def test_a_refused_gateway_registers_nothing():
    def program():
        SemanticRouterGateway(
            "gateway",
            gateway_args(),
            cluster=cluster_context(),
            models={"llama-8b": fake_vllm("llama-8b")},
            secrets=GatewaySecrets("key"),
        )

    message = refusal_message(program, "SemanticRouterGateway", "gateway", lambda t: not t.startswith("pulumi:"))
    assert "router_models_volume=None: the router needs its classifier models" in message
    assert "grafana='set': needs the stack's managed Prometheus workspace" in message
