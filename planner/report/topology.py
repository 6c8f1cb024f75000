"""What runs where, and what answers each model: the workloads the scheduler would place on each node pool
(``deploy.scheduling``'s own fit), and each gateway's way from the client through authentication, the budget and
the router to the backend and the pods behind it, read from the planned objects. ``summary`` writes it down,
``picture`` draws it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from aks_gpu_inference.components.core.endpoints import dynamo_component_service
from aks_gpu_inference.components.gateway import router_config
from aks_gpu_inference.planner.deploy import router
from aks_gpu_inference.planner.deploy.model import DeployModel
from aks_gpu_inference.planner.deploy.request_path import meta, rule_model, targets
from aks_gpu_inference.planner.deploy.scheduling import selector_problems
from aks_gpu_inference.planner.report.workloads import Workload, workloads

EXTERNAL = "external"
"""The pool name of a backend outside the cluster (Azure OpenAI, any other host)."""
KAITO = "KAITO"
"""Who provisions the nodes of a KAITO Workspace (no agent pool of the plan: ``quota.kaito_nodes``)."""


@dataclass
class Backend:
    """What answers one model: the object the gateway sends it to, the host, and the workloads behind it."""

    model: str
    kind: str
    """``Azure OpenAI``, ``external``, ``Service``, ``InferencePool``, ``KAITO Workspace``, ``Dynamo`` or ``missing``."""
    via: str
    """The gateway's object for it (``AIServiceBackend aoai-gpt-5-5``); for an endpoint, its Service."""
    target: str
    """Host and port, or the in-cluster object that answers."""
    workloads: list[str] = field(default_factory=list)
    """Ids of the workloads behind it (``Workload.id``)."""
    pools: list[str] = field(default_factory=list)
    """Pools those workloads run on; ``external`` for a backend outside the cluster."""
    router_picks: list[str] = field(default_factory=list)
    """The router decisions that send the auto model here."""
    router_default: bool = False
    usd_per_million: dict[str, float] | None = None
    """The stack's ``gateway_cost_per_million`` estimate for the model (prompt, completion)."""


@dataclass
class Router:
    """The semantic router a Gateway's ext_proc calls: the auto model names it answers, its decisions in priority
    order (``{name, conditions, models}``) and the model it picks when none matches."""

    service: str
    workloads: list[str]
    pools: list[str]
    auto_models: list[str]
    decisions: list[dict[str, Any]]
    default_model: str | None


@dataclass
class Flow:
    """One Gateway: client -> listener -> auth -> budget -> router -> backends."""

    gateway: str
    listeners: list[str]
    auth: str
    budget: str
    proxy_pools: list[str]
    """Pools the Envoy proxy pods Envoy Gateway starts for this Gateway would run on."""
    router: Router | None
    backends: list[Backend]


@dataclass
class Topology:
    """A planned cluster's workloads (each with its pools), Gateways and model endpoints."""

    workloads: list[Workload]
    flows: list[Flow]
    endpoints: list[Backend]
    """In-cluster model endpoints the stack outputs (``model_endpoints``), for stacks without a gateway too."""

    def on(self, pool: str) -> list[Workload]:
        return [w for w in self.workloads if pool in w.pools]


