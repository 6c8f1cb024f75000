"""Prefill/decode disaggregation with llm-d (seed 004): the engines' roles, the disagg sidecar in front of each
decode engine, and the InferencePool chart whose endpoint picker pairs a prefill pod with a decode pod per request.
Pure builders returning plain dicts; VllmService creates the resources.

The picker and the sidecar come from one llm-d-router release (the pins table's ``llm-d-router-endpoint-picker`` and
``llm-d-router-disagg-sidecar``: they share the prefill header and connector code), and everything they are given is
checked against that release's own rules (``picker_check`` with the table ``tools/llmd_registry.py`` generates).
"""

from __future__ import annotations

from typing import Any

from ..core import pins
from ..core.endpoints import INSTANCE_LABEL, VLLM_PORT
from ..core.security import restricted_container
from . import llmd_registry
from .vllm_service_args import DisaggregationArgs, VllmServiceArgs

DECODE_ENGINE_PORT = 8200
"""Decode pods: vLLM listens here and the sidecar takes VLLM_PORT in front of it: the sidecar's own default
``--model-server-port`` (llm-d/llm-d-router@v0.10.0:pkg/sidecar/proxy/options.go defaultVLLMPort), passed explicitly
because v0.8.0's default was 8001."""
SIDECAR_IMAGE = pins.image("llm-d-router-disagg-sidecar")
INFERENCEPOOL_CHART = pins.chart("inferencepool").ref
INFERENCEPOOL_CHART_VERSION = pins.chart("inferencepool").version
EPP_PORT = 9002
"""The endpoint picker's ext_proc port, which the InferencePool's ``endpointPickerRef`` names (chart default
``inferenceExtension.extProcPort``; the picker's ``--grpc-port`` default)."""
INFERENCE_CRDS_URL = pins.manifest_url("inference-extension-crds")
"""The Inference Extension's CRDs (InferencePool and the x-k8s kinds the picker watches), applied the way its guide
applies them (``kubectl apply -f .../releases/download/<tag>/manifests.yaml``); the inferencepool chart ships none."""
_EPP = pins.image_pin("llm-d-router-endpoint-picker")
EPP_IMAGE = {"hub": _EPP.name.rpartition("/")[0], "name": _EPP.name.rpartition("/")[2], "tag": _EPP.tag}
"""llm-d's endpoint picker, which knows prefill/decode roles (upstream GAIE's does not), in the chart's
``hub/name:tag`` form (inferencepool v1.3.1 epp-deployment.yaml)."""
PICKER_RELEASE = llmd_registry.release_of(str(_EPP))
"""The llm-d-router tag whose generated table the picker config and the sidecar's flags are checked against."""
PICKER_CONFIG_FILE = "pd-config.yaml"
KV_BLOCK_TOKENS = 16
"""vLLM's KV block size on CUDA when ``--block-size`` is not given, which the engines here do not give: the picker's
prefix index hashes prompts in blocks of this size, so the two must agree (the producer's own default too:
llm-d/llm-d-router@v0.10.0 approximateprefix/types.go)."""
NIXL_KV_TRANSFER = {"kv_connector": "NixlConnector", "kv_role": "kv_both"}
"""vLLM's ``--kv-transfer-config`` on both engines: KV caches move between them over NIXL."""
SIDECAR_KV_CONNECTOR = "nixlv2"
"""The sidecar's protocol for NixlConnector engines (its default; one of the values its Validate accepts)."""


def engine_roles(args: VllmServiceArgs) -> dict[str, int]:
    """Replicas per engine role: ``{"": replicas}`` for aggregated serving, else prefill and decode."""
    if not args.disaggregation:
        return {"": args.replicas}
    return {"prefill": args.disaggregation.prefill_replicas, "decode": args.disaggregation.decode_replicas}


def engine_port(role: str) -> tuple[str, int]:
    """The vLLM container's port name and number: decode engines sit behind the sidecar."""
    return ("engine", DECODE_ENGINE_PORT) if role == "decode" else ("http", VLLM_PORT)


def sidecar_args() -> list[str]:
    """The disagg sidecar's command line, every flag one the pinned sidecar defines (``picker_check.check_args``):
    it listens where clients call the decode pod, forwards to the local vLLM, speaks NIXL v2 to the engines, and
    serves plain HTTP inside the pod network (``--secure-proxy`` defaults to true, a self-signed certificate the
    gateway would not trust; upstream's own decode Deployment turns it off: deploy/components/vllm-decode)."""
    return [
        f"--port={VLLM_PORT}",
        f"--model-server-port={DECODE_ENGINE_PORT}",
        f"--kv-connector={SIDECAR_KV_CONNECTOR}",
        "--secure-proxy=false",
    ]


