"""SemanticRouter: the vLLM Semantic Router as the AI gateway's external processor.

It classifies each request (topic, keywords, optional PII and jailbreak guards) and rewrites the
model to the one its decisions pick, so a single endpoint sends easy calls to the self-hosted model
and hard ones to the frontier model (seed 000). The config is rendered from ``RouterConfigArgs``,
validated before anything exists.

The router is attached with an ``EnvoyExtensionPolicy`` (Envoy Gateway's ext_proc API), which Envoy
Gateway orders after authentication; the gateway's ``EnvoyProxy`` filter order puts it after rate
limiting and before the AI Gateway's own ext_proc (``ai_gateway.FILTER_ORDER``). Its classifier
models come from the model store through a Job (``RouterModels``) or from a pre-filled volume,
never from the internet: the pod runs with the Hugging Face client offline.
"""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from .._base import PACKAGE, Children, validate_args
from .._k8s import KubernetesObject
from ..core.images import relocate
from ..core.security import restricted_namespace
from . import router_config
from .router_models import RouterModels

NAMESPACE = router_config.VSR_NAMESPACE
RELEASE = router_config.VSR_SERVICE
METRICS_PORT = 9190
GATEWAY_NAMESPACE = "envoy-gateway-system"
"""Where Envoy Gateway runs the data-plane pods that call the router."""
MESSAGE_TIMEOUT = "10s"
"""How long Envoy waits for each ext_proc answer; Envoy Gateway's 200 ms default is shorter than a
classifier pass on CPU (api/v1alpha1/ext_proc_types.go)."""

ROUTER_UID = 65532
"""The router image sets no USER; the pod runs as this non-root UID so that the restricted profile admits it."""

OFFLINE_ENV = [
    # The router's downloader shells out to the Hugging Face CLI for any model directory that is
    # incomplete (src/semantic-router/pkg/modeldownload/downloader.go); offline, it fails at once
    # instead of reaching the internet.
    {"name": "HF_HUB_OFFLINE", "value": "1"},
]


def chart_values(config: dict, models_claim: str, image_registry: str | None = None) -> dict:
    """Values for semantic-router chart 0.3.0 (read at vllm-project/semantic-router@v0.3.0:deploy/helm/semantic-router)."""
    return {
        "image": {
            "repository": relocate(router_config.VSR_IMAGE_REPOSITORY, image_registry),
            "tag": f"v{router_config.VSR_VERSION}",
        },
        # templates/configmap.yaml reads .Values.config (it has no configOverride: Helm would drop it).
        "config": config,
        # The chart's defaults ({} and no drop/seccomp) fail the namespace's restricted profile.
        "podSecurityContext": {
            "runAsNonRoot": True,
            "runAsUser": ROUTER_UID,
            "runAsGroup": ROUTER_UID,
            "fsGroup": ROUTER_UID,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}, "runAsNonRoot": True},
        # The models volume is ours (filled before the router starts); templates/pvc.yaml creates none then.
        "persistence": {"enabled": True, "existingClaim": models_claim},
        "extraEnv": list(OFFLINE_ENV),
    }


def extension_policy(gateway_name: str, gateway_namespace: str, service_host_port: tuple[str, int]) -> dict:
    """The router as the Gateway's ext_proc: request bodies buffered (it reads the prompt), responses too,
    with mode override so that the router switches ``text/event-stream`` responses to streamed
    (src/semantic-router/pkg/extproc/processor_res_header_runtime.go:109-129)."""
    service, port = service_host_port
    return {
        "apiVersion": "gateway.envoyproxy.io/v1alpha1",
        "kind": "EnvoyExtensionPolicy",
        "metadata": {"name": f"{gateway_name}-semantic-router", "namespace": gateway_namespace},
        "spec": {
            "targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": gateway_name}],
            "extProc": [
                {
                    "backendRefs": [{"name": service, "namespace": NAMESPACE, "port": port}],
                    "processingMode": {
                        "request": {"body": "Buffered"},
                        "response": {"body": "Buffered"},
                        "allowModeOverride": True,
                    },
                    "messageTimeout": MESSAGE_TIMEOUT,
                    # Closed: without the router, "MoM" requests have no model and must not pass.
                    "failOpen": False,
                }
            ],
        },
    }


