"""The controllers behind AiGateway, as pinned facts and plain values: Envoy Gateway (data plane and
global rate limiting), Envoy AI Gateway (CRDs and controller) and the Redis that holds the rate-limit
counters. Pure functions returning dicts, so that tests and the planner read them without a program.

Facts: Envoy Gateway (chart ``gateway-helm``) and Envoy AI Gateway (``ai-gateway-crds-helm`` and
``ai-gateway-helm``) at the versions of the pins table; the Envoy Gateway values are
the ones the AI Gateway installation guide requires (extension APIs, the xDS translator hooks and
the AI Gateway controller as extension manager).
"""

from __future__ import annotations

from typing import Any

from ..core import pins
from ..core.images import relocate
from ..core.security import restricted_container, restricted_pod
from .ai_gateway_args import AiGatewayArgs

EG_CHART = pins.chart("gateway-helm").ref
AIGW_CRDS_CHART = pins.chart("ai-gateway-crds-helm").ref
AIGW_CHART = pins.chart("ai-gateway-helm").ref
EG_RELEASE = "envoy-gateway"
"""Helm release name of Envoy Gateway (a v3 Release would otherwise get a random suffix)."""
EG_NAMESPACE = "envoy-gateway-system"
"""Envoy Gateway's controller, its rate-limit service, Redis and, by default, every Envoy proxy (the data plane)."""
AIGW_NAMESPACE = "envoy-ai-gateway-system"
AIGW_EXTENSION = {"hostname": f"ai-gateway-controller.{AIGW_NAMESPACE}.svc.cluster.local", "port": 1063}
"""The AI Gateway controller's extension server, which Envoy Gateway calls while translating xDS."""
INFERENCE_POOL_RESOURCE = {"group": "inference.networking.k8s.io", "kind": "InferencePool", "version": "v1"}
"""What Envoy Gateway must be told to hand to the AI Gateway extension for InferencePool backends
(envoyproxy/ai-gateway@v1.1.0 examples/inference-pool/envoy-gateway-values-addon.yaml; the field is
envoyproxy/gateway@v1.8.2 api/v1alpha1/envoygateway_types.go ExtensionManager.BackendResources). Envoy Gateway and
the AI Gateway controller look for the InferencePool CRD when they start (ai-gateway internal/controller/
controller.go skips its InferencePool controller otherwise), so both must start after it is applied."""
AIGW_ADMIN_PORT = "aigw-admin"
"""The extproc sidecar's one named port (1064): /metrics and /health (internal/controller/extproc_builder.go)."""
REDIS_PORT = 6379
REDIS_UID = 999
"""The ``redis`` user of the official alpine image."""
EG_IMAGE = pins.image_pin("envoy-gateway").name
"""The controller, its certgen Job and the proxies' shutdown manager (gateway-helm values.tmpl.yaml); tagged with the chart's version."""
ENVOY_IMAGE = pins.image("envoy-proxy")
"""The data-plane image Envoy Gateway v1.8.2 runs when nothing overrides it
(envoyproxy/gateway@v1.8.2:api/v1alpha1/shared_types.go DefaultEnvoyProxyImage); pinned here so the
EnvoyProxy names it and a private registry can serve it."""
RATELIMIT_IMAGE = pins.image("envoy-ratelimit")
"""gateway-helm v1.8.2's rate-limit service image (values.tmpl.yaml ``global.images.ratelimit.image``)."""
AIGW_CONTROLLER_IMAGE = pins.image_pin("ai-gateway-controller").name
AIGW_EXTPROC_IMAGE = pins.image_pin("ai-gateway-extproc").name
"""ai-gateway-helm v1.1.0 ``controller.image.repository`` and ``extProc.image.repository`` (values.yaml);
the controller injects the extproc image as a sidecar into every Envoy proxy pod."""


