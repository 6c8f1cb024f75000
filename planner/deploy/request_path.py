"""Request paths through each AI gateway: who answers a call, and is every object on the way there?

Walks the rendered objects the way a call travels: the listener's HTTP filters (``filter_chain``),
authentication, the budget, the semantic router's decision (from the config the router reads,
``router.configs``), the AIGatewayRoute rule, the AIServiceBackend, its Backend and credential Secret,
and the in-cluster Service (or the KAITO Workspace or Dynamo graph whose controller creates it); or the
InferencePool, its endpoint picker and the decode and prefill pods behind it (``inference_pool``). A step with
nothing behind it is a blocker; so are a router placed before authentication, rate limiting or after the
AI Gateway, a PodMonitor port that no pod has, and a NetworkPolicy that cuts a hop of a Dynamo graph, from the
gateway into its frontend or between its frontend and workers (``dynamo_graph``).

Pods that controllers create at run time are described from their sources: each Envoy proxy pod
(labelled ``gateway.envoyproxy.io/owning-gateway-name``) has the ``metrics`` port
(envoyproxy/gateway@v1.8.2 internal/infrastructure/kubernetes/proxy/resource.go) and, on a Gateway
with AI routes, the injected extproc sidecar's ``aigw-admin``
(envoyproxy/ai-gateway@v1.1.0 internal/controller/extproc_builder.go).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from aks_gpu_inference.components.core import pins
from aks_gpu_inference.components.core.endpoints import dynamo_component_service
from aks_gpu_inference.components.gateway import router_config
from aks_gpu_inference.planner.deploy import dynamo_graph, fallback, filter_chain, inference_pool, network_policy, router
from aks_gpu_inference.planner.deploy.finding import Finding
from aks_gpu_inference.planner.deploy.model import DeployModel

MODEL_HEADER = "x-ai-eg-model"
PROXY_LABEL = "gateway.envoyproxy.io/owning-gateway-name"
PROXY_NAMESPACE = "envoy-gateway-system"


@dataclass
class GatewayPaths:
    """What the plan prints for one Gateway: its filter chain and one row per kind of request."""

    gateway: str
    chain: list[str]
    rows: list[tuple[str, str]] = field(default_factory=list)
    auto_models: tuple[str, ...] = ()


def meta(o: dict) -> dict:
    """An object's metadata, or {}."""
    return o.get("metadata") or {}


def _key(o: dict) -> tuple[str, str, str]:
    return (str(o.get("kind")), meta(o).get("namespace") or "", meta(o).get("name") or "")


def targets(o: dict, kind: str, name: str) -> bool:
    """Whether a policy's targetRefs (or targetRef) name the object."""
    spec = o.get("spec") or {}
    refs = list(spec.get("targetRefs") or []) + ([spec["targetRef"]] if spec.get("targetRef") else [])
    return any(r.get("kind") == kind and r.get("name") == name for r in refs)


