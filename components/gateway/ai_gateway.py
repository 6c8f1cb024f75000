"""AiGateway: one authenticated, token-metered OpenAI-compatible front door for every model.

Envoy Gateway (data plane and global rate limiting) with Envoy AI Gateway (model routing, token
accounting, upstream credentials) routes ``/v1/chat/completions`` and friends by the request's
``model`` (AIGW copies it into the ``x-ai-eg-model`` header) to self-hosted vLLM services or Azure
OpenAI deployments. Clients authenticate with per-client API keys (``Authorization: Bearer <key>``,
so the ``openai`` client works unchanged) and optionally with Entra ID tokens; each client gets an
hourly token budget, counted from the model's reported usage and shared across Envoy replicas
through Redis. NetworkPolicies let only the gateway's data plane reach the vLLM pods, so the
gateway's keys and budgets cannot be bypassed from inside the cluster.

Its args and checks are in ``ai_gateway_args``, the objects it renders in ``ai_gateway_manifests``
and the controllers it installs in ``ai_gateway_controllers``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from .._base import PACKAGE, Children, kubernetes_provider, raise_problems, validate_args
from ..context import ClusterContext
from ..core.security import restricted_namespace
from . import ai_gateway_controllers as controllers
from . import ai_gateway_manifests as manifests
from . import ai_gateway_routes as gateway_routes
from .ai_gateway_args import AiGatewayArgs, GatewayBackend, GatewayRef
from .ai_gateway_checks import gateway_problems


class _CustomResources:
    """Creates the gateway's custom resources: named ``<component>-<resource>``, in its namespace, after
    the CRDs and the namespace exist."""

    def __init__(self, name: str, namespace: str, opts: pulumi.ResourceOptions):
        self.name, self.namespace, self.opts = name, namespace, opts

    def add(
        self,
        resource: str,
        kind: str,
        obj_name: str,
        spec: dict[str, Any],
        *,
        namespaced: bool = True,
        needs: Iterable = (),
        namespace: str | None = None,
    ) -> k8s.apiextensions.CustomResource:
        """``namespace``: another namespace than the gateway's (one the component waits for)."""
        metadata = {"name": obj_name, **({"namespace": namespace or self.namespace} if namespaced else {})}
        needs = list(needs)
        options = pulumi.ResourceOptions.merge(self.opts, pulumi.ResourceOptions(depends_on=needs)) if needs else self.opts
        return k8s.apiextensions.CustomResource(
            f"{self.name}-{resource}",
            api_version=manifests.API_VERSIONS[kind],
            kind=kind,
            metadata=metadata,
            spec=spec,
            opts=options,
        )


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

    Outputs: ``endpoint`` (or None), ``address_command``, ``routes`` (model -> backend name). ``ref``
    names the Gateway for components that attach to it (``SemanticRouter``).
    """

    endpoint: str | None
    address_command: str
    routes: dict[str, str]
    ref: GatewayRef

    def __init__(
        self,
        name: str,
        args: AiGatewayArgs | dict,
        opts: pulumi.ResourceOptions | None = None,
        *,
        backends: list[GatewayBackend],
        client_keys: Mapping[str, pulumi.Input[str]],
        cluster: ClusterContext | None = None,
    ):
        """
        :param name: Logical name; children are named ``<name>-<object>``.
        :param args: Settings, an ``AiGatewayArgs`` or a dict of its fields.
        :param opts: Standard Pulumi resource options; a Kubernetes ``provider`` (or ``providers`` entry)
            here is the one the children use.
        :param backends: The models to route to, ``GatewayBackend`` each; model names must be unique.
        :param client_keys: API key per client id (Pulumi secrets), exactly the ids in ``client_ids``.
        :param cluster: The cluster the gateway runs in; its ``provider`` is used unless ``opts`` names one.
            Default None: the ambient kubeconfig.
        """
        args = validate_args(AiGatewayArgs, args, "AiGateway", name)
        backends = list(backends)
        raise_problems("AiGateway", name, gateway_problems(args, backends, client_keys))
        super().__init__(f"{PACKAGE}:index:AiGateway", name, None, opts)
        provider = kubernetes_provider(opts, cluster.provider if cluster else None)
        # Children wait for what the component waits for; what lands in a model's namespace waits for its backend's
        # ``after`` too.
        child = Children(self, opts, provider).opts()
        gateway_namespace = k8s.core.v1.Namespace(f"{name}-ns-gateway", metadata=restricted_namespace(args.namespace), opts=child)
        pools = [b for b in backends if b.kind == "inference-pool"]
        # Both controllers look for the InferencePool CRD once, at start-up: they start after the pools' models, which
        # wait for it.
        first = [r for b in pools for r in b.after]
        installed = self._controllers(name, args, child, bool(pools), first) if args.install_controllers else []
        # Gateway API, Envoy Gateway and AI Gateway kinds exist only once the charts' CRDs are applied.
        after = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[gateway_namespace, *installed]))
        custom = _CustomResources(name, args.namespace, after)
        in_namespace = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[gateway_namespace]))

        self._gateway(name, args, client_keys, custom, in_namespace)
        for backend in backends:
            self._backend(name, args, backend, custom, (in_namespace, child))
        for route in gateway_routes.routes(args, backends):
            created = custom.add(route.role, "AIGatewayRoute", route.name, route.spec)
            if route.retry is not None:
                # After its route: the policy targets the HTTPRoute AI Gateway makes of it.
                custom.add(f"{route.role}-retry", "BackendTrafficPolicy", route.name, route.retry, needs=[created])
        after = {b.name: b.after for b in backends}
        for policy in manifests.backend_network_policies(args, backends):
            # In a model's namespace: after the models that create it.
            waits = [r for backend in policy.backends for r in after[backend]]
            k8s.networking.v1.NetworkPolicy(
                f"{name}-netpol-{policy.role}",
                metadata=policy.metadata,
                spec=policy.spec,
                opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=waits)) if waits else child,
            )

        self.ref = args.ref
        self.routes = {b.model: b.name for b in backends}
        self.endpoint = f"http://{args.load_balancer_ip}/v1" if args.load_balancer_ip else None
        self.address_command = (
            f"kubectl get gateway {args.gateway_name} -n {args.namespace} -o jsonpath='{{.status.addresses[0].value}}'"
        )
        self.register_outputs({"endpoint": self.endpoint, "address_command": self.address_command, "routes": self.routes})

    @staticmethod
    def _gateway(
        name: str,
        args: AiGatewayArgs,
        client_keys: Mapping[str, pulumi.Input[str]],
        custom: _CustomResources,
        in_namespace: pulumi.ResourceOptions,
    ) -> None:
        """The GatewayClass, EnvoyProxy and Gateway, and the policies on the Gateway (with the client keys)."""
        gw = args.gateway_name
        custom.add("gatewayclass", "GatewayClass", gw, {"controllerName": manifests.CONTROLLER_NAME}, namespaced=False)
        custom.add("envoyproxy", "EnvoyProxy", gw, manifests.envoy_proxy_spec(args))
        custom.add("gateway", "Gateway", gw, manifests.gateway_spec(args))
        custom.add("client-traffic", "ClientTrafficPolicy", gw, manifests.client_traffic_spec(args))
        needs = []
        if args.auth == "api-key":
            needs.append(
                k8s.core.v1.Secret(
                    f"{name}-client-keys",
                    metadata={"name": f"{gw}-client-keys", "namespace": args.namespace},
                    type="Opaque",
                    string_data={client: pulumi.Output.secret(client_keys[client]) for client in args.client_ids},
                    opts=in_namespace,
                )
            )
        custom.add("security", "SecurityPolicy", gw, manifests.security_spec(args), needs=needs)
        custom.add("token-limits", "BackendTrafficPolicy", gw, manifests.traffic_spec(args))

    @staticmethod
    def _backend(
        name: str,
        args: AiGatewayArgs,
        b: GatewayBackend,
        custom: _CustomResources,
        opts: tuple[pulumi.ResourceOptions, pulumi.ResourceOptions],
    ) -> None:
        """The backend's objects; an InferencePool's in the pool's namespace (``opts``: in the gateway's
        namespace, and in the model namespaces the component waits for)."""
        namespace = manifests.backend_namespace(args, b)
        # In a model's namespace (an InferencePool's key, policy and grant): after the model that creates it.
        in_namespace = (
            opts[0]
            if namespace == args.namespace
            else pulumi.ResourceOptions.merge(opts[1], pulumi.ResourceOptions(depends_on=list(b.after)))
        )
        secret = None
        if b.kind in ("self-hosted", "inference-pool"):
            secret = k8s.core.v1.Secret(
                f"{name}-{b.name}-api-key",
                metadata={"name": b.secret_name, "namespace": namespace},
                type="Opaque",
                string_data={"apiKey": pulumi.Output.secret(b.api_key_secret)},
                opts=in_namespace,
            )
        elsewhere = [] if namespace == args.namespace else list(b.after)
        for kind, spec in manifests.backend_specs(args, b).items():
            needs = [secret] if secret is not None and kind == "BackendSecurityPolicy" else []
            custom.add(f"{b.name}-{kind.lower()}", kind, b.name, spec, needs=needs + elsewhere, namespace=namespace)

    @staticmethod
    def _controllers(
        name: str, args: AiGatewayArgs, child: pulumi.ResourceOptions, pools: bool, first: list[pulumi.Resource]
    ) -> list[pulumi.Resource]:
        """Envoy Gateway (with the rate-limit Redis), the AI Gateway CRDs and its controller, from pinned charts;
        ``pools``: Envoy Gateway also serves InferencePool backends; both controllers start after ``first``."""

        def after(*resources: Any) -> pulumi.ResourceOptions:
            return pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=list(resources)))

        namespaces = {
            key: k8s.core.v1.Namespace(f"{name}-ns-{key}", metadata=restricted_namespace(value), opts=child)
            for key, value in (("eg", controllers.EG_NAMESPACE), ("aigw", controllers.AIGW_NAMESPACE))
        }
        in_eg = after(namespaces["eg"])
        redis = [
            k8s.apps.v1.Deployment(f"{name}-redis", **controllers.redis_deployment(args), opts=in_eg),
            k8s.core.v1.Service(f"{name}-redis-service", **controllers.redis_service(args), opts=in_eg),
            k8s.networking.v1.NetworkPolicy(f"{name}-redis-netpol", **controllers.redis_network_policy(args), opts=in_eg),
        ]
        # A v3 Release, not a v4 Chart: the chart's certgen Job (a pre-install hook) creates the TLS
        # Secrets the controller mounts, and only Release runs hooks (pulumi-kubernetes#3284).
        eg = k8s.helm.v3.Release(
            f"{name}-envoy-gateway",
            name=controllers.EG_RELEASE,
            chart=controllers.EG_CHART,
            version=args.eg_version,
            namespace=controllers.EG_NAMESPACE,
            values=controllers.eg_values(args, inference_pools=pools),
            opts=after(namespaces["eg"], *redis, *first),
        )
        crds = k8s.helm.v4.Chart(
            f"{name}-ai-gateway-crds",
            chart=controllers.AIGW_CRDS_CHART,
            version=args.aigw_version,
            namespace=controllers.AIGW_NAMESPACE,
            opts=after(namespaces["aigw"]),
        )
        controller = k8s.helm.v4.Chart(
            f"{name}-ai-gateway",
            chart=controllers.AIGW_CHART,
            version=args.aigw_version,
            namespace=controllers.AIGW_NAMESPACE,
            values=controllers.aigw_values(args),
            opts=after(namespaces["aigw"], crds, eg, *first),
        )
        return [eg, crds, controller]
