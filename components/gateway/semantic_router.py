"""SemanticRouter: the vLLM Semantic Router as the AI gateway's external processor.

It classifies each request (topic, keywords, optional PII and jailbreak guards) and rewrites the
model to the one its decisions pick, so a single endpoint sends easy calls to the self-hosted model
and hard ones to the frontier model (seed 000). The config is rendered from ``RouterConfigArgs``,
validated before anything exists.

The router is attached with an ``EnvoyExtensionPolicy`` (Envoy Gateway's ext_proc API), which Envoy
Gateway orders after authentication; the gateway's ``EnvoyProxy`` filter order puts it after rate
limiting and before the AI Gateway's own ext_proc (``ai_gateway_manifests.FILTER_ORDER``). Its classifier
models come from the model store through a Job (``RouterModels``) or from a pre-filled volume,
never from the internet: the pod runs with the Hugging Face client offline.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from .._base import PACKAGE, Children, kubernetes_provider, raise_problems, validate_args
from .._k8s import KubernetesObject
from ..context import ClusterContext
from ..core import pins
from ..core.errors import FieldProblem
from ..core.images import relocate
from ..core.security import restricted_container, restricted_namespace, restricted_pod
from . import router_config, router_render
from .ai_gateway_args import GatewayRef
from .ai_gateway_controllers import EG_NAMESPACE
from .router_models import RouterModels

NAMESPACE = router_config.VSR_NAMESPACE
RELEASE = router_config.VSR_SERVICE
METRICS_PORT = 9190
MESSAGE_TIMEOUT = "10s"
"""How long Envoy waits for each ext_proc answer; Envoy Gateway's 200 ms default is shorter than a
classifier pass on CPU (api/v1alpha1/ext_proc_types.go)."""

OFFLINE_ENV = [
    # The router's downloader shells out to the Hugging Face CLI for any model directory that is
    # incomplete (src/semantic-router/pkg/modeldownload/downloader.go); offline, it fails at once
    # instead of reaching the internet.
    {"name": "HF_HUB_OFFLINE", "value": "1"},
]


def chart_values(config: dict[str, Any], models_claim: str, image_registry: str | None = None) -> dict[str, Any]:
    """Values for the pinned semantic-router chart (read at vllm-project/semantic-router@v0.3.0:deploy/helm/semantic-router)."""
    return {
        "image": {
            "repository": relocate(router_config.VSR_IMAGE.name, image_registry),
            "tag": router_config.VSR_IMAGE.tag,
        },
        # templates/configmap.yaml reads .Values.config (it has no configOverride: Helm would drop it).
        "config": config,
        # The chart's defaults ({} and no drop/seccomp) fail the namespace's restricted profile.
        "podSecurityContext": restricted_pod(router_config.ROUTER_UID),
        # The router writes to its working directory: no read-only root filesystem.
        "securityContext": {**restricted_container(read_only_root=False), "runAsNonRoot": True},
        # The models volume is ours (filled before the router starts); templates/pvc.yaml creates none then.
        "persistence": {"enabled": True, "existingClaim": models_claim},
        "extraEnv": list(OFFLINE_ENV),
    }


def extension_policy(gateway: GatewayRef, service_host_port: tuple[str, int]) -> dict[str, Any]:
    """The router as the Gateway's ext_proc: request bodies buffered (it reads the prompt), responses too,
    with mode override so that the router switches ``text/event-stream`` responses to streamed
    (src/semantic-router/pkg/extproc/processor_res_header_runtime.go:109-129)."""
    service, port = service_host_port
    return {
        "apiVersion": pins.api_version("EnvoyExtensionPolicy"),
        "kind": "EnvoyExtensionPolicy",
        "metadata": {"name": f"{gateway.name}-semantic-router", "namespace": gateway.namespace},
        "spec": {
            "targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": gateway.name}],
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


def reference_grant(gateway_namespace: str) -> dict[str, Any]:
    """Lets an EnvoyExtensionPolicy in the gateway's namespace name the router's Service
    (Envoy Gateway refuses cross-namespace backendRefs without one: internal/gatewayapi/validate.go)."""
    return {
        "apiVersion": pins.api_version("ReferenceGrant"),
        "kind": "ReferenceGrant",
        "metadata": {"name": f"{gateway_namespace}-extproc", "namespace": NAMESPACE},
        "spec": {
            "from": [{"group": "gateway.envoyproxy.io", "kind": "EnvoyExtensionPolicy", "namespace": gateway_namespace}],
            "to": [{"group": "", "kind": "Service", "name": RELEASE}],
        },
    }


def network_policy_spec() -> dict[str, Any]:
    """Only the gateway's Envoy pods call the router; managed Prometheus scrapes its metrics."""
    return {
        "podSelector": {"matchLabels": {"app.kubernetes.io/instance": RELEASE}},
        "policyTypes": ["Ingress"],
        "ingress": [
            {
                "from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": EG_NAMESPACE}}}],
                "ports": [{"port": router_config.VSR_EXTPROC_PORT, "protocol": "TCP"}],
            },
            # Managed Prometheus (ama-metrics in kube-system) scrapes the router's metrics.
            {
                "from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}}}],
                "ports": [{"port": METRICS_PORT, "protocol": "TCP"}],
            },
        ],
    }


