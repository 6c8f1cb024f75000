"""What AiGateway takes: its plain settings (``AiGatewayArgs``), the models behind it (``GatewayBackend``),
the collector it traces to and the reference other components attach to it by (``GatewayRef``); the pure check
of backends and client keys is ``ai_gateway_checks``."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, field_validator, model_validator

from .._base import StrictModel
from ..core import pins
from ..core.endpoints import DYNAMO_FRONTEND_PORT, INSTANCE_LABEL, KAITO_POD_PORT, KAITO_SERVICE_PORT, VLLM_PORT
from ..core.errors import FieldProblem, FieldProblems
from ..core.images import pin_problem, registry_problem
from ..core.names import DNS_LABEL, GUID, LABEL_VALUE
from ..serving.vllm_disaggregation import picker_pod_labels, picker_service

if TYPE_CHECKING:
    import pulumi

    from ..serving.dynamo_inference import DynamoInference
    from ..serving.kaito_workspace import KaitoWorkspace
    from ..serving.service_facts import ServedModel

AZURE_API_VERSION = pins.azure_api_version("azure-openai-inference")
"""Azure OpenAI ``api-version`` used when a backend gives none."""
MAX_BACKEND_NAME = 50
"""A backend's name prefixes the names of its objects (``<name>-api-key``, ``<name>-entra-token``)."""

_CLUSTER_LOCAL = re.compile(r"^(?P<svc>[a-z0-9-]+)\.(?P<ns>[a-z0-9-]+)\.svc\.cluster\.local$")


@dataclass(frozen=True)
class GatewayRef:
    """The Gateway another component attaches to (``AiGateway.ref``), and the registry its request path
    pulls images from."""

    name: str
    """The Gateway object's name (``AiGatewayArgs.gateway_name``)."""
    namespace: str
    """Its namespace (``AiGatewayArgs.namespace``)."""
    image_registry: str | None = None
    """Pull images from this registry instead of their public ones (``AiGatewayArgs.image_registry``). Default None."""