def reference_grant(gateway_namespace: str) -> dict:
    """Lets an EnvoyExtensionPolicy in the gateway's namespace name the router's Service
    (Envoy Gateway refuses cross-namespace backendRefs without one: internal/gatewayapi/validate.go)."""
    return {
        "apiVersion": "gateway.networking.k8s.io/v1beta1",
        "kind": "ReferenceGrant",
        "metadata": {"name": f"{gateway_namespace}-extproc", "namespace": NAMESPACE},
        "spec": {
            "from": [{"group": "gateway.envoyproxy.io", "kind": "EnvoyExtensionPolicy", "namespace": gateway_namespace}],
            "to": [{"group": "", "kind": "Service", "name": RELEASE}],
        },
    }


class SemanticRouter(pulumi.ComponentResource):
    """The router release, its models volume, its ext_proc hook on a Gateway, and a NetworkPolicy that only
    the gateway passes."""

    service_host: str
    config: dict
    models: list[str]

    def __init__(
        self,
        name: str,
        args: router_config.RouterConfigArgs | dict,
        gateway_name: str,
        gateway_namespace: str,
        provider: k8s.Provider,
        opts: pulumi.ResourceOptions | None = None,
        *,
        models: RouterModels | str,
        image_registry: str | None = None,
    ):
        """
        :param name: Logical name; children are named ``<name>-chart``, ``<name>-extproc`` and so on.
        :param args: Models, decisions, guards and cache, a ``RouterConfigArgs`` or a dict of its fields.
        :param gateway_name: The Gateway whose listener gets the ext_proc filter.
        :param gateway_namespace: Its namespace.
        :param provider: Kubernetes provider of the cluster.
        :param opts: Standard Pulumi resource options.
        :param models: Where the classifier models come from: a ``RouterModels`` (copied from the model
            store before the router starts) or the name of an existing PVC in ``vllm-semantic-router-system``
            that already holds them under the directory names of ``router_config.required_models``.
        :param image_registry: Pull the router image from this registry instead of ghcr.io. Default None.
        """
        args = validate_args(router_config.RouterConfigArgs, args, "SemanticRouter", name)
        self.config = router_config.render(args)
        self.models = router_config.required_models(args)
        super().__init__(f"{PACKAGE}:index:SemanticRouter", name, None, opts)
        # Children wait for what the component waits for (the namespace is often created by a sibling).
        child = Children(self, opts, provider).opts()
        self.service_host = f"{RELEASE}.{NAMESPACE}.svc.cluster.local"
        namespace = k8s.core.v1.Namespace(f"{name}-namespace", metadata=restricted_namespace(NAMESPACE), opts=child)
        after_namespace = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[namespace]))
        if isinstance(models, RouterModels):
            claim, ready = models.claim_name, models.fill(f"{name}-models", self.models, NAMESPACE, after_namespace)
        else:
            claim, ready = models, []
        k8s.helm.v4.Chart(
            f"{name}-chart",
            name=RELEASE,
            chart=router_config.VSR_CHART,
            version=router_config.VSR_CHART_VERSION,
            namespace=NAMESPACE,
            values=chart_values(self.config, claim, image_registry),
            # The router starts only once its models are on the volume (the Job has completed).
            opts=pulumi.ResourceOptions.merge(after_namespace, pulumi.ResourceOptions(depends_on=ready)),
        )
        k8s.networking.v1.NetworkPolicy(
            f"{name}-ingress",
            metadata={"name": RELEASE, "namespace": NAMESPACE},
            spec={
                "podSelector": {"matchLabels": {"app.kubernetes.io/instance": RELEASE}},
                "policyTypes": ["Ingress"],
                "ingress": [
                    # Only the gateway's Envoy pods call the router.
                    {
                        "from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": GATEWAY_NAMESPACE}}}],
                        "ports": [{"port": router_config.VSR_EXTPROC_PORT, "protocol": "TCP"}],
                    },
                    # Managed Prometheus (ama-metrics in kube-system) scrapes the router's metrics.
                    {
                        "from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}}}],
                        "ports": [{"port": METRICS_PORT, "protocol": "TCP"}],
                    },
                ],
            },
            opts=after_namespace,
        )
        grant = KubernetesObject(f"{name}-reference-grant", reference_grant(gateway_namespace), after_namespace)
        KubernetesObject(
            f"{name}-extproc",
            extension_policy(gateway_name, gateway_namespace, (RELEASE, router_config.VSR_EXTPROC_PORT)),
            pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[grant])),
        )
        self.register_outputs({"service_host": self.service_host, "models": self.models})
