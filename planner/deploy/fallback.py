"""The fallback hop of an AIGatewayRoute rule whose backendRefs have priorities: who answers a call when the
model's own backend cannot, read from the rendered objects the way AI Gateway v1.1.0 and Envoy Gateway v1.8.2 build it.

- AI Gateway puts each backendRef's ``priority`` on the endpoints of its Envoy cluster, but only for a cluster whose
  endpoints are inline, which an FQDN Backend gives (envoyproxy/ai-gateway@v1.1.0:internal/extensionserver/
  post_translate_modify.go:344-392; envoyproxy/gateway@v1.8.2:internal/xds/translator/cluster.go:117-135): a backendRef
  to an IP Backend keeps priority 0, and Backends of mixed address types are split into weighted clusters, where
  priorities mean nothing (envoyproxy/gateway@v1.8.2:internal/ir/xds.go:960-972). Each is a warning.
- Priority alone does not move a call the primary refuses: Envoy Gateway sets no retry policy unless a
  BackendTrafficPolicy asks for one (internal/xds/translator/route.go:127-134), and AI Gateway's own e2e test gets 503
  every time until it applies one (tests/e2e/provider_fallback_test.go:56-77). A prioritised rule without a retry
  that moves on (``numAttemptsPerPriority``, a trigger the failure raises) is a warning.
- A BackendTrafficPolicy on a route without ``mergeType`` replaces the Gateway's for that route
  (internal/gatewayapi/backendtrafficpolicy.go:499): the token budget and the request buffer stop applying to its
  models. A blocker.

``answer`` follows one call: the first priority whose backend is up answers; with every backend of a priority down,
a retry that moves on reaches the next one, with the model name and credential that backendRef carries.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from aks_gpu_inference.planner.deploy.finding import Finding

FAILURES = {"connect-failure", "reset", "reset-before-request", "5xx", "gateway-error", "retriable-status-codes"}
"""Retry triggers that fire when a Service has no ready pod (the connection is refused or reset) or answers 503."""


class _Walk(Protocol):
    """What this module uses of request_path's walk (not imported: request_path imports this module)."""

    index: dict[tuple[str, str, str], dict]
    findings: list[Finding]

    def of_kind(self, kind: str, namespace: str | None = None) -> list[dict]: ...
    def credential(self, ns: str, backend: str, where: str) -> list[str]: ...


@dataclass(frozen=True)
class Hop:
    """The backend that answers, as the call reaches it."""

    backend: str
    """The AIServiceBackend."""
    model: str
    """The model the backend is asked for (the backendRef's ``modelNameOverride``, else the client's)."""
    host: str
    credential: str
    priority: int


@dataclass(frozen=True)
class Answer:
    hop: Hop | None
    """Who answers; None: the client gets 503."""
    how: str
    """How the call got there, in words."""


def priority(ref: dict) -> int:
    value = ref.get("priority")
    return value if isinstance(value, int) else 0


def prioritised(rule: dict) -> bool:
    """Whether the rule's backendRefs span more than one priority (a fallback)."""
    return len({priority(r) for r in rule.get("backendRefs") or []}) > 1


def retry_policy(w: _Walk, namespace: str, route: str) -> dict | None:
    """The BackendTrafficPolicy on the HTTPRoute AI Gateway generates from the AIGatewayRoute ``route`` (same name)."""
    for policy in w.of_kind("BackendTrafficPolicy", namespace):
        spec = policy.get("spec") or {}
        refs = list(spec.get("targetRefs") or []) + ([spec["targetRef"]] if spec.get("targetRef") else [])
        if any(r.get("kind") == "HTTPRoute" and r.get("name") == route for r in refs):
            return policy
    return None


def moves_on(policy: dict | None) -> bool:
    """Whether the policy retries on another priority after a failure a missing pod causes."""
    retry = ((policy or {}).get("spec") or {}).get("retry") or {}
    triggers = set((retry.get("retryOn") or {}).get("triggers") or [])
    return bool(retry.get("numAttemptsPerPriority")) and (retry.get("numRetries") or 0) >= 1 and bool(triggers & FAILURES)


def _hop(w: _Walk, namespace: str, ref: dict, model: str, where: str) -> Hop:
    name = ref.get("name", "?")
    aisb = w.index.get(("AIServiceBackend", namespace, name)) or {}
    target = (aisb.get("spec") or {}).get("backendRef") or {}
    backend = w.index.get(("Backend", target.get("namespace") or namespace, target.get("name"))) or {}
    endpoints = [e.get("fqdn") or e.get("ip") or {} for e in (backend.get("spec") or {}).get("endpoints") or []]
    host = (
        f"{endpoints[0].get('hostname') or endpoints[0].get('address', '?')}:{endpoints[0].get('port', '?')}"
        if endpoints
        else "?"
    )
    credential = "; ".join(w.credential(namespace, name, where))
    return Hop(name, ref.get("modelNameOverride") or model, host, credential, priority(ref))


