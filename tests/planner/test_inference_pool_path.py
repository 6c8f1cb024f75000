"""The request path through an InferencePool (seed 004's llm-d prefill/decode behind the gateway): the
llmd stack's path reaches decode and prefill pods, and each broken link is a blocker naming it.

Charts are real Helm renders; each test breaks one object of a fresh model."""

from __future__ import annotations

import copy

import yaml

from aks_gpu_inference.planner.deploy import request_path
from aks_gpu_inference.planner.inputs.upstream import upstream_dir
from tests.conftest import planned_stack
from tests.planner.test_request_path import blockers, planned

RULE = "AIGatewayRoute rule x-ai-eg-model=llama-3.3-70b"


def llmd():
    return planned(planned_stack("llmd"))


def found(model) -> list[str]:
    return [f.message for f in blockers(model, "request-path")]


def drop(model, kind: str, name: str) -> None:
    before = len(model.objects)
    model.objects[:] = [o for o in model.objects if not (o.kind == kind and o.name == name)]
    assert len(model.objects) < before, f"{kind} {name} was not in the plan"


def obj(model, kind: str, name: str) -> dict:
    """The object's manifest, copied first: the session's plan shares it with every other test."""
    found = next(o for o in model.objects if o.kind == kind and o.name == name)
    found.manifest = copy.deepcopy(found.manifest)
    return found.manifest


def test_the_llmd_path_reaches_decode_then_prefill_through_the_pool():
    model = llmd()
    (paths,), findings = request_path.walk(model, upstream_dir())
    assert [f for f in findings if f.level == "blocker"] == []
    row = dict(paths.rows)["model=llama-3.3-70b"]
    assert (
        "InferencePool llm-d-infra/llama-70b-inferencepool -> picker llama-70b-inferencepool-epp:9002 -> "
        "decode Deployment llm-d-infra/llama-70b-decode (routing sidecar :8000 -> vLLM :8200) -> "
        "prefill Deployment llm-d-infra/llama-70b-prefill :8000 -> key from Secret llm-d-infra/llama-70b-api-key"
    ) in row
    # The router's default (the cheap path) is the pool, too.
    assert "router default -> llama-3.3-70b -> InferencePool" in dict(paths.rows)["model=MoM, no decision matches"]


def test_without_the_crds_the_route_is_dead():
    model = llmd()
    drop(model, "CustomResourceDefinition", "inferencepools.inference.networking.k8s.io")
    assert any("no InferencePool CRD (inference.networking.k8s.io) is applied" in m for m in found(model))


def test_a_gateway_that_may_start_before_the_crds_is_a_blocker(monkeypatch):
    """As a gateway would that does not wait for the models (which wait for the CRDs)."""
    model = llmd()
    models = {r.urn for r in model.run.resources if r.type == "aks-gpu:index:VllmService"}
    models |= {child for urn in models for child in model.descendants(urn)}
    for record in model.run.resources:
        if record.options.get("dependsOn"):
            kept = [d for d in record.options["dependsOn"] if d not in models]
            monkeypatch.setattr(record, "options", {**record.options, "dependsOn": kept})
    late = [m for m in found(model) if "may start before the InferencePool CRD exists" in m]
    assert {m.split(" may start")[0] for m in late} == {
        "Deployment envoy-gateway-system/envoy-gateway (chart gateway-helm v1.8.2)",
        "Deployment envoy-ai-gateway-system/ai-gateway-controller (chart ai-gateway-helm v1.1.0)",
    }


def test_envoy_gateway_must_hand_inference_pools_to_the_extension():
    model = llmd()
    config = obj(model, "ConfigMap", "envoy-gateway-config")
    parsed = yaml.safe_load(config["data"]["envoy-gateway.yaml"])
    del parsed["extensionManager"]["backendResources"]
    config["data"]["envoy-gateway.yaml"] = yaml.safe_dump(parsed)
    assert found(model) == ["Envoy Gateway is not configured for InferencePool backends (extensionManager.backendResources)"]


def test_a_cross_namespace_pool_needs_grants_for_both_routes():
    model = llmd()
    drop(model, "ReferenceGrant", "llama-70b")
    assert found(model) == [
        "no ReferenceGrant in llm-d-infra lets the AIGatewayRoute in ai-gateway name InferencePool llama-70b-inferencepool",
        "no ReferenceGrant in llm-d-infra lets the HTTPRoute in ai-gateway name InferencePool llama-70b-inferencepool",
    ]


def test_a_missing_pool_or_picker_is_a_blocker():
    model = llmd()
    drop(model, "InferencePool", "llama-70b-inferencepool")
    assert found(model) == ["InferencePool llm-d-infra/llama-70b-inferencepool does not exist"]
    model = llmd()
    drop(model, "Service", "llama-70b-inferencepool-epp")
    assert "the endpoint picker Service llm-d-infra/llama-70b-inferencepool-epp does not exist" in found(model)
    model = llmd()
    drop(model, "Deployment", "llama-70b-inferencepool-epp")
    assert found(model) == ["the endpoint picker Service llm-d-infra/llama-70b-inferencepool-epp selects no pods"]


