"""The fit formula in README-ready Markdown, made from the constants the fit computes with, so that the docs
(``planner/fit_doc.py`` -> docs/serving.md) say what the code does."""

from __future__ import annotations

import textwrap

from .gpu_memory import gpu_memory_table
from .gpu_utilization import DEFAULT_GPU_MEMORY_UTILIZATION, UTILIZATION_ACCEPTED
from .memory_fit import WARN_BELOW_SEQUENCES
from .vllm_overhead import (
    CUDA_GRAPH_BASE_GIB,
    MAX_CUDAGRAPH_CAPTURE_SIZE,
    NON_TORCH,
    SAMPLER_BYTES_PER_LOGIT,
    VLLM_MAX_NUM_BATCHED_TOKENS,
    VLLM_MAX_NUM_BATCHED_TOKENS_LARGE_GPU,
    VLLM_MAX_NUM_SEQS,
    VLLM_MAX_NUM_SEQS_LARGE_GPU,
)
from .vllm_releases import (
    HYBRID_KV_MANAGER_SINCE,
    NCCL_BEFORE_SNAPSHOT_SINCE,
    PINNED_VLLM_VERSION,
    RELATIVE_PROFILER_SINCE,
    SLIDING_WINDOW_SPEC_SINCE,
)


def _v(since: tuple[int, ...]) -> str:
    return ".".join(str(part) for part in since)


def _non_torch() -> str:
    rows = []
    for row in NON_TORCH[1:]:
        rows.append(f"from {_v(row.since)}: {row.single:g} / {row.custom_all_reduce:g} / {row.nccl_only:g}")
    return "; ".join(rows)


def _sampler() -> str:
    return ", ".join(
        f"{value:g} " + (f"from {_v(since)}" if since >= (0, 8) else "in V0") for since, value in SAMPLER_BYTES_PER_LOGIT.items()
    )