def routing_sidecar() -> dict[str, Any]:
    """The decode pod's disagg sidecar (a restartable init container).

    It runs the KV handoff: it asks the prefill pod the endpoint picker chose (the ``x-prefiller-host-port`` header)
    to compute the prompt, then lets the local vLLM decode from the NIXL-moved KV; with no header it sends the request
    to the local vLLM alone (pkg/sidecar/proxy/chat_completions.go).
    """
    return {
        "name": "routing-sidecar",
        "image": SIDECAR_IMAGE,
        "restartPolicy": "Always",
        "args": sidecar_args(),
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


def _decider(disaggregation: DisaggregationArgs) -> dict[str, Any]:
    if disaggregation.decider == "always":
        return {"type": "always-disagg-pd-decider"}
    return {"type": "prefix-based-pd-decider", "parameters": {"nonCachedTokens": disaggregation.prefill_threshold_tokens}}


def picker_config(args: VllmServiceArgs) -> dict[str, Any]:
    """The picker's EndpointPickerConfig: llm-d-router's own P/D config as its e2e tests run it at the pinned tag
    (test/e2e/configs_test.go ``pdConfig``; deploy/config/pd-epp-config.yaml adds the queue scorer), which
    disaggregates on purpose.

    - ``disagg-profile-handler`` with ``deciders.prefill`` named: without one it disables P/D and every request runs
      on decode. It sets the prefill header itself, so no headers handler is declared (deprecated at v0.9.0).
    - The decider (``disaggregation.decider``): by default ``prefix-based-pd-decider`` with ``nonCachedTokens`` =
      ``disaggregation.prefill_threshold_tokens`` (16, upstream's tested value): a prompt with at least that many
      tokens the decode pod has not cached goes to a prefill pod; a follow-up turn whose prompt the decode pod already
      holds stays there and skips a KV transfer worth less than it costs. Its default ``nonCachedTokens: 0`` would
      never split prefill off. ``always`` (``always-disagg-pd-decider``, the llm-d P/D guide's choice) sends every
      prompt to prefill.
    - A prefix-cache scorer in both profiles, so the decider sees what the decode pod has cached and prefill pods
      are chosen for their cache too; the approximate prefix producer hashes blocks of vLLM's block size over the
      model's whole context.
    """
    disaggregation = args.disaggregation
    assert disaggregation is not None, "only prefill/decode services have a picker"

    def profile(role: str) -> dict[str, Any]:  # fresh objects per profile: shared ones dump as YAML aliases
        scoring = [{"pluginRef": "max-score-picker"}, {"pluginRef": "prefix-cache-scorer", "weight": 2}]
        return {"name": role, "plugins": [{"pluginRef": f"{role}-filter"}, *scoring, {"pluginRef": "queue-scorer", "weight": 1}]}

    return {
        "apiVersion": llmd_registry.load(PICKER_RELEASE)["loader"]["api_versions"][0],
        "kind": "EndpointPickerConfig",
        "plugins": [
            {
                "type": "approx-prefix-cache-producer",
                "parameters": {"blockSizeTokens": KV_BLOCK_TOKENS, "maxPrefixTokensToMatch": args.max_model_len},
            },
            {"type": "prefix-cache-scorer"},
            {"type": "queue-scorer"},
            {"type": "prefill-filter"},
            {"type": "decode-filter"},
            {"type": "max-score-picker"},
            _decider(disaggregation),
            {"type": "disagg-profile-handler", "parameters": {"deciders": {"prefill": _decider(disaggregation)["type"]}}},
        ],
        "schedulingProfiles": [profile("prefill"), profile("decode")],
    }


def inference_pool_values(args: VllmServiceArgs, labels: dict[str, str]) -> dict[str, Any]:
    """Values of the InferencePool chart: a pool over prefill and decode pods alike, with llm-d's picker.

    Chosen over a bespoke router because InferencePool is the Gateway API standard that Envoy AI Gateway routes to
    natively; the picker chooses a decode pod and a prefill pod per request. No ``inferenceExtension.flags``: charts
    v1.3.1 to v1.5.0 render each flag as two arguments, so a boolean there would be silently ignored
    (kubernetes-sigs/gateway-api-inference-extension#2871).
    """
    import yaml

    return {
        # targetPorts, not targetPortNumber: the chart reads the latter only for the v1alpha2 API.
        "inferencePool": {"modelServers": {"matchLabels": labels}, "targetPorts": [{"number": VLLM_PORT}]},
        "inferenceExtension": {
            "image": {**EPP_IMAGE, "pullPolicy": "IfNotPresent"},
            "pluginsCustomConfig": {PICKER_CONFIG_FILE: yaml.safe_dump(picker_config(args), sort_keys=False)},
            "pluginsConfigFile": PICKER_CONFIG_FILE,
        },
        "provider": {"name": "none"},
    }
