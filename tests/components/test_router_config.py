"""Tests for the vLLM Semantic Router v0.3 config renderer (components/gateway/router_config.py)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from aks_gpu_inference.components.core.token_cost import self_hosted_cost_per_million
from aks_gpu_inference.components.gateway.router_config import (
    MMLU_CATEGORIES,
    RouterConfigArgs,
    RouterDecision,
    RouterGuards,
    RouterModel,
    SemanticCache,
    cross_check_problems,
    default_decisions,
)
from aks_gpu_inference.components.gateway.router_render import render
from tests.router_rules import route

CHEAP = "self-hosted-llama-8b"
FRONTIER = "azure-gpt-4o"


def _models() -> list[RouterModel]:
    return [
        RouterModel(
            name=CHEAP,
            kind="self-hosted",
            endpoint="vllm-llama-8b.inference.svc.cluster.local:8000",
            provider_model_id="meta-llama/Llama-3.1-8B-Instruct",
            prompt_usd_per_million=0.05,
            completion_usd_per_million=0.2,
        ),
        RouterModel(
            name=FRONTIER,
            kind="azure-openai",
            endpoint="contoso.openai.azure.com:443",
            provider_model_id="gpt-4o-prod",
            prompt_usd_per_million=2.5,
            completion_usd_per_million=10.0,
            reasoning_family="gpt",
        ),
    ]


def _args(**overrides) -> RouterConfigArgs:
    values = {"models": _models(), "decisions": default_decisions(CHEAP, FRONTIER), "default_model": CHEAP}
    values.update(overrides)
    return RouterConfigArgs(**values)


# --- validation ------------------------------------------------------------------------------------------------------


def test_decision_with_unknown_model_names_decision_model_and_known_models():
    bad = RouterDecision(name="maths", categories=["math"], model="gpt-5")
    with pytest.raises(ValidationError) as err:
        _args(decisions=[bad])
    assert (
        f"decisions[0].model='gpt-5': decision 'maths' routes to an unknown model; known models: ['{FRONTIER}', '{CHEAP}']"
        in str(err.value)
    )


def test_unknown_default_model():
    with pytest.raises(ValidationError, match=re.escape("default_model='nope': not a known model; known models:")):
        _args(default_model="nope")


def test_duplicate_model_names():
    models = _models()
    with pytest.raises(ValidationError, match=re.escape(f"models=['{CHEAP}']: duplicate model names")):
        _args(models=[*models, models[0]])


def test_duplicate_decision_names():
    d = RouterDecision(name="same", categories=["math"], model=FRONTIER)
    with pytest.raises(ValidationError, match=re.escape("decisions=['same']: duplicate decision names")):
        _args(decisions=[d, d.model_copy(update={"categories": ["law"]})])


def test_needs_a_self_hosted_model():
    azure = _models()[1]
    with pytest.raises(ValidationError, match="at least one model must be kind 'self-hosted'"):
        RouterConfigArgs(models=[azure], default_model=FRONTIER)


def test_unknown_category_rejected():
    with pytest.raises(ValidationError, match="unknown categories \\['maths'\\]"):
        RouterDecision(name="x", categories=["maths"], model=CHEAP)


def test_decision_needs_a_condition():
    with pytest.raises(ValidationError, match="needs at least one category or keyword"):
        RouterDecision(name="x", model=CHEAP)


def test_reserved_priority_and_names():
    with pytest.raises(ValidationError):
        RouterDecision(name="x", priority=999, categories=["math"], model=CHEAP)
    with pytest.raises(ValidationError, match="reserved for the guard decisions"):
        _args(decisions=[RouterDecision(name="block-pii", categories=["math"], model=CHEAP)])


def test_use_reasoning_needs_reasoning_family():
    d = RouterDecision(name="r", categories=["math"], model=CHEAP, use_reasoning=True)
    with pytest.raises(ValidationError, match=f"model '{CHEAP}' has no reasoning_family"):
        _args(decisions=[d])


def test_every_cross_check_problem_is_reported_at_once():
    """Before: the first problem stopped the check, so each fix revealed the next."""
    models = _models()
    decisions = [
        RouterDecision(name="block-pii", categories=["math"], model="gpt-5"),
        RouterDecision(name="r", categories=["law"], model=CHEAP, use_reasoning=True),
    ]
    args = RouterConfigArgs.model_construct(
        models=[*models, models[0]], decisions=decisions, default_model="nope", guards=RouterGuards(), cache=SemanticCache()
    )
    assert [p.field for p in cross_check_problems(args)] == [
        "models",
        "decisions",
        "default_model",
        "decisions[0].model",
        "decisions[1].use_reasoning",
    ]
    with pytest.raises(ValidationError) as err:
        _args(default_model="nope", decisions=decisions)
    assert "default_model='nope'" in str(err.value) and "decisions[1].use_reasoning=True" in str(err.value)


@pytest.mark.parametrize("endpoint", ["http://vllm:8000", "vllm", "vllm:0", "vllm:8000/v1", "vllm:99999"])
def test_bad_endpoint(endpoint):
    with pytest.raises(ValidationError, match="must be host:port"):
        RouterModel(name="m", kind="self-hosted", endpoint=endpoint)


def test_extra_fields_forbidden():
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        RouterGuards(pii=True, pii_threshold=0.5)


# --- rendered structure ----------------------------------------------------------------------------------------------


def test_render_top_level_and_providers():
    cfg = render(_args())
    assert cfg["version"] == "v0.3"
    assert set(cfg) == {"version", "listeners", "providers", "routing", "global"}
    assert [listener["port"] for listener in cfg["listeners"]] == [50051, 8080]
    defaults = cfg["providers"]["defaults"]
    assert defaults["default_model"] == CHEAP
    assert defaults["reasoning_families"]["gpt"] == {"type": "reasoning_effort", "parameter": "reasoning_effort"}
    cheap, frontier = cfg["providers"]["models"]
    assert cheap == {
        "name": CHEAP,
        "provider_model_id": "meta-llama/Llama-3.1-8B-Instruct",
        "backend_refs": [
            {"name": "primary", "endpoint": "vllm-llama-8b.inference.svc.cluster.local:8000", "protocol": "http", "weight": 100}
        ],
        "pricing": {"currency": "USD", "prompt_per_1m": 0.05, "completion_per_1m": 0.2},
    }
    assert frontier["backend_refs"][0]["protocol"] == "https"
    assert frontier["reasoning_family"] == "gpt"
    assert cfg["routing"]["modelCards"] == [{"name": CHEAP}, {"name": FRONTIER}]
    assert cfg["global"]["router"] == {"strategy": "priority"}


def test_provider_model_id_defaults_to_name():
    m = RouterModel(name="m", kind="self-hosted", endpoint="vllm:8000")
    cfg = render(RouterConfigArgs(models=[m], default_model="m"))
    assert cfg["providers"]["models"][0]["provider_model_id"] == "m"
    assert cfg["routing"]["decisions"] == []
    assert cfg["routing"]["signals"] == {"domains": [], "keywords": []}


def test_render_signals_and_decisions():
    cfg = render(_args())
    signals = cfg["routing"]["signals"]
    assert [d["name"] for d in signals["domains"]] == sorted(
        ["other", "business", "history", "psychology", "math", "physics", "computer science", "engineering", "law"]
    )
    assert {"name": "math", "description": "MMLU-Pro category 'math'", "mmlu_categories": ["math"]} in signals["domains"]
    assert signals["keywords"][0] == {
        "name": "hard-keywords-keywords",
        "operator": "OR",
        "keywords": ["prove", "step by step", "design", "debug"],
        "case_sensitive": False,
    }
    decisions = cfg["routing"]["decisions"]
    assert [d["name"] for d in decisions] == ["hard-keywords", "easy-keywords", "hard-domains", "easy-domains"]
    assert [d["priority"] for d in decisions] == [200, 150, 120, 100]
    hard_domains = decisions[2]
    assert hard_domains["rules"]["operator"] == "OR"
    assert {"type": "domain", "name": "math"} in hard_domains["rules"]["conditions"]
    assert hard_domains["modelRefs"] == [{"model": FRONTIER, "use_reasoning": False}]
    assert decisions[0]["rules"]["conditions"] == [{"type": "keyword", "name": "hard-keywords-keywords"}]


def test_every_condition_references_a_rendered_signal():
    cfg = render(_args(guards=RouterGuards(pii=True, jailbreak=True)))
    signals = cfg["routing"]["signals"]
    kinds = {"domain": "domains", "keyword": "keywords", "pii": "pii", "jailbreak": "jailbreak"}
    for decision in cfg["routing"]["decisions"]:
        for cond in decision["rules"]["conditions"]:
            assert cond["name"] in {s["name"] for s in signals[kinds[cond["type"]]]}


def test_render_is_pure():
    args = _args()
    assert render(args) == render(args)


# --- optional sections only when enabled -----------------------------------------------------------------------------


def test_guards_off_by_default():
    cfg = render(_args())
    assert "pii" not in cfg["routing"]["signals"]
    assert "jailbreak" not in cfg["routing"]["signals"]
    assert "model_catalog" not in cfg["global"]
    assert not any(d["name"].startswith("block-") for d in cfg["routing"]["decisions"])


def test_guards_rendered_when_enabled():
    cfg = render(_args(guards=RouterGuards(pii=True, jailbreak=True, threshold=0.65, pii_types_allowed=["EMAIL_ADDRESS"])))
    signals = cfg["routing"]["signals"]
    assert signals["pii"] == [{"name": "pii-guard", "threshold": 0.65, "pii_types_allowed": ["EMAIL_ADDRESS"]}]
    assert signals["jailbreak"] == [{"name": "jailbreak-guard", "threshold": 0.65}]
    first, second = cfg["routing"]["decisions"][:2]
    assert (first["name"], first["priority"]) == ("block-jailbreak", 1000)
    assert (second["name"], second["priority"]) == ("block-pii", 999)
    assert first["plugins"][0]["type"] == "fast_response"
    # vllm-sr 0.3.0's Decision requires modelRefs; a blocking decision names none.
    assert first["modelRefs"] == []
    assert cfg["global"]["model_catalog"] == {"modules": {"prompt_guard": {"enabled": True, "threshold": 0.65}}}


def test_only_pii_guard():
    cfg = render(_args(guards=RouterGuards(pii=True)))
    assert "pii" in cfg["routing"]["signals"]
    assert "jailbreak" not in cfg["routing"]["signals"]
    assert "model_catalog" not in cfg["global"]


def test_cache_explicitly_off_by_default_and_full_when_enabled():
    """Before: the config wrote global.stores.response_cache, a key router 0.3.0 does not know, so the
    chart sample's semantic_cache (enabled: true) stayed on."""
    off = render(_args())
    assert off["global"]["stores"] == {
        "semantic_cache": {
            "enabled": False,
            "backend_type": "memory",
            "similarity_threshold": 0.8,
            "max_entries": 1000,
            "ttl_seconds": 3600,
        }
    }
    assert all(d["plugins"] == [] for d in off["routing"]["decisions"])
    cfg = render(_args(cache=SemanticCache(enabled=True, similarity_threshold=0.9, max_entries=500, ttl_seconds=600)))
    assert cfg["global"]["stores"]["semantic_cache"] == {
        "enabled": True,
        "backend_type": "memory",
        "similarity_threshold": 0.9,
        "max_entries": 500,
        "ttl_seconds": 600,
    }
    # The router serves from the cache only for decisions that carry the semantic-cache plugin.
    for decision in cfg["routing"]["decisions"]:
        assert decision["plugins"] == [
            {"type": "semantic-cache", "configuration": {"enabled": True, "similarity_threshold": 0.9}}
        ]