def router_problems(models: RouterModels | str, cluster: ClusterContext | None) -> list[FieldProblem]:
    """What a ``SemanticRouter`` lacks to get its models: copying them from a model store runs as a
    workload identity of the cluster, so the cluster's OIDC issuer and region are needed."""
    if not isinstance(models, RouterModels):
        return []
    if cluster is None:
        return [FieldProblem("cluster", None, "required to copy the router's models from a model store (RouterModels)")]
    return [
        FieldProblem(f"cluster.{f}", None, "required to copy the router's models from a model store (RouterModels)")
        for f in ("oidc_issuer_url", "location")
        if getattr(cluster, f) is None
    ]


class SemanticRouter(pulumi.ComponentResource):
    """The router release, its models volume, its ext_proc hook on a Gateway, and a NetworkPolicy that only
    the gateway passes.

    Outputs: ``service_host`` (the router's in-cluster Service) and ``models`` (the classifier model
    directories its config loads); ``config`` is the rendered router config.
    """

    service_host: str
    config: dict
    models: list[str]

    def __init__(
        self,
        name: str,
        args: router_config.RouterConfigArgs | dict,
        opts: pulumi.ResourceOptions | None = None,
        *,
        gateway: GatewayRef,
        models: RouterModels | str,
        cluster: ClusterContext | None = None,
    ):
        """
        :param name: Logical name; children are named ``<name>-chart``, ``<name>-extproc`` and so on.
        :param args: Models, decisions, guards and cache, a ``RouterConfigArgs`` or a dict of its fields.
        :param opts: Standard Pulumi resource options; a Kubernetes ``provider`` here is the one the children use.
        :param gateway: The Gateway whose listener gets the ext_proc filter (``AiGateway.ref``); its
            ``image_registry`` is where the router's images are pulled from.
        :param models: Where the classifier models come from: a ``RouterModels`` (copied from the model
            store before the router starts) or the name of an existing PVC in ``vllm-semantic-router-system``
            that already holds them under the directory names of ``router_config.required_models``.
        :param cluster: The cluster the router runs in: its ``provider`` (unless ``opts`` names one) and, for
            ``RouterModels``, the OIDC issuer and region of the identity that reads the model store.
            Default None: the ambient kubeconfig, and a pre-filled PVC.
        """
        args = validate_args(router_config.RouterConfigArgs, args, "SemanticRouter", name)
        raise_problems("SemanticRouter", name, router_problems(models, cluster))
        self.config = router_render.render(args)
        self.models = router_config.required_models(args)
        super().__init__(f"{PACKAGE}:index:SemanticRouter", name, None, opts)
        # Children wait for what the component waits for (the namespace is often created by a sibling).
        child = Children(self, opts, kubernetes_provider(opts, cluster.provider if cluster else None)).opts()
        self.service_host = f"{RELEASE}.{NAMESPACE}.svc.cluster.local"
        namespace = k8s.core.v1.Namespace(f"{name}-namespace", metadata=restricted_namespace(NAMESPACE), opts=child)
        after_namespace = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[namespace]))
        if isinstance(models, RouterModels):
            claim = models.claim_name
            ready = models.fill(f"{name}-models", self.models, after_namespace, cluster, gateway.image_registry)
        else:
            claim, ready = models, []
        k8s.helm.v4.Chart(
            f"{name}-chart",
            name=RELEASE,
            chart=router_config.VSR_CHART,
            version=router_config.VSR_CHART_VERSION,
            namespace=NAMESPACE,
            values=chart_values(self.config, claim, gateway.image_registry),
            # The router starts only once its models are on the volume (the Job has completed).
            opts=pulumi.ResourceOptions.merge(after_namespace, pulumi.ResourceOptions(depends_on=ready)),
        )
        k8s.networking.v1.NetworkPolicy(
            f"{name}-ingress",
            metadata={"name": RELEASE, "namespace": NAMESPACE},
            spec=network_policy_spec(),
            opts=after_namespace,
        )
        grant = KubernetesObject(f"{name}-reference-grant", reference_grant(gateway.namespace), after_namespace)
        KubernetesObject(
            f"{name}-extproc",
            extension_policy(gateway, (RELEASE, router_config.VSR_EXTPROC_PORT)),
            pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[grant])),
        )
        self.register_outputs({"service_host": self.service_host, "models": self.models})