def eg_values(args: AiGatewayArgs | None = None, *, inference_pools: bool = False) -> dict[str, Any]:
    """Envoy Gateway chart values: the AI Gateway extension, the Redis rate-limit backend and pinned images;
    with ``inference_pools``, InferencePool as a backend kind the extension serves. An existing install
    (``install_controllers=False``) must run with these."""
    registry = args.image_registry if args else None
    version = args.eg_version if args else AiGatewayArgs.model_fields["eg_version"].default
    # The chart renders config.envoyGateway as the EnvoyGateway config, merged over its defaults
    # (envoyproxy/gateway charts/gateway-helm/values.tmpl.yaml); rateLimit.backend is EnvoyGatewaySpec's.
    include_all = {"includeAll": True}
    return {
        "global": {
            "images": {
                "envoyGateway": {"image": relocate(f"{EG_IMAGE}:{version}", registry)},
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
                    **({"backendResources": [dict(INFERENCE_POOL_RESOURCE)]} if inference_pools else {}),
                },
                # Under envoyGateway: the chart renders this block as the EnvoyGateway config, whose
                # spec.rateLimit configures the rate-limit service it deploys.
                "rateLimit": {
                    "backend": {"type": "Redis", "redis": {"url": f"redis.{EG_NAMESPACE}.svc.cluster.local:{REDIS_PORT}"}}
                },
            }
        },
    }


def aigw_values(args: AiGatewayArgs) -> dict[str, Any]:
    """AI Gateway chart values: pinned images (also for the extproc sidecar it injects) and requests."""
    return {
        "controller": {
            "image": {"repository": relocate(AIGW_CONTROLLER_IMAGE, args.image_registry), "tag": args.aigw_version},
            # The chart sets none ({}); the scheduler then packs it anywhere and evicts it first.
            "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"memory": "1Gi"}},
        },
        "extProc": {"image": {"repository": relocate(AIGW_EXTPROC_IMAGE, args.image_registry), "tag": args.aigw_version}},
    }


def redis_labels(args: AiGatewayArgs) -> dict[str, str]:
    return {"app.kubernetes.io/name": "redis", "app.kubernetes.io/instance": f"{args.gateway_name}-ratelimit"}


def redis_deployment(args: AiGatewayArgs) -> dict[str, Any]:
    """``metadata`` and ``spec`` of the Redis for Envoy's rate-limit counters: one ephemeral replica
    (budgets restart on loss), non-root, read-only root filesystem."""
    labels = redis_labels(args)
    container = {
        "name": "redis",
        "image": relocate(args.redis_image, args.image_registry),
        # Counters only: no snapshots, no append-only file.
        "args": ["--save", "", "--appendonly", "no"],
        "ports": [{"name": "redis", "containerPort": REDIS_PORT}],
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}},
        "readinessProbe": {"tcpSocket": {"port": "redis"}, "periodSeconds": 5},
        "livenessProbe": {"tcpSocket": {"port": "redis"}, "periodSeconds": 20},
        "securityContext": restricted_container(),
        "volumeMounts": [{"name": "data", "mountPath": "/data"}],
    }
    return {
        "metadata": {"name": "redis", "namespace": EG_NAMESPACE, "labels": labels},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "automountServiceAccountToken": False,
                    "securityContext": restricted_pod(REDIS_UID),
                    "containers": [container],
                    "volumes": [{"name": "data", "emptyDir": {}}],
                },
            },
        },
    }


def redis_service(args: AiGatewayArgs) -> dict[str, Any]:
    labels = redis_labels(args)
    return {
        "metadata": {"name": "redis", "namespace": EG_NAMESPACE, "labels": labels},
        "spec": {"selector": labels, "ports": [{"name": "redis", "port": REDIS_PORT, "targetPort": "redis", "protocol": "TCP"}]},
    }


def redis_network_policy(args: AiGatewayArgs) -> dict[str, Any]:
    """Redis has no password: only pods of Envoy Gateway's own namespace reach it."""
    return {
        "metadata": {"name": "redis", "namespace": EG_NAMESPACE},
        "spec": {
            "podSelector": {"matchLabels": redis_labels(args)},
            "policyTypes": ["Ingress"],
            "ingress": [{"from": [{"podSelector": {}}], "ports": [{"protocol": "TCP", "port": REDIS_PORT}]}],
        },
    }
