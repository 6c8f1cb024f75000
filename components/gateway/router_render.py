"""Render ``RouterConfigArgs`` as the vLLM Semantic Router (vSR) v0.3 config.

Sources for the config shape (vllm-project/semantic-router):

* ``deploy/helm/semantic-router/values.yaml`` @017a96c5 — ``version: v0.3``, ``listeners``, ``providers.defaults``
  (``default_model``, ``reasoning_families``, ``default_reasoning_effort``), ``providers.models[].backend_refs[]``
  (``name``, ``endpoint: host:port``, ``protocol: http``, ``weight``), ``routing.modelCards``,
  ``routing.signals.domains[]`` (``name``, ``description``, ``mmlu_categories``), ``routing.decisions[]``
  (``priority``, ``rules.operator``/``conditions[]``, ``modelRefs[]``), ``global.stores.semantic_cache``,
  ``global.services.observability.tracing``. (That file at ``main`` also documents ``configOverride``; chart 0.3.0 has
  no such value: its ``templates/configmap.yaml`` reads ``.Values.config`` only.)
* ``deploy/kubernetes/ai-gateway/semantic-router-values/values.yaml`` @07938626 — ``routing.signals.keywords[]``
  (``name``, ``operator: OR``, ``keywords: [...]``, ``case_sensitive: false``), decisions with ``type: keyword``
  conditions, the 14 MMLU-Pro domain names, and ``global.router.strategy: priority``.
* ``website/docs/tutorials/content-safety/jailbreak-protection.md`` @50d837ad — ``signals.jailbreak[]``
  (``name``, ``threshold``), ``signals.pii[]`` (``name``, ``threshold``), blocking decisions at priority 1000/999 with a
  ``fast_response`` plugin and no ``modelRefs``.

Unverified (taken from the brief, not re-checked against the 0.3 sources): ``providers.models[].pricing`` placement
(the ``currency``/``prompt_per_1m``/``completion_per_1m`` keys themselves match the older ``model_config`` format),
``pii_types_allowed`` on a PII *signal* (older format had it on a per-model ``pii_policy``),
``global.model_catalog.modules.prompt_guard``, ``protocol: https`` for a TLS backend (only ``http`` seen), how
Azure OpenAI's ``api-key`` header and ``api-version`` query are supplied (not rendered here: the gateway in front
of the backend must add them), tie-breaking between equal priorities, and whether keyword matching is a substring
or a word-boundary match.

Feed :func:`render` output to chart 0.3.0 as ``config``. Helm deep-merges it with the sample config in the chart's
values.yaml (maps merge, lists replace), so sample keys that this config does not set survive into the router's
config. ``aks-gpu plan`` validates the merged result against the router's Go config types at v0.3.0
(``components/gateway/router_fields``), and the tests also run the router's own Python validator (``vllm-sr`` 0.3.0, the
same code as the tag's ``src/vllm-sr``).
"""

from __future__ import annotations

from typing import Any

from .router_config import (
    CONFIG_FORMAT,
    JAILBREAK_GUARD,
    PII_GUARD,
    REASONING_FAMILIES,
    VSR_API_PORT,
    VSR_EXTPROC_PORT,
    RouterConfigArgs,
    RouterDecision,
)


def _keyword_signal_name(decision: RouterDecision) -> str:
    return f"{decision.name}-keywords"


def _conditions(decision: RouterDecision) -> list[dict[str, str]]:
    conditions = [{"type": "domain", "name": c} for c in decision.categories]
    if decision.keywords:
        conditions.append({"type": "keyword", "name": _keyword_signal_name(decision)})
    return conditions


def _sorted_decisions(args: RouterConfigArgs) -> list[RouterDecision]:
    # Stable sort: equal priorities keep declaration order (vSR's own tie-break is unverified).
    return sorted(args.decisions, key=lambda d: -d.priority)


def _block(name: str, priority: int, signal_type: str, signal: str, message: str) -> dict[str, Any]:
    return {
        "name": name,
        "description": f"Reject requests flagged by the {signal_type} guard.",
        "priority": priority,
        "rules": {"operator": "OR", "conditions": [{"type": signal_type, "name": signal}]},
        "modelRefs": [],
        "plugins": [{"type": "fast_response", "configuration": {"message": message}}],
    }


