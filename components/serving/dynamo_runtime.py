"""The network of a Dynamo 1.6.1 graph at run time: which pod opens a connection to which, on what port, and the
variables that fix each port and the address advertised for it. One home for these facts: DynamoInference sets the
variables, the gateway's NetworkPolicy admits the hop into the frontend, and the plan's request path
(``planner/deploy/dynamo_graph.py``) checks every hop against the NetworkPolicies it finds.

With Kubernetes discovery, the TCP request plane and the ZMQ event plane (what DynamoInference runs), a request is:

1. gateway -> frontend, HTTP 8000 (``DYN_HTTP_PORT``, the operator's frontend Service).
2. frontend -> prefill, then -> decode (the frontend's PrefillRouter calls prefill first), on the worker's TCP request
   plane: ``DYN_TCP_RPC_PORT`` and ``DYN_TCP_RPC_HOST`` (wxsms/dynamo@2a6da14c, upstream main of 2026-08-21:
   lib/runtime/src/pipeline/network/manager.rs ``from_env``, unset = an OS-assigned port).
3. each worker -> the frontend, streaming the response back: the frontend puts its call-home listener's address in
   the request and the worker dials it (lib/runtime/src/pipeline/network/ingress/push_handler.rs
   ``create_response_stream``); the listener's port is ``DYN_TCP_RESPONSE_STREAM_PORT``, unset = OS-assigned, and it
   binds and advertises ``DYN_TCP_RESPONSE_STREAM_HOST`` (lib/runtime/src/distributed.rs ``tcp_server``). A policy on
   the frontend that admits only 8000 drops every reply while every pod reports Ready.
4. frontend -> worker, the KV events the KV router reads: each worker's ZMQ publisher binds ``tcp://0.0.0.0:0`` and
   advertises ``DYN_EVENT_PLANE_HOST`` (lib/runtime/src/transports/event_plane/mod.rs, direct mode). No variable fixes
   that port.
5. frontend -> worker system port 9090 (``DYN_SYSTEM_PORT``, set by the operator), where a worker serves its model's
   config and tokenizer files unless ``DYN_SELF_HOST_METADATA`` is off (lib/llm/src/local_model.rs).
6. decode -> prefill, vLLM's NIXL handshake side channel: ``VLLM_NIXL_SIDE_CHANNEL_PORT`` (5600 + data-parallel
   index) on ``VLLM_NIXL_SIDE_CHANNEL_HOST`` (vllm 0.31.0 vllm/envs.py,
   vllm/distributed/kv_transfer/kv_connector/v1/nixl/base_scheduler.py). The KV bytes then move GPU to GPU over UCX on
   InfiniBand, outside the pod network.

The 1.6.1 release itself: the compiled runtime (ai-dynamo-runtime 1.6.1, ``dynamo/_core.abi3.so``) carries these
variable names and the messages "TCP request callback server using fixed port", "' is not a valid port number",
"unspecified IP addresses cannot be advertised" (so the host must be a real address: the pod IP) and
"tcp://0.0.0.0:0"; the ai-dynamo 1.6.1 wheel lists all five as runtime variables
(dynamo/common/snapshot/constants.py ``RESTORE_RUNTIME_ENV_NAMES``) and sets the NIXL side-channel host only when it
is unset (dynamo/vllm/args.py ``ensure_side_channel_host``, whose docstring warns that on multi-NIC hosts the guess
may be wrong). Every address is therefore the pod IP, the one the cluster's NetworkPolicy sees.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.endpoints import INSTANCE_LABEL

ROLE_LABEL = "aks-gpu-inference/dynamo-role"
"""Our label on every pod of the graph (``podTemplate.metadata.labels``): frontend, prefill, decode."""
WORKER_ROLES = ("prefill", "decode")
RESPONSE_STREAM_PORT = 20100
"""The frontend's call-home listener (``DYN_TCP_RESPONSE_STREAM_PORT``): fixed so a NetworkPolicy can admit it."""
REQUEST_PLANE_PORT = 20200
"""Each worker's TCP request-plane listener (``DYN_TCP_RPC_PORT``)."""
SYSTEM_PORT = 9090
"""The workers' system server (``DYN_SYSTEM_PORT``, the operator's value): health, metrics and model metadata."""
NIXL_SIDE_CHANNEL_PORT = 5600
"""vLLM's NIXL handshake listener on a prefill worker with one data-parallel rank (vLLM's default, set explicitly)."""

_POD_IP = {"valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}


def _var(name: str, value: str | None = None) -> dict[str, Any]:
    return {"name": name, "value": value} if value is not None else {"name": name, **_POD_IP}


def frontend_env() -> list[dict[str, Any]]:
    """The frontend's listener for the workers' response streams, on a fixed port of the pod IP."""
    return [_var("DYN_TCP_RESPONSE_STREAM_PORT", str(RESPONSE_STREAM_PORT)), _var("DYN_TCP_RESPONSE_STREAM_HOST")]


def worker_env() -> list[dict[str, Any]]:
    """A worker's request plane on a fixed port, and every address it advertises (request plane, KV events, NIXL side
    channel) the pod IP: RDMA pods have more interfaces than the pod network's."""
    return [
        _var("DYN_TCP_RPC_PORT", str(REQUEST_PLANE_PORT)),
        _var("DYN_TCP_RPC_HOST"),
        _var("DYN_EVENT_PLANE_HOST"),
        _var("VLLM_NIXL_SIDE_CHANNEL_PORT", str(NIXL_SIDE_CHANNEL_PORT)),
        _var("VLLM_NIXL_SIDE_CHANNEL_HOST"),
    ]


@dataclass(frozen=True)
class Hop:
    """A connection one role of the graph opens to another."""

    name: str
    source: str
    """``frontend``, ``worker`` (prefill or decode) or a worker role."""
    target: str
    port_env: str | None
    """The variable on the target's main container that fixes the port, if any."""
    default_port: int | None
    """The port when ``port_env`` is unset; None: OS-assigned, so only a rule without ports admits it."""


HOPS = (
    Hop("request plane", "frontend", "worker", "DYN_TCP_RPC_PORT", None),
    Hop("response stream", "worker", "frontend", "DYN_TCP_RESPONSE_STREAM_PORT", None),
    Hop("KV events", "frontend", "worker", None, None),
    Hop("model metadata", "frontend", "worker", "DYN_SYSTEM_PORT", SYSTEM_PORT),
    Hop("NIXL side channel", "decode", "prefill", "VLLM_NIXL_SIDE_CHANNEL_PORT", NIXL_SIDE_CHANNEL_PORT),
)
"""Every hop between the graph's pods (see the module docstring); the gateway's own hop into the frontend is the
request path's first step."""


def role_selector(graph: str, roles: tuple[str, ...]) -> dict[str, Any]:
    """A pod selector for the pods of ``roles`` of ``graph``."""
    return {
        "matchLabels": {INSTANCE_LABEL: graph},
        "matchExpressions": [{"key": ROLE_LABEL, "operator": "In", "values": list(roles)}],
    }


def frontend_peer_ingress(graph: str) -> list[dict[str, Any]]:
    """The ingress a policy on the frontend must admit from its own graph: the workers' response streams."""
    port = [{"protocol": "TCP", "port": RESPONSE_STREAM_PORT}]
    return [{"from": [{"podSelector": role_selector(graph, WORKER_ROLES)}], "ports": port}]
