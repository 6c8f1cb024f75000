"""SemanticRouterGateway: one OpenAI-compatible endpoint in front of the self-hosted models (vLLM
services and KAITO workspaces) and an Azure OpenAI frontier model (seed 000). Clients send
``model: "MoM"`` (router 0.3.0's auto-routing name, ``router_config.auto_model_names``) and the
semantic router picks the model per call; every call is authenticated, token-metered and traced.

It composes the pieces: AzureOpenAI (keys off) with an Entra token refresher under workload
identity, AiGateway (Envoy Gateway + Envoy AI Gateway), SemanticRouter as its external processor,
PodMonitors so managed Prometheus scrapes gateway and router, and Managed Grafana.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

import pulumi
import pulumi_kubernetes as k8s

from .._base import PACKAGE, Children, kubernetes_provider, raise_problems, validate_args
from ..azure import AzureOpenAI, ManagedGrafana, WorkloadIdentity
from ..context import ClusterContext
from ..core import catalog, pins
from ..core.images import relocate
from . import router_config
from .ai_gateway import AiGateway
from .ai_gateway_args import TracingEndpoint
from .ai_gateway_controllers import AIGW_ADMIN_PORT, EG_NAMESPACE
from .router_models import RouterModels
from .semantic_router import SemanticRouter
from .semantic_router_gateway_args import (
    TRACE_COLLECTOR,
    GatewaySecrets,
    SemanticRouterGatewayArgs,
    SharedServices,
    frontier_backends,
    router_config_args,
    self_hosted_backends,
    semantic_router_gateway_problems,
)
from .token_refresher import IMAGE as REFRESHER_IMAGE
from .token_refresher import EntraTokenRefresher, EntraTokenRefresherArgs
from .tracing import COLLECTOR_IMAGE, OTLP_PORT, TraceCollector, TraceCollectorArgs

if TYPE_CHECKING:
    from ..serving.service_facts import ServedModel

REFRESHER = "aoai-token"
"""In-cluster name of the Entra token refresher (its service account in the gateway's namespace)."""


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
        opts: pulumi.ResourceOptions | None = None,
        *,
        cluster: ClusterContext,
        models: Mapping[str, ServedModel],
        secrets: GatewaySecrets,
        shared: SharedServices | None = None,
    ):
        """
        :param name: Logical name; children are named ``<name>-openai``, ``<name>-gateway`` and so on.
        :param args: Settings, a ``SemanticRouterGatewayArgs`` or a dict of its fields.
        :param opts: Standard Pulumi resource options; a Kubernetes ``provider`` here is the one the children use.
        :param cluster: The AKS cluster (``AksCluster.context``): its Kubernetes provider, its OIDC issuer (for
            the token refresher's, the router's and the collector's workload identities), and the resource
            group and region that Azure OpenAI, the identities, Application Insights and Grafana go into.
        :param models: The self-hosted VllmServices to route to, by name.
        :param secrets: The key the vLLM services require, and the API key per gateway client id.
        :param shared: KAITO workspaces and Dynamo frontends to route to as well, the model store the router's models are copied
            from, and the Prometheus workspace Grafana reads. Default: none of them.
        """
        args = validate_args(SemanticRouterGatewayArgs, args, "SemanticRouterGateway", name)
        shared = shared or SharedServices()
        cluster.require("SemanticRouterGateway", name, "oidc_issuer_url", "location")
        # Self-hosted tokens are priced at the cluster's region (the catalog's reference region when it is not text).
        region = cluster.location if isinstance(cluster.location, str) else catalog.REFERENCE_REGION
        problems = semantic_router_gateway_problems(args, models, secrets, shared, region=region)
        raise_problems("SemanticRouterGateway", name, problems)
        config = router_config_args(name, args, models, shared, region=region)
        # What lands in a model's namespace (NetworkPolicies, an InferencePool's key and grant) waits for that model
        # (GatewayBackend.after), not the whole gateway for every model: with many models, every child waiting for
        # every model's every resource costs Pulumi's dependency checks (and the plan) quadratic time.
        super().__init__(f"{PACKAGE}:index:SemanticRouterGateway", name, None, opts)
        # Every child, nested components included, uses the provider of opts where given, else the cluster's.
        cluster = replace(cluster, provider=kubernetes_provider(opts, cluster.provider))
        # Children wait for what the component waits for (the models' namespaces and services).
        children, on_cluster = Children(self, opts), Children(self, opts, cluster.provider)
        child = children.opts()
        gateway_namespace = args.gateway.namespace
        registry = args.gateway.image_registry

        openai = AzureOpenAI(f"{name}-openai", args.azure_openai, opts=child, scope=cluster.scope)
        identity = WorkloadIdentity(
            f"{name}-{REFRESHER}", {"namespace": gateway_namespace, "service_account": REFRESHER}, opts=child, cluster=cluster
        )
        grant = openai.grant_use(identity)
        frontier = frontier_backends(args)
        gateway_args = args.gateway
        if args.tracing:
            collector = TracingEndpoint(service=TRACE_COLLECTOR, namespace=gateway_namespace, port=OTLP_PORT)
            gateway_args = gateway_args.model_copy(update={"tracing_endpoint": collector})
        gateway = AiGateway(
            f"{name}-gateway",
            gateway_args,
            opts=child,
            backends=self_hosted_backends(models, shared, secrets.vllm_api_key) + frontier,
            client_keys=secrets.client_keys,
            cluster=cluster,
        )
        if args.tracing:
            # Named after the gateway so that two gateways never share a URN; the alias keeps the
            # collector of stacks deployed before the rename (it was named ``otel-collector``).
            TraceCollector(
                f"{name}-{TRACE_COLLECTOR}",
                TraceCollectorArgs(
                    namespace=gateway_namespace, kube_name=TRACE_COLLECTOR, image=relocate(COLLECTOR_IMAGE, registry)
                ),
                opts=children.opts(gateway, aliases=[pulumi.Alias(name=TRACE_COLLECTOR)]),
                cluster=cluster,
            )
        EntraTokenRefresher(
            f"{name}-{REFRESHER}",
            EntraTokenRefresherArgs(
                namespace=gateway_namespace,
                secret_names=[b.secret_name for b in frontier],
                kube_name=REFRESHER,
                image=relocate(REFRESHER_IMAGE, registry),
            ),
            # The refresher takes its Kubernetes provider from its options: it has no cluster context.
            opts=on_cluster.opts(grant, gateway, aliases=[pulumi.Alias(name=REFRESHER)]),
            identity=identity,
        )
        router = SemanticRouter(
            f"{name}-router",
            config,
            opts=children.opts(gateway),
            gateway=gateway.ref,
            models=args.router_models_volume or RouterModels(shared.model_store),
            cluster=cluster,
        )
        self._pod_monitors(name, args, on_cluster.opts(), [gateway, router])
        self.endpoint, self.address_command, self.routes = gateway.endpoint, gateway.address_command, gateway.routes
        self.cost_per_million = {m.name: (m.prompt_usd_per_million, m.completion_usd_per_million) for m in config.models}
        outputs = {"endpoint": self.endpoint, "routes": self.routes, "cost_per_million": self.cost_per_million}
        if args.grafana:
            grafana = ManagedGrafana(
                f"{name}-grafana", args.grafana, opts=child, scope=cluster.scope, prometheus=shared.prometheus
            )
            self.grafana_endpoint, self.dashboard_import = grafana.endpoint, grafana.import_command
            outputs.update(grafana_endpoint=grafana.endpoint, dashboard_import=grafana.import_command)
        self.register_outputs(outputs)

    @staticmethod
    def _pod_monitors(
        name: str, args: SemanticRouterGatewayArgs, opts: pulumi.ResourceOptions, after: list[pulumi.Resource]
    ) -> None:
        """Managed Prometheus scrapes the Envoy proxies (token usage, latency) and the router (decisions)."""
        targets = {
            # Envoy Gateway labels each proxy pod with its Gateway. The envoy container's "metrics" port
            # serves /stats/prometheus; the GenAI metrics the dashboard reads (gen_ai_client_token_usage,
            # gen_ai_server_request_duration) come from the ai-gateway-extproc sidecar that AIGW injects,
            # whose only port, "aigw-admin" (1064), serves /metrics and /health ("aigw-metrics" went in v0.5)
            # (envoyproxy/ai-gateway@v1.1.0:internal/controller/extproc_builder.go:31-32,163-189).
            "gateway": (
                EG_NAMESPACE,
                {"gateway.envoyproxy.io/owning-gateway-name": args.gateway.gateway_name},
                [("metrics", "/stats/prometheus"), (AIGW_ADMIN_PORT, "/metrics")],
            ),
            # The router chart's release label; metrics on port 9190 (vllm-project/semantic-router docs).
            "router": (
                router_config.VSR_NAMESPACE,
                {"app.kubernetes.io/instance": router_config.VSR_SERVICE},
                [("metrics", "/metrics")],
            ),
        }
        for role, (namespace, labels, endpoints) in targets.items():
            k8s.apiextensions.CustomResource(
                f"{name}-{role}-podmonitor",
                api_version=pins.api_version("PodMonitor"),
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
