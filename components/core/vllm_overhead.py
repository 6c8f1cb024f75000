"""What vLLM holds on each GPU inside its memory budget besides the weights and the KV cache, as its
profiler measures it (``gpu_worker.determine_available_memory``), release by release: the non-torch memory,
the torch peak of the profile run (a forward pass of ``max_num_batched_tokens`` tokens, then the sampler on
``max_num_seqs`` rows of logits) and, from 0.21, the CUDA-graph pool; and vLLM's scheduler defaults, which
size the profile run.

No term depends on the GPU's name: two GPUs that report the same memory and run the same settings get the
same overhead. Only vLLM's own defaults (``vllm_default_max_num_seqs``) tell an A100 from an H100.
"""

from __future__ import annotations

from dataclasses import dataclass

from .model_facts import GIB, ModelFactsArgs
from .vllm_releases import (
    CUDA_GRAPHS_IN_BUDGET_SINCE,
    PINNED_VLLM_VERSION,
    Release,
    release,
    scheduler_defaults,
)


@dataclass(frozen=True)
class NonTorch:
    """Per-GPU memory outside PyTorch's allocator that a release's profiler charges to the budget, in GiB."""

    since: Release
    """First release these figures apply to."""
    single: float
    """tp 1: cuBLAS/cuBLASLt workspaces (and the CUDA context where the profiler counts it)."""
    custom_all_reduce: float
    """tp > 1 on one NVLink node with vLLM's custom all-reduce: NCCL communicators and their NVLink/NVSwitch
    channel buffers plus the custom all-reduce IPC buffers, as far as the release's snapshot lets them count."""
    nccl_only: float
    """tp > 1 across nodes or pods (vLLM disables its custom all-reduce: "this process group spans across
    nodes"), with ``--disable-custom-all-reduce``, or on a PCIe node: NCCL's buffers for a network or PCIe
    transport only."""


NON_TORCH: tuple[NonTorch, ...] = (
    # V0 (0.6.x): 0.24-0.27 GiB at tp 1, 2.06-2.21 GiB with tp (the calibration of vllm#10511's points).
    NonTorch((0, 0, 0), 0.25, 2.1, 2.1),
    # 0.8.0-0.9.0 subtract everything in use outside torch, the CUDA context included (~0.6 GiB): RTX 4090 D,
    # vLLM 0.8.5, Qwen2.5-0.5B, 0.9: 0.79 GiB beyond the weights, the KV pool and the sampler (index id 33295060080).
    NonTorch((0, 8, 0), 0.75, 2.75, 1.1),
    # 0.9.1-0.10.x count the increase from a snapshot taken before NCCL starts: 0.02-0.13 GiB at tp 1
    # (vLLM 0.10.1 debug log, index id 21240355802; llm-d-benchmark at 0.11), NCCL and custom all-reduce with tp
    # as measured at 0.19 (2.06-2.21 GiB); across two pods without custom all-reduce ~0.6 GiB (Qwen2-7B, vLLM
    # 0.10.1, index id 48549636448).
    NonTorch((0, 9, 1), 0.13, 2.1, 0.6),
    # 0.11 snapshots after NCCL starts: 0.13 GiB at tp 1, 0.54-0.55 GiB at tp 2 on H100 (llm-d-benchmark).
    NonTorch((0, 11, 0), 0.13, 0.55, 0.55),
    # 0.15-0.31: 0.24-0.27 GiB at tp 1 (A100 0.31; H100 0.19), 2.06-2.21 GiB at tp 2-4 on H100 (llm-d-planner#205);
    # no published log without custom all-reduce, so it is charged the same.
    NonTorch((0, 12, 0), 0.25, 2.1, 2.1),
)
"""Non-torch memory by release, the latest row at or below the version asked for."""

NON_TORCH_GIB = NON_TORCH[-1].single
"""Non-torch memory at tp 1 in the pinned release."""

NON_TORCH_TP_GIB = NON_TORCH[-1].custom_all_reduce
"""Non-torch memory with tensor parallelism in the pinned release."""

ACTIVATION_BYTES = 2
"""Bytes per activation element: the profile run computes in the model's bfloat16/float16."""

RESIDUAL_STREAMS = 2
"""Hidden-size rows per token alive beside the MLP's intermediates at the peak of a layer (the residual
and the normed input the MLP reads)."""

DEFAULT_EXPERTS_PER_TOKEN = 2
"""Experts per token assumed for a mixture of experts whose facts omit ``experts_per_token`` (Mixtral's)."""

