"""The request-path check: who answers each call through the gateway, and every step has an object behind it.

Runs on the dev stack and on a variant with Entra ID tokens, a KAITO backend and the guards on; each
broken variant names the missing step. Charts are rendered from the project's profiles (no helm)."""

from __future__ import annotations

import copy
from datetime import date

import pytest

from aks_gpu_inference.planner import claims, deploy
from aks_gpu_inference.planner.deploy import images, request_path
from aks_gpu_inference.planner.inputs.upstream import missing_reason, upstream_dir
from tests.conftest import expand_charts, planned_stack, run_stack, stack_config

AS_OF = date(2026, 12, 1)
TENANT = "11111111-2222-3333-4444-555555555555"


def planned(run):
    """The deploy model of a copy of ``run``: the tests below break its objects, and the model's manifests are the
    run's own records (``planned_stack``'s run is shared by every test)."""
    run, renders = expand_charts(copy.deepcopy(run))
    return deploy.build(run, renders, claims.check(run))


def blockers(model, check: str) -> list[deploy.Finding]:
    return [f for f in deploy.run(model, AS_OF, upstream_dir()) if f.level == "blocker" and f.check == check]


def rows(model) -> dict[str, str]:
    (paths,), _ = request_path.walk(model, upstream_dir())
    return dict(paths.rows)


@pytest.fixture(scope="module")
def dev():
    return planned(planned_stack("dev"))


def entra_kaito_guards_config() -> dict:
    config = stack_config("dev")
    gateway = config["aks-gpu-inference:gateway"]
    gateway["gateway"] = {"entra_tenant_id": TENANT, "entra_audience": "api://ai-gateway", "token_limit_per_hour": 100000}
    gateway["guards"] = {"pii": True, "jailbreak": True}
    config["aks-gpu-inference:cluster"]["kaito"] = True
    config["aks-gpu-inference:kaito"] = [
        {"name": "phi-4-mini", "preset": "phi-4-mini-instruct", "instance_type": "Standard_NC24ads_A100_v4"}
    ]
    return config


@pytest.fixture(scope="module")
def entra_kaito_guards():
    return planned(run_stack(entra_kaito_guards_config()))


def test_dev_request_paths(dev):
    table = rows(dev)
    assert table["no credential"].startswith("401 at api_key_auth")
    assert table["a wrong credential"].startswith("401 at api_key_auth")
    assert (
        "route x-ai-eg-model=llama-8b -> AIServiceBackend llama-8b -> llama-8b.gpu-inference.svc.cluster.local:8000"
        in table["model=llama-8b"]
    )
    assert "key from Secret llama-8b-api-key" in table["model=llama-8b"]
    assert "shared across all routes" in table["model=gpt-5.5"]
    hard = next(v for k, v in table.items() if k.startswith("model=MoM, domain math"))
    cheap = next(v for k, v in table.items() if k.startswith("model=MoM, domain other"))
    assert hard.startswith("router decision hard-domains -> gpt-5.5 -> AIServiceBackend aoai-gpt-5-5")
    assert cheap.startswith("router decision easy-domains -> llama-8b -> AIServiceBackend llama-8b")
    assert table["model=MoM, no decision matches"].startswith("router default -> llama-8b")
    assert table["any other model"] == "404 from AI Gateway (route-not-found)"


def test_dev_filter_chain_puts_the_router_after_auth_and_limits_and_before_the_ai_gateway(dev):
    (paths,), _ = request_path.walk(dev, upstream_dir())
    kinds = [line.split()[1].split("/")[0] for line in paths.chain]
    assert kinds == [
        "envoy.filters.http.api_key_auth",
        "envoy.filters.http.ratelimit",
        "envoy.filters.http.ratelimit",
        "envoy.filters.http.ext_proc",
        "envoy.filters.http.buffer",
        "envoy.filters.http.ext_proc",
        "envoy.filters.http.router",
    ]
    assert "semantic-router" in paths.chain[3] and "ext_proc/aigateway" in paths.chain[5]


def test_entra_kaito_and_guards_stack_paths(entra_kaito_guards):
    assert blockers(entra_kaito_guards, "request-path") == []
    table = rows(entra_kaito_guards)
    assert table["no credential"].startswith("401 at jwt_authn")
    kaito = table["model=phi-4-mini-instruct"]
    assert "AIServiceBackend kaito-phi-4-mini -> phi-4-mini.default.svc.cluster.local:80; no upstream credential" in kaito
    blocked = [v for k, v in table.items() if "jailbreak" in k or "pii" in k]
    assert len(blocked) == 2 and all("answered by the router (blocked)" in v for v in blocked)


def test_entra_kaito_and_guards_stack_has_no_blockers_at_all(entra_kaito_guards):
    assert [(f.check, f.object, f.message) for f in deploy.run(entra_kaito_guards, AS_OF, upstream_dir())] == []


def _record(model, name: str):
    return next(r for r in model.run.resources if r.name == name)


def test_a_missing_client_keys_secret_is_a_blocker():
    model = planned(planned_stack("dev"))
    model.objects[:] = [o for o in model.objects if not (o.kind == "Secret" and o.name == "ai-gateway-client-keys")]
    (finding,) = blockers(model, "request-path")
    assert "the API keys Secret ai-gateway/ai-gateway-client-keys does not exist" in finding.message


