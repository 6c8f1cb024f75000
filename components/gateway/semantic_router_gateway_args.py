"""What SemanticRouterGateway takes: its settings (``SemanticRouterGatewayArgs``), the secrets
(``GatewaySecrets``) and the stack's shared services it uses (``SharedServices``); the pure check
of all of it, and the router config and gateway backends it derives, before anything exists."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from pydantic import Field, ValidationError, model_validator

from .._base import ComponentInputError, StrictModel
from ..azure import AzureOpenAIArgs, ManagedGrafanaArgs
from ..core import catalog
from ..core.endpoints import DYNAMO_FRONTEND_PORT, KAITO_SERVICE_PORT, VLLM_PORT
from ..core.errors import FieldProblem, validation_problems
from ..core.names import DNS_LABEL
from ..core.token_cost import self_hosted_cost_per_million
from . import router_config
from .ai_gateway_args import AiGatewayArgs, GatewayBackend
from .tracing import OTLP_PORT

if TYPE_CHECKING:
    import pulumi

    from ..azure import ManagedPrometheus, ModelStore
    from ..serving import DynamoInference, KaitoWorkspace
    from ..serving.service_facts import ServedModel

TRACE_COLLECTOR = "otel-collector"
"""In-cluster name of the trace collector (its Service in the gateway's namespace)."""


class SemanticRouterGatewayArgs(StrictModel):
    """The endpoint, its frontier backend and how calls are routed."""

    gateway: AiGatewayArgs
    """Gateway settings: client ids (keys come from the ``gateway_client_keys`` secret), Entra JWT,
    token limits, load balancer. Required."""

    azure_openai: AzureOpenAIArgs
    """The frontier backend: account (keys off) and deployments. Required."""

    decisions: list[router_config.RouterDecision] | None = None
    """Routing decisions. Default: easy topics and keywords to the first self-hosted model, hard ones
    (math, code, law, "prove", "step by step") to the first Azure OpenAI deployment."""

    default_model: str | None = None
    """Model for calls no decision matches. Default: the first self-hosted model, the cheap safe choice."""

    guards: router_config.RouterGuards = Field(default_factory=router_config.RouterGuards)
    """PII and jailbreak guards. Default off."""

    cache: router_config.SemanticCache = Field(default_factory=router_config.SemanticCache)
    """Semantic response cache. Default off."""

    self_hosted_tokens_per_second: float = Field(1500, gt=0, le=1_000_000, allow_inf_nan=False)
    """Assumed output throughput of one self-hosted replica, for its cost per 1M tokens (an estimate:
    measure yours and set it). Default 1500 tokens/s; finite, at most 1,000,000."""

    tracing: bool = True
    """Trace every call: an OpenTelemetry Collector next to the gateway receives OTLP from the Envoy
    proxies and the router and exports to a workspace-based Application Insights. Default True."""

    grafana: ManagedGrafanaArgs | None = None
    """Azure Managed Grafana over the stack's Prometheus workspace. Default None."""

    router_models_volume: str | None = Field(None, pattern=DNS_LABEL.pattern)
    """An existing PVC in ``vllm-semantic-router-system`` that already holds the router's model directories.
    Default None: they are copied from the stack's model store (``model_store``) under
    ``semantic-router/v0.3.0/models/<model>/`` before the router starts. One of the two is required: the
    router never downloads from the internet."""

    @model_validator(mode="after")
    def _one_trace_destination(self) -> SemanticRouterGatewayArgs:
        # With tracing the component points the Envoy proxies at its own collector (SemanticRouterGateway).
        if self.tracing and self.gateway.tracing_endpoint is not None:
            why = (
                "with tracing true (the default) the proxies send their traces to the gateway's own collector, which "
                "exports to Application Insights, in place of this one: set tracing false to send them here"
            )
            raise FieldProblem("gateway.tracing_endpoint", self.gateway.tracing_endpoint.model_dump(), why)
        return self


@dataclass(frozen=True)
class GatewaySecrets:
    """The keys the gateway holds, as Pulumi secrets."""

    vllm_api_key: pulumi.Input[str] | None = None
    """The key the vLLM services require. Required when ``models`` has any."""
    client_keys: Mapping[str, pulumi.Input[str]] = field(default_factory=dict)
    """API key per gateway client id, exactly the ids in ``gateway.client_ids`` (none with Entra ID tokens)."""


@dataclass(frozen=True)
class SharedServices:
    """What else of the stack the gateway uses."""

    kaito: Mapping[str, KaitoWorkspace] = field(default_factory=dict)
    """KAITO workspaces to route to besides the vLLM services, by name. Default none."""
    dynamo: Mapping[str, DynamoInference] = field(default_factory=dict)
    """Dynamo frontends to route to besides the vLLM services, by name. Default none."""
    model_store: ModelStore | None = None
    """Where the router's classifier models are copied from, unless ``router_models_volume`` is set."""
    prometheus: ManagedPrometheus | str | None = None
    """The stack's ManagedPrometheus (or an Azure Monitor workspace ID), which Grafana reads. Needed for ``grafana``."""


def semantic_router_gateway_problems(
    args: SemanticRouterGatewayArgs,
    models: Mapping[str, ServedModel],
    secrets: GatewaySecrets,
    shared: SharedServices,
    *,
    region: str = catalog.REFERENCE_REGION,
) -> list[FieldProblem]:
    """Every problem with what a ``SemanticRouterGateway`` is given; none if it can be built. ``region``: where the
    self-hosted models run, whose list prices cost their tokens."""
    problems = []
    if not models and not shared.kaito and not shared.dynamo:
        problems.append(FieldProblem("models", [], "route to at least one self-hosted model (the cheap path)"))
    if not args.azure_openai.deployments:
        problems.append(FieldProblem("azure_openai.deployments", [], "add the frontier model deployment"))
    problems += _served_name_problems(models) + _price_problems(models, shared, region)
    if models and secrets.vllm_api_key is None:
        problems.append(FieldProblem("secrets.vllm_api_key", None, "the vLLM services require their API key (a Pulumi secret)"))
    if shared.model_store is None and args.router_models_volume is None:
        problems.append(
            FieldProblem(
                "router_models_volume",
                None,
                "the router needs its classifier models without internet access: configure a model_store "
                "(they are copied from it) or name a pre-filled PVC",
            )
        )
    if args.grafana and shared.prometheus is None:
        problems.append(FieldProblem("grafana", "set", "needs the stack's managed Prometheus workspace"))
    return problems


def _served_name_problems(models: Mapping[str, ServedModel]) -> list[FieldProblem]:
    return [
        FieldProblem(
            "models",
            service.served_model_name,
            f"routed model names are lower-case letters, digits, '.', '_' or '-': set served_model_name on "
            f"{service.service_name!r} (e.g. {service.service_name!r})",
        )
        for service in models.values()
        if not router_config.MODEL_NAME.match(service.served_model_name)
    ]


def _price_problems(models: Mapping[str, ServedModel], shared: SharedServices, region: str) -> list[FieldProblem]:
    sizes = [("models", service.service_name, service.pool_sku.name) for service in models.values()]
    sizes += [("kaito", workspace.service_name, workspace.instance_type) for workspace in shared.kaito.values()]
    sizes += [("dynamo", inference.service_name, inference.pool_sku.name) for inference in shared.dynamo.values()]
    return [
        FieldProblem(section, name, f"{catalog.no_price(size, region)}, so its cost per token is unknown")
        for section, name, size in sizes
        if catalog.vm_price(size, region) is None
    ]


def replica_usd_per_hour(sku: catalog.GpuSku, gpus: int, region: str) -> float:
    """One replica's share of its VM's list price in ``region``: ``gpus`` of the size's GPUs."""
    hourly = catalog.vm_price(sku.name, region)
    if hourly is None:
        raise ValueError(catalog.no_price(sku.name, region))
    return hourly * gpus / sku.gpus


def _self_hosted(model: str, endpoint: str, usd_per_hour: float, tokens_per_second: float) -> router_config.RouterModel:
    """A self-hosted router model priced at its hourly share over an assumed throughput (an estimate)."""
    cost = round(self_hosted_cost_per_million(usd_per_hour, tokens_per_second), 4)
    return router_config.RouterModel(
        name=model, kind="self-hosted", endpoint=endpoint, prompt_usd_per_million=cost, completion_usd_per_million=cost
    )


def router_models(
    args: SemanticRouterGatewayArgs,
    models: Mapping[str, ServedModel],
    shared: SharedServices,
    *,
    region: str = catalog.REFERENCE_REGION,
) -> list[router_config.RouterModel]:
    """The router's models with their cost per 1M tokens at ``region``'s list prices: self-hosted first, then the Azure
    OpenAI deployments."""
    tokens_per_second = args.self_hosted_tokens_per_second
    found = []
    for service in models.values():
        # A replica holds tp GPUs of a VM with more; charge it its share of the VM (with prefill/decode,
        # the prefill engines' GPUs too: the decode engines write the tokens).
        share = replica_usd_per_hour(service.pool_sku, service.gpus_per_decoder, region)
        endpoint = f"{service.service_name}.{service.namespace}.svc.cluster.local:{VLLM_PORT}"
        found.append(_self_hosted(service.served_model_name, endpoint, share, tokens_per_second))
    for workspace in shared.kaito.values():
        # KAITO runs one replica per node set: charge it all ``count`` nodes of its size.
        hourly = catalog.vm_price(workspace.instance_type, region)
        endpoint = f"{workspace.service_name}.{workspace.namespace}.svc.cluster.local:{KAITO_SERVICE_PORT}"
        found.append(_self_hosted(workspace.served_model_name, endpoint, hourly * workspace.count, tokens_per_second))
    for inference in shared.dynamo.values():
        # Every Dynamo worker owns a whole node (its full NIC claim): charge them all; the CPU frontend is free.
        hourly = catalog.vm_price(inference.pool_sku.name, region) * inference.worker_nodes
        endpoint = f"{inference.service_name}.{inference.namespace}.svc.cluster.local:{DYNAMO_FRONTEND_PORT}"
        found.append(_self_hosted(inference.served_model_name, endpoint, hourly, tokens_per_second))
    for deployment in args.azure_openai.deployments:
        found.append(
            router_config.RouterModel(
                name=deployment.name,
                kind="azure-openai",
                endpoint=f"{args.azure_openai.account_name}.openai.azure.com:443",
                prompt_usd_per_million=deployment.prompt_per_1m,
                completion_usd_per_million=deployment.completion_per_1m,
            )
        )
    return found


def router_config_args(
    name: str,
    args: SemanticRouterGatewayArgs,
    models: Mapping[str, ServedModel],
    shared: SharedServices,
    *,
    region: str = catalog.REFERENCE_REGION,
) -> router_config.RouterConfigArgs:
    """The router's config, checked: a problem is refused as the gateway's, naming its key."""
    found = router_models(args, models, shared, region=region)
    cheap, frontier = found[0].name, args.azure_openai.deployments[0].name
    try:
        return router_config.RouterConfigArgs(
            models=found,
            decisions=args.decisions if args.decisions is not None else router_config.default_decisions(cheap, frontier),
            default_model=args.default_model or cheap,
            guards=args.guards,
            cache=args.cache,
            tracing_endpoint=(
                f"{TRACE_COLLECTOR}.{args.gateway.namespace}.svc.cluster.local:{OTLP_PORT}" if args.tracing else None
            ),
        )
    except ValidationError as err:
        # The router config is built here from the gateway's settings: blame those, without pydantic's internals.
        problems = validation_problems(err, "gateway")
        raise ComponentInputError(f"SemanticRouterGateway {name!r}: invalid arguments", problems) from None


def frontier_backends(args: SemanticRouterGatewayArgs) -> list[GatewayBackend]:
    """One Azure OpenAI backend per deployment, named ``aoai-<deployment>``."""
    return [
        GatewayBackend(
            name="aoai-" + re.sub(r"[^a-z0-9-]", "-", d.name.lower()),
            model=d.name,
            kind="azure-openai",
            hostname=f"{args.azure_openai.account_name}.openai.azure.com",
        )
        for d in args.azure_openai.deployments
    ]


def self_hosted_backends(
    models: Mapping[str, ServedModel], shared: SharedServices, vllm_api_key: pulumi.Input[str] | None
) -> list[GatewayBackend]:
    """The vLLM services (each with its fallback), then the KAITO workspaces, then the Dynamo frontends, as gateway backends,
    each waiting for the model it serves."""
    return [
        *(
            replace(
                GatewayBackend.from_vllm(service, service.namespace, service.served_model_name, vllm_api_key),
                fallback=service.fallback,
                after=(service,),
            )
            for service in models.values()
        ),
        *(replace(GatewayBackend.from_kaito(workspace), after=(workspace,)) for workspace in shared.kaito.values()),
        *(replace(GatewayBackend.from_dynamo(inference), after=(inference,)) for inference in shared.dynamo.values()),
    ]
