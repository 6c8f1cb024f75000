"""The gateway's routes: spread within the CRDs' limits (held to the pinned CRDs), a model with a fallback routed as
AI Gateway v1.1.0 falls back (prioritised backendRefs, the fallback's own model name, a retry policy merged into the
Gateway's), and every way of asking for a fallback that cannot work refused, naming the key."""

from __future__ import annotations

import pytest
import yaml

from aks_gpu_inference.components.core.errors import ConfigError
from aks_gpu_inference.components.gateway import ai_gateway_routes as routes
from aks_gpu_inference.components.gateway.ai_gateway_args import AiGatewayArgs, GatewayBackend
from aks_gpu_inference.components.gateway.ai_gateway_checks import fallback_problems
from aks_gpu_inference.components.stack.config import parse_stack_config
from aks_gpu_inference.planner.engine.values import kubernetes_object
from aks_gpu_inference.planner.inputs.upstream import missing_reason, upstream_dir
from tests.components.test_ai_gateway import build, gpt, llama, pool
from tests.conftest import of_type, stack_config

ARGS = AiGatewayArgs(client_ids=["alice"])


def many(n: int) -> list[GatewayBackend]:
    return [llama(name=f"m{i:02d}", model=f"m{i:02d}") for i in range(n)]


def _schema(file: str, version: str) -> dict:
    upstream = upstream_dir()
    if upstream is None:
        pytest.skip(f"no pinned CRDs: {missing_reason()}")
    crd = yaml.safe_load((upstream / "crds" / file).read_text())
    return next(v for v in crd["spec"]["versions"] if v["name"] == version)["schema"]["openAPIV3Schema"]["properties"]["spec"]


def test_the_limits_are_the_pinned_crds():
    ai = _schema("aigateway.envoyproxy.io_aigatewayroutes.yaml", "v1beta1")["properties"]["rules"]
    http = _schema("gateway.networking.k8s.io_httproutes.yaml", "v1")["properties"]["rules"]
    assert ai["maxItems"] == routes.MAX_RULES == http["maxItems"] - 1, "one HTTPRoute slot is the catch-all's"
    assert http["items"]["properties"]["backendRefs"]["maxItems"] == routes.MAX_BACKEND_REFS
    assert http["items"]["properties"]["matches"]["maxItems"] == routes.MAX_MATCHES_PER_RULE
    total = next(v["rule"] for v in http["x-kubernetes-validations"] if "matches.size()" in v["rule"])
    assert total.endswith("<= 128") and routes.MAX_MATCHES == 128 - 1
    fields = ai["items"]["properties"]["backendRefs"]["items"]["properties"]
    assert {"priority", "modelNameOverride"} <= set(fields)


def test_fifty_models_spread_over_routes_of_fifteen_the_first_keeping_its_name():
    found = routes.routes(ARGS, many(50))
    assert [(r.role, r.name, len(r.spec["rules"])) for r in found] == [
        ("route", "ai-gateway", 15),
        ("route-2", "ai-gateway-2", 15),
        ("route-3", "ai-gateway-3", 15),
        ("route-4", "ai-gateway-4", 5),
    ]
    assert all(r.retry is None and r.spec["llmRequestCosts"] == routes.LLM_REQUEST_COSTS for r in found)
    models = [rule["matches"][0]["headers"][0]["value"] for r in found for rule in r.spec["rules"]]
    assert models == [f"m{i:02d}" for i in range(50)]
    appended = routes.routes(ARGS, many(51))
    assert [r.spec for r in appended[:3]] == [r.spec for r in found[:3]], "a model appended moves no other model"


def test_spread_keeps_the_match_budget_of_a_route():
    wide = [{"matches": [{"headers": []}] * 50, "backendRefs": []} for _ in range(4)]
    assert [len(chunk) for chunk in routes.spread(wide)] == [2, 2], "three rules of 50 matches would pass 127"


def test_a_fallback_rule_prioritises_the_models_own_backend_and_asks_the_fallback_for_its_own_name():
    found = routes.routes(ARGS, [llama(fallback="gpt-4o"), gpt()])
    plain, falling = found
    assert (plain.name, plain.retry, [r["backendRefs"] for r in plain.spec["rules"]]) == (
        "ai-gateway",
        None,
        [[{"name": "gpt-4o"}]],
    )
    (rule,) = falling.spec["rules"]
    assert falling.name == "ai-gateway-fallback" and rule["matches"][0]["headers"][0]["value"] == llama().model
    assert rule["backendRefs"] == [
        {"name": "llama", "priority": 0},
        {"name": "gpt-4o", "priority": 1, "modelNameOverride": "gpt-4o"},
    ]
    assert falling.retry == {
        "targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "ai-gateway-fallback"}],
        "mergeType": "StrategicMerge",
        "retry": {
            "numAttemptsPerPriority": 1,
            "numRetries": 1,
            "retryOn": {"triggers": ["connect-failure", "reset", "retriable-status-codes"], "httpStatusCodes": [503]},
        },
    }


