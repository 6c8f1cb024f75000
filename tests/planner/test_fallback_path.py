"""A call followed through the gateway of a dev copy whose model falls back to Azure OpenAI: answered by llama-8b
while it has a ready pod, by the gpt-5.5 deployment (asked for gpt-5.5, with its Entra token, under the same budget)
when it has none; each way the fallback would silently not happen is a finding. And the HTTPRoutes AI Gateway makes of
the routes: fifty models plan with 0 blockers, a rule AI Gateway would turn into a refused HTTPRoute is one."""

from __future__ import annotations

import copy

import pytest

from aks_gpu_inference.planner.deploy import fallback, filter_chain, generated_routes, request_path
from aks_gpu_inference.planner.inputs.upstream import upstream_dir
from tests.conftest import planned_stack, run_stack, stack_config
from tests.planner.test_request_path import blockers, planned, rows

ROUTE = "ai-gateway-fallback"


def with_fallback() -> dict:
    config = stack_config("dev")
    config["aks-gpu-inference:models"][0]["fallback"] = "gpt-5.5"
    return config


@pytest.fixture(scope="module")
def dev_fallback():
    return planned(run_stack(with_fallback()))


def walked(model):
    return request_path._Walk(model, upstream_dir())


def rule_of(walk, route: str, model: str) -> dict:
    (found,) = [o for o in walk.of_kind("AIGatewayRoute", "ai-gateway") if o["metadata"]["name"] == route]
    return next(r for r in found["spec"]["rules"] if request_path.rule_model(r) == model)


def test_a_call_is_answered_by_the_model_then_by_its_fallback(dev_fallback):
    walk = walked(dev_fallback)
    rule = rule_of(walk, ROUTE, "llama-8b")
    up = fallback.answer(walk, "ai-gateway", ROUTE, rule, "llama-8b")
    assert (up.hop.backend, up.hop.model, up.hop.host) == (
        "llama-8b",
        "llama-8b",
        "llama-8b.gpu-inference.svc.cluster.local:8000",
    )
    down = fallback.answer(walk, "ai-gateway", ROUTE, rule, "llama-8b", frozenset({"llama-8b"}))
    assert (down.hop.backend, down.hop.model, down.hop.priority) == ("aoai-gpt-5-5", "gpt-5.5", 1)
    assert down.hop.host == "aks-gpu-dev-openai.openai.azure.com:443"
    assert down.hop.credential == "key from Secret aoai-gpt-5-5-entra-token"
    assert "retried on the next priority (BackendTrafficPolicy ai-gateway/ai-gateway-fallback)" in down.how
    both = fallback.answer(walk, "ai-gateway", ROUTE, rule, "llama-8b", frozenset({"llama-8b", "aoai-gpt-5-5"}))
    assert both.hop is None and both.how.endswith("503 to the client")


def test_the_plan_shows_the_fallback_hop_under_the_same_budget(dev_fallback):
    table = rows(dev_fallback)
    hop = table["model=llama-8b, no ready llama-8b pod (rollout, scale from zero, lost node)"]
    assert hop.startswith("the call to llama-8b fails (retried on connect-failure, reset, retriable-status-codes 503)")
    assert "-> AIServiceBackend aoai-gpt-5-5 as model gpt-5.5 -> aks-gpu-dev-openai.openai.azure.com:443" in hop
    assert hop.endswith("budget: 2000000 tokens/hour per client, shared across all routes")
    assert "aoai" not in table["model=llama-8b"], "while llama-8b answers, the row is its own"
    assert not blockers(dev_fallback, "request-path")


def test_the_fallback_route_keeps_the_gateways_filters_and_budget(dev_fallback):
    plain = planned(planned_stack("dev"))
    chains = [
        filter_chain.listener_chain([o.manifest for o in m.objects], "ai-gateway", "ai-gateway") for m in (plain, dev_fallback)
    ]
    assert [f.name for f in chains[0]] == [f.name for f in chains[1]], "the merged route policy changes no filter"
    parent, by_route, _ = filter_chain._attached(
        [o.manifest for o in dev_fallback.objects], "BackendTrafficPolicy", "ai-gateway", "ai-gateway",
        {("ai-gateway", ROUTE): True, ("ai-gateway", "ai-gateway"): True}, None,
    )  # fmt: skip
    merged = filter_chain._features(by_route[("ai-gateway", ROUTE)], parent)
    assert merged["rateLimit"][1] is parent and merged["retry"][1] is by_route[("ai-gateway", ROUTE)]