def test_tool_auto_selection_of_the_chart_sample_is_off():
    assert render(_args())["global"]["integrations"] == {"tools": {"enabled": False}}


def test_tracing_only_with_endpoint():
    assert "services" not in render(_args())["global"]
    cfg = render(_args(tracing_endpoint="otel-collector.monitoring:4317"))
    tracing = cfg["global"]["services"]["observability"]["tracing"]
    assert tracing == {
        "enabled": True,
        "provider": "opentelemetry",
        "exporter": {"type": "otlp", "endpoint": "otel-collector.monitoring:4317", "insecure": True},
        "sampling": {"type": "probabilistic", "rate": 0.1},
    }


def test_bad_tracing_endpoint():
    with pytest.raises(ValidationError, match="tracing_endpoint"):
        _args(tracing_endpoint="http://otel:4317")


# --- example prompts -------------------------------------------------------------------------------------------------

EXAMPLES = [
    ("Summarize this ticket", {"other"}, CHEAP),
    ("Prove that sqrt(2) is irrational", {"math"}, FRONTIER),
    ("Is this email spam? yes or no", {"other"}, CHEAP),
    ("Is this email spam? Yes or No", set(), CHEAP),
    ("Extract the invoice number from this PDF text", {"business"}, CHEAP),
    ("Classify this review as positive or negative", {"psychology"}, CHEAP),
    ("Why did my Kubernetes pod OOM?", {"computer science"}, FRONTIER),
    ("Debug this stack trace", {"other"}, FRONTIER),
    ("Design a rate limiter for our API", {"business"}, FRONTIER),
    ("Explain step by step how a bill becomes law", {"history"}, FRONTIER),
    ("Is this contract clause enforceable?", {"law"}, FRONTIER),
    ("When was the Magna Carta signed?", {"history"}, CHEAP),
    ("Summarize this proof step by step", {"math"}, FRONTIER),
    ("What's a good name for a cat?", set(), CHEAP),
    ("Which enzyme breaks down lactose?", {"biology"}, CHEAP),
]