def render(args: RouterConfigArgs) -> dict[str, Any]:
    """Return the vSR v0.3 config as a plain dict (pass it to the chart as ``config``)."""
    decisions = _sorted_decisions(args)
    domains = sorted({c for d in decisions for c in d.categories})

    signals: dict[str, Any] = {
        "domains": [{"name": c, "description": f"MMLU-Pro category '{c}'", "mmlu_categories": [c]} for c in domains],
        "keywords": [
            {"name": _keyword_signal_name(d), "operator": "OR", "keywords": list(d.keywords), "case_sensitive": False}
            for d in decisions
            if d.keywords
        ],
    }
    rendered_decisions: list[dict[str, Any]] = []
    guards = args.guards
    if guards.jailbreak:
        signals["jailbreak"] = [{"name": JAILBREAK_GUARD, "threshold": guards.threshold}]
        rendered_decisions.append(
            _block("block-jailbreak", 1000, "jailbreak", JAILBREAK_GUARD, "Request blocked: it looks like a jailbreak attempt.")
        )
    if guards.pii:
        signals["pii"] = [{"name": PII_GUARD, "threshold": guards.threshold, "pii_types_allowed": list(guards.pii_types_allowed)}]
        rendered_decisions.append(_block("block-pii", 999, "pii", PII_GUARD, "Request blocked: personal information detected."))

    # The cache serves a decision only when that decision carries the semantic-cache plugin
    # (src/semantic-router/pkg/extproc/semantic_cache_scope.go); the store switch alone is not enough.
    cache_plugin = (
        [{"type": "semantic-cache", "configuration": {"enabled": True, "similarity_threshold": args.cache.similarity_threshold}}]
        if args.cache.enabled
        else []
    )
    for d in decisions:
        rendered_decisions.append(
            {
                "name": d.name,
                "description": f"Send matching requests to {d.model}.",
                "priority": d.priority,
                "rules": {"operator": d.operator, "conditions": _conditions(d)},
                "modelRefs": [{"model": d.model, "use_reasoning": d.use_reasoning}],
                "plugins": list(cache_plugin),
            }
        )

    models = []
    for m in args.models:
        entry: dict[str, Any] = {
            "name": m.name,
            "provider_model_id": m.provider_model_id or m.name,
            "backend_refs": [
                {
                    "name": "primary",
                    "endpoint": m.endpoint,
                    "protocol": "http" if m.kind == "self-hosted" else "https",
                    "weight": 100,
                }
            ],
            "pricing": {
                "currency": "USD",
                "prompt_per_1m": m.prompt_usd_per_million,
                "completion_per_1m": m.completion_usd_per_million,
            },
        }
        if m.reasoning_family:
            entry["reasoning_family"] = m.reasoning_family
        models.append(entry)

    global_section: dict[str, Any] = {
        "router": {"strategy": "priority"},
        # semantic_cache is the store router 0.3.0 knows (runtime_config.go:195-207); the chart's sample
        # config turns it on, so "off" is written out rather than left to the merge.
        "stores": {
            "semantic_cache": {
                "enabled": args.cache.enabled,
                "backend_type": "memory",
                "similarity_threshold": args.cache.similarity_threshold,
                "max_entries": args.cache.max_entries,
                "ttl_seconds": args.cache.ttl_seconds,
            }
        },
        # The chart's sample turns on tool auto-selection, which adds tools to requests: off here.
        "integrations": {"tools": {"enabled": False}},
    }
    if args.tracing_endpoint:
        global_section["services"] = {
            "observability": {
                "tracing": {
                    "enabled": True,
                    "provider": "opentelemetry",
                    "exporter": {"type": "otlp", "endpoint": args.tracing_endpoint, "insecure": True},
                    "sampling": {"type": "probabilistic", "rate": args.tracing_sample_rate},
                }
            }
        }
    if guards.jailbreak:
        global_section["model_catalog"] = {"modules": {"prompt_guard": {"enabled": True, "threshold": guards.threshold}}}

    return {
        "version": CONFIG_FORMAT,
        "listeners": [
            {"name": f"grpc-{VSR_EXTPROC_PORT}", "address": "0.0.0.0", "port": VSR_EXTPROC_PORT, "timeout": "300s"},
            {"name": f"http-{VSR_API_PORT}", "address": "0.0.0.0", "port": VSR_API_PORT, "timeout": "300s"},
        ],
        "providers": {
            "defaults": {
                "default_model": args.default_model,
                "reasoning_families": {k: dict(v) for k, v in REASONING_FAMILIES.items()},
                "default_reasoning_effort": "high",
            },
            "models": models,
        },
        "routing": {
            "modelCards": [{"name": m.name} for m in args.models],
            "signals": signals,
            "decisions": rendered_decisions,
        },
        "global": global_section,
    }