def test_decode_pods_without_the_sidecar_never_call_prefill():
    model = llmd()
    obj(model, "Deployment", "llama-70b-decode")["spec"]["template"]["spec"]["initContainers"] = []
    messages = found(model)
    assert "Deployment llm-d-infra/llama-70b-decode has no routing sidecar: its prefill pods are never called" in messages
    assert "Deployment llm-d-infra/llama-70b-decode has no container port 8000, the pool's target port" in messages


def test_a_sidecar_pointing_nowhere_is_a_blocker():
    model = llmd()
    (sidecar,) = obj(model, "Deployment", "llama-70b-decode")["spec"]["template"]["spec"]["initContainers"]
    sidecar["args"] = [a if not a.startswith("--model-server-port=") else "--model-server-port=9999" for a in sidecar["args"]]
    assert found(model) == [
        "the routing sidecar of Deployment llm-d-infra/llama-70b-decode forwards to port 9999, which no container has"
    ]


def test_without_prefill_engines_the_sidecars_call_nothing():
    model = llmd()
    drop(model, "Deployment", "llama-70b-prefill")
    assert found(model) == ["the pool has decode pods but no prefill pods for their sidecars to call"]


def test_vllm_that_wants_a_key_gets_one_or_the_path_is_a_blocker():
    model = llmd()
    drop(model, "BackendSecurityPolicy", "llama-70b")
    (message,) = found(model)
    assert "requires an API key and no BackendSecurityPolicy on the pool sends one: every call gets 401" in message
    model = llmd()
    drop(model, "Secret", "llama-70b-api-key")
    assert found(model) == ["the credential Secret llm-d-infra/llama-70b-api-key does not exist"]


def test_a_network_policy_that_admits_only_the_gateway_breaks_prefill_decode():
    model = llmd()
    policy = obj(model, "NetworkPolicy", "ai-gateway-only-llama-70b-vllm")
    policy["spec"]["ingress"] = policy["spec"]["ingress"][:1]
    messages = found(model)
    assert (
        "a NetworkPolicy on Deployment llm-d-infra/llama-70b-prefill keeps out the routing sidecar of "
        "Deployment llm-d-infra/llama-70b-decode (port 8000)"
    ) in messages
    assert "a NetworkPolicy on Deployment llm-d-infra/llama-70b-decode keeps out the endpoint picker (port 8000)" in messages
    policy["spec"]["ingress"] = []
    assert "a NetworkPolicy on Deployment llm-d-infra/llama-70b-decode keeps out the gateway's Envoy proxies (port 8000)" in (
        found(model)
    )


# ---- the picker and the sidecar, read as the llm-d release their images name ---------------------------------------


def picker_config_map(model) -> dict:
    return obj(model, "ConfigMap", "llama-70b-inferencepool-epp")


def test_the_rendered_picker_config_is_checked_as_the_picker_loads_it():
    model = llmd()
    data = picker_config_map(model)["data"]
    config = yaml.safe_load(data["pd-config.yaml"])
    config["plugins"] = [p for p in config["plugins"] if p["type"] != "prefix-based-pd-decider"]
    config["featureGates"] = ["prepareDataPlugins"]
    data["pd-config.yaml"] = yaml.safe_dump(config)
    messages = found(model)
    assert any("feature gate 'prepareDataPlugins' is unknown or unregistered" in m for m in messages), messages
    assert any(
        "refers to plugin 'prefix-based-pd-decider' through deciders.prefill, which is not declared" in m for m in messages
    )


def test_a_boolean_flag_rendered_as_two_arguments_is_a_blocker():
    model = llmd()
    container = obj(model, "Deployment", "llama-70b-inferencepool-epp")["spec"]["template"]["spec"]["containers"][0]
    container["args"] += ["--secure-serving", "false"]  # what inferencepool v1.3.1 renders for flags: {secure-serving: false}
    assert any("--secure-serving false is two arguments" in m for m in found(model))


def test_the_picker_needs_rbac_on_every_kind_it_watches():
    model = llmd()
    role = obj(model, "Role", "llama-70b-inferencepool-epp")
    role["rules"] = [r for r in role["rules"] if "inferenceobjectives" not in r.get("resources", [])]
    assert any("may not get, list and watch inferenceobjectives" in m for m in found(model))


def test_a_sidecar_flag_the_release_does_not_define_is_a_blocker():
    model = llmd()
    (sidecar,) = obj(model, "Deployment", "llama-70b-decode")["spec"]["template"]["spec"]["initContainers"]
    sidecar["args"] = [*sidecar["args"], "--secure-serving=false"]  # the EPP's flag, which the sidecar exits on
    assert any("defines no flag --secure-serving; it exits at start" in m for m in found(model))


def test_an_image_without_a_table_is_reported_as_not_checked():
    model = llmd()
    container = obj(model, "Deployment", "llama-70b-inferencepool-epp")["spec"]["template"]["spec"]["containers"][0]
    container["image"] = "ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.11.0"
    _, findings = request_path.walk(model, upstream_dir())
    assert any(f.level == "unchecked" and f.message.startswith("the picker image") for f in findings), "an incomplete plan"