@dataclass(frozen=True)
class GatewayBackend:
    """One model behind the gateway. Not a pydantic model: ``api_key_secret`` is a Pulumi secret.

    ``name`` names the backend's objects (a DNS label, unique per gateway); ``model`` is what clients
    pass as ``model`` (unique per gateway). ``kind`` ``self-hosted``: ``hostname`` is the vLLM Service's
    in-cluster name ``<svc>.<ns>.svc.cluster.local``, ``api_key_secret`` the vLLM key, and ``pod_selector``
    the labels of its pods (NetworkPolicy). ``kind`` ``kaito``: a KAITO workspace's Service (port 80 to the
    pods' 5000); KAITO's vLLM takes no API key, so the NetworkPolicy that admits only the gateway is its
    only guard. ``kind`` ``dynamo``: a DynamoInference's frontend Service (port 8000), which checks no key
    either. ``kind`` ``inference-pool``: a Gateway API Inference Extension InferencePool (llm-d
    prefill/decode); ``inference_pool`` names it, ``hostname`` is its endpoint picker's Service, and the
    gateway calls the pods the picker chooses, with the vLLM key (``api_key_secret``) that a
    BackendSecurityPolicy on the pool sets. ``kind`` ``azure-openai``: ``hostname`` is
    ``<account>.openai.azure.com`` on 443, reached with a short-lived Entra token (see ``AiGateway``).
    """

    name: str
    """Names the backend's objects: a DNS label of at most 50 characters, unique per gateway."""
    model: str
    """The ``model`` clients send for this backend, unique per gateway."""
    kind: Literal["self-hosted", "kaito", "dynamo", "inference-pool", "azure-openai"]
    """What serves it: a vLLM Service, a KAITO workspace, a Dynamo frontend, an InferencePool, or an Azure
    OpenAI deployment."""
    hostname: str
    """``<svc>.<ns>.svc.cluster.local`` in the cluster (for an InferencePool, its endpoint picker's Service),
    ``<account>.openai.azure.com`` for Azure OpenAI."""
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
    inference_pool: str | None = None
    """The InferencePool's name (in the hostname's namespace), for kind ``inference-pool`` only."""
    picker_pod_selector: Mapping[str, str] | None = field(default=None)
    """Labels of the InferencePool's endpoint picker pods, which read the serving pods' metrics: the
    NetworkPolicy admits them too. For kind ``inference-pool`` only; required there."""
    peer_ingress: tuple[Mapping, ...] = ()
    """More NetworkPolicy ingress rules the serving pods need from their own peers, as the serving component
    states them (a Dynamo frontend: its workers' response streams). Default none."""
    after: tuple[Any, ...] = ()
    """Resources this backend's objects wait for: what creates the namespace they land in and the Service they reach
    (its VllmService, KaitoWorkspace or DynamoInference). Default none. Per backend, so that a gateway of many models
    does not make every one of its objects wait for every model."""
    fallback: str | None = None
    """The ``model`` of another backend of the gateway that answers this backend's calls when it cannot (no ready pod:
    a rollout, scale from zero, a lost node), asked for its own model name, with the same client authentication,
    budget and metering. Default None. Neither this backend nor the fallback may be an InferencePool (see
    ``ai_gateway_routes``)."""

    @classmethod
    def from_vllm(
        cls, service: ServedModel, namespace: str, model: str, api_key: pulumi.Input[str], name: str | None = None
    ) -> GatewayBackend:
        """A backend for a ``VllmService`` in ``namespace`` serving ``model`` (its served model name): its
        InferencePool when it serves prefill/decode (the routing sidecar must see every call), else its Service."""
        if service.inference_pool:
            picker = picker_service(service.inference_pool)
            return cls(
                name=name or service.service_name,
                model=model,
                kind="inference-pool",
                hostname=f"{picker}.{namespace}.svc.cluster.local",
                port=VLLM_PORT,
                api_key_secret=api_key,
                pod_selector=dict(service.pod_labels),
                inference_pool=service.inference_pool,
                picker_pod_selector=picker_pod_labels(service.inference_pool),
            )
        return cls(
            name=name or service.service_name,
            model=model,
            kind="self-hosted",
            hostname=f"{service.service_name}.{namespace}.svc.cluster.local",
            port=VLLM_PORT,
            api_key_secret=api_key,
            pod_selector={INSTANCE_LABEL: service.service_name},
        )

    @classmethod
    def from_kaito(cls, workspace: KaitoWorkspace, name: str | None = None) -> GatewayBackend:
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

    @classmethod
    def from_dynamo(cls, inference: DynamoInference, name: str | None = None) -> GatewayBackend:
        """A backend for a ``DynamoInference``'s frontend; its served model name is what clients send, and its
        NetworkPolicy admits the graph's own hops into the frontend (``DynamoInference.peer_ingress``)."""
        return cls(
            name=name or f"dynamo-{inference.service_name}",
            model=inference.served_model_name,
            kind="dynamo",
            hostname=f"{inference.service_name}.{inference.namespace}.svc.cluster.local",
            port=DYNAMO_FRONTEND_PORT,
            pod_selector=dict(inference.pod_labels),
            peer_ingress=tuple(inference.peer_ingress),
        )

    @property
    def in_cluster(self) -> bool:
        return self.kind != "azure-openai"

    @property
    def effective_port(self) -> int:
        if self.port:
            return self.port
        in_cluster = {"self-hosted": VLLM_PORT, "inference-pool": VLLM_PORT, "kaito": KAITO_SERVICE_PORT}
        return {**in_cluster, "dynamo": DYNAMO_FRONTEND_PORT}.get(self.kind, 443)

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
        return {
            "self-hosted": f"{self.name}-api-key",
            "inference-pool": f"{self.name}-api-key",
            "azure-openai": f"{self.name}-entra-token",
        }.get(self.kind)


class TracingEndpoint(StrictModel):
    """An OpenTelemetry collector Service (OTLP gRPC) that receives the gateway's spans."""

    service: str = Field(pattern=DNS_LABEL.pattern)
    """Service name. Required."""

    namespace: str = Field(pattern=DNS_LABEL.pattern)
    """Its namespace. Required."""

    port: int = Field(4317, ge=1, le=65535)
    """OTLP gRPC port. Default 4317."""

    sampling_rate: int = Field(100, ge=0, le=100)
    """Percent of requests traced. Default 100."""