class _Walk:
    def __init__(self, model: DeployModel, upstream: Path | None):
        self.objects = [o.manifest for o in model.objects]
        self.index = {_key(o): o for o in self.objects}
        self.model = model
        self.findings: list[Finding] = []
        self.router_configs = [config for _, config, _ in router.configs(model, upstream)]

    def has(self, kind: str, namespace: str, name: str) -> bool:
        return (kind, namespace, name) in self.index

    def block(self, where: str, message: str, fix: str) -> None:
        unrendered = [c.label for c in self.model.charts if not c.rendered]
        if unrendered:  # what is missing may be what an unrendered chart creates: say so, do not block on it
            message += f" (not conclusive: {', '.join(unrendered)} could not be rendered)"
        self.findings.append(Finding("request-path", "warning" if unrendered else "blocker", where, message, fix))

    def of_kind(self, kind: str, namespace: str | None = None) -> list[dict]:
        return [o for o in self.objects if o.get("kind") == kind and (namespace is None or meta(o).get("namespace") == namespace)]

    # ---- steps ---------------------------------------------------------------------------------

    def auth(self, gw: dict) -> str:
        ns, name = meta(gw).get("namespace"), meta(gw)["name"]
        policies = [p for p in self.of_kind("SecurityPolicy", ns) if targets(p, "Gateway", name)]
        spec = (policies[0].get("spec") or {}) if policies else {}
        where = f"Gateway {ns}/{name}"
        if spec.get("apiKeyAuth"):
            for ref in spec["apiKeyAuth"].get("credentialRefs") or []:
                if not self.has("Secret", ns, ref.get("name")):
                    self.block(
                        where, f"the API keys Secret {ns}/{ref.get('name')} does not exist", "create the client keys Secret"
                    )
            return "401 at api_key_auth (SecurityPolicy), before the router reads the body"
        if spec.get("jwt"):
            return "401 at jwt_authn (SecurityPolicy, Entra ID token), before the router reads the body"
        self.block(where, "no SecurityPolicy with apiKeyAuth or jwt targets the Gateway: it serves anonymous calls", "add one")
        return "served anonymously"

    def order(self, gw: dict, chain: list[filter_chain.HttpFilter]) -> None:
        ns, name = meta(gw).get("namespace"), meta(gw)["name"]
        names = [f.name for f in chain]
        # The router's filters: ext_procs of the EnvoyExtensionPolicies whose backend is the router's Service.
        policies = [
            f"/envoyextensionpolicy/{meta(p).get('namespace')}/{meta(p)['name']}/"
            for p in self.of_kind("EnvoyExtensionPolicy")
            for ext in (p.get("spec") or {}).get("extProc") or []
            for ref in ext.get("backendRefs") or []
            if (ref.get("namespace") or meta(p).get("namespace"), ref.get("name"))
            == (router_config.VSR_NAMESPACE, router_config.VSR_SERVICE)
        ]
        routers = [i for i, f in enumerate(chain) if any(p in f.name for p in policies)]
        if not routers:
            return
        at = routers[0]
        auth = max([i for i, n in enumerate(names) if "api_key_auth" in n or "jwt_authn" in n] or [-1])
        limit = filter_chain.position(chain, "envoy.filters.http.ratelimit")
        aigw = filter_chain.position(chain, "envoy.filters.http.ext_proc/aigateway")
        for wrong, what in (
            (at < auth, "before authentication"),
            (-1 < at < limit, "before rate limiting"),
            (-1 < aigw < at, "after the AI Gateway"),
        ):
            if wrong:
                self.block(
                    f"Gateway {ns}/{name}",
                    f"the semantic router runs {what}: {' > '.join(names)}",
                    "order it with EnvoyProxy filterOrder",
                )

    def budget(self, gw: dict) -> str:
        ns, name = meta(gw).get("namespace"), meta(gw)["name"]
        for policy in self.of_kind("BackendTrafficPolicy", ns):
            rules = (((policy.get("spec") or {}).get("rateLimit") or {}).get("global") or {}).get("rules") or []
            if targets(policy, "Gateway", name) and rules:
                rule = rules[0]
                limit = rule.get("limit") or {}
                scope = "shared across all routes" if rule.get("shared") else "one per route (each model gets the whole budget)"
                if not rule.get("shared"):
                    self.findings.append(
                        Finding(
                            "request-path",
                            "warning",
                            f"BackendTrafficPolicy {ns}/{policy['metadata']['name']}",
                            f"budget is {scope}",
                            "set shared: true",
                        )
                    )
                return f"{limit.get('requests')} tokens/{str(limit.get('unit', '')).lower()} per client, {scope}"
        return "no budget"

    def backend(self, gateway: tuple[str, str], rule: dict) -> str:
        """What answers one rule of a route of ``gateway`` (namespace, name), whose routes live in its namespace: its
        backendRefs of the first priority (a fallback's are ``fallback.describe``'s)."""
        steps, route_ns = [], gateway[0]
        refs = rule.get("backendRefs") or []
        first = min((fallback.priority(r) for r in refs), default=0)
        for ref in (r for r in refs if fallback.priority(r) == first):
            name = ref.get("name")
            where = f"AIGatewayRoute rule {MODEL_HEADER}={rule_model(rule)}"
            if (ref.get("group"), ref.get("kind")) == (inference_pool.GROUP, "InferencePool"):
                steps.append(" -> ".join(inference_pool.path(self, gateway, ref, where)))
                continue
            aisb = self.index.get(("AIServiceBackend", route_ns, name))
            if aisb is None:
                self.block(where, f"AIServiceBackend {route_ns}/{name} does not exist", "create it")
                continue
            target = (aisb.get("spec") or {}).get("backendRef") or {}
            backend = self.index.get(("Backend", target.get("namespace") or route_ns, target.get("name")))
            if backend is None:
                self.block(where, f"Backend {target.get('name')} of AIServiceBackend {name} does not exist", "create it")
                continue
            endpoints = [e.get("fqdn") or {} for e in (backend.get("spec") or {}).get("endpoints") or []]
            host = endpoints[0].get("hostname", "?") if endpoints else "?"
            steps.append(f"AIServiceBackend {name} -> {host}:{endpoints[0].get('port') if endpoints else '?'}")
            steps.extend(self.credential(route_ns, name, where))
            self.in_cluster(host, where)
            steps.extend(self.dynamo(gateway, host))
        return "; ".join(steps) or "nothing"

    def credential(self, ns: str, backend: str, where: str) -> list[str]:
        for policy in self.of_kind("BackendSecurityPolicy", ns):
            if targets(policy, "AIServiceBackend", backend):
                secret = (((policy.get("spec") or {}).get("apiKey") or {}).get("secretRef") or {}).get("name")
                if not self.has("Secret", ns, secret):
                    self.block(where, f"the credential Secret {ns}/{secret} does not exist", "create it (or its refresher)")
                return [f"key from Secret {secret}"]
        return ["no upstream credential"]

    def in_cluster(self, host: str, where: str) -> None:
        parts = host.split(".")
        if len(parts) == 5 and parts[2:] == ["svc", "cluster", "local"]:
            service, namespace = parts[0], parts[1]
            made_by_operator = self.has("Workspace", namespace, service) or (namespace, service) in self.dynamo_services()
            if not self.has("Service", namespace, service) and not made_by_operator:
                why = f"no Service {namespace}/{service} (nor a KAITO Workspace or Dynamo frontend that creates it)"
                self.block(where, why, "deploy the model")

    def dynamo(self, gateway: tuple[str, str], host: str) -> list[str]:
        """The hops behind a Dynamo frontend Service ``host`` routed to from ``gateway``, as one step; none otherwise."""
        parts = host.split(".")
        if len(parts) != 5 or (parts[1], parts[0]) not in self.dynamo_services():
            return []
        labels = {
            **inference_pool.PROXY_LABELS,
            "gateway.envoyproxy.io/owning-gateway-name": gateway[1],
            "gateway.envoyproxy.io/owning-gateway-namespace": gateway[0],
        }
        steps = dynamo_graph.path(self, network_policy.Pod(PROXY_NAMESPACE, labels), (parts[1], parts[0]))
        return [" -> ".join(steps)] if steps else []

    def dynamo_services(self) -> set[tuple[str, str]]:
        """The Services the Dynamo operator makes for the frontends of the v1beta1 DynamoGraphDeployments."""
        found = set()
        for graph in self.of_kind("DynamoGraphDeployment"):
            if graph.get("apiVersion") != pins.api_version("DynamoGraphDeployment"):
                continue
            about = meta(graph)
            for component in (graph.get("spec") or {}).get("components") or []:
                if isinstance(component, dict) and component.get("type") == "frontend" and component.get("name"):
                    found.add((about.get("namespace"), dynamo_component_service(about.get("name", ""), component["name"])))
        return found

    def pod_monitors(self, gateways: dict[str, bool]) -> None:
        for monitor in self.of_kind("PodMonitor"):
            spec, ns = monitor.get("spec") or {}, meta(monitor).get("namespace")
            labels = ((spec.get("selector") or {}).get("matchLabels")) or {}
            ports = self.ports(ns, labels, gateways)
            for endpoint in spec.get("podMetricsEndpoints") or []:
                if endpoint.get("port") not in ports:
                    self.block(
                        f"PodMonitor {ns}/{meta(monitor)['name']}",
                        f"no pod it selects has a port named {endpoint.get('port')!r} (found: {sorted(ports) or 'no pods'})",
                        "scrape a port the pods declare",
                    )

    @cached_property
    def pod_ports(self) -> dict[str, list[tuple[dict, set[str]]]]:
        """Namespace -> (labels, named ports) of each pod template there: read once, not once per PodMonitor."""
        found: dict[str, list[tuple[dict, set[str]]]] = {}
        for obj, template in self.model.pods():
            names = {p.get("name") for _, c in template.containers() for p in c.get("ports") or [] if p.get("name")}
            found.setdefault(obj.namespace, []).append(((template.metadata or {}).get("labels") or {}, names))
        return found

    def ports(self, namespace: str, labels: dict, gateways: dict[str, bool]) -> set[str]:
        found: set[str] = set()
        for pod_labels, names in self.pod_ports.get(namespace, []):
            if all(pod_labels.get(k) == v for k, v in labels.items()):
                found |= names
        gateway = labels.get(PROXY_LABEL)
        if namespace == PROXY_NAMESPACE and gateway in gateways:
            found |= {"metrics"} | ({"aigw-admin"} if gateways[gateway] else set())
        return found


