"""The metrics the stacks export and the dashboard may read, by source, and the PromQL reader that finds
the metric names in a dashboard expression; shared by the tests of the dashboard and of the gateway."""

from __future__ import annotations

import re

VLLM_METRICS = {
    # vLLM V1 Prometheus metrics (vllm-project/vllm docs/design metrics; kv_cache_usage_perc replaced V0's
    # gpu_cache_usage_perc), scraped by VllmService's PodMonitor.
    "vllm:num_requests_waiting",
    "vllm:num_requests_running",
    "vllm:kv_cache_usage_perc",
    "vllm:prompt_tokens_total",
    "vllm:generation_tokens_total",
    "vllm:e2e_request_latency_seconds_bucket",
}
GATEWAY_METRICS = {
    # Envoy AI Gateway (envoyproxy/ai-gateway internal/metrics/genai.go): gen_ai.client.token.usage and
    # gen_ai.server.request.duration histograms. The token histogram is *_token_* in older releases.
    "gen_ai_client_token_usage_sum",
    "gen_ai_client_token_usage_count",
    "gen_ai_client_token_usage_token_sum",
    "gen_ai_client_token_usage_token_count",
    "gen_ai_server_request_duration_seconds_bucket",
    "gen_ai_server_request_duration_seconds_count",
    "gen_ai_server_request_duration_seconds_sum",
}
ROUTER_METRICS = {
    # vllm-project/semantic-router src/semantic-router/pkg/metrics/metrics.go, served on :9190.
    "llm_model_routing_modifications_total",
    "llm_model_requests_total",
}
ALLOWED = VLLM_METRICS | GATEWAY_METRICS | ROUTER_METRICS

_KEYWORDS = {
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "bool",
    "and",
    "or",
    "unless",
    "offset",
    "inf",
    "nan",
}
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')
_NAME_MATCHER = re.compile(r'__name__\s*(=~|=)\s*"((?:[^"\\]|\\.)*)"')
_GROUPING = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_IDENTIFIER = re.compile(r"(?<![\w.:$])[A-Za-z_:][\w:]*")


def metric_names(expr: str) -> tuple[set[str], set[str]]:
    """The metric names an expression selects, and the ``__name__`` regexes it selects with.

    Drops Grafana variables, string literals (label values), label matchers, range and subquery windows,
    grouping clauses (label names), function names (an identifier followed by ``(``) and PromQL keywords;
    what is left are metric names.
    """
    regexes = {value for op, value in _NAME_MATCHER.findall(expr) if op == "=~"}
    exact = {value for op, value in _NAME_MATCHER.findall(expr) if op == "="}
    text = re.sub(r"\$\{\w+(:\w+)?\}|\$\w+", " ", expr)
    text = _STRING.sub('""', text)
    text = re.sub(r"\{[^}]*\}", " ", text)
    text = re.sub(r"\[[^\]]*\]", " ", text)
    text = _GROUPING.sub(" ", text)
    names = set(exact)
    for match in _IDENTIFIER.finditer(text):
        word = match.group(0)
        if re.match(r"\s*\(", text[match.end() :]) or word.lower() in _KEYWORDS:
            continue
        names.add(word)
    return names, regexes