class _Reader:
    def __init__(self, model: DeployModel, upstream, outputs: dict[str, Any]):
        self.model = model
        self.upstream = upstream
        self.objects = [o.manifest for o in model.objects]
        self.index = {(str(o.get("kind")), meta(o).get("namespace") or "", meta(o).get("name") or ""): o for o in self.objects}
        self.workloads = workloads(model)
        self.costs = outputs.get("gateway_cost_per_million") or {}

    def of_kind(self, kind: str, namespace: str | None = None) -> list[dict]:
        return [o for o in self.objects if o.get("kind") == kind and (namespace is None or meta(o).get("namespace") == namespace)]

    def selected(self, namespace: str, selector: dict) -> list[Workload]:
        """Workloads in ``namespace`` whose pods carry every label of ``selector``."""
        if not selector:
            return []
        return [
            w
            for w in self.workloads
            if w.namespace == namespace and all(w.labels.get(str(k)) == str(v) for k, v in selector.items())
        ]

    def of_object(self, kind: str, namespace: str, name: str) -> list[Workload]:
        return [w for w in self.workloads if (w.kind, w.namespace, w.name) == (kind, namespace, name)]

    def behind_service(self, namespace: str, service: str) -> tuple[str, list[Workload]]:
        """(kind of backend, workloads) for the in-cluster Service ``namespace/service``."""
        if ("Workspace", namespace, service) in self.index:
            return "KAITO Workspace", self.of_object("Workspace", namespace, service)
        for graph in self.of_kind("DynamoGraphDeployment", namespace):
            graph_name = str(meta(graph).get("name", ""))
            frontends = [
                c
                for c in (graph.get("spec") or {}).get("components") or []
                if isinstance(c, dict) and c.get("type") == "frontend"
            ]
            if any(dynamo_component_service(graph_name, str(c.get("name"))) == service for c in frontends):
                return "Dynamo", self.of_object("DynamoGraphDeployment", namespace, graph_name)
        svc = self.index.get(("Service", namespace, service))
        if svc is None:
            return "missing", []
        return "Service", self.selected(namespace, (svc.get("spec") or {}).get("selector") or {})

    def host(self, model_name: str, via: str, host: str, port: Any) -> Backend:
        parts = host.split(".")
        target = f"{host}:{port}" if port else host
        if len(parts) == 5 and parts[2:] == ["svc", "cluster", "local"]:
            kind, behind = self.behind_service(parts[1], parts[0])
            return self._backend(model_name, kind, via, target, behind)
        kind = "Azure OpenAI" if host.endswith((".openai.azure.com", ".cognitiveservices.azure.com")) else EXTERNAL
        backend = self._backend(model_name, kind, via, target, [])
        backend.pools = [EXTERNAL]
        return backend

    def _backend(self, model_name: str, kind: str, via: str, target: str, behind: list[Workload]) -> Backend:
        pools = sorted({p for w in behind for p in w.pools})
        return Backend(model_name, kind, via, target, [w.id for w in behind], pools)

    def rule_backend(self, namespace: str, model_name: str, ref: dict) -> Backend:
        name = str(ref.get("name"))
        if ref.get("kind") == "InferencePool":
            pool_ns = ref.get("namespace") or namespace
            pool = self.index.get(("InferencePool", pool_ns, name))
            if pool is None:
                return Backend(model_name, "missing", f"InferencePool {pool_ns}/{name}", "?")
            spec = pool.get("spec") or {}
            behind = self.selected(pool_ns, (spec.get("selector") or {}).get("matchLabels") or {})
            picker = (spec.get("endpointPickerRef") or {}).get("name")
            if picker:
                behind = self.behind_service(pool_ns, str(picker))[1] + behind
            ports = ",".join(str(p.get("number")) for p in spec.get("targetPorts") or [])
            target = f"picker {picker} -> pods :{ports}" if picker else f"pods :{ports}"
            return self._backend(model_name, "InferencePool", f"InferencePool {pool_ns}/{name}", target, behind)
        aisb = self.index.get(("AIServiceBackend", namespace, name))
        target = ((aisb or {}).get("spec") or {}).get("backendRef") or {}
        backend = self.index.get(("Backend", target.get("namespace") or namespace, target.get("name")))
        if aisb is None or backend is None:
            return Backend(model_name, "missing", f"AIServiceBackend {name}", "?")
        endpoints = [e.get("fqdn") or {} for e in (backend.get("spec") or {}).get("endpoints") or []]
        first = endpoints[0] if endpoints else {}
        return self.host(model_name, f"AIServiceBackend {name}", str(first.get("hostname", "?")), first.get("port"))

    def flow(self, gateway: dict) -> Flow:
        ns, name = meta(gateway).get("namespace") or "", meta(gateway)["name"]
        spec = gateway.get("spec") or {}
        listeners = [f"{item.get('protocol', '?')} :{item.get('port', '?')}" for item in spec.get("listeners") or []]
        backends: dict[str, Backend] = {}
        for route in self.of_kind("AIGatewayRoute", ns):
            if not any(p.get("name") == name for p in (route.get("spec") or {}).get("parentRefs") or []):
                continue
            for rule in (route.get("spec") or {}).get("rules") or []:
                model_name, refs = rule_model(rule), rule.get("backendRefs") or []
                if model_name and refs:
                    backends[model_name] = self.rule_backend(ns, model_name, refs[0])
                    backends[model_name].usd_per_million = self.costs.get(model_name) or None
        flow = Flow(f"{ns}/{name}", listeners, self.auth(ns, name), self.budget(ns, name), self.proxy_pools(gateway), None, [])
        flow.router = self.router(ns, name, backends)
        flow.backends = [backends[m] for m in sorted(backends)]
        return flow

    def auth(self, ns: str, name: str) -> str:
        for policy in self.of_kind("SecurityPolicy", ns):
            if targets(policy, "Gateway", name):
                spec = policy.get("spec") or {}
                if spec.get("apiKeyAuth"):
                    secrets = [r.get("name") for r in spec["apiKeyAuth"].get("credentialRefs") or []]
                    return f"API key (Secret {', '.join(map(str, secrets))})"
                if spec.get("jwt"):
                    return "Entra ID token (JWT)"
        return "none: anonymous calls are served"

    def budget(self, ns: str, name: str) -> str:
        for policy in self.of_kind("BackendTrafficPolicy", ns):
            rules = (((policy.get("spec") or {}).get("rateLimit") or {}).get("global") or {}).get("rules") or []
            if targets(policy, "Gateway", name) and rules:
                limit = rules[0].get("limit") or {}
                requests = limit.get("requests")
                amount = f"{requests:,}" if isinstance(requests, int) else str(requests)
                scope = "shared by all models" if rules[0].get("shared") else "per model"
                return f"{amount} tokens/{str(limit.get('unit', '')).lower()} per client, {scope}"
        return "none"

    def proxy_pools(self, gateway: dict) -> list[str]:
        """Pools for the Envoy proxy pods: the pod settings of the Gateway's EnvoyProxy (or its class's)."""
        ns = meta(gateway).get("namespace") or ""
        ref = ((gateway.get("spec") or {}).get("infrastructure") or {}).get("parametersRef") or {}
        proxy = self.index.get(("EnvoyProxy", ns, ref.get("name"))) if ref.get("kind") == "EnvoyProxy" else None
        if proxy is None:
            gateway_class = self.index.get(("GatewayClass", "", (gateway.get("spec") or {}).get("gatewayClassName")))
            ref = ((gateway_class or {}).get("spec") or {}).get("parametersRef") or {}
            proxy = self.index.get(("EnvoyProxy", ref.get("namespace") or "", ref.get("name")))
        pod = (
            ((((proxy or {}).get("spec") or {}).get("provider") or {}).get("kubernetes") or {}).get("envoyDeployment") or {}
        ).get("pod") or {}
        spec = {k: pod[k] for k in ("nodeSelector", "tolerations", "affinity") if k in pod}
        return [p.name for p in self.model.pools if not selector_problems(spec, p)]

    def router(self, ns: str, name: str, backends: dict[str, Backend]) -> Router | None:
        services = [
            (ref.get("namespace") or meta(policy).get("namespace"), ref.get("name"))
            for policy in self.of_kind("EnvoyExtensionPolicy")
            if targets(policy, "Gateway", name) and meta(policy).get("namespace") == ns
            for ext in (policy.get("spec") or {}).get("extProc") or []
            for ref in ext.get("backendRefs") or []
        ]
        router_service = (router_config.VSR_NAMESPACE, router_config.VSR_SERVICE)
        if router_service not in services:
            return None
        kind, behind = self.behind_service(*router_service)
        decisions, default = [], None
        for _, config, _ in router.configs(self.model, self.upstream):
            for decision in sorted(
                ((config.get("routing") or {}).get("decisions") or []), key=lambda d: -int(d.get("priority", 0))
            ):
                conditions = [f"{c.get('type')} {c.get('name')}" for c in (decision.get("rules") or {}).get("conditions") or []]
                models = [str(m.get("model")) for m in decision.get("modelRefs") or []]
                decisions.append({"name": decision.get("name"), "conditions": conditions, "models": models})
                for model_name in models:
                    if model_name in backends:
                        backends[model_name].router_picks.append(str(decision.get("name")))
            default = ((config.get("providers") or {}).get("defaults") or {}).get("default_model") or default
        if default in backends:
            backends[default].router_default = True
        return Router(
            f"Service {router_service[0]}/{router_service[1]}" if kind != "missing" else "missing",
            [w.id for w in behind],
            sorted({p for w in behind for p in w.pools}),
            list(router_config.auto_model_names()),
            decisions,
            default,
        )

    def endpoints(self, outputs: dict[str, Any]) -> list[Backend]:
        found = []
        for name, url in sorted((outputs.get("model_endpoints") or {}).items()):
            parts = urlsplit(str(url))
            host = parts.hostname or str(url)
            service, _, rest = host.partition(".")
            found.append(self.host(str(name), f"Service {rest.partition('.')[0]}/{service}", host, parts.port))
        return found


def build(model: DeployModel, upstream, outputs: dict[str, Any]) -> Topology:
    """The topology of a planned cluster (``outputs``: the stack's outputs, for costs and endpoints)."""
    reader = _Reader(model, upstream, outputs)
    flows = [reader.flow(gateway) for gateway in reader.of_kind("Gateway")]
    return Topology(reader.workloads, flows, reader.endpoints(outputs))
