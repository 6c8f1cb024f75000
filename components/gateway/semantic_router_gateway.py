"""SemanticRouterGateway: one OpenAI-compatible endpoint in front of the self-hosted models (vLLM
services and KAITO workspaces) and an Azure OpenAI frontier model (seed 000). Clients send
``model: "MoM"`` (router 0.3.0's auto-routing name, ``router_config.auto_model_names``) and the
semantic router picks the model per call; every call is authenticated, token-metered and traced.

It composes the pieces: AzureOpenAI (keys off) with an Entra token refresher under workload
identity, AiGateway (Envoy Gateway + Envoy AI Gateway), SemanticRouter as its external processor,
PodMonitors so managed Prometheus scrapes gateway and router, and Managed Grafana.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import pulumi
import pulumi_kubernetes as k8s
from pydantic import Field, ValidationError

from .._base import PACKAGE, Children, ComponentInputError, StrictModel, fail, validate_args
from ..azure.azure_openai import AzureOpenAI, AzureOpenAIArgs
from ..azure.grafana import ManagedGrafana, ManagedGrafanaArgs
from ..azure.model_store import ModelStore
from ..azure.workload_identity import WorkloadIdentity
from ..context import ClusterContext
from ..core import catalog
from ..core.errors import validation_problems
from ..core.images import relocate
from ..serving.kaito_workspace import SERVICE_PORT as KAITO_SERVICE_PORT
from ..serving.kaito_workspace import KaitoWorkspace
from ..serving.vllm_service import VllmService
from . import router_config
from .ai_gateway import AIGW_ADMIN_PORT, AiGateway, AiGatewayArgs, GatewayBackend, TracingEndpoint
from .router_models import RouterModels
from .semantic_router import RELEASE as ROUTER_RELEASE
from .semantic_router import SemanticRouter
from .token_refresher import IMAGE as REFRESHER_IMAGE
from .token_refresher import EntraTokenRefresher
from .tracing import COLLECTOR_IMAGE, OTLP_PORT, TraceCollector

REFRESHER = "aoai-token"
TRACE_COLLECTOR = "otel-collector"


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

    router_models_volume: str | None = Field(None, pattern=r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
    """An existing PVC in ``vllm-semantic-router-system`` that already holds the router's model directories.
    Default None: they are copied from the stack's model store (``model_store``) under
    ``semantic-router/v0.3.0/models/<model>/`` before the router starts. One of the two is required: the
    router never downloads from the internet."""


def _self_hosted(model: str, endpoint: str, usd_per_hour: float, tokens_per_second: float) -> router_config.RouterModel:
    """A self-hosted router model priced at its hourly share over an assumed throughput (an estimate)."""
    cost = round(router_config.self_hosted_cost_per_million(usd_per_hour, tokens_per_second), 4)
    return router_config.RouterModel(
        name=model, kind="self-hosted", endpoint=endpoint, prompt_usd_per_million=cost, completion_usd_per_million=cost
    )


class SemanticRouterGateway(pulumi.ComponentResource):
    """Outputs: ``endpoint`` (or ``address_command``), ``routes`` (model -> backend), ``cost_per_million``
    (model -> (prompt, completion) USD, estimates), ``grafana_endpoint`` and ``dashboard_import``."""

    endpoint: pulumi.Input[str] | None
    address_command: str
    routes: dict[str, str]
    cost_per_million: dict[str, tuple[float, float]]

    def __init__(
        self,
        name: str,
        args: SemanticRouterGatewayArgs | dict,
        models: Mapping[str, VllmService],
        provider: k8s.Provider,
        resource_group_name: pulumi.Input[str],
        location: pulumi.Input[str],
        oidc_issuer_url: pulumi.Input[str],
        vllm_api_key: pulumi.Input[str],
        client_keys: Mapping[str, pulumi.Input[str]],
        prometheus=None,
        opts: pulumi.ResourceOptions | None = None,
        *,
        kaito: Mapping[str, KaitoWorkspace] | None = None,
        model_store: ModelStore | None = None,
    ):
        """
        :param name: Logical name; children are named ``<name>-openai``, ``<name>-gateway`` and so on.
        :param args: Settings, a ``SemanticRouterGatewayArgs`` or a dict of its fields.
        :param models: The self-hosted VllmServices to route to, by name.
        :param provider: Kubernetes provider of the cluster.
        :param resource_group_name: Resource group for Azure OpenAI, identities and Grafana.
        :param location: Azure region for them.
        :param oidc_issuer_url: The cluster's OIDC issuer, for the token refresher's workload identity.
        :param vllm_api_key: The key the vLLM services require (a Pulumi secret).
        :param client_keys: API key per gateway client id (Pulumi secrets).
        :param prometheus: The stack's ManagedPrometheus, for Grafana. Default None (no Grafana).
        :param opts: Standard Pulumi resource options.
        :param kaito: KAITO workspaces to route to as well, by name. Default none.
        :param model_store: Where the router's models are copied from, unless ``router_models_volume`` is set.
        """
        args = validate_args(SemanticRouterGatewayArgs, args, "SemanticRouterGateway", name)
        kaito = dict(kaito or {})
        config = self._router_config(name, args, models, kaito)
        if model_store is None and args.router_models_volume is None:
            fail(
                "SemanticRouterGateway",
                name,
                "router_models_volume",
                None,
                "the router needs its classifier models without internet access: configure a model_store "
                "(they are copied from it) or name a pre-filled PVC",
            )
        if args.grafana and prometheus is None:
            fail("SemanticRouterGateway", name, "grafana", "set", "needs the stack's managed Prometheus workspace")
        super().__init__(f"{PACKAGE}:index:SemanticRouterGateway", name, None, opts)
        # Children wait for what the component waits for (the models' namespaces and services).
        children = Children(self, opts)
        child = children.opts()
        on_cluster = Children(self, opts, provider).opts()
        gateway_namespace = args.gateway.namespace

        openai = AzureOpenAI(f"{name}-openai", args.azure_openai, resource_group_name, location, opts=child)
        identity = WorkloadIdentity(
            f"{name}-{REFRESHER}",
            {"namespace": gateway_namespace, "service_account": REFRESHER},
            cluster=ClusterContext(
                cluster_name=None, resource_group_name=resource_group_name, location=location, oidc_issuer_url=oidc_issuer_url
            ),
            opts=child,
        )
        grant = openai.grant_use(identity)
        frontier = [
            GatewayBackend(
                name="aoai-" + re.sub(r"[^a-z0-9-]", "-", d.name.lower()),
                model=d.name,
                kind="azure-openai",
                hostname=f"{args.azure_openai.account_name}.openai.azure.com",
            )
            for d in args.azure_openai.deployments
        ]
        self_hosted = [
            GatewayBackend.from_vllm(service, service.namespace, service.served_model_name, vllm_api_key)
            for service in models.values()
        ] + [GatewayBackend.from_kaito(workspace) for workspace in kaito.values()]
        registry = args.gateway.image_registry
        gateway_args = args.gateway
        if args.tracing:
            collector = TracingEndpoint(service=TRACE_COLLECTOR, namespace=gateway_namespace, port=OTLP_PORT)
            gateway_args = gateway_args.model_copy(update={"tracing_endpoint": collector})
        gateway = AiGateway(f"{name}-gateway", gateway_args, provider, self_hosted + frontier, client_keys, opts=child)
        if args.tracing:
            # Named after the gateway so that two gateways never share a URN; the alias keeps the
            # collector of stacks deployed before the rename (it was named ``otel-collector``).
            TraceCollector(
                f"{name}-{TRACE_COLLECTOR}",
                gateway_namespace,
                resource_group_name,
                location,
                provider,
                opts=children.opts(gateway, aliases=[pulumi.Alias(name=TRACE_COLLECTOR)]),
                oidc_issuer_url=oidc_issuer_url,
                kube_name=TRACE_COLLECTOR,
                image=relocate(COLLECTOR_IMAGE, registry),
            )
        EntraTokenRefresher(
            f"{name}-{REFRESHER}",
            gateway_namespace,
            [b.secret_name for b in frontier],
            identity,
            provider,
            opts=children.opts(grant, gateway, aliases=[pulumi.Alias(name=REFRESHER)]),
            kube_name=REFRESHER,
            image=relocate(REFRESHER_IMAGE, registry),
        )
        router_models = args.router_models_volume or RouterModels(
            model_store, oidc_issuer_url, resource_group_name, location, image_registry=registry
        )
        router = SemanticRouter(
            f"{name}-router",
            config,
            args.gateway.gateway_name,
            gateway_namespace,
            provider,
            opts=children.opts(gateway),
            models=router_models,
            image_registry=registry,
        )
        self._pod_monitors(name, args, on_cluster, [gateway, router])
        self.endpoint, self.address_command, self.routes = gateway.endpoint, gateway.address_command, gateway.routes
        self.cost_per_million = {m.name: (m.prompt_usd_per_million, m.completion_usd_per_million) for m in config.models}
        outputs = {"endpoint": self.endpoint, "routes": self.routes, "cost_per_million": self.cost_per_million}
        if args.grafana:
            grafana = ManagedGrafana(f"{name}-grafana", args.grafana, prometheus, resource_group_name, location, opts=child)
            self.grafana_endpoint, self.dashboard_import = grafana.endpoint, grafana.import_command
            outputs.update(grafana_endpoint=grafana.endpoint, dashboard_import=grafana.import_command)
        self.register_outputs(outputs)

    @staticmethod
    def _router_config(
        name: str, args: SemanticRouterGatewayArgs, models: Mapping[str, VllmService], kaito: Mapping[str, KaitoWorkspace]
    ) -> router_config.RouterConfigArgs:
        """Router models with their cost per 1M tokens, and the decisions; checked before anything exists."""
        if not models and not kaito:
            fail("SemanticRouterGateway", name, "models", [], "route to at least one self-hosted model (the cheap path)")
        if not args.azure_openai.deployments:
            fail("SemanticRouterGateway", name, "azure_openai.deployments", [], "add the frontier model deployment")
        for service in models.values():
            if not router_config.MODEL_NAME.match(service.served_model_name):
                fail(
                    "SemanticRouterGateway",
                    name,
                    "models",
                    service.served_model_name,
                    f"routed model names are lower-case letters, digits, '.', '_' or '-': set served_model_name on {service.service_name!r} (e.g. {service.service_name!r})",
                )
        router_models = []
        for service in models.values():
            hourly = service.pool_sku.price_usd_per_hour
            if hourly is None:
                fail(
                    "SemanticRouterGateway",
                    name,
                    "models",
                    service.service_name,
                    f"{service.pool_sku.name} has no list price in the catalog, so its cost per token is unknown",
                )
            # A replica holds tp GPUs of a VM with more; charge it its share of the VM.
            share = hourly * service.fit.tp / service.pool_sku.gpus
            endpoint = f"{service.service_name}.{service.namespace}.svc.cluster.local:8000"
            router_models.append(_self_hosted(service.served_model_name, endpoint, share, args.self_hosted_tokens_per_second))
        for workspace in kaito.values():
            # KAITO runs one replica per node set: charge it all ``count`` nodes of its size.
            hourly = catalog.get_sku(workspace.instance_type).price_usd_per_hour
            if hourly is None:
                fail(
                    "SemanticRouterGateway",
                    name,
                    "kaito",
                    workspace.service_name,
                    f"{workspace.instance_type} has no list price in the catalog, so its cost per token is unknown",
                )
            endpoint = f"{workspace.service_name}.{workspace.namespace}.svc.cluster.local:{KAITO_SERVICE_PORT}"
            router_models.append(
                _self_hosted(workspace.served_model_name, endpoint, hourly * workspace.count, args.self_hosted_tokens_per_second)
            )
        for deployment in args.azure_openai.deployments:
            router_models.append(
                router_config.RouterModel(
                    name=deployment.name,
                    kind="azure-openai",
                    endpoint=f"{args.azure_openai.account_name}.openai.azure.com:443",
                    prompt_usd_per_million=deployment.prompt_per_1m,
                    completion_usd_per_million=deployment.completion_per_1m,
                )
            )
        cheap, frontier = router_models[0].name, args.azure_openai.deployments[0].name
        try:
            return router_config.RouterConfigArgs(
                models=router_models,
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

    @staticmethod
    def _pod_monitors(name: str, args: SemanticRouterGatewayArgs, opts, after: list[pulumi.Resource]) -> None:
        """Managed Prometheus scrapes the Envoy proxies (token usage, latency) and the router (decisions)."""
        targets = {
            # Envoy Gateway labels each proxy pod with its Gateway. The envoy container's "metrics" port
            # serves /stats/prometheus; the GenAI metrics the dashboard reads (gen_ai_client_token_usage,
            # gen_ai_server_request_duration) come from the ai-gateway-extproc sidecar that AIGW injects,
            # whose only port, "aigw-admin" (1064), serves /metrics and /health ("aigw-metrics" went in v0.5)
            # (envoyproxy/ai-gateway@v1.1.0:internal/controller/extproc_builder.go:31-32,163-189).
            "gateway": (
                "envoy-gateway-system",
                {"gateway.envoyproxy.io/owning-gateway-name": args.gateway.gateway_name},
                [("metrics", "/stats/prometheus"), (AIGW_ADMIN_PORT, "/metrics")],
            ),
            # The router chart's release label; metrics on port 9190 (vllm-project/semantic-router docs).
            "router": ("vllm-semantic-router-system", {"app.kubernetes.io/instance": ROUTER_RELEASE}, [("metrics", "/metrics")]),
        }
        for role, (namespace, labels, endpoints) in targets.items():
            k8s.apiextensions.CustomResource(
                f"{name}-{role}-podmonitor",
                api_version="azmonitoring.coreos.com/v1",
                kind="PodMonitor",
                metadata={"name": f"{name}-{role}", "namespace": namespace},
                spec={
                    "selector": {"matchLabels": labels},
                    "podMetricsEndpoints": [{"port": port, "path": path, "interval": "30s"} for port, path in endpoints],
                    "labelLimit": 63,
                    "labelNameLengthLimit": 511,
                    "labelValueLengthLimit": 1023,
                },
                # The gateway and the router create the namespaces these land in.
                opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=after)),
            )
