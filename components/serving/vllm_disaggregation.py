"""Prefill/decode disaggregation with llm-d (seed 004): the engines' roles, the routing sidecar in front
of each decode engine, and the InferencePool chart whose endpoint picker pairs a prefill pod with a
decode pod per request. Pure builders returning plain dicts; VllmService creates the resources.
"""

from __future__ import annotations

from typing import Any

from ..core import pins
from ..core.endpoints import INSTANCE_LABEL, VLLM_PORT
from ..core.security import restricted_container
from .vllm_service_args import VllmServiceArgs

DECODE_ENGINE_PORT = 8200
"""Decode pods: vLLM listens here, the llm-d routing sidecar takes VLLM_PORT in front of it (llm-d P/D guide)."""
ROUTING_SIDECAR_IMAGE = pins.image("llm-d-routing-sidecar")
"""The sidecar image llm-d v0.8.0 publishes (``llm-d/llm-d-router@v0.8.0:.github/workflows/ci-release.yaml``
``sidecar_name``); the ``llm-d-router-disagg-sidecar`` name starts at v0.9.0, with a new EPP image too."""
INFERENCEPOOL_CHART = pins.chart("inferencepool").ref
INFERENCEPOOL_CHART_VERSION = pins.chart("inferencepool").version
"""The Gateway API Inference Extension chart (InferencePool + endpoint picker), KAITO's pin."""
EPP_PORT = 9002
"""The endpoint picker's ext_proc port, which the InferencePool's ``endpointPickerRef`` names (chart default
``inferenceExtension.extProcPort``)."""
INFERENCE_CRDS_URL = pins.manifest_url("inference-extension-crds")
"""The Inference Extension's CRDs (InferencePool and the x-k8s kinds), applied the way its guide applies them
(``kubectl apply -f .../releases/download/<tag>/manifests.yaml``, site-src/guides/index.md at v1.3.1); the file is
``kustomize build config/crd`` at the tag (Makefile ``artifacts``). The inferencepool chart ships no CRDs."""
_EPP = pins.image_pin("llm-d-epp")
EPP_IMAGE = {"hub": _EPP.name.rpartition("/")[0], "name": _EPP.name.rpartition("/")[2], "tag": _EPP.tag}
"""llm-d's endpoint picker, which knows prefill/decode roles; upstream GAIE's EPP does not."""
# Prefill/decode profiles keyed on the llm-d.ai/role label (llm-d P/D guide; verify plugin names
# against the pinned scheduler when upgrading it).
PD_PLUGINS = f"""\
apiVersion: {pins.api_version("EndpointPickerConfig")}
kind: EndpointPickerConfig
plugins:
- type: prefill-header-handler
- type: prefill-filter
- type: decode-filter
- type: max-score-picker
- type: queue-scorer
- type: pd-profile-handler
schedulingProfiles:
- name: prefill
  plugins:
  - pluginRef: prefill-filter
  - pluginRef: queue-scorer
  - pluginRef: max-score-picker
- name: decode
  plugins:
  - pluginRef: decode-filter
  - pluginRef: queue-scorer
  - pluginRef: max-score-picker
"""
"""The pod label the endpoint picker reads an engine's role from."""
NIXL_KV_TRANSFER = {"kv_connector": "NixlConnector", "kv_role": "kv_both"}
"""vLLM's ``--kv-transfer-config`` on both engines: KV caches move between them over NIXL."""


def engine_roles(args: VllmServiceArgs) -> dict[str, int]:
    """Replicas per engine role: ``{"": replicas}`` for aggregated serving, else prefill and decode."""
    if not args.disaggregation:
        return {"": args.replicas}
    return {"prefill": args.disaggregation.prefill_replicas, "decode": args.disaggregation.decode_replicas}


def engine_port(role: str) -> tuple[str, int]:
    """The vLLM container's port name and number: decode engines sit behind the routing sidecar."""
    return ("engine", DECODE_ENGINE_PORT) if role == "decode" else ("http", VLLM_PORT)


def routing_sidecar() -> dict[str, Any]:
    """The decode pod's routing sidecar (a restartable init container).

    It runs the KV handoff: it asks the prefill pod the endpoint picker chose (request header) to
    compute the prompt, then lets local vLLM decode from the NIXL-moved KV.
    """
    return {
        "name": "routing-sidecar",
        "image": ROUTING_SIDECAR_IMAGE,
        "restartPolicy": "Always",
        "args": [
            f"--port={VLLM_PORT}",
            f"--vllm-port={DECODE_ENGINE_PORT}",
            "--kv-connector=nixlv2",
            # v0.8.0's flag (pkg/sidecar/proxy/options.go); --secure-serving is the EPP's and stops it.
            "--secure-proxy=false",
        ],
        "ports": [{"name": "http", "containerPort": VLLM_PORT}],
        "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"memory": "512Mi"}},
        "securityContext": restricted_container(),
    }


def engine_anti_affinity(instance: str) -> dict[str, Any]:
    """Seed 004: prefill and decode engines of one service never share a node."""
    return {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {INSTANCE_LABEL: instance}}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }


def inference_pool_name(service: str) -> str:
    """The InferencePool of a prefill/decode service: the chart names it after its release, ``<service>-inferencepool``."""
    return f"{service}-inferencepool"


def picker_service(pool: str) -> str:
    """The endpoint picker's Service and its pods' ``inferencepool`` label: the release name cut to 40
    characters, then ``-epp`` (inferencepool v1.3.1 ``_helpers.tpl`` ``gateway-api-inference-extension.name``)."""
    return f"{pool.lower().strip()[:40]}-epp"


def picker_pod_labels(pool: str) -> dict[str, str]:
    """The endpoint picker pods' labels (the chart's ``selectorLabels``)."""
    return {"inferencepool": picker_service(pool)}


def inference_pool_values(labels: dict[str, str]) -> dict[str, Any]:
    """Values of the InferencePool chart: a pool over prefill and decode pods alike, with llm-d's picker.

    Chosen over a bespoke router because InferencePool is the Gateway API standard that Envoy AI
    Gateway routes to natively; the picker chooses a decode pod and a prefill pod per request.
    """
    return {
        # targetPorts, not targetPortNumber: the chart reads the latter only for the v1alpha2 API.
        "inferencePool": {"modelServers": {"matchLabels": labels}, "targetPorts": [{"number": VLLM_PORT}]},
        "inferenceExtension": {
            "image": {**EPP_IMAGE, "pullPolicy": "IfNotPresent"},
            "pluginsCustomConfig": {"pd-config.yaml": PD_PLUGINS},
            "pluginsConfigFile": "pd-config.yaml",
        },
        "provider": {"name": "none"},
    }