def rule_model(rule: dict) -> str | None:
    """The model a route rule matches on (its x-ai-eg-model header), or None."""
    for match in rule.get("matches") or []:
        for header in match.get("headers") or []:
            if header.get("name") == MODEL_HEADER:
                return header.get("value")
    return None


def walk(model: DeployModel, upstream: Path | None) -> tuple[list[GatewayPaths], list[Finding]]:
    w = _Walk(model, upstream)
    paths, with_ai = [], {}
    for gw in w.of_kind("Gateway"):
        ns, name = meta(gw).get("namespace"), meta(gw)["name"]
        routes = [
            r
            for r in w.of_kind("AIGatewayRoute", ns)
            if any(p.get("name") == name for p in (r.get("spec") or {}).get("parentRefs") or [])
        ]
        with_ai[name] = bool(routes)
        chain = filter_chain.listener_chain(w.objects, ns, name)
        w.order(gw, chain)
        result = GatewayPaths(f"{ns}/{name}", filter_chain.describe(chain), auto_models=router_config.auto_model_names())
        denied = w.auth(gw)
        budget = w.budget(gw)
        result.rows += [("no credential", denied), ("a wrong credential", denied)]
        by_model, fallbacks = _routed_models(w, (ns, name), routes)
        for model_name, backend in sorted(by_model.items()):
            result.rows.append(
                (f"model={model_name}", f"router passes it on; route {MODEL_HEADER}={model_name} -> {backend}; budget: {budget}")
            )
            if model_name in fallbacks:
                row = f"{fallbacks[model_name]}; budget: {budget}"
                result.rows.append((f"model={model_name}, no ready {model_name} pod (rollout, scale from zero, lost node)", row))
        for config in w.router_configs:
            result.rows += _router_rows(w, config, result.auto_models[0], by_model)
        result.rows.append(("any other model", "404 from AI Gateway (route-not-found)"))
        paths.append(result)
    w.pod_monitors(with_ai)
    dynamo_graph.check(w)
    for warning in filter_chain.patched_filters(w.objects):
        w.findings.append(
            Finding(
                "request-path", "warning", "EnvoyPatchPolicy", warning, "use an EnvoyExtensionPolicy, which Envoy Gateway orders"
            )
        )
    return paths, w.findings


