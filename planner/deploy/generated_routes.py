"""The HTTPRoute AI Gateway v1.1.0 makes of each AIGatewayRoute, checked against the HTTPRoute CRD the cluster will
serve (schema and CEL rules, as the stack's own custom resources are).

An AIGatewayRoute within its own CRD's limits can still make an HTTPRoute the API server refuses: the controller
copies every rule, match and backendRef and appends a catch-all rule, and the HTTPRoute CRD allows 16 rules, 16
backendRefs and 64 matches a rule and fewer than 128 matches in all, where the AIGatewayRoute allows 15 rules and
128 of the others. AI Gateway then marks the AIGatewayRoute NotAccepted and none of its models answers
(envoyproxy/ai-gateway@v1.1.0:internal/controller/ai_gateway_route.go:100-105,219-234). A blocker.

Made as ``newHTTPRoute`` makes it (envoyproxy/ai-gateway@v1.1.0:internal/controller/ai_gateway_route.go:188-214,
243-370): the route's name, namespace, labels, parentRefs and hostnames; per rule its name, the backendRefs (an
AIServiceBackend's own ``spec.backendRef`` with the ref's weight, an InferencePool as named, its namespace explicit),
each match's headers under the ``/`` path prefix (the controller's ``rootPrefix`` default, cmd/controller/main.go:214),
the host-rewrite filter and the timeouts (60 s unless set, api/v1beta1/ai_gateway_route_helper.go:17-58); then the
``route-not-found`` rule. Priorities go into an annotation, not the routes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aks_gpu_inference.planner.deploy.crds import kind_at_hand
from aks_gpu_inference.planner.deploy.finding import Finding
from aks_gpu_inference.planner.deploy.model import DeployModel

AIGW_GROUP, GW_GROUP = "aigateway.envoyproxy.io", "gateway.networking.k8s.io"
ROOT_PREFIX = "/"
DEFAULT_TIMEOUT = "60s"


def _filter(name: str) -> dict[str, Any]:
    return {"type": "ExtensionRef", "extensionRef": {"group": "gateway.envoyproxy.io", "kind": "HTTPRouteFilter", "name": name}}


def _backend_ref(index: dict, namespace: str, ref: dict) -> dict[str, Any]:
    weight = {"weight": ref["weight"]} if "weight" in ref else {}
    if ref.get("kind") == "InferencePool":
        return (
            {k: ref[k] for k in ("group", "kind", "name") if k in ref} | {"namespace": ref.get("namespace", namespace)} | weight
        )
    where = ref.get("namespace", namespace)
    aisb = index.get(("AIServiceBackend", where, ref.get("name"))) or {}
    target = dict((aisb.get("spec") or {}).get("backendRef") or {"group": "gateway.envoyproxy.io", "kind": "Backend"})
    target.setdefault("name", ref.get("name"))
    if where != namespace and "namespace" not in target:
        target["namespace"] = where
    return target | weight


def http_route(route: dict, index: dict) -> dict[str, Any]:
    """The HTTPRoute AI Gateway makes of ``route`` (an AIGatewayRoute); ``index``: objects by (kind, namespace, name)."""
    meta, spec = route.get("metadata") or {}, route.get("spec") or {}
    name, namespace = meta.get("name", ""), meta.get("namespace") or "default"
    rules = []
    for rule in spec.get("rules") or []:
        built = {
            "backendRefs": [_backend_ref(index, namespace, ref) for ref in rule.get("backendRefs") or []],
            "matches": [{"headers": m.get("headers"), "path": {"value": ROOT_PREFIX}} for m in rule.get("matches") or []],
            "filters": [_filter(f"ai-eg-host-rewrite-{name}")],
            "timeouts": {"request": DEFAULT_TIMEOUT, **(rule.get("timeouts") or {})},
        }
        rules.append(({"name": rule["name"]} if rule.get("name") else {}) | built)
    rules.append(
        {
            "name": "route-not-found",
            "matches": [{"path": {"value": ROOT_PREFIX}}],
            "filters": [_filter(f"ai-eg-route-not-found-response-{name}")],
        }
    )
    body = {"parentRefs": spec.get("parentRefs") or [], "rules": rules}
    if spec.get("hostnames"):
        body["hostnames"] = spec["hostnames"]
    metadata = {"name": name, "namespace": namespace, **({"labels": meta["labels"]} if meta.get("labels") else {})}
    return {"apiVersion": f"{GW_GROUP}/v1", "kind": "HTTPRoute", "metadata": metadata, "spec": body}


def check(model: DeployModel, upstream: Path | None) -> list[Finding]:
    """Each AIGatewayRoute's HTTPRoute against the HTTPRoute CRD at hand (none at hand: not checked here, as any kind
    without a CRD is not)."""
    from aks_gpu_inference.planner.kube.crd_schema import validate

    crd = kind_at_hand(model, upstream)(GW_GROUP, "HTTPRoute")
    if crd is None:
        return []
    index = {(o.kind, o.namespace or "", o.name): o.manifest for o in model.objects}
    findings = []
    for obj in model.objects:
        if (obj.group, obj.kind) != (AIGW_GROUP, "AIGatewayRoute"):
            continue
        for error in validate(http_route(obj.manifest, index), crd).errors:
            findings.append(
                Finding(
                    "crds",
                    "blocker",
                    obj.label,
                    f"the HTTPRoute AI Gateway makes of it would be refused: {error}; AI Gateway marks the route NotAccepted",
                    "spread the rules over more AIGatewayRoutes (16 backendRefs and 64 matches a rule, 127 matches a route)",
                )
            )
    return findings