def test_a_router_decision_without_a_route_is_a_blocker():
    model = planned(planned_stack("dev"))
    route = next(o for o in model.objects if o.kind == "AIGatewayRoute")
    route.manifest["spec"]["rules"] = [
        r for r in route.manifest["spec"]["rules"] if r["backendRefs"][0]["name"] != "aoai-gpt-5-5"
    ]
    found = blockers(model, "request-path")
    assert {f.object for f in found} == {"router decision hard-keywords", "router decision hard-domains"}
    assert "picks model 'gpt-5.5', which no route serves" in found[0].message


def test_a_pod_monitor_port_no_pod_has_is_a_blocker():
    """Before: the gateway PodMonitor scraped aigw-metrics, which AI Gateway removed in v0.5."""
    model = planned(planned_stack("dev"))
    monitor = next(o for o in model.objects if o.kind == "PodMonitor" and o.name == "gateway-gateway")
    monitor.manifest["spec"]["podMetricsEndpoints"][1]["port"] = "aigw-metrics"
    (finding,) = blockers(model, "request-path")
    assert "no pod it selects has a port named 'aigw-metrics' (found: ['aigw-admin', 'metrics'])" in finding.message


def test_without_the_buffer_filter_the_router_runs_after_the_ai_gateway():
    """The filter order relies on the request buffer: AI Gateway then inserts its ext_proc after it."""
    model = planned(planned_stack("dev"))
    policy = next(o for o in model.objects if o.kind == "BackendTrafficPolicy")
    del policy.manifest["spec"]["requestBuffer"]
    found = blockers(model, "request-path")
    assert any("the semantic router runs after the AI Gateway" in f.message for f in found)
    assert any("the semantic router runs before rate limiting" in f.message for f in found) is False


def test_a_json_patch_into_the_filter_chain_is_a_warning():
    """The old wiring: an EnvoyPatchPolicy adding ext_proc at http_filters/0, ahead of authentication."""
    model = planned(planned_stack("dev"))
    policy = next(o for o in model.objects if o.kind == "EnvoyExtensionPolicy")
    policy.manifest.update(
        kind="EnvoyPatchPolicy",
        spec={
            "targetRef": {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "ai-gateway"},
            "type": "JSONPatch",
            "jsonPatches": [
                {
                    "type": "type.googleapis.com/envoy.config.listener.v3.Listener",
                    "name": "ai-gateway/ai-gateway/http",
                    "operation": {
                        "op": "add",
                        "path": "/default_filter_chain/filters/0/typed_config/http_filters/0",
                        "value": {"name": "semantic-router-extproc"},
                    },
                }
            ],
        },
    )
    found = [f for f in deploy.run(model, AS_OF, upstream_dir()) if f.check == "request-path"]
    assert [f.level for f in found] == ["warning"]
    assert "http_filters/0 on listener ai-gateway/ai-gateway/http (semantic-router-extproc)" in found[0].message


def test_an_unknown_router_key_is_a_blocker():
    if upstream_dir() is None:
        pytest.skip(missing_reason())
    model = planned(planned_stack("dev"))
    chart = next(c for c in model.charts if c.chart.endswith("semantic-router"))
    chart.values["config"]["global"]["stores"] = {"response_cache": {"enabled": False}}
    (finding,) = blockers(model, "router-config")
    assert "the router ignores global.stores.response_cache: unknown field" in finding.message


def test_every_image_of_the_gateway_path_is_listed_and_moves_with_one_setting():
    config = stack_config("dev")
    config["aks-gpu-inference:gateway"]["gateway"]["image_registry"] = "acr.azurecr.io"
    model = planned(run_stack(config, "dev"))
    pulled = {i.image: i for i in images.pulled(model)}
    gateway_path = {i for i, row in pulled.items() if "gpu-inference" not in row.used_by and "nvidia" not in row.used_by}
    assert gateway_path and all(i.startswith("acr.azurecr.io/") for i in gateway_path), sorted(gateway_path)
    assert {
        "acr.azurecr.io/envoyproxy/envoy:distroless-v1.38.3",
        "acr.azurecr.io/envoyproxy/ai-gateway-extproc:v1.1.0",
        "acr.azurecr.io/envoyproxy/ratelimit:1e50889b",
        "acr.azurecr.io/vllm-project/semantic-router/extproc:v0.3.0",
        "acr.azurecr.io/library/redis:7.4.1-alpine",
        "acr.azurecr.io/otel/opentelemetry-collector-contrib:0.159.0",
    } <= gateway_path


def test_a_missing_backend_credential_secret_is_a_blocker():
    model = planned(planned_stack("dev"))
    model.objects[:] = [o for o in model.objects if not (o.kind == "Secret" and o.name == "aoai-gpt-5-5-entra-token")]
    found = blockers(model, "request-path")
    assert {f.object for f in found} == {"AIGatewayRoute rule x-ai-eg-model=gpt-5.5"}
    assert "the credential Secret ai-gateway/aoai-gpt-5-5-entra-token does not exist" in found[0].message


def test_a_backend_whose_service_is_missing_is_a_blocker():
    model = planned(planned_stack("dev"))
    model.objects[:] = [o for o in model.objects if not (o.kind == "Service" and o.name == "llama-8b")]
    found = blockers(model, "request-path")
    assert {f.object for f in found} == {"AIGatewayRoute rule x-ai-eg-model=llama-8b"}
    assert "no Service gpu-inference/llama-8b (nor a KAITO Workspace or Dynamo frontend that creates it)" in found[0].message
