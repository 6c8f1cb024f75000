"""The objects AiGateway renders, as plain dicts: the Gateway and its EnvoyProxy, the client, security
and token-budget policies, the per-backend objects, and the NetworkPolicies that let only the gateway's data
plane reach the serving pods. The routes are ``ai_gateway_routes``'."""

from __future__ import annotations

import copy
import re
from typing import Any, NamedTuple

from ..core import pins
from ..core.images import relocate
from .ai_gateway_args import AZURE_API_VERSION, AiGatewayArgs, GatewayBackend
from .ai_gateway_controllers import EG_NAMESPACE, ENVOY_IMAGE
from .ai_gateway_routes import INFERENCE_GROUP

CONTROLLER_NAME = "gateway.envoyproxy.io/gatewayclass-controller"
CLIENT_ID_HEADER = "x-authz-user-id"
"""Envoy Gateway writes the authenticated client (API key's client id, or the token's ``oid``) into this
header, replacing whatever the client sent; budgets count per value. It is also the header the semantic
router trusts as the caller's identity and scopes its semantic cache by
(vllm-project/semantic-router@v0.3.0 src/semantic-router/pkg/headers/headers.go:320, pkg/cache/cache.go:62-79),
so one client never gets another's cached answer."""
FILTER_ORDER = [
    # Rate limiting before every ext_proc: a client over budget is refused before the router reads
    # its prompt (Envoy Gateway puts ratelimit at 303, ext_proc at 100+i: internal/xds/translator/httpfilters.go).
    {"name": "envoy.filters.http.ratelimit", "before": "envoy.filters.http.ext_proc"},
    # The buffer filter after the router's ext_proc: AI Gateway inserts its own ext_proc right after the
    # last buffer filter when one sits at or after its insertion point, else before the first ext_proc
    # (envoyproxy/ai-gateway@v1.1.0:internal/extensionserver/post_translate_modify.go insertAIGatewayExtProcFilter),
    # so this order makes the semantic router run before the AI Gateway reads the (rewritten) model.
    {"name": "envoy.filters.http.buffer", "after": "envoy.filters.http.ext_proc"},
]
"""EnvoyProxy ``spec.filterOrder``: authentication, rate limit, semantic router, buffer, AI Gateway, router."""
ENTRA_CLIENT_CLAIM = "oid"
"""The Entra token claim that names the caller (user or service principal object ID); budgets count per value."""
INTERNAL_LB = "service.beta.kubernetes.io/azure-load-balancer-internal"
LB_IPV4 = "service.beta.kubernetes.io/azure-load-balancer-ipv4"

API_VERSIONS = {
    kind: pins.api_version(kind)
    for kind in (
        "GatewayClass",
        "Gateway",
        "BackendTLSPolicy",
        "EnvoyProxy",
        "ClientTrafficPolicy",
        "SecurityPolicy",
        "BackendTrafficPolicy",
        "Backend",
        "AIGatewayRoute",
        "AIServiceBackend",
        "BackendSecurityPolicy",
        "ReferenceGrant",
    )
}
"""The API version the gateway renders each of its kinds in."""