def _mutated(model, change) -> list:
    objects = copy.deepcopy(model)
    for obj in objects.objects:
        change(obj.manifest)
    walk = walked(objects)
    return request_path.walk(objects, upstream_dir())[1], walk


def test_without_the_retry_policy_the_call_gets_503_and_the_plan_says_so(dev_fallback):
    def drop_retry(manifest):
        if manifest.get("kind") == "BackendTrafficPolicy" and manifest["metadata"]["name"] == ROUTE:
            manifest["spec"].pop("retry")

    findings, walk = _mutated(dev_fallback, drop_retry)
    down = fallback.answer(walk, "ai-gateway", ROUTE, rule_of(walk, ROUTE, "llama-8b"), "llama-8b", frozenset({"llama-8b"}))
    assert down.hop is None and "no retry policy moves the call to the next priority" in down.how
    assert any("priority alone does not fail over" in f.message for f in findings)


def test_a_route_policy_that_does_not_merge_drops_the_budget_and_blocks(dev_fallback):
    def no_merge(manifest):
        if manifest.get("kind") == "BackendTrafficPolicy" and manifest["metadata"]["name"] == ROUTE:
            manifest["spec"].pop("mergeType")

    findings, _ = _mutated(dev_fallback, no_merge)
    (found,) = [f for f in findings if f.level == "blocker"]
    assert "the token budget and the request buffer stop applying" in found.message and found.fix.startswith("set mergeType")


def test_a_fallback_to_an_ip_backend_is_a_warning(dev_fallback):
    def ip(manifest):
        if manifest.get("kind") == "Backend" and manifest["metadata"]["name"] == "aoai-gpt-5-5":
            manifest["spec"]["endpoints"] = [{"ip": {"address": "10.0.0.4", "port": 443}}]

    findings, _ = _mutated(dev_fallback, ip)
    assert any("AI Gateway sets priorities only on FQDN Backends" in f.message for f in findings)


def test_fifty_models_plan_with_no_blocker():
    config = stack_config("dev")
    config["aks-gpu-inference:gpu_pools"] = [
        {"name": "a100", "vm_size": "Standard_NC96ads_A100_v4", "count": 1, "min_count": 0, "max_count": 14}
    ]
    model = config["aks-gpu-inference:models"][0]
    model.pop("autoscaling")
    config["aks-gpu-inference:models"] = [{**model, "name": f"m{i:02d}", "served_model_name": f"m{i:02d}"} for i in range(50)]
    plan = planned(run_stack(config))
    routes = [o for o in plan.objects if o.kind == "AIGatewayRoute"]
    assert sorted(len(r.manifest["spec"]["rules"]) for r in routes) == [6, 15, 15, 15], "50 models and gpt-5.5"
    assert [f for f in blockers(plan, "crds") + blockers(plan, "request-path")] == []


def test_a_route_ai_gateway_would_make_a_refused_httproute_of_is_a_blocker():
    plan = planned(planned_stack("dev"))
    (route,) = [o for o in plan.objects if o.kind == "AIGatewayRoute"]
    assert not generated_routes.check(plan, upstream_dir())
    wide = copy.deepcopy(plan)
    (manifest,) = [o.manifest for o in wide.objects if o.kind == "AIGatewayRoute"]
    manifest["spec"]["rules"][0]["backendRefs"] = [{"name": "llama-8b"}] * 17
    (found,) = generated_routes.check(wide, upstream_dir())
    assert found.level == "blocker" and "spec.rules[0].backendRefs: has 17 items, more than the maximum 16" in found.message
    index = {(o.kind, o.namespace or "", o.name): o.manifest for o in plan.objects}
    http = generated_routes.http_route(route.manifest, index)
    assert [r.get("name") for r in http["spec"]["rules"]][-1] == "route-not-found"
    assert http["spec"]["rules"][0]["backendRefs"] == [{"name": "llama-8b", "kind": "Backend", "group": "gateway.envoyproxy.io"}]
    assert http["spec"]["rules"][0]["timeouts"] == {"request": "600s"}
