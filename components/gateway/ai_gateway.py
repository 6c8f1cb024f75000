"""AiGateway: one authenticated, token-metered OpenAI-compatible front door for every model.

Envoy Gateway (data plane and global rate limiting) with Envoy AI Gateway (model routing, token
accounting, upstream credentials) routes ``/v1/chat/completions`` and friends by the request's
``model`` (AIGW copies it into the ``x-ai-eg-model`` header) to self-hosted vLLM services or Azure
OpenAI deployments. Clients authenticate with per-client API keys (``Authorization: Bearer <key>``,
so the ``openai`` client works unchanged) and optionally with Entra ID tokens; each client gets an
hourly token budget, counted from the model's reported usage and shared across Envoy replicas
through Redis. NetworkPolicies let only the gateway's data plane reach the vLLM pods, so the
gateway's keys and budgets cannot be bypassed from inside the cluster.

Facts: Envoy Gateway ``v1.8.2`` (chart ``oci://docker.io/envoyproxy/gateway-helm``) and Envoy AI
Gateway ``v1.1.0`` (``ai-gateway-crds-helm`` and ``ai-gateway-helm``); the Envoy Gateway values are
the ones the AI Gateway installation guide requires (extension APIs, the xDS translator hooks and
the AI Gateway controller as extension manager).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

import pulumi
import pulumi_kubernetes as k8s
from pydantic import Field, field_validator, model_validator

from .._base import PACKAGE, Children, StrictModel, fail, validate_args
from ..core.errors import FieldProblem
from ..core.images import REGISTRY, relocate
from ..core.security import restricted_container, restricted_namespace
from ..serving.kaito_workspace import POD_PORT as KAITO_POD_PORT
from ..serving.kaito_workspace import SERVICE_PORT as KAITO_SERVICE_PORT
from ..serving.vllm_service import INSTANCE_LABEL, PORT

EG_CHART = "oci://docker.io/envoyproxy/gateway-helm"
AIGW_CRDS_CHART = "oci://docker.io/envoyproxy/ai-gateway-crds-helm"
AIGW_CHART = "oci://docker.io/envoyproxy/ai-gateway-helm"
EG_RELEASE = "envoy-gateway"
"""Helm release name of Envoy Gateway (a v3 Release would otherwise get a random suffix)."""
EG_NAMESPACE = "envoy-gateway-system"
"""Envoy Gateway's controller, its rate-limit service, Redis and, by default, every Envoy proxy (the data plane)."""
AIGW_NAMESPACE = "envoy-ai-gateway-system"
CONTROLLER_NAME = "gateway.envoyproxy.io/gatewayclass-controller"
AIGW_EXTENSION = {"hostname": f"ai-gateway-controller.{AIGW_NAMESPACE}.svc.cluster.local", "port": 1063}
"""The AI Gateway controller's extension server, which Envoy Gateway calls while translating xDS."""
MODEL_HEADER = "x-ai-eg-model"
"""AIGW sets this header from the request body's ``model`` before routing."""
CLIENT_ID_HEADER = "x-authz-user-id"
"""Envoy Gateway writes the authenticated client (API key's client id, or the token's ``oid``) into this
header, replacing whatever the client sent; budgets count per value. It is also the header the semantic
router trusts as the caller's identity and scopes its semantic cache by
(vllm-project/semantic-router@v0.3.0 src/semantic-router/pkg/headers/headers.go:320, pkg/cache/cache.go:62-79),
so one client never gets another's cached answer."""
REDIS_PORT = 6379
REDIS_UID = 999
"""The ``redis`` user of the official alpine image."""
AZURE_API_VERSION = "2025-01-01-preview"
"""Azure OpenAI ``api-version`` used when a backend gives none."""
EG_IMAGE = "docker.io/envoyproxy/gateway:{version}"
"""The controller, its certgen Job and the proxies' shutdown manager (gateway-helm values.tmpl.yaml)."""
ENVOY_IMAGE = "docker.io/envoyproxy/envoy:distroless-v1.38.3"
"""The data-plane image Envoy Gateway v1.8.2 runs when nothing overrides it
(envoyproxy/gateway@v1.8.2:api/v1alpha1/shared_types.go DefaultEnvoyProxyImage); pinned here so the
EnvoyProxy names it and a private registry can serve it."""
RATELIMIT_IMAGE = "docker.io/envoyproxy/ratelimit:1e50889b"
"""gateway-helm v1.8.2's rate-limit service image (values.tmpl.yaml ``global.images.ratelimit.image``)."""
AIGW_CONTROLLER_IMAGE = "docker.io/envoyproxy/ai-gateway-controller"
AIGW_EXTPROC_IMAGE = "docker.io/envoyproxy/ai-gateway-extproc"
"""ai-gateway-helm v1.1.0 ``controller.image.repository`` and ``extProc.image.repository`` (values.yaml);
the controller injects the extproc image as a sidecar into every Envoy proxy pod."""
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
AIGW_ADMIN_PORT = "aigw-admin"
"""The extproc sidecar's one named port (1064): /metrics and /health (internal/controller/extproc_builder.go)."""
ENTRA_CLIENT_CLAIM = "oid"
"""The Entra token claim that names the caller (user or service principal object ID); budgets count per value."""
INTERNAL_LB = "service.beta.kubernetes.io/azure-load-balancer-internal"
LB_IPV4 = "service.beta.kubernetes.io/azure-load-balancer-ipv4"

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_HOSTNAME = re.compile(r"^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_CLUSTER_LOCAL = re.compile(r"^(?P<svc>[a-z0-9-]+)\.(?P<ns>[a-z0-9-]+)\.svc\.cluster\.local$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$")


def image_is_pinned(image: str) -> bool:
    tail = image.rsplit("/", 1)[-1]
    return "@sha256:" in image or (":" in tail and not tail.endswith(":latest"))


@dataclass(frozen=True)
class GatewayBackend:
    """One model behind the gateway. Not a pydantic model: ``api_key_secret`` is a Pulumi secret.

    ``name`` names the backend's objects (a DNS label, unique per gateway); ``model`` is what clients
    pass as ``model`` (unique per gateway). ``kind`` ``self-hosted``: ``hostname`` is the vLLM Service's
    in-cluster name ``<svc>.<ns>.svc.cluster.local``, ``api_key_secret`` the vLLM key, and ``pod_selector``
    the labels of its pods (NetworkPolicy). ``kind`` ``kaito``: a KAITO workspace's Service (port 80 to the
    pods' 5000); KAITO's vLLM takes no API key, so the NetworkPolicy that admits only the gateway is its
    only guard. ``kind`` ``azure-openai``: ``hostname`` is ``<account>.openai.azure.com`` on 443, reached
    with a short-lived Entra token (see ``AiGateway``).
    """

    name: str
    model: str
    kind: Literal["self-hosted", "kaito", "azure-openai"]
    hostname: str
    port: int | None = None
    """Default: 8000 (vLLM) for self-hosted, 443 for Azure OpenAI. 443 means TLS, verified against the system CAs."""
    schema: Literal["OpenAI", "AzureOpenAI"] | None = None
    """API schema AIGW translates to. Default: ``OpenAI`` for self-hosted, ``AzureOpenAI`` for azure-openai."""
    api_version: str | None = None
    """Azure OpenAI ``api-version``. Default ``AZURE_API_VERSION`` for the AzureOpenAI schema."""
    api_key_secret: pulumi.Input[str] | None = None
    """The vLLM API key (a Pulumi secret) for self-hosted; must be None for azure-openai."""
    pod_selector: Mapping[str, str] | None = field(default=None)
    """Labels of the serving pods, for self-hosted and kaito. Required there: ingress to them is limited to the gateway."""
    pod_port: int | None = None
    """The pods' port behind the Service port, for the NetworkPolicy. Default: ``port``."""

    @classmethod
    def from_vllm(cls, service, namespace: str, model: str, api_key: pulumi.Input[str], name: str | None = None):
        """A backend for a ``VllmService`` in ``namespace`` serving ``model`` (its served model name)."""
        return cls(
            name=name or service.service_name,
            model=model,
            kind="self-hosted",
            hostname=f"{service.service_name}.{namespace}.svc.cluster.local",
            port=PORT,
            api_key_secret=api_key,
            pod_selector={INSTANCE_LABEL: service.service_name},
        )

    @classmethod
    def from_kaito(cls, workspace, name: str | None = None):
        """A backend for a ``KaitoWorkspace``: its preset name is the model clients send
        (KAITO passes ``--served-model-name=<preset>``: kaito@v0.6.0 pkg/model/interface.go:266-268)."""
        return cls(
            name=name or f"kaito-{workspace.service_name}",
            model=workspace.served_model_name,
            kind="kaito",
            hostname=f"{workspace.service_name}.{workspace.namespace}.svc.cluster.local",
            port=KAITO_SERVICE_PORT,
            pod_port=KAITO_POD_PORT,
            pod_selector=dict(workspace.pod_labels),
        )

    @property
    def in_cluster(self) -> bool:
        return self.kind != "azure-openai"

    @property
    def effective_port(self) -> int:
        if self.port:
            return self.port
        return {"self-hosted": PORT, "kaito": KAITO_SERVICE_PORT}.get(self.kind, 443)

    @property
    def effective_schema(self) -> str:
        return self.schema or ("OpenAI" if self.in_cluster else "AzureOpenAI")

    @property
    def namespace(self) -> str | None:
        """The model namespace of a self-hosted backend, from its cluster-local hostname."""
        found = _CLUSTER_LOCAL.match(self.hostname)
        return found["ns"] if found else None

    @property
    def secret_name(self) -> str | None:
        """The Secret (key ``apiKey``) the BackendSecurityPolicy reads; None for KAITO, which takes no key."""
        return {"self-hosted": f"{self.name}-api-key", "azure-openai": f"{self.name}-entra-token"}.get(self.kind)


class TracingEndpoint(StrictModel):
    """An OpenTelemetry collector Service (OTLP gRPC) that receives the gateway's spans."""

    service: str = Field(pattern=_DNS_LABEL.pattern)
    """Service name. Required."""

    namespace: str = Field(pattern=_DNS_LABEL.pattern)
    """Its namespace. Required."""

    port: int = Field(4317, ge=1, le=65535)
    """OTLP gRPC port. Default 4317."""

    sampling_rate: int = Field(100, ge=0, le=100)
    """Percent of requests traced. Default 100."""


class AiGatewayArgs(StrictModel):
    """The gateway's plain settings; keys and backends are constructor parameters."""

    namespace: str = Field("ai-gateway", pattern=_DNS_LABEL.pattern)
    """Namespace of the Gateway, its policies, routes and secrets (created here). Default ``ai-gateway``."""

    gateway_name: str = Field("ai-gateway", pattern=_DNS_LABEL.pattern)
    """Name of the Gateway object. Default ``ai-gateway``."""

    eg_version: str = Field("v1.8.2", pattern=r"^v\d+\.\d+\.\d+$")
    """Envoy Gateway chart version, pinned. Default ``v1.8.2``."""

    aigw_version: str = Field("v1.1.0", pattern=r"^v\d+\.\d+\.\d+$")
    """Envoy AI Gateway chart version (CRDs and controller), pinned. Default ``v1.1.0``."""

    install_controllers: bool = True
    """Install Envoy Gateway, Envoy AI Gateway (CRDs and controller) and the rate-limit Redis from the
    pinned charts. Default True. Set False to use an existing install: it must run in
    ``envoy-gateway-system``/``envoy-ai-gateway-system`` with the settings of ``AiGateway.eg_values()``
    (AI Gateway extension hooks, EnvoyPatchPolicy and Backend APIs, a Redis rate-limit backend)."""

    redis_image: str = "redis:7.4.1-alpine"
    """Image of the rate-limit counter store, pinned. Default ``redis:7.4.1-alpine``."""

    internal_load_balancer: bool = True
    """Put the gateway on an internal Azure load balancer (VNet-only address). Default True."""

    load_balancer_ip: str | None = Field(None, pattern=r"^(\d{1,3}\.){3}\d{1,3}$")
    """A fixed IPv4 address for the load balancer (from the node subnet when internal). Default None:
    Azure picks one, read it with ``address_command``; with it, ``endpoint`` is known at preview."""

    client_ids: list[str] = Field(default_factory=list)
    """Names of the clients allowed in, one API key each (``client_keys``). Required, at least one, unless
    ``entra_tenant_id`` is set: the gateway never serves anonymous requests."""

    entra_tenant_id: str | None = Field(None, pattern=r"^[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$")
    """Authenticate callers with Entra ID tokens (JWT) from this tenant instead of API keys. Default None
    (API keys). Not both: Envoy Gateway v1.8.2 runs ``apiKeyAuth`` and ``jwt`` as two filters that must
    each pass, on the same ``Authorization`` header, and has no optional API key
    (api/v1alpha1/api_key_auth_types.go, jwt_types.go), so a stack with both would refuse every call.
    Budgets then count per token ``oid`` claim (the calling user or service principal)."""

    entra_audience: str | None = None
    """Audience the Entra tokens must carry (the app registration's client id or ``api://`` URI). Required
    with ``entra_tenant_id``."""

    token_limit_per_hour: int = Field(1_000_000, ge=1, le=4_294_967_295)
    """Tokens (input + output, as the model reports them) each client may use per hour. Default 1,000,000;
    at most 4,294,967,295, the ``BackendTrafficPolicy`` CRD's maximum for ``limit.requests`` (uint32)."""

    buffer_limit: str = Field("50Mi", pattern=r"^\d+(Ki|Mi)$")
    """Per-connection buffer and request buffer: the router and AIGW read whole request bodies; Envoy
    Gateway's 32 KiB default rejects long prompts. Default ``50Mi``."""

    request_timeout: str = Field("600s", pattern=r"^[1-9]\d{0,4}s$")
    """How long one call may take, the whole streamed response included (AIGatewayRoute
    ``rules[].timeouts.request``). Default ``600s``: AI Gateway's own default is 60 s
    (api/v1beta1/ai_gateway_route_helper.go), which cuts long generations off mid-stream."""

    image_registry: str | None = None
    """Pull every image of the gateway path (Envoy Gateway, Envoy, rate limit, AI Gateway controller and
    extproc, Redis, the router, the trace collector and the token refresher) from this registry, e.g.
    ``myacr.azurecr.io``, keeping each image's repository path and tag (``az acr import --source
    docker.io/envoyproxy/gateway:v1.8.2 --image envoyproxy/gateway:v1.8.2``). Default None: the public
    registries. ``aks-gpu plan`` lists every image and where it comes from."""

    tracing_endpoint: TracingEndpoint | None = None
    """Send OpenTelemetry traces to this collector. Default None (no tracing)."""

    ingress_peer_namespaces: list[str] = Field(default_factory=lambda: ["kube-system"])
    """Namespaces besides the gateway's data plane that may still reach the vLLM pods. Default
    ``kube-system``: Azure managed Prometheus (ama-metrics) scrapes vLLM's ``/metrics`` from there, and
    KEDA autoscaling reads those metrics. Add a model namespace itself for prefill/decode services,
    whose pods call each other."""

    @field_validator("redis_image")
    @classmethod
    def _pinned(cls, image: str) -> str:
        if not image_is_pinned(image):
            raise ValueError("pin the Redis image to a version tag or digest")
        return image

    @field_validator("image_registry")
    @classmethod
    def _registry(cls, value: str | None) -> str | None:
        if value is not None and not REGISTRY.match(value):
            raise ValueError("a registry host such as 'myacr.azurecr.io', without scheme or path")
        return value

    @field_validator("client_ids")
    @classmethod
    def _clients(cls, ids: list[str]) -> list[str]:
        for client in ids:
            if not _LABEL_VALUE.match(client) or not client:
                raise ValueError(
                    f"client id {client!r}: 1-63 letters, digits, '-', '_' or '.' (it becomes a Secret key and header)"
                )
        duplicates = sorted({c for c in ids if ids.count(c) > 1})
        if duplicates:
            raise ValueError(f"client ids repeat: {', '.join(duplicates)}")
        return ids

    @field_validator("ingress_peer_namespaces")
    @classmethod
    def _namespaces(cls, names: list[str]) -> list[str]:
        for ns in names:
            if not _DNS_LABEL.match(ns):
                raise ValueError(f"namespace {ns!r} is not a DNS label")
        return names

    @model_validator(mode="after")
    def _check(self) -> AiGatewayArgs:
        if (self.entra_tenant_id is None) != (self.entra_audience is None):
            raise FieldProblem(
                "entra_audience", self.entra_audience, "Entra ID tokens need both entra_tenant_id and entra_audience"
            )
        if self.entra_tenant_id is None and not self.client_ids:
            raise FieldProblem(
                "client_ids", [], "give at least one client (or entra_tenant_id): the gateway refuses anonymous requests"
            )
        if self.entra_tenant_id is not None and self.client_ids:
            raise FieldProblem(
                "client_ids",
                self.client_ids,
                "with entra_tenant_id the gateway takes Entra tokens instead of API keys; drop client_ids "
                "(Envoy Gateway would require both on the same Authorization header and refuse every call)",
            )
        return self

    @property
    def auth(self) -> Literal["api-key", "entra"]:
        return "entra" if self.entra_tenant_id else "api-key"


class AiGateway(pulumi.ComponentResource):
    """Envoy Gateway + Envoy AI Gateway in front of vLLM services and Azure OpenAI deployments.

    Clients call ``<endpoint>`` with the ``openai`` client: ``base_url=endpoint``, ``api_key=<their key>``,
    ``model=<a backend's model>``. The address: with ``load_balancer_ip`` set, ``endpoint`` is
    ``http://<ip>/v1``; otherwise Azure assigns it and ``endpoint`` is None, and ``address_command``
    (``kubectl get gateway ... -o jsonpath='{.status.addresses[0].value}'``) prints it once the Gateway
    is programmed. The listener is plain HTTP on port 80 on an internal load balancer by default: put TLS
    in front (Application Gateway, or add an HTTPS listener) before it leaves the VNet.

    Azure OpenAI backends are called with ``Authorization: Bearer <Entra token>`` read from the Secret
    ``<backend>-entra-token`` (key ``apiKey``) in ``namespace``. This component does not create that
    Secret: a token refresher (a CronJob under workload identity with the ``Cognitive Services OpenAI
    User`` role) must write a fresh token there well inside the token's one-hour lifetime.

    Outputs: ``endpoint`` (or None), ``address_command``, ``routes`` (model -> backend name).
    """

    endpoint: str | None
    address_command: str
    routes: dict[str, str]

    def __init__(
        self,
        name: str,
        args: AiGatewayArgs | dict,
        provider: k8s.Provider,
        backends: list[GatewayBackend],
        client_keys: Mapping[str, pulumi.Input[str]],
        opts: pulumi.ResourceOptions | None = None,
    ):
        """
        :param name: Logical name; children are named ``<name>-<object>``.
        :param args: Settings, an ``AiGatewayArgs`` or a dict of its fields.
        :param provider: Kubernetes provider of the cluster.
        :param backends: The models to route to, ``GatewayBackend`` each; model names must be unique.
        :param client_keys: API key per client id (Pulumi secrets), exactly the ids in ``client_ids``.
        :param opts: Standard Pulumi resource options.
        """
        args = validate_args(AiGatewayArgs, args, "AiGateway", name)
        self._check(name, args, backends, client_keys)
        super().__init__(f"{PACKAGE}:index:AiGateway", name, None, opts)
        # Children wait for what the component waits for (the model namespaces its NetworkPolicies land in).
        child = Children(self, opts, provider).opts()
        ns = args.namespace

        gateway_namespace = k8s.core.v1.Namespace(f"{name}-ns-gateway", metadata=restricted_namespace(ns), opts=child)
        controllers = self._controllers(name, args, child) if args.install_controllers else []
        # Gateway API, Envoy Gateway and AI Gateway kinds exist only once the charts' CRDs are applied.
        after = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[gateway_namespace, *controllers]))

        def custom(resource: str, api_version: str, kind: str, obj_name: str, spec: dict, namespaced: bool = True, needs=()):
            metadata = {"name": obj_name, **({"namespace": ns} if namespaced else {})}
            options = pulumi.ResourceOptions.merge(after, pulumi.ResourceOptions(depends_on=list(needs))) if needs else after
            return k8s.apiextensions.CustomResource(
                f"{name}-{resource}", api_version=api_version, kind=kind, metadata=metadata, spec=spec, opts=options
            )

        gw = args.gateway_name
        gateway_ref = {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": gw}
        custom("gatewayclass", "gateway.networking.k8s.io/v1", "GatewayClass", gw, {"controllerName": CONTROLLER_NAME}, False)
        custom("envoyproxy", "gateway.envoyproxy.io/v1alpha1", "EnvoyProxy", gw, self.envoy_proxy_spec(args))
        custom(
            "gateway",
            "gateway.networking.k8s.io/v1",
            "Gateway",
            gw,
            {
                "gatewayClassName": gw,
                "listeners": [{"name": "http", "protocol": "HTTP", "port": 80}],
                "infrastructure": {"parametersRef": {"group": "gateway.envoyproxy.io", "kind": "EnvoyProxy", "name": gw}},
            },
        )
        custom(
            "client-traffic",
            "gateway.envoyproxy.io/v1alpha1",
            "ClientTrafficPolicy",
            gw,
            {
                "targetRefs": [gateway_ref],
                "connection": {"bufferLimit": args.buffer_limit},
                # Before any filter runs: a client-sent identity header is dropped, so the only value the
                # budget and the router's cache see is the one authentication writes.
                "headers": {"earlyRequestHeaders": {"remove": [CLIENT_ID_HEADER]}},
            },
        )
        needs = []
        if args.auth == "api-key":
            needs.append(
                k8s.core.v1.Secret(
                    f"{name}-client-keys",
                    metadata={"name": f"{gw}-client-keys", "namespace": ns},
                    type="Opaque",
                    string_data={client: pulumi.Output.secret(client_keys[client]) for client in args.client_ids},
                    opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[gateway_namespace])),
                )
            )
        custom("security", "gateway.envoyproxy.io/v1alpha1", "SecurityPolicy", gw, self.security_spec(args), needs=needs)
        custom(
            "token-limits",
            "gateway.envoyproxy.io/v1alpha1",
            "BackendTrafficPolicy",
            gw,
            self.traffic_spec(args),
        )

        for backend in backends:
            self._backend(name, args, backend, custom, child, gateway_namespace)
        custom("route", "aigateway.envoyproxy.io/v1beta1", "AIGatewayRoute", gw, self.route_spec(args, backends))
        self._network_policies(name, args, backends, child)

        self.routes = {b.model: b.name for b in backends}
        self.endpoint = f"http://{args.load_balancer_ip}/v1" if args.load_balancer_ip else None
        self.address_command = f"kubectl get gateway {gw} -n {ns} -o jsonpath='{{.status.addresses[0].value}}'"
        self.register_outputs({"endpoint": self.endpoint, "address_command": self.address_command, "routes": self.routes})

    # ---- checks ---------------------------------------------------------------------------------

    @staticmethod
    def _check(name: str, args: AiGatewayArgs, backends: list[GatewayBackend], client_keys: Mapping) -> None:
        missing = [c for c in args.client_ids if c not in client_keys]
        if missing:
            fail("AiGateway", name, "client_keys", sorted(client_keys), f"no API key for client(s) {', '.join(missing)}")
        extra = sorted(set(client_keys) - set(args.client_ids))
        if extra:
            fail("AiGateway", name, "client_keys", sorted(client_keys), f"keys for clients not in client_ids: {', '.join(extra)}")
        if not backends:
            fail("AiGateway", name, "backends", [], "give at least one backend to route to")
        for field_name, values in (("model", [b.model for b in backends]), ("name", [b.name for b in backends])):
            repeated = sorted({v for v in values if values.count(v) > 1})
            if repeated:
                fail("AiGateway", name, f"backends.{field_name}", repeated, f"backend {field_name}s must be unique")
        for i, b in enumerate(backends):
            where = f"backends[{i}]"
            if not _DNS_LABEL.match(b.name) or len(b.name) > 50:
                fail(
                    "AiGateway",
                    name,
                    f"{where}.name",
                    b.name,
                    "a DNS label of at most 50 characters (it names Kubernetes objects)",
                )
            if not b.model:
                fail("AiGateway", name, f"{where}.model", b.model, "give the model name clients send")
            if not _HOSTNAME.match(b.hostname):
                fail("AiGateway", name, f"{where}.hostname", b.hostname, "a DNS name without scheme, port or path")
            if not 1 <= b.effective_port <= 65535:
                fail("AiGateway", name, f"{where}.port", b.port, "a TCP port (1-65535)")
            if b.in_cluster:
                if b.kind == "self-hosted" and b.api_key_secret is None:
                    fail(
                        "AiGateway",
                        name,
                        f"{where}.api_key_secret",
                        None,
                        "self-hosted vLLM requires its API key (a Pulumi secret)",
                    )
                if b.namespace is None:
                    fail(
                        "AiGateway",
                        name,
                        f"{where}.hostname",
                        b.hostname,
                        "in-cluster backends are <service>.<namespace>.svc.cluster.local",
                    )
                if not b.pod_selector:
                    fail(
                        "AiGateway",
                        name,
                        f"{where}.pod_selector",
                        b.pod_selector,
                        "give the serving pods' labels: ingress to them is limited to the gateway",
                    )
                if b.kind == "kaito" and b.api_key_secret is not None:
                    fail("AiGateway", name, f"{where}.api_key_secret", "set", "KAITO's inference server takes no API key")
            else:
                if b.api_key_secret is not None:
                    fail(
                        "AiGateway",
                        name,
                        f"{where}.api_key_secret",
                        "set",
                        f"Azure OpenAI is called with Entra tokens from the Secret {b.secret_name!r}, not account keys",
                    )
                if not b.hostname.endswith(".openai.azure.com"):
                    fail(
                        "AiGateway", name, f"{where}.hostname", b.hostname, "an Azure OpenAI endpoint, <account>.openai.azure.com"
                    )
                if b.effective_port != 443:
                    fail("AiGateway", name, f"{where}.port", b.port, "Azure OpenAI is served over HTTPS on 443")
            if b.effective_schema == "OpenAI" and b.api_version is not None:
                fail("AiGateway", name, f"{where}.api_version", b.api_version, "only the AzureOpenAI schema takes an api-version")

    # ---- specs (pure, so tests can read them) -------------------------------------------------

    @staticmethod
    def eg_values(args: AiGatewayArgs | None = None) -> dict:
        """Envoy Gateway chart values: the AI Gateway extension, the Redis rate-limit backend and pinned images."""
        registry = args.image_registry if args else None
        version = args.eg_version if args else AiGatewayArgs.model_fields["eg_version"].default
        # The chart renders config.envoyGateway as the EnvoyGateway config, merged over its defaults
        # (envoyproxy/gateway charts/gateway-helm/values.tmpl.yaml); rateLimit.backend is EnvoyGatewaySpec's.
        include_all = {"includeAll": True}
        return {
            "global": {
                "images": {
                    "envoyGateway": {"image": relocate(EG_IMAGE.format(version=version), registry)},
                    "ratelimit": {"image": relocate(RATELIMIT_IMAGE, registry)},
                    "envoyProxy": {"image": relocate(ENVOY_IMAGE, registry)},
                }
            },
            "config": {
                "envoyGateway": {
                    "extensionApis": {"enableEnvoyPatchPolicy": True, "enableBackend": True},
                    "extensionManager": {
                        "hooks": {
                            "xdsTranslator": {
                                "translation": {key: dict(include_all) for key in ("listener", "route", "cluster", "secret")},
                                "post": ["Translation", "Cluster", "Route"],
                            }
                        },
                        "service": {"fqdn": dict(AIGW_EXTENSION)},
                    },
                    # Under envoyGateway: the chart renders this block as the EnvoyGateway config, whose
                    # spec.rateLimit configures the rate-limit service it deploys.
                    "rateLimit": {
                        "backend": {"type": "Redis", "redis": {"url": f"redis.{EG_NAMESPACE}.svc.cluster.local:{REDIS_PORT}"}}
                    },
                }
            },
        }

    @staticmethod
    def aigw_values(args: AiGatewayArgs) -> dict:
        """AI Gateway chart values: pinned images (also for the extproc sidecar it injects) and requests."""
        return {
            "controller": {
                "image": {"repository": relocate(AIGW_CONTROLLER_IMAGE, args.image_registry), "tag": args.aigw_version},
                # The chart sets none ({}); the scheduler then packs it anywhere and evicts it first.
                "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"memory": "1Gi"}},
            },
            "extProc": {"image": {"repository": relocate(AIGW_EXTPROC_IMAGE, args.image_registry), "tag": args.aigw_version}},
        }

    @staticmethod
    def envoy_proxy_spec(args: AiGatewayArgs) -> dict:
        annotations: dict[str, str] = {}
        if args.internal_load_balancer:
            annotations[INTERNAL_LB] = "true"
        if args.load_balancer_ip:
            annotations[LB_IPV4] = args.load_balancer_ip
        spec: dict = {
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

    @staticmethod
    def security_spec(args: AiGatewayArgs) -> dict:
        """API keys, or Entra tokens: one of the two, never both (see ``AiGatewayArgs.entra_tenant_id``)."""
        spec: dict = {"targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": args.gateway_name}]}
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

    @staticmethod
    def traffic_spec(args: AiGatewayArgs) -> dict:
        return {
            "targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": args.gateway_name}],
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

    @staticmethod
    def route_spec(args: AiGatewayArgs, backends: list[GatewayBackend]) -> dict:
        return {
            "parentRefs": [{"name": args.gateway_name, "kind": "Gateway"}],
            "rules": [
                {
                    "matches": [{"headers": [{"type": "Exact", "name": MODEL_HEADER, "value": b.model}]}],
                    "backendRefs": [{"name": b.name}],
                    "timeouts": {"request": args.request_timeout},
                }
                for b in backends
            ],
            "llmRequestCosts": [
                {"metadataKey": "llm_input_token", "type": "InputToken"},
                {"metadataKey": "llm_output_token", "type": "OutputToken"},
                {"metadataKey": "llm_total_token", "type": "TotalToken"},
            ],
        }

    @staticmethod
    def backend_specs(b: GatewayBackend) -> dict[str, dict]:
        """Spec per kind for one backend: Backend, BackendTLSPolicy (443 only), AIServiceBackend, BackendSecurityPolicy."""
        specs: dict[str, dict] = {"Backend": {"endpoints": [{"fqdn": {"hostname": b.hostname, "port": b.effective_port}}]}}
        if b.effective_port == 443:
            specs["BackendTLSPolicy"] = {
                "targetRefs": [{"group": "gateway.envoyproxy.io", "kind": "Backend", "name": b.name}],
                "validation": {"wellKnownCACertificates": "System", "hostname": b.hostname},
            }
        schema: dict = {"name": b.effective_schema}
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

    # ---- children -------------------------------------------------------------------------------

    @staticmethod
    def _backend(name, args: AiGatewayArgs, b: GatewayBackend, custom, child, gateway_ns) -> None:
        secret = None
        if b.kind == "self-hosted":
            secret = k8s.core.v1.Secret(
                f"{name}-{b.name}-api-key",
                metadata={"name": b.secret_name, "namespace": args.namespace},
                type="Opaque",
                string_data={"apiKey": pulumi.Output.secret(b.api_key_secret)},
                opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[gateway_ns])),
            )
        api_versions = {
            "Backend": "gateway.envoyproxy.io/v1alpha1",
            "BackendTLSPolicy": "gateway.networking.k8s.io/v1",
            "AIServiceBackend": "aigateway.envoyproxy.io/v1beta1",
            "BackendSecurityPolicy": "aigateway.envoyproxy.io/v1beta1",
        }
        for kind, spec in AiGateway.backend_specs(b).items():
            needs = [secret] if secret is not None and kind == "BackendSecurityPolicy" else []
            custom(f"{b.name}-{kind.lower()}", api_versions[kind], kind, b.name, spec, needs=needs)

    @staticmethod
    def network_policy_targets(backends: list[GatewayBackend]) -> dict[tuple[str, tuple], set[int]]:
        """(model namespace, pod selector) -> ports, for the self-hosted backends."""
        targets: dict[tuple[str, tuple], set[int]] = {}
        for b in backends:
            if b.in_cluster:
                key = (b.namespace, tuple(sorted(b.pod_selector.items())))
                targets.setdefault(key, set()).add(b.pod_port or b.effective_port)
        return targets

    @staticmethod
    def _network_policies(name, args: AiGatewayArgs, backends: list[GatewayBackend], child) -> None:
        peers = [EG_NAMESPACE, *[n for n in args.ingress_peer_namespaces if n != EG_NAMESPACE]]
        for (namespace, selector), ports in sorted(AiGateway.network_policy_targets(backends).items()):
            labels = dict(selector)
            policy = re.sub(r"[^a-z0-9-]+", "-", "-".join(v for _, v in selector).lower())[:40].strip("-") or "backend"
            k8s.networking.v1.NetworkPolicy(
                f"{name}-netpol-{namespace}-{policy}",
                metadata={"name": f"{args.gateway_name}-only-{policy}"[:63].strip("-."), "namespace": namespace},
                spec={
                    "podSelector": {"matchLabels": labels},
                    "policyTypes": ["Ingress"],
                    "ingress": [
                        {
                            "from": [
                                {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": peer}}} for peer in peers
                            ],
                            # The Service must map these ports to the same container ports (VllmService does: 8000).
                            "ports": [{"protocol": "TCP", "port": port} for port in sorted(ports)],
                        }
                    ],
                },
                opts=child,
            )

    def _controllers(self, name: str, args: AiGatewayArgs, child: pulumi.ResourceOptions) -> list[pulumi.Resource]:
        """Envoy Gateway (with the rate-limit Redis), the AI Gateway CRDs and its controller, from pinned charts."""
        namespaces = {
            key: k8s.core.v1.Namespace(f"{name}-ns-{key}", metadata=restricted_namespace(value), opts=child)
            for key, value in (("eg", EG_NAMESPACE), ("aigw", AIGW_NAMESPACE))
        }
        redis = self._redis(
            name, args, pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[namespaces["eg"]]))
        )
        # A v3 Release, not a v4 Chart: the chart's certgen Job (a pre-install hook) creates the TLS
        # Secrets the controller mounts, and only Release runs hooks (pulumi-kubernetes#3284).
        eg = k8s.helm.v3.Release(
            f"{name}-envoy-gateway",
            name=EG_RELEASE,
            chart=EG_CHART,
            version=args.eg_version,
            namespace=EG_NAMESPACE,
            values=self.eg_values(args),
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[namespaces["eg"], *redis])),
        )
        crds = k8s.helm.v4.Chart(
            f"{name}-ai-gateway-crds",
            chart=AIGW_CRDS_CHART,
            version=args.aigw_version,
            namespace=AIGW_NAMESPACE,
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[namespaces["aigw"]])),
        )
        controller = k8s.helm.v4.Chart(
            f"{name}-ai-gateway",
            chart=AIGW_CHART,
            version=args.aigw_version,
            namespace=AIGW_NAMESPACE,
            values=self.aigw_values(args),
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[namespaces["aigw"], crds, eg])),
        )
        return [eg, crds, controller]

    @staticmethod
    def _redis(name, args: AiGatewayArgs, opts) -> list[pulumi.Resource]:
        """A single Redis for Envoy's rate-limit counters: ephemeral (budgets restart on loss), non-root,
        reachable only from Envoy Gateway's own namespace (it has no password)."""
        labels = {"app.kubernetes.io/name": "redis", "app.kubernetes.io/instance": f"{args.gateway_name}-ratelimit"}
        deployment = k8s.apps.v1.Deployment(
            f"{name}-redis",
            metadata={"name": "redis", "namespace": EG_NAMESPACE, "labels": labels},
            spec={
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "automountServiceAccountToken": False,
                        "securityContext": {
                            "runAsNonRoot": True,
                            "runAsUser": REDIS_UID,
                            "runAsGroup": REDIS_UID,
                            "fsGroup": REDIS_UID,
                            "seccompProfile": {"type": "RuntimeDefault"},
                        },
                        "containers": [
                            {
                                "name": "redis",
                                "image": relocate(args.redis_image, args.image_registry),
                                # Counters only: no snapshots, no append-only file.
                                "args": ["--save", "", "--appendonly", "no"],
                                "ports": [{"name": "redis", "containerPort": REDIS_PORT}],
                                "resources": {
                                    "requests": {"cpu": "100m", "memory": "128Mi"},
                                    "limits": {"memory": "256Mi"},
                                },
                                "readinessProbe": {"tcpSocket": {"port": "redis"}, "periodSeconds": 5},
                                "livenessProbe": {"tcpSocket": {"port": "redis"}, "periodSeconds": 20},
                                "securityContext": restricted_container(),
                                "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                            }
                        ],
                        "volumes": [{"name": "data", "emptyDir": {}}],
                    },
                },
            },
            opts=opts,
        )
        service = k8s.core.v1.Service(
            f"{name}-redis-service",
            metadata={"name": "redis", "namespace": EG_NAMESPACE, "labels": labels},
            spec={"selector": labels, "ports": [{"name": "redis", "port": REDIS_PORT, "targetPort": "redis", "protocol": "TCP"}]},
            opts=opts,
        )
        policy = k8s.networking.v1.NetworkPolicy(
            f"{name}-redis-netpol",
            metadata={"name": "redis", "namespace": EG_NAMESPACE},
            spec={
                "podSelector": {"matchLabels": labels},
                "policyTypes": ["Ingress"],
                "ingress": [{"from": [{"podSelector": {}}], "ports": [{"protocol": "TCP", "port": REDIS_PORT}]}],
            },
            opts=opts,
        )
        return [deployment, service, policy]