def answer(w: _Walk, namespace: str, route: str, rule: dict, model: str, down: frozenset[str] = frozenset()) -> Answer:
    """Who answers a call for ``model`` on ``rule`` of ``route`` when the AIServiceBackends in ``down`` have no ready pod."""
    refs = sorted(rule.get("backendRefs") or [], key=priority)
    where = f"AIGatewayRoute {namespace}/{route} rule {model}"
    levels = sorted({priority(r) for r in refs})
    policy = retry_policy(w, namespace, route)
    steps = []
    for level in levels:
        up = [r for r in refs if priority(r) == level and r.get("name") not in down]
        if up:
            return Answer(_hop(w, namespace, up[0], model, where), "; ".join([*steps, f"priority {level} answers"]))
        steps.append(f"priority {level} ({', '.join(r.get('name', '?') for r in refs if priority(r) == level)}) cannot answer")
        if level != levels[-1] and not moves_on(policy):
            return Answer(None, "; ".join([*steps, "503 to the client: no retry policy moves the call to the next priority"]))
        if level != levels[-1]:
            steps.append(f"retried on the next priority (BackendTrafficPolicy {namespace}/{policy['metadata']['name']})")
    return Answer(None, "; ".join([*steps, "503 to the client"]))


def describe(w: _Walk, namespace: str, route: str, rule: dict, model: str) -> str:
    """The request-path row of a call whose model's own backend has no ready pod."""
    primary = frozenset(r.get("name") for r in rule.get("backendRefs") or [] if priority(r) == 0)
    result = answer(w, namespace, route, rule, model, primary)
    if result.hop is None:
        return result.how
    policy = retry_policy(w, namespace, route) or {}
    retry_on = (((policy.get("spec") or {}).get("retry") or {}).get("retryOn")) or {}
    codes = " ".join(map(str, retry_on.get("httpStatusCodes") or []))
    on = ", ".join(t + (f" {codes}" if t == "retriable-status-codes" and codes else "") for t in retry_on.get("triggers") or [])
    hop = result.hop
    return (
        f"the call to {', '.join(sorted(primary))} fails (retried on {on}) -> BackendTrafficPolicy "
        f"{namespace}/{policy['metadata']['name']} moves it to priority {hop.priority} -> AIServiceBackend {hop.backend} "
        f"as model {hop.model} -> {hop.host}; {hop.credential}"
    )


def check(w: _Walk, namespace: str, route: dict, budget: bool) -> list[Finding]:
    """The route's prioritised rules against the three ways a fallback silently does not happen, and its policy against
    the Gateway's budget (``budget``: the Gateway has one)."""
    name = route["metadata"]["name"]
    where = f"AIGatewayRoute {namespace}/{name}"
    policy = retry_policy(w, namespace, name)
    found = []
    if policy is not None and budget and not (policy.get("spec") or {}).get("mergeType"):
        found.append(
            Finding(
                "request-path",
                "blocker",
                f"BackendTrafficPolicy {namespace}/{policy['metadata']['name']}",
                f"targets the HTTPRoute of {where} without mergeType, so it replaces the Gateway's BackendTrafficPolicy "
                "there: the token budget and the request buffer stop applying to the route's models",
                "set mergeType: StrategicMerge",
            )
        )
    for rule in (route.get("spec") or {}).get("rules") or []:
        if prioritised(rule):
            found += _rule_findings(w, namespace, where, rule, policy)
    return found


def _rule_findings(w: _Walk, namespace: str, where: str, rule: dict, policy: dict | None) -> list[Finding]:
    found = []
    if not moves_on(policy):
        found.append(
            Finding(
                "request-path",
                "warning",
                where,
                "a rule with prioritised backendRefs and no retry policy that moves on: a call the first backend refuses "
                "gets 503 (priority alone does not fail over)",
                "add a BackendTrafficPolicy on the HTTPRoute with retry.numAttemptsPerPriority and a connect-failure trigger",
            )
        )
    kinds = set()
    for ref in rule.get("backendRefs") or []:
        aisb = w.index.get(("AIServiceBackend", namespace, ref.get("name"))) or {}
        target = (aisb.get("spec") or {}).get("backendRef") or {}
        backend = w.index.get(("Backend", target.get("namespace") or namespace, target.get("name"))) or {}
        kinds |= {key for e in (backend.get("spec") or {}).get("endpoints") or [] for key in e}
    if kinds - {"fqdn"}:
        found.append(
            Finding(
                "request-path",
                "warning",
                where,
                f"a prioritised rule reaches Backends with {', '.join(sorted(kinds))} endpoints: AI Gateway sets priorities "
                "only on FQDN Backends' clusters, and mixed address types are split by weight, so the fallback gets "
                "normal traffic or none",
                "point every backend of the rule at an FQDN Backend",
            )
        )
    return found