@pytest.mark.parametrize(("prompt", "categories", "expected"), EXAMPLES)
def test_example_prompts(prompt, categories, expected):
    assert route(render(_args()), categories, prompt) == expected


def test_unmatched_prompt_goes_to_default():
    args = _args(default_model=FRONTIER)
    assert route(render(args), {"chemistry"}, "Balance this equation") == FRONTIER
    assert route(render(args), set(), "") == FRONTIER


def test_and_operator_needs_every_condition():
    d = RouterDecision(name="math-proofs", categories=["math"], keywords=["prove"], operator="AND", model=FRONTIER)
    args = _args(decisions=[d])
    assert route(render(args), {"math"}, "prove it") == FRONTIER
    assert route(render(args), {"math"}, "compute it") == CHEAP
    assert route(render(args), {"law"}, "prove it") == CHEAP


def test_equal_priority_keeps_declaration_order():
    a = RouterDecision(name="a", priority=5, categories=["math"], model=FRONTIER)
    b = RouterDecision(name="b", priority=5, categories=["math"], model=CHEAP)
    assert route(render(_args(decisions=[a, b])), {"math"}, "") == FRONTIER
    assert route(render(_args(decisions=[b, a])), {"math"}, "") == CHEAP


# --- cost helper -----------------------------------------------------------------------------------------------------


