"""The request path behind an AIGatewayRoute rule that names an InferencePool (llm-d prefill/decode).

A call routed to an InferencePool goes: Envoy asks the pool's endpoint picker (``endpointPickerRef``, an
ext_proc Service) which pod to use, then calls that pod on the pool's target port. With llm-d's
prefill/decode picker that is a decode pod, whose routing sidecar first sends the prompt to the prefill
pod the picker named in a request header, then lets its own vLLM decode. Every link is read from the
rendered objects; a missing one is a blocker:

- the InferencePool CRD is applied, and Envoy Gateway and the AI Gateway controller start after it: both
  look for it once, at start-up (envoyproxy/ai-gateway@v1.1.0 internal/controller/controller.go);
- Envoy Gateway hands InferencePool backends to the AI Gateway extension
  (``extensionManager.backendResources``, ai-gateway examples/inference-pool/envoy-gateway-values-addon.yaml);
- a pool in another namespace than the route has a ReferenceGrant there for the AIGatewayRoute (checked by
  AI Gateway, internal/controller/referencegrant.go) and for the HTTPRoute it generates (Envoy Gateway v1.8.2
  internal/gatewayapi/validate.go validateBackendNamespace);
- the pool, its picker Service on the named port and the picker's pods, and serving pods on the target port;
- decode pods' sidecars reach a vLLM port in their pod, and prefill pods exist for them to call;
- vLLM that requires a key gets one (a BackendSecurityPolicy on the pool, with its Secret);
- the pods' NetworkPolicies admit the gateway's proxies, the picker and the sidecar's call to prefill.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import yaml

from aks_gpu_inference.planner.deploy import network_policy, picker
from aks_gpu_inference.planner.deploy.finding import Finding
from aks_gpu_inference.planner.deploy.model import DeployModel, KubeObject


class _Walk(Protocol):
    """What this module uses of request_path's walk (not imported: request_path imports this module)."""

    objects: list[dict]
    index: dict[tuple[str, str, str], dict]
    model: DeployModel
    findings: list[Finding]

    def has(self, kind: str, namespace: str, name: str) -> bool: ...
    def block(self, where: str, message: str, fix: str) -> None: ...
    def of_kind(self, kind: str, namespace: str | None = None) -> list[dict]: ...


GROUP = "inference.networking.k8s.io"
ROLE_LABEL = "llm-d.ai/role"
"""The label llm-d's picker reads an engine's role from (``prefill`` or ``decode``)."""
PROXY_NAMESPACE = "envoy-gateway-system"
PROXY_LABELS = {
    "app.kubernetes.io/name": "envoy",
    "app.kubernetes.io/component": "proxy",
    "app.kubernetes.io/managed-by": "envoy-gateway",
}
"""Labels of every Envoy proxy pod, with the owning Gateway's name and namespace
(envoyproxy/gateway@v1.8.2 internal/infrastructure/kubernetes/proxy/resource.go and its testdata)."""
EG_CONFIG = ("ConfigMap", "envoy-gateway-system", "envoy-gateway-config")
"""Where gateway-helm renders Envoy Gateway's own config (key ``envoy-gateway.yaml``)."""
STARTS_ONCE = (
    ("Deployment", "envoy-gateway-system", "envoy-gateway"),
    ("Deployment", "envoy-ai-gateway-system", "ai-gateway-controller"),
)


def _meta(o: Mapping) -> Mapping:
    return o.get("metadata") or {}


