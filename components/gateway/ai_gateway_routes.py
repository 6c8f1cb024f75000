"""The AIGatewayRoutes a gateway renders: one rule per model, spread over as many routes as the CRDs allow, and for a
model with a fallback a rule of two prioritised backends with the retry policy that moves a call to the second.

Limits. AI Gateway v1.1.0 turns each AIGatewayRoute into one HTTPRoute of the same name, rule for rule (each match and
backendRef copied), and appends a catch-all ``route-not-found`` rule with one match
(envoyproxy/ai-gateway@v1.1.0:internal/controller/ai_gateway_route.go:188-214,253-342), so a route must fit both CRDs:

- ``MAX_RULES`` 15: the AIGatewayRoute's ``spec.rules`` (the 16th HTTPRoute slot is the catch-all's,
  api/v1beta1/ai_gateway_route.go:91-98);
- ``MAX_BACKEND_REFS`` 16 and ``MAX_MATCHES_PER_RULE`` 64: the generated HTTPRoute's per rule (kubernetes-sigs/gateway-api
  v1.5.1 HTTPRoute CRD; the AIGatewayRoute itself would take 128 of each);
- ``MAX_MATCHES`` 127: the HTTPRoute's CEL rule "the total number of matches across all rules in a route must be less
  than" 128 (its ``<= 128``), less the catch-all's one.

tests/components/test_gateway_routes.py holds these numbers to the pinned CRDs. No limit on routes per Gateway was
found (the doc says to split rules across AIGatewayRoutes). The rest of the request path has no per-object cap the
gateway comes near: one BackendSecurityPolicy per backend (``targetRefs`` <= 16, one used), one ReferenceGrant per
InferencePool (``from``/``to`` <= 16, two and one used), the budget and router policies target the Gateway.

Fallback. AI Gateway's own mechanism (examples/provider_fallback, tests/e2e/provider_fallback_test.go at v1.1.0): the
rule lists the model's backend at ``priority`` 0 and the fallback at 1, asked for its own model name
(``modelNameOverride``); a BackendTrafficPolicy on the generated HTTPRoute retries, one attempt per priority, so a
call the primary cannot take (connection refused, reset, 503) goes to the next priority. Priority alone moves nothing
on a refused connection (the e2e test's 503s before the policy). Its ``mergeType`` keeps the Gateway's own
BackendTrafficPolicy (the shared token budget, the request buffer) on the route: without it the route policy would
replace the Gateway's for these models (envoyproxy/gateway@v1.8.2:internal/gatewayapi/backendtrafficpolicy.go:499-560,
860-900). Fallback rules live in their own routes, so the retry applies to them only. Both ends are FQDN Backends,
whose clusters carry the priorities (an IP Backend's EDS cluster does not get them: research notes in docs/gateway.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .ai_gateway_args import AiGatewayArgs, GatewayBackend

MAX_RULES = 15
MAX_BACKEND_REFS = 16
MAX_MATCHES_PER_RULE = 64
MAX_MATCHES = 127
MODEL_HEADER = "x-ai-eg-model"
"""AIGW sets this header from the request body's ``model`` before routing."""
INFERENCE_GROUP = "inference.networking.k8s.io"
"""The Gateway API Inference Extension's group (InferencePool v1), the only group an AIGatewayRoute
backendRef may name besides AI Gateway's own (the AIGatewayRoute CRD's x-kubernetes-validations)."""
RETRY = {
    # One attempt per priority, then the next (Envoy's previous_priorities retry selector, which Envoy Gateway
    # emits for numAttemptsPerPriority: envoyproxy/gateway@v1.8.2:internal/xds/translator/route.go:786-824).
    "numAttemptsPerPriority": 1,
    # Two priorities: one retry reaches the fallback.
    "numRetries": 1,
    # No pod behind the Service: the connection is refused (or reset); an engine that is up but unready answers 503.
    # No perRetry timeout: a per-attempt timeout would cut a long streamed answer and send it to the fallback.
    "retryOn": {"triggers": ["connect-failure", "reset", "retriable-status-codes"], "httpStatusCodes": [503]},
}
"""The retry policy of a fallback route (BackendTrafficPolicy ``spec.retry``)."""
LLM_REQUEST_COSTS = [
    {"metadataKey": "llm_input_token", "type": "InputToken"},
    {"metadataKey": "llm_output_token", "type": "OutputToken"},
    {"metadataKey": "llm_total_token", "type": "TotalToken"},
]
"""Token counts AIGW writes to dynamic metadata on every route; the budget charges ``llm_total_token``."""


