"""Every rendered router config passes the router's own validators: vllm-sr 0.3.0 (the router project's
config models and checks, the same code as vllm-project/semantic-router@v0.3.0:src/vllm-sr) and the Go
config types at v0.3.0 (components/gateway/router_fields), after Helm merges it into the chart's sample config."""

from __future__ import annotations

import pytest
from cli.models import UserConfig
from cli.parser import _deprecated_config_fields
from cli.validator import validate_user_config

from aks_gpu_inference.components.gateway.router_config import (
    RouterConfigArgs,
    RouterGuards,
    RouterModel,
    SemanticCache,
    auto_model_names,
    default_decisions,
    required_models,
)
from aks_gpu_inference.components.gateway.router_fields import unknown_fields
from aks_gpu_inference.components.gateway.router_render import render
from aks_gpu_inference.planner.deploy.router import chart_defaults, effective_config, helm_merge
from aks_gpu_inference.planner.inputs.upstream import missing_reason, upstream_dir

MODELS = [
    RouterModel(name="llama-8b", kind="self-hosted", endpoint="llama-8b.gpu-inference.svc.cluster.local:8000"),
    RouterModel(name="gpt-5.5", kind="azure-openai", endpoint="acct.openai.azure.com:443", reasoning_family="gpt"),
]
VARIANTS = {
    "default": {},
    "guards": {"guards": RouterGuards(pii=True, jailbreak=True, pii_types_allowed=["EMAIL_ADDRESS"])},
    "cache": {"cache": SemanticCache(enabled=True)},
    "tracing": {"tracing_endpoint": "otel-collector.ai-gateway.svc.cluster.local:4317"},
    "no decisions": {"decisions": []},
}


def args(**overrides) -> RouterConfigArgs:
    fields = {"models": MODELS, "decisions": default_decisions("llama-8b", "gpt-5.5"), "default_model": "llama-8b"}
    return RouterConfigArgs(**{**fields, **overrides})


def effective(cfg: dict) -> dict:
    upstream = upstream_dir()
    if upstream is None:
        pytest.skip(missing_reason())
    return effective_config({"config": cfg}, chart_defaults(upstream, "0.3.0"))


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_the_routers_python_validator_accepts_the_config(variant):
    cfg = effective(render(args(**VARIANTS[variant])))
    assert _deprecated_config_fields(cfg) == []
    config = UserConfig(**cfg)
    assert [str(e) for e in validate_user_config(config)] == []


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_the_routers_go_types_know_every_key(variant):
    cfg = render(args(**VARIANTS[variant]))
    assert unknown_fields(cfg) == []
    assert unknown_fields(effective(cfg)) == []


def test_a_misplaced_key_is_caught():
    """The old renderer's global.stores.response_cache: the router would have ignored it."""
    cfg = render(args())
    cfg["global"]["stores"] = {"response_cache": {"enabled": False}}
    assert unknown_fields(cfg) == ["global.stores.response_cache: unknown field (known: memory, semantic_cache, vector_store)"]


def test_helm_merge_keeps_sample_keys_unless_nulled():
    defaults = {"global": {"stores": {"semantic_cache": {"enabled": True}, "memory": {"x": 1}}}, "listeners": [1, 2]}
    merged = helm_merge(
        defaults, {"global": {"stores": {"semantic_cache": {"enabled": False}, "memory": None}}, "listeners": [3]}
    )
    assert merged == {"global": {"stores": {"semantic_cache": {"enabled": False}}}, "listeners": [3]}


def test_the_merged_config_turns_the_sample_cache_and_tools_off():
    cfg = effective(render(args()))
    assert cfg["global"]["stores"]["semantic_cache"]["enabled"] is False
    assert cfg["global"]["integrations"]["tools"]["enabled"] is False
    assert cfg["providers"]["defaults"]["default_model"] == "llama-8b", "not the sample's replace-with-your-model"


def test_auto_routing_names_come_from_the_router_version():
    """Before: clients were told to send "vllm-sr/auto", which router 0.3.0 passes through unrouted."""
    assert auto_model_names() == ("MoM", "auto")
    assert "vllm-sr/auto" not in auto_model_names()


def test_the_models_the_router_loads_follow_the_signals_in_use():
    assert required_models(args(decisions=[])) == ["mmbert-embed-32k-2d-matryoshka"]
    assert required_models(args()) == ["mmbert-embed-32k-2d-matryoshka", "mmbert32k-intent-classifier-merged"]
    guarded = required_models(args(guards=RouterGuards(pii=True, jailbreak=True)))
    assert guarded[-2:] == ["mmbert32k-jailbreak-detector-merged", "mmbert32k-pii-detector-merged"]