SAMPLER_BYTES_PER_LOGIT: dict[Release, float] = {
    (0, 0, 0): 15.0,
    (0, 8, 0): 31.0,
    (0, 15, 0): 9.0,
    (0, 31, 0): 33.0,
}
"""Bytes the profile run's dummy sampler holds at its peak per (row x vocabulary entry): the logits and the
fp32 copies, softmax and top-k/top-p sort buffers made from them, by the first release with that cost
(a release uses the latest entry at or below it). Derived from published activation peaks minus the
forward term above: V0 (0.6.5, vllm-project/vllm#10511: 1.26 GiB for Llama-3-8B at 256 rows) ~15 bytes;
V1 0.8-0.11 ~31 (vLLM's ``_dummy_sampler_run`` samples with top-k and top-p, which the PyTorch-native path
sorts: vllm#23278 gpt-oss-120b; llm-d-benchmark 0.11: Llama-3.1-8B 4.76 GiB, Qwen3-32B 5.64 GiB, gpt-oss-20b
7.38 GiB at 1024 rows; an RTX 4090 D at 0.8.5); with FlashInfer's sampler the same releases spend ~11
(Llama-3.2-1B at 0.10.1), so the sorting cost is the safe one to charge; 0.15-0.19 ~9 (llm-d-planner#205 at
1024 rows); 0.31 ~33 (one A100 80GB: 1.21 GiB for Llama-3.1-8B at 256 rows), which the pinned release uses."""

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
MI300X), else 256 (vllm tests/engine/test_arg_utils.py ``test_defaults_with_usage_context``); earlier V1
releases differ (``vllm_releases.scheduler_defaults``)."""

VLLM_MAX_NUM_BATCHED_TOKENS_LARGE_GPU = 8192
VLLM_MAX_NUM_BATCHED_TOKENS = 2048
"""vLLM's default ``--max-num-batched-tokens`` for ``vllm serve`` (the OpenAI server VllmService runs),
by the same rule: 8192 on GPUs of 70 GiB or more other than the A100, else 2048 (the offline ``LLM`` class
uses 16384 and 8192); the profile run's forward pass is this many tokens."""


def vllm_default_max_num_seqs(gpu: str, device_gib: float, vllm_version: str = PINNED_VLLM_VERSION) -> int:
    """vLLM's default ``--max-num-seqs`` for a GPU in a release (``vllm_releases.scheduler_defaults``)."""
    return scheduler_defaults(vllm_version, gpu, device_gib)[0]


def vllm_default_max_num_batched_tokens(gpu: str, device_gib: float, vllm_version: str = PINNED_VLLM_VERSION) -> int:
    """vLLM's default ``--max-num-batched-tokens`` for ``vllm serve`` in a release."""
    return scheduler_defaults(vllm_version, gpu, device_gib)[1]


def cudagraph_capture_size(max_num_seqs: int, max_num_batched_tokens: int) -> int:
    """The largest batch vLLM captures a CUDA graph for: ``min(2 x max_num_seqs, 512)``, at most a step's tokens."""
    return min(2 * max_num_seqs, MAX_CUDAGRAPH_CAPTURE_SIZE, max_num_batched_tokens)


def _latest(table, version: str):
    at = release(version)
    return table[max(since for since in table if since <= at)]


def sampler_bytes_per_logit(version: str) -> float:
    """``SAMPLER_BYTES_PER_LOGIT`` of the latest entry at or below ``version``."""
    return _latest(SAMPLER_BYTES_PER_LOGIT, version)


def non_torch_gib(version: str, tp: int, custom_all_reduce: bool = True) -> float:
    """``NON_TORCH`` for ``version`` at ``tp``, with or without vLLM's custom all-reduce."""
    row = _latest({r.since: r for r in NON_TORCH}, version)
    if tp == 1:
        return row.single
    return row.custom_all_reduce if custom_all_reduce else row.nccl_only


def forward_bytes_per_token(model: ModelFactsArgs, tp: int) -> float:
    """Peak activation bytes per token of one layer of the profile run's forward pass on one GPU.

    Dense: the MLP's gate/up output (2 x intermediate / tp) and the activated half (intermediate / tp).
    Mixture of experts: vLLM's fused-MoE caches per routed copy of the token, ``max(2 x I / tp, hidden)``
    (gate/up output, reused for the down projection's) and ``I / tp``, plus the shared experts' output.
    Both beside ``RESIDUAL_STREAMS`` hidden-size rows. Layers run one after another, so the peak is the
    largest layer's; attention is skipped in the profile run (no attention metadata)."""
    hidden, inter = model.hidden, model.intermediate / tp
    if not model.is_moe and not model.experts:
        return ACTIVATION_BYTES * (3 * inter + RESIDUAL_STREAMS * hidden)
    routed = (model.experts_per_token or DEFAULT_EXPERTS_PER_TOKEN) * (max(2 * inter, hidden) + inter)
    mlp = routed + (hidden if model.shared_expert_intermediate_size else 0)
    if model.dense_layers:
        mlp = max(mlp, 3 * (model.dense_intermediate_size or model.intermediate) / tp)
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
    custom_all_reduce: bool = True,
) -> Overhead:
    """The overhead terms of ``models.FORMULA`` for ``model`` at ``tp`` under ``vllm_version``'s profiler.

    :param max_num_seqs: rows of logits the profile run samples (at most ``max_num_batched_tokens``).
    :param max_num_batched_tokens: tokens of the profile run's forward pass.
    :param cuda_graphs: False for ``--enforce-eager``; graphs count only from ``CUDA_GRAPHS_IN_BUDGET_SINCE``.
    :param custom_all_reduce: False across nodes or pods, or with ``--disable-custom-all-reduce``.
    """
    non_torch = non_torch_gib(vllm_version, tp, custom_all_reduce) * GIB
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