@dataclass(frozen=True)
class RouteManifest:
    """One AIGatewayRoute and, for a route of fallback rules, the BackendTrafficPolicy that retries across priorities."""

    role: str
    """The Pulumi name's suffix: ``route`` (the first, as before routes were spread), ``route-2``, ``route-fallback``."""
    name: str
    """The object's name (and the generated HTTPRoute's)."""
    spec: dict[str, Any]
    retry: dict[str, Any] | None = field(default=None)


def rule(args: AiGatewayArgs, b: GatewayBackend, fallback: GatewayBackend | None) -> dict[str, Any]:
    """One model's rule, matched on the header AIGW fills from the request's ``model``; with ``fallback``, its backend
    at priority 0 and the fallback at priority 1, asked for the fallback's own model name."""
    refs = [_route_backend(b)]
    if fallback is not None:
        refs = [{**refs[0], "priority": 0}, {**_route_backend(fallback), "priority": 1, "modelNameOverride": fallback.model}]
    return {
        "matches": [{"headers": [{"type": "Exact", "name": MODEL_HEADER, "value": b.model}]}],
        "backendRefs": refs,
        "timeouts": {"request": args.request_timeout},
    }


def _route_backend(b: GatewayBackend) -> dict[str, str]:
    """The rule's backendRef: the backend's AIServiceBackend, or the InferencePool itself (in its own
    namespace, which a ReferenceGrant there admits)."""
    if b.kind == "inference-pool":
        return {"group": INFERENCE_GROUP, "kind": "InferencePool", "name": b.inference_pool, "namespace": b.namespace}
    return {"name": b.name}


def spread(rules: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The rules in order, cut into routes that keep every limit (rules, matches per route)."""
    routes: list[list[dict[str, Any]]] = []
    for r in rules:
        current = routes[-1] if routes else None
        matches = sum(len(x["matches"]) for x in current or [])
        if current is None or len(current) == MAX_RULES or matches + len(r["matches"]) > MAX_MATCHES:
            routes.append([])
        routes[-1].append(r)
    return routes


def routes(args: AiGatewayArgs, backends: list[GatewayBackend]) -> list[RouteManifest]:
    """The gateway's routes: the models without a fallback first (``<gateway>``, ``<gateway>-2``, ...), then those with
    one (``<gateway>-fallback``, ``<gateway>-fallback-2``, ...), each of those with its retry policy. A model keeps its
    route while models are appended, so adding one never moves another."""
    by_model = {b.model: b for b in backends}
    plain = [rule(args, b, None) for b in backends if b.fallback is None]
    falling = [rule(args, b, by_model[b.fallback]) for b in backends if b.fallback is not None]
    found = []
    for group, suffix in ((plain, ""), (falling, "-fallback")):
        for i, chunk in enumerate(spread(group), 1):
            tail = suffix + (f"-{i}" if i > 1 else "")
            name = args.gateway_name + tail
            spec = {
                "parentRefs": [{"name": args.gateway_name, "kind": "Gateway"}],
                "rules": chunk,
                "llmRequestCosts": [dict(cost) for cost in LLM_REQUEST_COSTS],
            }
            found.append(RouteManifest(f"route{tail}", name, spec, retry_spec(name) if suffix else None))
    return found


def retry_spec(route: str) -> dict[str, Any]:
    """The BackendTrafficPolicy of a fallback route: on its generated HTTPRoute, merged into the Gateway's policy."""
    return {
        "targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": route}],
        "mergeType": "StrategicMerge",
        "retry": {**RETRY, "retryOn": {k: list(v) for k, v in RETRY["retryOn"].items()}},
    }