def test_cost_per_million_maths():
    # $3.60/h at 1000 tok/s = 3.6M tok/h -> $1.00 per 1M tokens.
    assert self_hosted_cost_per_million(3.6, 1000) == pytest.approx(1.0)
    # e.g. one A100 node at ~$3.67/h, assumed 2500 tok/s aggregate -> ~$0.41 per 1M.
    assert self_hosted_cost_per_million(3.673, 2500) == pytest.approx(0.40811, rel=1e-4)
    assert self_hosted_cost_per_million(0, 100) == 0


@pytest.mark.parametrize(("price", "tps"), [(-1, 100), (1, 0), (1, -5)])
def test_cost_per_million_rejects_bad_inputs(price, tps):
    with pytest.raises(ValueError):
        self_hosted_cost_per_million(price, tps)


@given(st.floats(0.01, 1000), st.floats(1, 1e6))
def test_cost_scales_inversely_with_throughput(price, tps):
    assert self_hosted_cost_per_million(price, tps * 2) == pytest.approx(self_hosted_cost_per_million(price, tps) / 2)


# --- property: route() always returns a known model ------------------------------------------------------------------

_CATS = sorted(MMLU_CATEGORIES)
_WORDS = st.sampled_from(["prove", "summarize", "design", "yes or no", "cat", "Debug", "STEP BY STEP", "", "the"])


@st.composite
def _configs(draw):
    models = _models()
    names = [m.name for m in models]
    n = draw(st.integers(0, 6))
    decisions = [
        RouterDecision(
            name=f"d{i}",
            priority=draw(st.integers(0, 998)),
            categories=draw(st.lists(st.sampled_from(_CATS), max_size=3, unique=True)),
            keywords=draw(st.lists(_WORDS.filter(bool), min_size=1, max_size=2)),
            operator=draw(st.sampled_from(["AND", "OR"])),
            model=draw(st.sampled_from(names)),
        )
        for i in range(n)
    ]
    return RouterConfigArgs(models=models, decisions=decisions, default_model=draw(st.sampled_from(names)))


@settings(max_examples=200)
@given(_configs(), st.sets(st.sampled_from(_CATS), max_size=2), st.lists(_WORDS, max_size=4).map(" ".join))
def test_route_always_returns_a_known_model(args, categories, text):
    assert route(render(args), categories, text) in {m.name for m in args.models}