def _matches(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def _labels(template: Any) -> dict[str, str]:
    return dict((template.metadata or {}).get("labels") or {})


class _Pod:
    """One pod template: where it comes from, its labels and containers."""

    def __init__(self, obj: KubeObject, template: Any):
        self.obj, self.labels, self.spec = obj, _labels(template), template.spec
        self.containers = [c for _, c in template.containers()]

    def ports(self) -> set[int]:
        return {p.get("containerPort") for c in self.containers for p in c.get("ports") or []}

    def sidecar_target(self) -> int | None:
        """The vLLM port llm-d's disagg sidecar forwards to, if the pod has the sidecar."""
        container = picker.sidecar(self.containers)
        return None if container is None else picker.sidecar_target(container)

    def wants_key(self) -> bool:
        return any(e.get("name") == "VLLM_API_KEY" for c in self.containers for e in c.get("env") or []) or any(
            "--api-key" in (c.get("args") or []) for c in self.containers
        )


def path(w: _Walk, gateway: tuple[str, str], ref: Mapping, where: str) -> list[str]:
    """The steps of a call to the InferencePool ``ref`` names in a route of ``gateway`` (namespace, name;
    its routes live in its namespace), blocking on every broken link."""
    route_ns = gateway[0]
    ns, name = ref.get("namespace") or route_ns, ref.get("name")
    _crd(w, where)
    _envoy_gateway(w, where)
    if ns != route_ns:
        _grants(w, route_ns, ns, name, where)
    pool = w.index.get(("InferencePool", ns, name))
    if pool is None:
        w.block(where, f"InferencePool {ns}/{name} does not exist", "deploy the model's InferencePool chart")
        return [f"InferencePool {ns}/{name} (missing)"]
    spec = pool.get("spec") or {}
    steps = [f"InferencePool {ns}/{name}", _picker(w, ns, spec, where)]
    ports = [p.get("number") for p in spec.get("targetPorts") or [] if isinstance(p, Mapping)]
    selector = (spec.get("selector") or {}).get("matchLabels") or {}
    pods = [_Pod(obj, t) for obj, t in w.model.pods() if obj.namespace == ns and _matches(selector, _labels(t))]
    if not pods:
        w.block(where, f"InferencePool {ns}/{name} selects no pods ({selector})", "label the model servers as the pool selects")
        return steps
    port = ports[0] if ports else None
    for pod in pods:
        if port not in pod.ports():
            w.block(where, f"{pod.obj.label} has no container port {port}, the pool's target port", "serve on the target port")
    steps += _roles(w, pods, port, where)
    steps.append(_credential(w, ns, name, pods, where))
    proxies = {
        **PROXY_LABELS,
        "gateway.envoyproxy.io/owning-gateway-name": gateway[1],
        "gateway.envoyproxy.io/owning-gateway-namespace": gateway[0],
    }
    _network(w, ns, pods, port, where, proxies=proxies, picker_labels=_picker_labels(w, ns, spec))
    return steps


def _crd(w: _Walk, where: str) -> None:
    crds = [
        o
        for o in w.objects
        if o.get("kind") == "CustomResourceDefinition"
        and (o.get("spec") or {}).get("group") == GROUP
        and ((o.get("spec") or {}).get("names") or {}).get("kind") == "InferencePool"
    ]
    if not crds:
        w.block(where, f"no InferencePool CRD ({GROUP}) is applied by the stack", "apply the Inference Extension CRDs")
        return
    crd = next(o for o in w.model.objects if o.manifest is crds[0])
    for kind, ns, name in STARTS_ONCE:
        found = next((o for o in w.model.objects if (o.kind, o.namespace, o.name) == (kind, ns, name)), None)
        if found is None:
            continue
        record = found.chart.resource if found.chart else found.record
        if not w.model.waits_for(record, crd.record.urn):
            w.block(
                where,
                f"{found.label} may start before the InferencePool CRD exists; it looks for it only at start-up, "
                "so InferencePool routes stay dead until it is restarted",
                "make the gateway depend on the Inference Extension CRDs",
            )


def _envoy_gateway(w: _Walk, where: str) -> None:
    config = w.index.get(EG_CONFIG)
    if config is None:
        return  # an existing Envoy Gateway install: its config is not in the stack
    text = (config.get("data") or {}).get("envoy-gateway.yaml") or ""
    try:
        parsed = yaml.safe_load(text) or {}
    except yaml.YAMLError:
        parsed = {}
    resources = ((parsed.get("extensionManager") or {}).get("backendResources")) or []
    if not any(r.get("group") == GROUP and r.get("kind") == "InferencePool" for r in resources if isinstance(r, Mapping)):
        w.block(
            where,
            "Envoy Gateway is not configured for InferencePool backends (extensionManager.backendResources)",
            "add {group: inference.networking.k8s.io, kind: InferencePool, version: v1} to its values",
        )


def _grants(w: _Walk, route_ns: str, ns: str, name: str, where: str) -> None:
    for group, kind in (("aigateway.envoyproxy.io", "AIGatewayRoute"), ("gateway.networking.k8s.io", "HTTPRoute")):
        granted = any(
            any(
                f.get("group") == group and f.get("kind") == kind and f.get("namespace") == route_ns
                for f in spec.get("from") or []
            )
            and any(
                t.get("group") == GROUP and t.get("kind") == "InferencePool" and t.get("name") in (None, name)
                for t in spec.get("to") or []
            )
            for spec in ((g.get("spec") or {}) for g in w.of_kind("ReferenceGrant", ns))
        )
        if not granted:
            w.block(
                where,
                f"no ReferenceGrant in {ns} lets the {kind} in {route_ns} name InferencePool {name}",
                f"add one from {group}/{kind} in {route_ns} to the pool",
            )


def _picker_labels(w: _Walk, ns: str, spec: Mapping) -> dict[str, str]:
    service = w.index.get(("Service", ns, (spec.get("endpointPickerRef") or {}).get("name")))
    return dict(((service or {}).get("spec") or {}).get("selector") or {})


def _picker(w: _Walk, ns: str, spec: Mapping, where: str) -> str:
    ref = spec.get("endpointPickerRef") or {}
    name, port = ref.get("name"), (ref.get("port") or {}).get("number")
    service = w.index.get(("Service", ns, name))
    if service is None:
        w.block(where, f"the endpoint picker Service {ns}/{name} does not exist", "deploy the pool's endpoint picker")
        return f"picker {name} (missing)"
    if port not in {p.get("port") for p in (service.get("spec") or {}).get("ports") or []}:
        w.block(where, f"the endpoint picker Service {ns}/{name} has no port {port}", "match endpointPickerRef.port")
    labels = _picker_labels(w, ns, spec)
    pods = [(obj.manifest, t.spec) for obj, t in w.model.pods() if obj.namespace == ns and _matches(labels, _labels(t))]
    if not pods:
        w.block(where, f"the endpoint picker Service {ns}/{name} selects no pods", "deploy the endpoint picker")
    w.findings += picker.picker_findings(w.objects, ns, pods, where)
    return f"picker {name}:{port}"


def _roles(w: _Walk, pods: list[_Pod], port: int | None, where: str) -> list[str]:
    decode = [p for p in pods if p.labels.get(ROLE_LABEL) == "decode"]
    prefill = [p for p in pods if p.labels.get(ROLE_LABEL) == "prefill"]
    if not decode and not prefill:
        return [f"pods of {', '.join(sorted({p.obj.label for p in pods}))} :{port}"]
    steps = []
    for pod in decode:
        target = pod.sidecar_target()
        if target is None:
            if prefill:
                w.block(where, f"{pod.obj.label} has no routing sidecar: its prefill pods are never called", "add it")
            steps.append(f"decode {pod.obj.label} :{port}")
        elif target not in pod.ports() - {port}:
            w.block(where, f"the routing sidecar of {pod.obj.label} forwards to port {target}, which no container has", "fix it")
        else:
            steps.append(f"decode {pod.obj.label} (routing sidecar :{port} -> vLLM :{target})")
        if target is not None:
            w.findings += picker.sidecar_findings(picker.sidecar(pod.containers), where)
    if decode and not prefill:
        w.block(where, "the pool has decode pods but no prefill pods for their sidecars to call", "deploy the prefill engines")
    steps += [f"prefill {p.obj.label} :{port}" for p in prefill]
    if prefill and not decode:
        w.block(where, "the pool has prefill pods but no decode pods: no call is ever answered", "deploy the decode engines")
    return steps


def _credential(w: _Walk, ns: str, name: str, pods: list[_Pod], where: str) -> str:
    for policy in w.of_kind("BackendSecurityPolicy", ns):
        refs = (policy.get("spec") or {}).get("targetRefs") or []
        if any(r.get("group") == GROUP and r.get("kind") == "InferencePool" and r.get("name") == name for r in refs):
            secret = (((policy.get("spec") or {}).get("apiKey") or {}).get("secretRef") or {}).get("name")
            if not w.has("Secret", ns, secret):
                w.block(where, f"the credential Secret {ns}/{secret} does not exist", "create it")
            return f"key from Secret {ns}/{secret}"
    if any(p.wants_key() for p in pods):
        w.block(
            where,
            f"vLLM in InferencePool {ns}/{name} requires an API key and no BackendSecurityPolicy on the pool sends one: "
            "every call gets 401",
            "add a BackendSecurityPolicy (type APIKey) targeting the InferencePool",
        )
    return "no upstream credential"


def _network(w: _Walk, ns: str, pods: list[_Pod], port: int | None, where: str, *, proxies: dict, picker_labels: dict) -> None:
    """The NetworkPolicies on the pool's pods admit each caller a call needs."""
    callers = [("the gateway's Envoy proxies", PROXY_NAMESPACE, proxies, pods)]
    if picker_labels:
        callers.append(("the endpoint picker", ns, picker_labels, pods))
    prefill = [p for p in pods if p.labels.get(ROLE_LABEL) == "prefill"]
    for decode in (p for p in pods if p.sidecar_target() is not None):
        callers.append((f"the routing sidecar of {decode.obj.label}", ns, decode.labels, prefill))
    policies = network_policy.Policies(w.objects)
    for caller, from_ns, from_labels, targets in callers:
        for target in targets:
            why = policies.blocked(network_policy.Pod(from_ns, from_labels), network_policy.Pod(ns, target.labels), port)
            if why:
                w.block(where, f"a NetworkPolicy on {target.obj.label} keeps out {caller} (port {port})", f"admit it ({why})")