def _formula() -> str:
    devices = ", ".join(f"{gpu} {row['device_gib']:g}" for gpu, row in gpu_memory_table().items())
    bullets = [
        "Inputs: a catalog model, a JSON file of `ModelFactsArgs`, or a Hugging Face `config.json` (its "
        "folder, with `model.safetensors.index.json` beside it for the checkpoint's size); the vLLM release "
        f"(`--vllm-version`, default {PINNED_VLLM_VERSION}, the image VllmService pins); `--enforce-eager`, "
        "`--max-num-seqs`, `--max-num-batched-tokens` as vLLM takes them; `--nodes` and "
        "`--disable-custom-all-reduce` for tensor parallelism across pods or nodes.",
        f"Budget = the memory the GPU reports to CUDA, in GiB (`components/core/gpu_memory.json`: {devices}) x "
        f"`gpu_memory_utilization` ({UTILIZATION_ACCEPTED}, default {DEFAULT_GPU_MEMORY_UTILIZATION}). A vGPU size "
        'gets its share of the GPU; a MIG slice counts the GB in its name ("3g.40gb" -> 40e9 bytes) and serves '
        "tp 1; a GPU without a published figure counts its catalog GB as 1e9 bytes.",
        "Weights per GPU, for a config.json: counted layer by layer as vLLM loads them. Attention, MLP and shared "
        "experts split over tp; MLA's compressed q/kv projections, norms and MoE routers on every rank; KV "
        "projections over at most as many ranks as KV heads; routed experts split along their width; embeddings "
        "and the output projection (vocabulary padded to 64) split. fp8 is 1 byte per weight, block fp8 adds a "
        "scale per 128x128, GPTQ/AWQ int4 0.5 + 2.5 / group size, MXFP4 (experts only) 0.5 + 1/32 with the "
        "hidden size padded to 256 and the width to 128 (Marlin) or 64 (Triton, from 0.10.2 on Hopper). MLA adds "
        "bf16 copies of kv_b_proj. The checkpoint size, when known, replaces the count's total (less the "
        "multi-token-prediction layers vLLM does not load). Catalog rows: parameters x bytes (or `weights_gb`) "
        "/ tp, fp8/int4 keeping the embeddings in bf16.",
        "Overhead = what the release's profiler measures. Non-torch GiB (tp 1 / tp on an NVLink node with custom "
        f"all-reduce / across nodes, without it, or on a PCIe node): {_non_torch()}; releases before {_v(RELATIVE_PROFILER_SINCE)} count the "
        f"CUDA context, those from {_v(NCCL_BEFORE_SNAPSHOT_SINCE)} no longer NCCL's set-up. Activation peak of "
        "the profile run: max_num_batched_tokens x 2 bytes x (3 x intermediate / tp + 2 x hidden) for one "
        "layer's MLP (a mixture of experts: experts per token x (max(2 x intermediate / tp, hidden) + "
        "intermediate / tp), the fused-MoE caches, or a dense first layer if larger), plus min(max_num_seqs, "
        f"max_num_batched_tokens) x vocab x the sampler's bytes per logit ({_sampler()}). CUDA graphs count "
        f"inside the budget from vLLM 0.21 unless `--enforce-eager`: {CUDA_GRAPH_BASE_GIB} GiB + the largest "
        f"captured batch (min(2 x max_num_seqs, {MAX_CUDAGRAPH_CAPTURE_SIZE})) x layers x hidden x 2 bytes. "
        "The release's defaults size the profile run: since 0.9 "
        f"max_num_seqs {VLLM_MAX_NUM_SEQS_LARGE_GPU} and max_num_batched_tokens "
        f"{VLLM_MAX_NUM_BATCHED_TOKENS_LARGE_GPU} on GPUs of 70 GiB or more other than the A100, else "
        f"{VLLM_MAX_NUM_SEQS} and {VLLM_MAX_NUM_BATCHED_TOKENS} (0.8.x decided by name or by memory alone).",
        'KV budget = budget - weights - overhead: vLLM\'s "Available KV cache memory". The model loads when it is positive.',
        "KV bytes per token per layer on one GPU = 2 (K and V) x KV heads on the GPU x head_dim x KV dtype bytes "
        "(auto = the model's dtype, fp8 = 1); with tp > KV heads every GPU holds one replicated head. Multi-head "
        "latent attention keeps kv_lora_rank + qk_rope_head_dim per token per layer on every GPU. vLLM pages "
        "them in blocks of 16 tokens (64 for MLA on Hopper, 128 on Blackwell).",
        'vLLM\'s "GPU KV cache size" = blocks x block size, blocks = KV budget / (block bytes x layers). A hybrid '
        f"model (sliding-window and full layers, vLLM {_v(HYBRID_KV_MANAGER_SINCE)}+) is grouped in groups of its "
        "smaller layer count: blocks = budget / (block bytes x group size), tokens = blocks / groups x block size, "
        "so the figure divides the pool by every layer; its effective capacity is max concurrency x context, "
        'since a request\'s sliding layers keep only the window. "Maximum concurrency" = blocks / the blocks one '
        "max_model_len request takes (tokens / max_model_len before 0.9.1).",
        "It starts when tp divides the attention heads and the KV heads (or KV heads divide tp), the context is "
        "within the model's maximum, the KV budget is positive and holds one max_model_len request: full layers "
        "keep the context, sliding layers (own spec from "
        f"{_v(SLIDING_WINDOW_SPEC_SINCE)}) window - 1 + max_num_batched_tokens + one block. Below it vLLM "
        "refuses to start, and so does the fit, with vLLM's longest context. Fewer than "
        f"{WARN_BELOW_SEQUENCES} full-length sequences is a warning: requests queue.",
        "Checked by `bench/fit_accuracy.py` against published vLLM logs (`bench/fit_reference_points.json`): "
        "the KV budget within 8% wherever vLLM left at least a quarter of its budget for the KV cache, and "
        "vLLM's starts / refuses verdict where it left less or none.",
    ]
    lines = [f"Memory fit (vLLM {PINNED_VLLM_VERSION} by default, one replica of tensor-parallel size `tp`), per GPU:", ""]
    lines += [textwrap.fill(b, width=98, initial_indent="- ", subsequent_indent="  ", break_on_hyphens=False) for b in bullets]
    return "\n".join(lines) + "\n"


FORMULA = _formula()
"""The fit formula as README-ready Markdown."""
