"""What vLLM holds on each GPU inside its memory budget besides the weights and the KV cache, as its
profiler measures it (``gpu_worker.determine_available_memory``): the non-torch memory, the torch peak of
the profile run (a forward pass of ``max_num_batched_tokens`` tokens, then the sampler on ``max_num_seqs``
rows of logits) and the CUDA-graph pool; and vLLM's scheduler defaults, which size the profile run.

No term depends on the GPU's name: two GPUs that report the same memory and run the same settings get the
same overhead. Only vLLM's own defaults (``vllm_default_max_num_seqs``) tell an A100 from an H100.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import pins
from .model_facts import GIB, ModelFactsArgs

PINNED_VLLM_VERSION = pins.vllm_version()
"""vLLM release the overhead terms model: that of the pinned engine image (pins table ``vllm``), which
``VllmServiceArgs.image`` defaults to."""

NON_TORCH_GIB = 0.25
"""Per-GPU memory outside PyTorch's allocator at tp 1 (CUDA context growth, cuBLAS/cuBLASLt workspaces),
which the profiler counts as ``non_torch_increase``. Published: 0.24-0.27 GiB on H100 (vLLM 0.19,
llm-d-planner#205), 0.26 GiB on A100 80GB (vLLM 0.31: 15.26 GiB "weights + non-torch" for 15.00 GiB of
weights). The same on both GPUs."""

NON_TORCH_TP_GIB = 2.1
"""The same with tensor parallelism: NCCL communicators and their channel buffers plus the custom
all-reduce IPC buffers. Published: 2.06-2.21 GiB at tp 2 and 4 on H100 (vLLM 0.19, llm-d-planner#205),
1.82-2.10 GiB at tp 8 on A100 (vllm-project/vllm#18446)."""

ACTIVATION_BYTES = 2
"""Bytes per activation element: the profile run computes in the model's bfloat16/float16."""

RESIDUAL_STREAMS = 2
"""Hidden-size rows per token alive beside the MLP's intermediates at the peak of a layer (the residual
and the normed input the MLP reads)."""

DEFAULT_EXPERTS_PER_TOKEN = 2
"""Experts per token assumed for a mixture of experts whose facts omit ``experts_per_token`` (Mixtral's)."""

SAMPLER_BYTES_PER_LOGIT: dict[tuple[int, int], float] = {
    (0, 0): 15.0,
    (0, 10): 31.0,
    (0, 15): 9.0,
    (0, 31): 33.0,
}
"""Bytes the profile run's dummy sampler holds at its peak per (row x vocabulary entry): the logits and the
fp32 copies, softmax and top-k/top-p sort buffers made from them, by the first release with that cost
(a release uses the latest entry at or below it). Derived from published activation peaks minus the
forward term above: V0 (0.6.5, vllm-project/vllm#10511: 1.26 GiB for Llama-3-8B at 256 rows) ~15 bytes;
0.10-0.11 ~31 (vllm-project/vllm#23278 gpt-oss-120b; llm-d-benchmark: Llama-3.1-8B 4.76 GiB, Qwen3-32B
5.64 GiB, gpt-oss-20b 7.38 GiB at 1024 rows); 0.15-0.19 ~9 (llm-d-planner#205 at 1024 rows: Llama-3.1-8B
1.89 GiB, Qwen2.5-7B 2.21, CodeLlama-7B 0.77, gemma-2 3.62-3.66; 0.15.1 on A100 40GB); 0.31 ~33 (one
A100 80GB: 1.21 GiB for Llama-3.1-8B at 256 rows and 2048 tokens), which the pinned release uses."""

CUDA_GRAPHS_IN_BUDGET_SINCE = (0, 21)
"""First vLLM release whose profiler estimates the CUDA-graph pool and reserves it inside
``gpu_memory_utilization`` ("CUDA graph memory profiling is enabled (default since v0.21.0)")."""

MAX_CUDAGRAPH_CAPTURE_SIZE = 512
"""vLLM's cap on the largest batch it captures a CUDA graph for: ``max_cudagraph_capture_size`` defaults
to ``min(2 x max_num_seqs, 512)`` (the capture list runs 1, 2, 4, 8, 16, 24, ... 512; vLLM 0.19 logs
'cudagraph_capture_sizes': [1, ..., 512], 'max_cudagraph_capture_size': 512 at 1024 sequences)."""

CUDA_GRAPH_BASE_GIB = 0.1
"""CUDA-graph pool memory that does not grow with the captured batch (graph objects, the dummy KV cache
and attention metadata of the capture). With the per-layer term below it reproduces the 0.23 GiB vLLM 0.31
reserved for Llama-3.1-8B (32 layers, hidden 4096) on an A100 80GB."""

DEFAULT_VOCAB_SIZE = 152_064
"""Vocabulary assumed for a model whose facts omit ``vocab_size`` (Qwen2.5's; Llama 3 has 128,256)."""

VLLM_MAX_NUM_SEQS_LARGE_GPU = 1024
VLLM_MAX_NUM_SEQS = 256
"""vLLM's default ``--max-num-seqs``: 1024 on GPUs with at least 70 GiB that are not A100s (H100, H200,
MI300X), else 256 (vllm tests/engine/test_arg_utils.py ``test_defaults_with_usage_context``)."""

VLLM_MAX_NUM_BATCHED_TOKENS_LARGE_GPU = 8192
VLLM_MAX_NUM_BATCHED_TOKENS = 2048
"""vLLM's default ``--max-num-batched-tokens`` for ``vllm serve`` (the OpenAI server VllmService runs),
by the same rule: 8192 on GPUs of 70 GiB or more other than the A100, else 2048 (the offline ``LLM`` class
uses 16384 and 8192); the profile run's forward pass is this many tokens."""


def release(version: str) -> tuple[int, int]:
    """(major, minor) of a vLLM version string such as ``0.6.5.dev`` or ``0.32.0``."""
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def _large_gpu(gpu: str, device_gib: float) -> bool:
    return device_gib >= 70 and "A100" not in gpu.upper()


def vllm_default_max_num_seqs(gpu: str, device_gib: float) -> int:
    """vLLM's default ``--max-num-seqs`` for a GPU: 1024 with at least 70 GiB unless it is an A100, else 256."""
    return VLLM_MAX_NUM_SEQS_LARGE_GPU if _large_gpu(gpu, device_gib) else VLLM_MAX_NUM_SEQS


def vllm_default_max_num_batched_tokens(gpu: str, device_gib: float) -> int:
    """vLLM's default ``--max-num-batched-tokens`` for ``vllm serve``: 8192 with at least 70 GiB unless an A100, else 2048."""
    return VLLM_MAX_NUM_BATCHED_TOKENS_LARGE_GPU if _large_gpu(gpu, device_gib) else VLLM_MAX_NUM_BATCHED_TOKENS


def cudagraph_capture_size(max_num_seqs: int, max_num_batched_tokens: int) -> int:
    """The largest batch vLLM captures a CUDA graph for: ``min(2 x max_num_seqs, 512)``, at most a step's tokens."""
    return min(2 * max_num_seqs, MAX_CUDAGRAPH_CAPTURE_SIZE, max_num_batched_tokens)


def sampler_bytes_per_logit(version: str) -> float:
    """``SAMPLER_BYTES_PER_LOGIT`` of the latest entry at or below ``version``."""
    at = release(version)
    return SAMPLER_BYTES_PER_LOGIT[max(r for r in SAMPLER_BYTES_PER_LOGIT if r <= at)]


def forward_bytes_per_token(model: ModelFactsArgs, tp: int) -> float:
    """Peak activation bytes per token of one layer of the profile run's forward pass on one GPU.

    Dense: the MLP's gate/up output (2 x intermediate / tp) and the activated half (intermediate / tp).
    Mixture of experts: vLLM's fused-MoE caches per routed copy of the token, ``max(2 x I / tp, hidden)``
    (gate/up output, reused for the down projection's) and ``I / tp``. Both beside ``RESIDUAL_STREAMS``
    hidden-size rows. Layers run one after another, so the peak is one layer's."""
    hidden, inter = model.hidden, model.intermediate / tp
    mlp = 3 * inter
    if model.is_moe:
        mlp = (model.experts_per_token or DEFAULT_EXPERTS_PER_TOKEN) * (max(2 * inter, hidden) + inter)
    return ACTIVATION_BYTES * (mlp + RESIDUAL_STREAMS * hidden)


@dataclass(frozen=True)
class Overhead:
    """Per-GPU memory inside vLLM's budget that is neither weights nor KV cache, in bytes."""

    non_torch: float
    activation: float
    cuda_graphs: float

    @property
    def total(self) -> float:
        return self.non_torch + self.activation + self.cuda_graphs


def runtime_overhead(
    model: ModelFactsArgs,
    tp: int,
    max_num_seqs: int,
    max_num_batched_tokens: int,
    *,
    cuda_graphs: bool = True,
    vllm_version: str = PINNED_VLLM_VERSION,
) -> Overhead:
    """The overhead terms of ``models.FORMULA`` for ``model`` at ``tp`` under ``vllm_version``'s profiler.

    :param max_num_seqs: rows of logits the profile run samples (at most ``max_num_batched_tokens``).
    :param max_num_batched_tokens: tokens of the profile run's forward pass.
    :param cuda_graphs: False for ``--enforce-eager``; graphs count only from ``CUDA_GRAPHS_IN_BUDGET_SINCE``.
    """
    non_torch = (NON_TORCH_TP_GIB if tp > 1 else NON_TORCH_GIB) * GIB
    vocab = model.vocab_size or DEFAULT_VOCAB_SIZE
    rows = min(max_num_seqs, max_num_batched_tokens)
    activation = max_num_batched_tokens * forward_bytes_per_token(model, tp) + rows * vocab * sampler_bytes_per_logit(
        vllm_version
    )
    graphs = 0.0
    if cuda_graphs and release(vllm_version) >= CUDA_GRAPHS_IN_BUDGET_SINCE:
        # Piecewise graphs keep each layer's hidden-size output for the largest captured batch.
        captured = cudagraph_capture_size(max_num_seqs, max_num_batched_tokens)
        graphs = CUDA_GRAPH_BASE_GIB * GIB + captured * model.layers * model.hidden * ACTIVATION_BYTES
    return Overhead(non_torch, activation, graphs)
