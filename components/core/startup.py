"""How long a vLLM engine may take from container start to ready on a cold node, and the host memory it uses while
it loads. Pure functions of the checkpoint, the model's depth, tensor parallelism and where the weights come from;
VllmService sizes its startup probe, Pulumi's wait and its memory from them, and the docs print the derivation.

A cold start pays every step at once: the weights stream in, the workers start, torch.compile fills an empty cache,
vLLM profiles memory and captures CUDA graphs. Each step's allowance is below; the sum is doubled (a cold Blob
account, a contended node, a slower compile than the published runs) and held to a floor, because a probe that kills
a healthy start restarts it from zero, while one that waits too long only delays the alarm.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

GIB = 1024**3

BLOB_GIB_PER_S = {"H100": 6.27, "A100": 2.74}
"""Weights streamed from Azure Blob into GPU memory by the RunAI Model Streamer, GiB/s per node, as measured:
H100: Qwen3.5-122B-A10B (232.8 GiB) in 37.14 s on Standard_ND96isr_H100_v5 (Azure SDK blog "Eliminate LLM cold
starts: load models up to 6x faster with Azure Blob Storage and Run:AI Model Streamer", 2026-05-19); A100: 27.4 GiB
in about 10 s on Standard_NC24ads_A100_v4 (AKS blog "Stream model weights to NVIDIA GPU running vLLM from Azure Blob
Storage on AKS", Azure/AKS#5845). Other GPUs take the slower A100 figure."""
HUB_GB_PER_S = 0.15
"""Download rate from the Hugging Face hub, GB/s: not measured here (it depends on the hub's CDN and the node's
egress), so deliberately low."""
PROCESS_START_S = 60
"""Python imports, one CUDA context per GPU and the NCCL communicators of tensor parallelism, before weights load."""
COMPILE_BASE_S, COMPILE_PER_LAYER_S = 30, 1.5
"""torch.compile on an empty cache (vLLM V1 compiles by default): Dynamo traces every layer, Inductor compiles the
pieces. Published: 21-28 s for Llama-3-8B (32 layers) under Inductor (vllm-project/vllm#10460), about 7 s with a warm
cache for an 8B model (llm-d-incubation/llm-d-fast-model-actuation#111); an 80-layer model is allowed 150 s. A
pathological compile (2,222 s for a Nemotron-3 hybrid, vllm-project/vllm#34399) is beyond any budget: the docs say so."""
GRAPHS_BASE_S, GRAPHS_PER_LAYER_S = 15, 0.5
"""CUDA graph capture for vLLM's captured batch sizes: "Graph capturing finished in 15 secs" to 32 s for Llama-3-8B
(vllm-project/vllm#10460), longer with more layers."""
PROFILE_S = 30
"""The memory profiling run and the KV cache allocation."""
SAFETY = 2.0
FLOOR_S = 600
"""Never less than ten minutes: what llm-d-router's own vLLM Deployments allow (startupProbe 60 x 10 s,
llm-d/llm-d-router@v0.10.0:deploy/components/vllm-decode/deployment.yaml)."""
LARGE_FLOOR_S = 900
"""Fifteen minutes for a checkpoint over 100 GB at tensor parallelism 8 or more: an empty compile cache, graph
capture on eight ranks and a slow Blob read all land on one cold start (llm-d's P/D guide allows 3,615 s:
startupProbe 15 s + 120 x 30 s)."""
PULL_AND_SCHEDULE_S = 900
"""What Pulumi's wait adds before the probe's clock starts: scheduling and pulling a vLLM image of about 10 GB."""

WORKER_HOST_GIB = 4.0
"""Host memory of one vLLM GPU worker process outside the weights: the Python interpreter with torch, the CUDA
context's host allocations and NCCL's host buffers."""
SERVER_HOST_GIB = 4.0
"""The API server and engine-core processes, the tokenizer and detokenizer."""


@dataclass(frozen=True)
class ColdStart:
    """A cold start's allowance, step by step, in seconds."""

    weights: float
    process: float
    compile: float
    graphs: float
    profile: float
    floor: float

    @property
    def derived(self) -> float:
        return SAFETY * (self.weights + self.process + self.compile + self.graphs + self.profile)

    @property
    def seconds(self) -> int:
        """The startup probe's budget: the doubled sum, held to the floor, rounded up to a whole minute."""
        return int(math.ceil(max(self.derived, self.floor) / 60) * 60)

    @property
    def wait_minutes(self) -> int:
        """Pulumi's wait for the Deployment: the budget plus scheduling and the image pull."""
        return math.ceil((self.seconds + PULL_AND_SCHEDULE_S) / 60)

    def explain(self) -> str:
        steps = {"weights": self.weights, "start": self.process, "compile": self.compile, "graphs": self.graphs}
        steps["profile"] = self.profile
        parts = ", ".join(f"{name} {value:.0f} s" for name, value in steps.items() if value)
        return f"2 x ({parts}) = {self.derived:.0f} s; floor {self.floor:.0f} s; budget {self.seconds} s"


def stream_rate_gib_s(gpu_model: str) -> float:
    return next((rate for name, rate in BLOB_GIB_PER_S.items() if gpu_model.startswith(name)), BLOB_GIB_PER_S["A100"])


def cold_start(
    checkpoint_bytes: float, layers: int, tp: int, source: str, gpu_model: str, enforce_eager: bool = False
) -> ColdStart:
    """The allowance for one engine of ``tp`` GPUs loading ``checkpoint_bytes`` from ``source`` (``blob`` or
    ``huggingface``). With distributed streaming every node reads one copy whatever ``tp`` is, so the rate is per node."""
    weights = checkpoint_bytes / GIB / stream_rate_gib_s(gpu_model) if source == "blob" else checkpoint_bytes / 1e9 / HUB_GB_PER_S
    compiled = 0.0 if enforce_eager else COMPILE_BASE_S + COMPILE_PER_LAYER_S * layers
    graphs = 0.0 if enforce_eager else GRAPHS_BASE_S + GRAPHS_PER_LAYER_S * layers
    floor = LARGE_FLOOR_S if checkpoint_bytes > 100e9 and tp >= 8 else FLOOR_S
    return ColdStart(weights, PROCESS_START_S, compiled, graphs, PROFILE_S, floor)


def host_memory_gib(checkpoint_bytes: float, tp: int, shm_gib: float, source: str) -> float:
    """Host memory an engine pod uses while it loads (its memory limit must cover it):

    - streamed weights (``source: blob``): the whole checkpoint may sit in host memory during the load, the streamer's
      CPU buffer holding each rank's whole share (runai-model-streamer 0.17.1 distributed_streamer.py: "Unlimited sized
      the host buffer to the whole of this rank's share", the earlier default; vllm-project/vllm#44430: full
      checkpoint retained in host RAM on every TP worker), so the limit covers one copy;
    - each GPU worker process and the server processes (``WORKER_HOST_GIB``, ``SERVER_HOST_GIB``);
    - ``/dev/shm``: a memory-backed emptyDir is charged to the pod's memory (Kubernetes: volumes, emptyDir medium
      Memory "counts against your container's memory limit")."""
    weights = checkpoint_bytes / GIB if source == "blob" else 0.0
    return weights + tp * WORKER_HOST_GIB + SERVER_HOST_GIB + shm_gib
