"""The routing rules of a rendered vLLM Semantic Router config, evaluated: which model a request would go
to. It reads the config the chart receives (``router_render.render``), so tests check the rules as
rendered, not the args they came from."""

from __future__ import annotations

from typing import Any


def route(config: dict[str, Any], categories: set[str], text: str) -> str:
    """The model the config's decisions pick for a prompt.

    ``categories`` stands in for the domain classifier's output (normally one MMLU-Pro category) and ``text`` for the
    prompt the keyword signals see. Decisions are tried in the order rendered (highest priority first), each its
    conditions joined by its operator; none matching falls back to ``default_model``. This is not the classifier, and
    the guard decisions (which block rather than route: no ``modelRefs``) never fire here.
    """
    routing = config["routing"]
    keywords = {signal["name"]: signal for signal in routing["signals"].get("keywords", [])}
    for decision in routing["decisions"]:
        if not decision["modelRefs"]:
            continue
        rules = decision["rules"]
        results = [_matches(condition, categories, text, keywords) for condition in rules["conditions"]]
        if results and (all(results) if rules["operator"] == "AND" else any(results)):
            return decision["modelRefs"][0]["model"]
    return config["providers"]["defaults"]["default_model"]


def _matches(condition: dict[str, str], categories: set[str], text: str, keywords: dict[str, dict]) -> bool:
    if condition["type"] == "domain":
        return condition["name"] in categories
    signal = keywords[condition["name"]]
    # A substring match, case-insensitive unless the signal says otherwise (vSR's exact tokenisation is unverified).
    if signal.get("case_sensitive"):
        return any(k in text for k in signal["keywords"])
    return any(k.lower() in text.lower() for k in signal["keywords"])
