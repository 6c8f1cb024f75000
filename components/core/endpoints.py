"""Ports and selector labels of the serving backends, which the gateway routes to: facts both sides
need, kept here so that the gateway does not import the serving components."""

from __future__ import annotations

VLLM_PORT = 8000
"""The port vLLM's OpenAI-compatible server listens on, in the pod and on its Service."""

INSTANCE_LABEL = "app.kubernetes.io/instance"
"""The pod label that names the serving instance; Services, InferencePools and PodMonitors select on it."""

KAITO_SERVICE_PORT = 80
"""KAITO's Service maps port 80 ("http") to the inference server's port 5000 (``GenerateServiceManifest``)."""

KAITO_POD_PORT = 5000
"""The inference server's port in the pod (kaito@v0.6.0 pkg/workspace/inference/preset_inferences.go:45-52)."""

DYNAMO_FRONTEND_PORT = 8000
"""The Dynamo frontend's OpenAI-compatible HTTP port: ``dynamo.frontend --http-port`` default (ai-dynamo 1.6.1)
and the port of the Service the operator makes for a ``type: frontend`` component (graph.go GenerateComponentService)."""


def dynamo_component_service(graph: str, component: str) -> str:
    """The Service the Dynamo operator creates for a graph's component: ``<graph>-<component>`` lower-cased,
    dots as hyphens (ai-dynamo/dynamo deploy/operator/internal/dynamo/graph.go GetDCDResourceName and
    NormalizeKubeResourceName, read through the code index at 003d1ee5)."""
    return f"{graph}-{component}".lower().replace(".", "-")
