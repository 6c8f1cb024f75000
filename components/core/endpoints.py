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
"""The Dynamo frontend's OpenAI-compatible HTTP port (the ``<graph>-frontend`` Service the Dynamo guides port-forward)."""