def _routed_models(w: _Walk, gateway: tuple[str, str], routes: list[dict]) -> tuple[dict[str, str], dict[str, str]]:
    """The backend of each model the routes match on, and who answers when it cannot (a rule with a fallback); a
    warning for each rule without a request timeout, and the fallbacks' own findings (``fallback.check``)."""
    by_model, fallbacks, ns = {}, {}, gateway[0]
    budget = any(
        targets(p, "Gateway", gateway[1]) and (p.get("spec") or {}).get("rateLimit")
        for p in w.of_kind("BackendTrafficPolicy", ns)
    )
    for route in routes:
        w.findings.extend(fallback.check(w, ns, route, budget))
        for rule in (route.get("spec") or {}).get("rules") or []:
            model_name = rule_model(rule)
            if not model_name:
                continue
            by_model[model_name] = w.backend(gateway, rule)
            if fallback.prioritised(rule):
                fallbacks[model_name] = fallback.describe(w, ns, route["metadata"]["name"], rule, model_name)
            if not (rule.get("timeouts") or {}).get("request"):
                w.findings.append(
                    Finding(
                        "request-path",
                        "warning",
                        f"AIGatewayRoute {ns}/{route['metadata']['name']}",
                        f"rule {model_name} has no request timeout: AI Gateway cuts calls at 60 s",
                        "set timeouts.request",
                    )
                )
    return by_model, fallbacks


def _router_rows(w: _Walk, config: dict, auto: str, by_model: dict[str, str]) -> list[tuple[str, str]]:
    """Where the router sends the auto model, decision by decision and by default; a blocker for each model
    it picks that no route serves."""
    rows = []
    decisions = sorted(((config.get("routing") or {}).get("decisions") or []), key=lambda d: -int(d.get("priority", 0)))
    for d in decisions:
        refs = [m.get("model") for m in d.get("modelRefs") or []]
        conditions = ", ".join(f"{c.get('type')} {c.get('name')}" for c in (d.get("rules") or {}).get("conditions") or [])
        if not refs:
            rows.append((f"model={auto}, {conditions}", f"router decision {d.get('name')}: answered by the router (blocked)"))
        for ref in refs:
            if ref not in by_model:
                w.block(
                    f"router decision {d.get('name')}",
                    f"picks model {ref!r}, which no route serves (routes: {sorted(by_model)})",
                    "route that model or change the decision",
                )
            rows.append(
                (f"model={auto}, {conditions}", f"router decision {d.get('name')} -> {ref} -> {by_model.get(ref, 'NO ROUTE')}")
            )
    default = ((config.get("providers") or {}).get("defaults") or {}).get("default_model")
    if default not in by_model:
        w.block("router default_model", f"{default!r} has no route (routes: {sorted(by_model)})", "route it")
    rows.append((f"model={auto}, no decision matches", f"router default -> {default} -> {by_model.get(default, 'NO ROUTE')}"))
    return rows


def check(model: DeployModel, upstream: Path | None) -> list[Finding]:
    return walk(model, upstream)[1]
