"""The hops inside each NVIDIA Dynamo graph (``DynamoGraphDeployment`` v1beta1), checked against the plan's
NetworkPolicies: a policy that cuts one is a blocker, since the pods all report Ready while every request fails.

The hops and the variables that fix their ports are Dynamo 1.6.1's (``components/serving/dynamo_runtime.py``: the
request plane frontend -> worker, each worker's response stream back to the frontend, the KV events the frontend's
KV router reads from each worker, the workers' model metadata, the NIXL side channel decode -> prefill). A port comes
from the target's main container (its ``env``, over the graph's ``spec.env``), else from the runtime's default; with
neither, the operating system picks it and only a rule that admits every port lets it through. The KV events hop
counts when the frontend routes on KV events (``DYN_ROUTER_MODE=kv``), the metadata hop unless
``DYN_SELF_HOST_METADATA`` is off, the NIXL hop when the graph has both prefill and decode workers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from aks_gpu_inference.components.core import pins
from aks_gpu_inference.components.core.endpoints import DYNAMO_FRONTEND_PORT, dynamo_component_service
from aks_gpu_inference.components.serving import dynamo_runtime as runtime
from aks_gpu_inference.planner.deploy import network_policy

KIND = "DynamoGraphDeployment"
MAIN_CONTAINER = "main"
"""The container the operator treats as the component's own (its defaults and ports go there)."""
WORKER_TYPES = frozenset({"prefill", "decode", "worker"})
OFF = frozenset({"0", "false", "no", "off"})


class _Walk(Protocol):
    """What this module uses of request_path's walk (not imported: request_path imports this module)."""

    objects: list[dict]

    def block(self, where: str, message: str, fix: str) -> None: ...
    def of_kind(self, kind: str, namespace: str | None = None) -> list[dict]: ...


def _meta(o: Mapping) -> Mapping:
    return o.get("metadata") or {}


class _Component:
    """One component of a graph: its name, type, pod labels and the main container's environment."""

    def __init__(self, graph: Mapping, item: Mapping):
        self.name, self.type = str(item.get("name")), str(item.get("type"))
        template = item.get("podTemplate") or {}
        self.labels = dict((template.get("metadata") or {}).get("labels") or {})
        containers = (template.get("spec") or {}).get("containers") or []
        main = next((c for c in containers if c.get("name") == MAIN_CONTAINER), containers[0] if containers else {})
        self.env = _env((graph.get("spec") or {}).get("env")) | _env(main.get("env"))
        self.args = [str(a) for a in [*(main.get("command") or []), *(main.get("args") or [])]]

    @property
    def shown(self) -> str:
        return self.type if self.name == self.type else f"{self.type} {self.name}"

    def port(self, hop: runtime.Hop) -> int | None:
        value = self.env.get(hop.port_env) if hop.port_env else None
        return int(value) if isinstance(value, str) and value.isdigit() else hop.default_port

    def routes_on_kv_events(self) -> bool:
        flag = next((a.split("=", 1)[1] for a in self.args if a.startswith("--router-mode=")), None)
        if "--router-mode" in self.args[:-1]:
            flag = self.args[self.args.index("--router-mode") + 1]
        return (flag or self.env.get("DYN_ROUTER_MODE")) == "kv"


def _env(items: Any) -> dict[str, Any]:
    """``name -> value`` (a literal value; None for one from ``valueFrom``)."""
    return {e["name"]: e.get("value") for e in items or [] if isinstance(e, Mapping) and e.get("name")}


def graphs(w: _Walk) -> list[Mapping]:
    """The plan's graphs of the pinned API version (the only one whose components this module reads)."""
    return [g for g in w.of_kind(KIND) if g.get("apiVersion") == pins.api_version(KIND)]


def _components(graph: Mapping) -> list[_Component]:
    return [_Component(graph, c) for c in (graph.get("spec") or {}).get("components") or [] if isinstance(c, Mapping)]


def _ends(hop: runtime.Hop, components: list[_Component]) -> list[_Component]:
    return [c for c in components if c.type == hop.source or (hop.source == "worker" and c.type in WORKER_TYPES)]


def _targets(hop: runtime.Hop, components: list[_Component]) -> list[_Component]:
    return [c for c in components if c.type == hop.target or (hop.target == "worker" and c.type in WORKER_TYPES)]


def _applies(hop: runtime.Hop, components: list[_Component]) -> bool:
    types = {c.type for c in components}
    if hop.name == "KV events":
        return any(c.routes_on_kv_events() for c in components if c.type == "frontend")
    if hop.name == "model metadata":
        return not any(str(c.env.get("DYN_SELF_HOST_METADATA", "")).lower() in OFF for c in components)
    if hop.name == "NIXL side channel":
        return {"prefill", "decode"} <= types
    return True


def _fix(hop: runtime.Hop, source: _Component, target: _Component, port: int | None, why: str) -> str:
    if port is not None:
        return f"admit it ({why})"
    if hop.port_env:
        return f"set {hop.port_env} on {target.name} and admit that port ({why})"
    return f"admit every TCP port from {source.name}: no Dynamo variable fixes this port ({why})"


def check(w: _Walk) -> None:
    """Block on every hop of every graph that a NetworkPolicy cuts."""
    policies = network_policy.Policies(w.objects)
    for graph in graphs(w):
        ns, components = _meta(graph).get("namespace") or "default", _components(graph)
        where = f"{KIND} {ns}/{_meta(graph).get('name')}"
        for hop in (h for h in runtime.HOPS if _applies(h, components)):
            for source in _ends(hop, components):
                for target in _targets(hop, components):
                    port = target.port(hop)
                    why = policies.blocked(network_policy.Pod(ns, source.labels), network_policy.Pod(ns, target.labels), port)
                    if why:
                        shown = "a port the OS picks" if port is None else port
                        message = f"{hop.name}: {source.name} -> {target.name} (port {shown}) is cut"
                        w.block(where, message, _fix(hop, source, target, port, why))


def _hop(name: str) -> runtime.Hop:
    return next(h for h in runtime.HOPS if h.name == name)


def path(w: _Walk, proxy: network_policy.Pod, service: tuple[str, str]) -> list[str]:
    """The steps behind a route to the frontend Service ``service`` (namespace, name) of a graph, blocking when a
    NetworkPolicy keeps the gateway's ``proxy`` pods from the frontend's HTTP port; empty when no graph owns it."""
    for graph in graphs(w):
        ns, name = _meta(graph).get("namespace") or "default", _meta(graph).get("name", "")
        components = _components(graph)
        frontends = [c for c in components if c.type == "frontend" and (ns, dynamo_component_service(name, c.name)) == service]
        if not frontends:
            continue
        frontend, port = frontends[0], DYNAMO_FRONTEND_PORT
        why = network_policy.Policies(w.objects).blocked(proxy, network_policy.Pod(ns, frontend.labels), port)
        if why:
            message = f"a NetworkPolicy keeps the gateway's Envoy proxies from the frontend {frontend.name} (port {port})"
            w.block(f"{KIND} {ns}/{name}", message, f"admit them ({why})")
        request, response = _hop("request plane"), _hop("response stream")
        steps = [f"Dynamo frontend {name}/{frontend.name} :{port}"]
        steps += [f"{c.shown} (request plane :{c.port(request) or 'OS-picked'})" for c in components if c.type in WORKER_TYPES]
        return [*steps, f"response streams back to the frontend :{frontend.port(response) or 'OS-picked'}"]
    return []