def _gateway_ref(args: AiGatewayArgs) -> dict[str, str]:
    return {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": args.gateway_name}


def envoy_proxy_spec(args: AiGatewayArgs) -> dict[str, Any]:
    """The data plane: its load balancer, pinned Envoy image, filter order and (optionally) tracing."""
    annotations: dict[str, str] = {}
    if args.internal_load_balancer:
        annotations[INTERNAL_LB] = "true"
    if args.load_balancer_ip:
        annotations[LB_IPV4] = args.load_balancer_ip
    spec: dict[str, Any] = {
        "provider": {
            "type": "Kubernetes",
            "kubernetes": {
                "envoyService": {"annotations": annotations},
                "envoyDeployment": {"container": {"image": relocate(ENVOY_IMAGE, args.image_registry)}},
            },
        },
        "filterOrder": [dict(position) for position in FILTER_ORDER],
    }
    if args.tracing_endpoint:
        t = args.tracing_endpoint
        # ProxyTracing: samplingRate 0-100, provider OpenTelemetry with one Service backendRef
        # (envoyproxy/gateway api/v1alpha1/tracing_types.go).
        spec["telemetry"] = {
            "tracing": {
                "samplingRate": t.sampling_rate,
                "provider": {
                    "type": "OpenTelemetry",
                    "backendRefs": [{"name": t.service, "namespace": t.namespace, "port": t.port}],
                },
            }
        }
    return spec


def gateway_spec(args: AiGatewayArgs) -> dict[str, Any]:
    gw = args.gateway_name
    return {
        "gatewayClassName": gw,
        "listeners": [{"name": "http", "protocol": "HTTP", "port": 80}],
        "infrastructure": {"parametersRef": {"group": "gateway.envoyproxy.io", "kind": "EnvoyProxy", "name": gw}},
    }


def client_traffic_spec(args: AiGatewayArgs) -> dict[str, Any]:
    return {
        "targetRefs": [_gateway_ref(args)],
        "connection": {"bufferLimit": args.buffer_limit},
        # Before any filter runs: a client-sent identity header is dropped, so the only value the
        # budget and the router's cache see is the one authentication writes.
        "headers": {"earlyRequestHeaders": {"remove": [CLIENT_ID_HEADER]}},
    }


def security_spec(args: AiGatewayArgs) -> dict[str, Any]:
    """API keys, or Entra tokens: one of the two, never both (see ``AiGatewayArgs.entra_tenant_id``)."""
    spec: dict[str, Any] = {"targetRefs": [_gateway_ref(args)]}
    if args.auth == "api-key":
        spec["apiKeyAuth"] = {
            "credentialRefs": [{"name": f"{args.gateway_name}-client-keys"}],
            # Envoy strips "Bearer ", so the openai client's Authorization header carries the key.
            "extractFrom": [{"headers": ["authorization"]}],
            # Overwrites any client-sent value, so budgets cannot be charged to someone else.
            "forwardClientIDHeader": CLIENT_ID_HEADER,
            # The key goes no further than the gateway: not to the router, vLLM or Azure OpenAI.
            "sanitize": True,
        }
        return spec
    base = f"https://login.microsoftonline.com/{args.entra_tenant_id}"
    spec["jwt"] = {
        "providers": [
            {
                "name": "entra",
                "issuer": f"{base}/v2.0",
                "audiences": [args.entra_audience],
                "remoteJWKS": {"uri": f"{base}/discovery/v2.0/keys"},
                # The caller's object ID is the budget key, as the API key's client id is otherwise.
                "claimToHeaders": [{"claim": ENTRA_CLIENT_CLAIM, "header": CLIENT_ID_HEADER}],
            }
        ]
    }
    return spec


def traffic_spec(args: AiGatewayArgs) -> dict[str, Any]:
    """The per-client hourly token budget, shared across routes and Envoy replicas."""
    return {
        "targetRefs": [_gateway_ref(args)],
        # Adds the buffer filter that FILTER_ORDER places between the router and AI Gateway.
        "requestBuffer": {"limit": args.buffer_limit},
        "rateLimit": {
            "type": "Global",
            "global": {
                "rules": [
                    {
                        "clientSelectors": [{"headers": [{"name": CLIENT_ID_HEADER, "type": "Distinct"}]}],
                        "limit": {"requests": args.token_limit_per_hour, "unit": "Hour"},
                        # One bucket per client across every model route; without it Envoy Gateway
                        # keeps one per route, so each model would get the whole budget again
                        # (api/v1alpha1/ratelimit_types.go: "Shared ... Default: false").
                        "shared": True,
                        # Requests cost nothing on the way in; the response charges the tokens AIGW counted.
                        "cost": {
                            "request": {"from": "Number", "number": 0},
                            "response": {
                                "from": "Metadata",
                                "metadata": {"namespace": "io.envoy.ai_gateway", "key": "llm_total_token"},
                            },
                        },
                    }
                ]
            },
        },
    }


def backend_namespace(args: AiGatewayArgs, b: GatewayBackend) -> str:
    """Where a backend's objects live: an InferencePool's BackendSecurityPolicy and key sit beside the pool
    (AI Gateway looks for them only there: envoyproxy/ai-gateway@v1.1.0 internal/controller/gateway.go
    getBSPForInferencePool), everything else in the gateway's namespace."""
    return b.namespace if b.kind == "inference-pool" else args.namespace


def backend_specs(args: AiGatewayArgs, b: GatewayBackend) -> dict[str, dict[str, Any]]:
    """Spec per kind for one backend: Backend, BackendTLSPolicy (443 only), AIServiceBackend, BackendSecurityPolicy;
    for an InferencePool, the BackendSecurityPolicy on it and the ReferenceGrant that lets the route name it."""
    if b.kind == "inference-pool":
        return _inference_pool_specs(args, b)
    specs: dict[str, dict[str, Any]] = {"Backend": {"endpoints": [{"fqdn": {"hostname": b.hostname, "port": b.effective_port}}]}}
    if b.effective_port == 443:
        specs["BackendTLSPolicy"] = {
            "targetRefs": [{"group": "gateway.envoyproxy.io", "kind": "Backend", "name": b.name}],
            "validation": {"wellKnownCACertificates": "System", "hostname": b.hostname},
        }
    schema: dict[str, Any] = {"name": b.effective_schema}
    if b.effective_schema == "AzureOpenAI":
        schema["version"] = b.api_version or AZURE_API_VERSION
    specs["AIServiceBackend"] = {
        "schema": schema,
        "backendRef": {"name": b.name, "kind": "Backend", "group": "gateway.envoyproxy.io"},
    }
    if b.secret_name:
        specs["BackendSecurityPolicy"] = {
            "targetRefs": [{"group": "aigateway.envoyproxy.io", "kind": "AIServiceBackend", "name": b.name}],
            "type": "APIKey",
            "apiKey": {"secretRef": {"name": b.secret_name}},
        }
    return specs


def _inference_pool_specs(args: AiGatewayArgs, b: GatewayBackend) -> dict[str, dict[str, Any]]:
    pool = {"group": INFERENCE_GROUP, "kind": "InferencePool", "name": b.inference_pool}
    return {
        # The vLLM key on every call to the pool's pods (AI Gateway sets it for an InferencePool
        # backend too: gateway.go bspToFilterAPIBackendAuth); the routing sidecar passes the request's
        # headers on to the prefill pod (llm-d-inference-scheduler@v0.8.0 pkg/sidecar/proxy/connector_nixlv2.go r.Clone).
        "BackendSecurityPolicy": {"targetRefs": [pool], "type": "APIKey", "apiKey": {"secretRef": {"name": b.secret_name}}},
        # The route lives in the gateway's namespace: AI Gateway checks a grant from the AIGatewayRoute
        # (internal/controller/referencegrant.go), Envoy Gateway one from the HTTPRoute it generates
        # (envoyproxy/gateway@v1.8.2 internal/gatewayapi/validate.go validateBackendNamespace).
        "ReferenceGrant": {
            "from": [
                {"group": "aigateway.envoyproxy.io", "kind": "AIGatewayRoute", "namespace": args.namespace},
                {"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "namespace": args.namespace},
            ],
            "to": [pool],
        },
    }


def network_policy_targets(backends: list[GatewayBackend]) -> dict[tuple[str, tuple], set[int]]:
    """(model namespace, pod selector) -> ports, for the in-cluster backends."""
    targets: dict[tuple[str, tuple], set[int]] = {}
    for b in backends:
        if b.in_cluster:
            key = (b.namespace, tuple(sorted(b.pod_selector.items())))
            targets.setdefault(key, set()).add(b.pod_port or b.effective_port)
    return targets


def _pool_rules(backends: list[GatewayBackend]) -> dict[tuple[str, tuple], list[dict[str, Any]]]:
    """Ingress the serving pods need besides the gateway's: what their component states (``peer_ingress``: a Dynamo
    frontend's workers' response streams); for an InferencePool's pods, from each other on any port (the decode
    pod's routing sidecar calls the prefill pod; the engines open NIXL side channels to each other) and from
    the endpoint picker, which reads their metrics on the pods' port."""
    rules: dict[tuple[str, tuple], list[dict[str, Any]]] = {}
    for b in backends:
        wanted = [dict(rule) for rule in b.peer_ingress]
        if b.kind == "inference-pool":
            port = [{"protocol": "TCP", "port": b.pod_port or b.effective_port}]
            wanted += [
                {"from": [{"podSelector": {"matchLabels": dict(b.pod_selector)}}]},
                {"from": [{"podSelector": {"matchLabels": dict(b.picker_pod_selector)}}], "ports": port},
            ]
        found = rules.setdefault((b.namespace, tuple(sorted((b.pod_selector or {}).items()))), [])
        found += [copy.deepcopy(rule) for rule in wanted if rule not in found]
    return rules


class NetworkPolicyManifest(NamedTuple):
    role: str
    """What the policy guards, for the resource name: ``<namespace>-<selector values>``."""
    metadata: dict[str, Any]
    spec: dict[str, Any]
    backends: tuple[str, ...] = ()
    """The backends whose pods it guards (their ``after`` is what it waits for)."""


def backend_network_policies(args: AiGatewayArgs, backends: list[GatewayBackend]) -> list[NetworkPolicyManifest]:
    """One policy per model namespace and pod selector: ingress only from the gateway's data plane and
    ``ingress_peer_namespaces``, on the backends' pod ports (and, for an InferencePool, what ``_pool_rules`` adds)."""
    peers = [EG_NAMESPACE, *[n for n in args.ingress_peer_namespaces if n != EG_NAMESPACE]]
    policies = []
    pool_rules = _pool_rules(backends)
    for (namespace, selector), ports in sorted(network_policy_targets(backends).items()):
        policy = re.sub(r"[^a-z0-9-]+", "-", "-".join(v for _, v in selector).lower())[:40].strip("-") or "backend"
        spec = {
            "podSelector": {"matchLabels": dict(selector)},
            "policyTypes": ["Ingress"],
            "ingress": [
                {
                    "from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": peer}}} for peer in peers],
                    # The Service must map these ports to the same container ports (VllmService does: 8000).
                    "ports": [{"protocol": "TCP", "port": port} for port in sorted(ports)],
                },
                *pool_rules.get((namespace, selector), []),
            ],
        }
        metadata = {"name": f"{args.gateway_name}-only-{policy}"[:63].strip("-."), "namespace": namespace}
        guarded = tuple(
            b.name
            for b in backends
            if b.in_cluster and (b.namespace, tuple(sorted(b.pod_selector.items()))) == (namespace, selector)
        )
        policies.append(NetworkPolicyManifest(f"{namespace}-{policy}", metadata, spec, guarded))
    return policies