def test_the_component_renders_the_retry_policy_after_its_route():
    _, run = build(backends=[llama(fallback="gpt-4o"), gpt()])
    policies = {kubernetes_object(r)["metadata"]["name"]: r for r in of_type(run, ":BackendTrafficPolicy")}
    assert set(policies) == {"ai-gateway", "ai-gateway-fallback"}
    route = next(r for r in of_type(run, ":AIGatewayRoute") if kubernetes_object(r)["metadata"]["name"] == "ai-gateway-fallback")
    assert route.urn in policies["ai-gateway-fallback"].options.get("dependsOn", [])


@pytest.mark.parametrize(
    ("backends", "expected"),
    [
        ([llama(fallback=llama().model), gpt()], "a backend cannot fall back to itself"),
        ([llama(fallback="gpt-5"), gpt()], "not a model of the gateway (gpt-4o, meta-llama/Llama-3.1-8B-Instruct)"),
        ([pool(fallback="gpt-4o"), gpt()], "'llama-3.3-70b' is served through an InferencePool"),
        ([llama(fallback="llama-3.3-70b"), pool()], "'llama-3.3-70b' is served through an InferencePool"),
    ],
)
def test_a_fallback_that_cannot_work_is_refused(backends, expected):
    (problem,) = fallback_problems(backends)
    assert problem.field == "backends[0].fallback" and expected in problem.problem


def _config(**model) -> dict:
    config = stack_config("dev")
    config["models"] = [{**config.pop("aks-gpu-inference:models")[0], **model}]
    return {k.removeprefix("aks-gpu-inference:"): v for k, v in config.items() if not k.startswith("azure-native:")}


@pytest.mark.parametrize(
    ("model", "without_gateway", "expected"),
    [
        ({"fallback": "gpt-5.5"}, True, "models[0].fallback='gpt-5.5': the gateway sends calls to the fallback"),
        ({"fallback": "gpt-5"}, False, "models[0].fallback='gpt-5': not a model the gateway serves (gpt-5.5, llama-8b)"),
        ({"fallback": "llama-8b"}, False, "models[0].fallback='llama-8b': a model cannot fall back to itself"),
    ],
)
def test_the_stack_refuses_a_fallback_naming_the_key(model, without_gateway, expected):
    config = _config(**model)
    if without_gateway:
        config.pop("gateway")
    with pytest.raises(ConfigError) as refused:
        parse_stack_config(config)
    assert any(p.startswith(expected) for p in refused.value.problems), refused.value.problems


def test_a_prefill_decode_model_cannot_have_a_fallback():
    from aks_gpu_inference.components.serving.vllm_service_args import VllmServiceArgs

    with pytest.raises(ValueError, match="cannot mix InferencePool and AIServiceBackend"):
        VllmServiceArgs(
            name="big",
            model="meta-llama/Llama-3.3-70B-Instruct",
            rdma=True,
            disaggregation={"prefill_replicas": 1, "decode_replicas": 1},
            fallback="gpt-5.5",
        )


def test_dev_with_a_fallback_parses():
    assert parse_stack_config(_config(fallback="gpt-5.5")).models[0].fallback == "gpt-5.5"


def test_what_lands_in_a_models_namespace_waits_for_that_model_only():
    """Before: every gateway object waited for every model (the component's depends_on, handed to each child), which
    made Pulumi's dependency checks, and the plan of 64 models, quadratic."""
    from tests.conftest import run_stack

    config = stack_config("dev")
    model = config["aks-gpu-inference:models"][0]
    config["aks-gpu-inference:models"].append({**model, "name": "other", "served_model_name": "other", "namespace": "other"})
    run = run_stack(config)
    policies = {
        kubernetes_object(r)["metadata"]["namespace"]: r for r in of_type(run, ":NetworkPolicy") if "gateway-netpol" in r.name
    }

    def models_awaited(resource) -> set[str]:
        """The VllmServices whose resources ``resource`` waits for (Pulumi records a component's children)."""
        deps = resource.options.get("dependsOn", [])
        return {name for name in ("llama-8b", "other") if any("VllmService$" in d and d.endswith(f"::{name}-pdb") for d in deps)}

    assert models_awaited(policies["gpu-inference"]) == {"llama-8b"}
    assert models_awaited(policies["other"]) == {"other"}
    (gateway,) = [r for r in of_type(run, ":Gateway") if r.type.endswith("gateway.networking.k8s.io/v1:Gateway")]
    assert models_awaited(gateway) == set()
