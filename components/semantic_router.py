"""SemanticRouter: the vLLM Semantic Router as the AI gateway's external processor.

It classifies each request (topic, keywords, optional PII and jailbreak guards) and rewrites the
model to the one its decisions pick, so a single endpoint sends easy calls to the self-hosted model
and hard ones to the frontier model (seed 000). The config is rendered from ``RouterConfigArgs``,
validated before anything exists. Wiring follows the router's own AI-gateway deployment
(vllm-project/semantic-router ``deploy/kubernetes/ai-gateway/aigw-resources``): an
EnvoyPatchPolicy inserts an ``ext_proc`` filter first in the Gateway listener.
"""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from . import router_config
from ._base import PACKAGE, Children, validate_args
from ._k8s import KubernetesObject

NAMESPACE = "vllm-semantic-router-system"
RELEASE = "semantic-router"
METRICS_PORT = 9190
GATEWAY_NAMESPACE = "envoy-gateway-system"
"""Where Envoy Gateway runs the data-plane pods that call the router."""


ROUTER_UID = 65532
"""The router image sets no USER; the pod runs as this non-root UID so that the restricted profile admits it."""


def chart_values(config: dict) -> dict:
    """Values for semantic-router chart 0.3.0 (read at vllm-project/semantic-router@v0.3.0:deploy/helm/semantic-router)."""
    return {
        "image": {"tag": f"v{router_config.VSR_VERSION}"},
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
        # AKS has no "standard" class (the chart's default); managed-csi is AKS's default class.
        "persistence": {"storageClassName": "managed-csi"},
    }


class SemanticRouter(pulumi.ComponentResource):
    """The router release, its ext_proc hook on a Gateway, and a NetworkPolicy that only the gateway passes."""

    service_host: str
    config: dict

    def __init__(
        self,
        name: str,
        args: router_config.RouterConfigArgs | dict,
        gateway_name: str,
        gateway_namespace: str,
        provider: k8s.Provider,
        opts: pulumi.ResourceOptions | None = None,
    ):
        """
        :param name: Logical name; children are named ``<name>-chart``, ``<name>-extproc`` and so on.
        :param args: Models, decisions, guards and cache, a ``RouterConfigArgs`` or a dict of its fields.
        :param gateway_name: The Gateway whose listener gets the ext_proc filter.
        :param gateway_namespace: Its namespace.
        :param provider: Kubernetes provider of the cluster.
        :param opts: Standard Pulumi resource options.
        """
        args = validate_args(router_config.RouterConfigArgs, args, "SemanticRouter", name)
        self.config = router_config.render(args)
        super().__init__(f"{PACKAGE}:index:SemanticRouter", name, None, opts)
        # Children wait for what the component waits for (the namespace is often created by a sibling).
        child = Children(self, opts, provider).opts()
        self.service_host = f"{RELEASE}.{NAMESPACE}.svc.cluster.local"
        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata={"name": NAMESPACE, "labels": {"pod-security.kubernetes.io/enforce": "restricted"}},
            opts=child,
        )
        after_namespace = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[namespace]))
        k8s.helm.v4.Chart(
            f"{name}-chart",
            name=RELEASE,
            chart=router_config.VSR_CHART,
            version=router_config.VSR_CHART_VERSION,
            namespace=NAMESPACE,
            values=chart_values(self.config),
            opts=after_namespace,
        )
        k8s.networking.v1.NetworkPolicy(
            f"{name}-ingress",
            metadata={"name": RELEASE, "namespace": NAMESPACE},
            spec={
                "podSelector": {},
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
        KubernetesObject(
            f"{name}-extproc",
            {
                "apiVersion": "gateway.envoyproxy.io/v1alpha1",
                "kind": "EnvoyPatchPolicy",
                "metadata": {"name": f"{gateway_name}-semantic-router", "namespace": gateway_namespace},
                "spec": {
                    "targetRef": {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": gateway_name},
                    "type": "JSONPatch",
                    "jsonPatches": [self._filter_patch(gateway_name, gateway_namespace), self._cluster_patch()],
                },
            },
            child,
        )
        self.register_outputs({"service_host": self.service_host})

    def _filter_patch(self, gateway_name: str, gateway_namespace: str) -> dict:
        """ext_proc as the listener's first HTTP filter, buffering bodies so the router can read prompts."""
        return {
            "type": "type.googleapis.com/envoy.config.listener.v3.Listener",
            "name": f"{gateway_namespace}/{gateway_name}/http",
            "operation": {
                "op": "add",
                "path": "/default_filter_chain/filters/0/typed_config/http_filters/0",
                "value": {
                    "name": "semantic-router-extproc",
                    "typedConfig": {
                        "@type": "type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor",
                        "allow_mode_override": True,
                        "grpcService": {"envoyGrpc": {"clusterName": RELEASE}, "timeout": "60s"},
                        "message_timeout": "60s",
                        "processing_mode": {
                            "request_header_mode": "SEND",
                            "request_body_mode": "BUFFERED",
                            "request_trailer_mode": "SKIP",
                            "response_header_mode": "SEND",
                            "response_body_mode": "BUFFERED",
                            "response_trailer_mode": "SKIP",
                        },
                    },
                },
            },
        }

    def _cluster_patch(self) -> dict:
        """The upstream cluster Envoy uses to reach the router over HTTP/2 gRPC."""
        return {
            "type": "type.googleapis.com/envoy.config.cluster.v3.Cluster",
            "name": RELEASE,
            "operation": {
                "op": "add",
                "path": "",
                "value": {
                    "name": RELEASE,
                    "type": "STRICT_DNS",
                    "connect_timeout": "10s",
                    "lb_policy": "ROUND_ROBIN",
                    "http2_protocol_options": {},
                    "load_assignment": {
                        "cluster_name": RELEASE,
                        "endpoints": [
                            {
                                "lb_endpoints": [
                                    {
                                        "endpoint": {
                                            "address": {
                                                "socket_address": {
                                                    "address": self.service_host,
                                                    "port_value": router_config.VSR_EXTPROC_PORT,
                                                }
                                            }
                                        }
                                    }
                                ]
                            }
                        ],
                    },
                },
            },
        }
