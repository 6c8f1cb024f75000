"""What vLLM holds on each GPU inside its memory budget besides the weights and the KV cache: the
non-torch memory, the profile run's activation peak, the MoE workspace and the CUDA-graph pool, for the
vLLM release the project pins; and vLLM's default ``--max-num-seqs``, which sizes the activation term."""

from __future__ import annotations

from dataclasses import dataclass

from .model_facts import GIB, ModelFactsArgs

PINNED_VLLM_VERSION = "0.32.0"
"""vLLM release the overhead terms model: ``VllmServiceArgs.image`` defaults to
``vllm/vllm-openai:v0.32.0`` (components.serving, not imported here: it pulls in Pulumi)."""

NON_TORCH_GIB = 0.25
"""Per-GPU memory outside PyTorch's allocator at tp 1 (cuBLAS workspaces, allocator slack), which vLLM
counts against the budget. Published: 0.24-0.27 GiB on H100 (vLLM 0.19, llm-d-planner#205), 0.26 GiB on
A100 80GB (vLLM 0.31), 0.13 GiB (vLLM 0.11, llm-d-benchmark)."""

NON_TORCH_TP_GIB = 2.1
"""The same with tensor parallelism: NCCL communicators and custom all-reduce buffers. Published:
2.06-2.21 GiB at tp 2 and 4 on H100 (vLLM 0.19), 1.82-2.10 GiB at tp 8 on A100 (vllm#18446)."""

ACTIVATION_BASE_GIB = 0.36
"""Peak activation of vLLM's profile run that does not depend on the vocabulary (the dummy forward pass
of ``max_num_batched_tokens`` tokens). Fitted on vLLM 0.19's per-model figures (llm-d-planner#205):
CodeLlama-7B (vocabulary 32,016) peaks at 0.77 GiB, gemma-2 (256,000) at 3.62-3.66 GiB, whatever the
model's size."""

SAMPLER_BYTES_PER_LOGIT = 23.0
"""Bytes per (scheduled sequence x vocabulary entry) that the profile run's dummy sampler holds at its
peak (fp32 logits and the sort/softmax copies of top-k/top-p), so the activation term is
``ACTIVATION_BASE_GIB + max_num_seqs x vocab_size x SAMPLER_BYTES_PER_LOGIT``. Published figures per
logit: ~37 bytes in vLLM 0.10-0.11 (Llama 4.76 GiB, Qwen3 5.56-5.64 GiB, gpt-oss 7.38 GiB at 1024
sequences, llm-d-benchmark), ~13 bytes in vLLM 0.19 (Llama 1.89 GiB, gpt-oss 2.87 GiB). vLLM 0.31 on
A100 (256 sequences) peaked at 1.21 GiB for Llama-3.1-8B, which this value reproduces; between the
two older releases, it keeps the refusals on the safe side."""

MOE_WORKSPACE_FRACTION = 0.008
"""Extra activation of a mixture of experts (fused-MoE intermediate caches and kernel workspaces) per
GiB of weights on the GPU. vLLM 0.19 on H100: Mixtral-8x7B tp 2 +0.44 GiB over a dense model of its
vocabulary, Qwen3-30B-A3B +0.36, DeepSeek-V2-Lite +0.25, Qwen1.5-MoE-A2.7B +0.26."""

CUDA_GRAPH_BASE_GIB = 0.2
CUDA_GRAPH_GIB_PER_B_PARAMS = 0.008
"""CUDA-graph pool per GPU = ``CUDA_GRAPH_BASE_GIB + CUDA_GRAPH_GIB_PER_B_PARAMS x params_b`` (all
parameters; graphs hold activations of every layer, replicated across tp ranks). Since vLLM 0.21 the
profiler estimates the pool and reserves it inside ``gpu_memory_utilization`` ("CUDA graph memory
profiling is enabled (default since v0.21.0)"); vLLM 0.31 reserved 0.23 GiB for Llama-3.1-8B on A100.
Not reserved with ``--enforce-eager``."""

CUDA_GRAPHS_IN_BUDGET_SINCE = (0, 21)
"""First vLLM release whose profiler reserves CUDA-graph memory inside the budget."""

DEFAULT_VOCAB_SIZE = 152_064
"""Vocabulary assumed for a model whose facts omit ``vocab_size`` (Qwen2.5's; Llama 3 has 128,256)."""

RUNTIME_OVERHEAD_GIB = round(NON_TORCH_GIB + ACTIVATION_BASE_GIB + CUDA_GRAPH_BASE_GIB, 2)
"""The fixed part of the per-GPU overhead at tp 1 (non-torch, activation base, CUDA-graph base); the
vocabulary, MoE and model-size terms come on top (see ``models.FORMULA``)."""

TP_OVERHEAD_GIB = round(NON_TORCH_TP_GIB - NON_TORCH_GIB, 2)
"""Extra fixed per-GPU memory with tensor parallelism (NCCL and custom all-reduce buffers)."""

VLLM_MAX_NUM_SEQS_LARGE_GPU = 1024
VLLM_MAX_NUM_SEQS = 256
"""vLLM's default ``--max-num-seqs``: 1024 on GPUs with at least 70 GiB that are not A100s (H100, H200,
MI300X), else 256 (vllm tests/engine/test_arg_utils.py ``test_defaults_with_usage_context``)."""


def vllm_default_max_num_seqs(gpu: str, device_gib: float) -> int:
    """vLLM's default ``--max-num-seqs`` for a GPU: 1024 with at least 70 GiB unless it is an A100, else 256."""
    if device_gib >= 70 and "A100" not in gpu.upper():
        return VLLM_MAX_NUM_SEQS_LARGE_GPU
    return VLLM_MAX_NUM_SEQS


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
    model: ModelFactsArgs, tp: int, weights_per_gpu: float, max_num_seqs: int, *, cuda_graphs: bool = True
) -> Overhead:
    """The overhead terms of ``models.FORMULA`` for ``model`` at ``tp`` with ``weights_per_gpu`` bytes on each GPU."""
    non_torch = (NON_TORCH_TP_GIB if tp > 1 else NON_TORCH_GIB) * GIB
    vocab = model.vocab_size or DEFAULT_VOCAB_SIZE
    activation = ACTIVATION_BASE_GIB * GIB + max_num_seqs * vocab * SAMPLER_BYTES_PER_LOGIT
    if model.is_moe:
        activation += MOE_WORKSPACE_FRACTION * weights_per_gpu
    graphs = (CUDA_GRAPH_BASE_GIB + CUDA_GRAPH_GIB_PER_B_PARAMS * model.params_b) * GIB if cuda_graphs else 0.0
    return Overhead(non_torch, activation, graphs)