class AiGatewayArgs(StrictModel):
    """The gateway's plain settings; keys and backends are constructor parameters."""

    namespace: str = Field("ai-gateway", pattern=DNS_LABEL.pattern)
    """Namespace of the Gateway, its policies, routes and secrets (created here). Default ``ai-gateway``."""

    gateway_name: str = Field("ai-gateway", pattern=DNS_LABEL.pattern)
    """Name of the Gateway object. Default ``ai-gateway``."""

    eg_version: str = Field(pins.chart("gateway-helm").version, pattern=r"^v\d+\.\d+\.\d+$")
    """Envoy Gateway chart version, pinned. Default: the pins table's ``gateway-helm``."""

    aigw_version: str = Field(pins.chart("ai-gateway-helm").version, pattern=r"^v\d+\.\d+\.\d+$")
    """Envoy AI Gateway chart version (CRDs and controller), pinned. Default: the pins table's ``ai-gateway-helm``."""

    install_controllers: bool = True
    """Install Envoy Gateway, Envoy AI Gateway (CRDs and controller) and the rate-limit Redis from the
    pinned charts. Default True. Set False to use an existing install: it must run in
    ``envoy-gateway-system``/``envoy-ai-gateway-system`` with the settings of
    ``ai_gateway_controllers.eg_values()`` (AI Gateway extension hooks, EnvoyPatchPolicy and Backend APIs,
    a Redis rate-limit backend)."""

    redis_image: str = pins.image("redis")
    """Image of the rate-limit counter store, pinned. Default: the pins table's ``redis``."""

    internal_load_balancer: bool = True
    """Put the gateway on an internal Azure load balancer (VNet-only address). Default True."""

    load_balancer_ip: str | None = Field(None, pattern=r"^(\d{1,3}\.){3}\d{1,3}$")
    """A fixed IPv4 address for the load balancer (from the node subnet when internal). Default None:
    Azure picks one, read it with ``address_command``; with it, ``endpoint`` is known at preview."""

    client_ids: list[str] = Field(default_factory=list)
    """Names of the clients allowed in, one API key each (``client_keys``). Required, at least one, unless
    ``entra_tenant_id`` is set: the gateway never serves anonymous requests."""

    entra_tenant_id: str | None = Field(None, pattern=GUID.pattern)
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
    KEDA autoscaling reads those metrics. An InferencePool's pods are admitted to each other and to
    their endpoint picker without this (``ai_gateway_manifests._pool_rules``)."""

    @field_validator("redis_image")
    @classmethod
    def _pinned(cls, image: str) -> str:
        if pin_problem(image):
            raise ValueError("pin the Redis image to a version tag or digest")
        return image

    @field_validator("image_registry")
    @classmethod
    def _registry(cls, value: str | None) -> str | None:
        problem = registry_problem(value) if value is not None else None
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("client_ids")
    @classmethod
    def _clients(cls, ids: list[str]) -> list[str]:
        for client in ids:
            if not LABEL_VALUE.match(client) or not client:
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
            if not DNS_LABEL.match(ns):
                raise ValueError(f"namespace {ns!r} is not a DNS label")
        return names

    @model_validator(mode="after")
    def _check(self) -> AiGatewayArgs:
        problems = []
        if (self.entra_tenant_id is None) != (self.entra_audience is None):
            problems.append(
                FieldProblem(
                    "entra_audience", self.entra_audience, "Entra ID tokens need both entra_tenant_id and entra_audience"
                )
            )
        if self.entra_tenant_id is None and not self.client_ids:
            problems.append(
                FieldProblem(
                    "client_ids", [], "give at least one client (or entra_tenant_id): the gateway refuses anonymous requests"
                )
            )
        if self.entra_tenant_id is not None and self.client_ids:
            problems.append(
                FieldProblem(
                    "client_ids",
                    self.client_ids,
                    "with entra_tenant_id the gateway takes Entra tokens instead of API keys; drop client_ids "
                    "(Envoy Gateway would require both on the same Authorization header and refuse every call)",
                )
            )
        if problems:
            raise FieldProblems(problems)
        return self

    @property
    def auth(self) -> Literal["api-key", "entra"]:
        return "entra" if self.entra_tenant_id else "api-key"

    @property
    def ref(self) -> GatewayRef:
        """The Gateway these settings describe, for components that attach to it."""
        return GatewayRef(self.gateway_name, self.namespace, self.image_registry)
