"""The KV cache of a model on one GPU: bytes per token (full-attention and sliding-window layers apart), bytes
of one sequence, the layout vLLM builds for it (``vllm_kv``) and the longest context a budget holds."""

from __future__ import annotations

from .model_facts import ModelFactsArgs
from .vllm_kv import KvLayout, layout
from .vllm_releases import PINNED_VLLM_VERSION, kv_block_size


def per_token_bytes(model: ModelFactsArgs, tp: int, kv_cache_dtype: str) -> tuple[int, int]:
    """KV bytes per token on one GPU: (full-attention layers, sliding-window layers)."""
    per_layer = model.kv_layer_bytes(tp, kv_cache_dtype)
    return per_layer * (model.layers - model.sliding_layers), per_layer * model.sliding_layers


def sequence_bytes(model: ModelFactsArgs, tokens: int, tp: int = 1, kv_cache_dtype: str = "auto") -> int:
    """KV bytes one sequence of ``tokens`` tokens holds on one GPU (sliding layers keep at most the window),
    before vLLM rounds it up to whole blocks."""
    full, sliding = per_token_bytes(model, tp, kv_cache_dtype)
    return full * tokens + sliding * min(tokens, model.sliding_window or tokens)


def kv_layout(
    model: ModelFactsArgs,
    tp: int,
    kv_cache_dtype: str,
    *,
    max_num_batched_tokens: int,
    vllm_version: str = PINNED_VLLM_VERSION,
    gpu: str = "",
) -> KvLayout:
    """The KV cache vLLM ``vllm_version`` lays out for ``model`` on one GPU of a tp-sized replica."""
    return layout(
        model.layers,
        model.sliding_layers,
        model.sliding_window,
        model.kv_layer_bytes(tp, kv_cache_dtype),
        block_size=kv_block_size(vllm_version, gpu, model.attention == "mla"),
        max_num_batched_tokens=max_num_batched_tokens,
        vllm_version=vllm_version,
    )


def longest_context(model: ModelFactsArgs, longest_request: int) -> int | None:
    """The longest context worth suggesting: vLLM's estimate rounded down to a multiple of 1024, at most the
    model's maximum; None when not even 1024 tokens fit."""
    length = min(longest_request // 1024 * 1024, model.max_context)
    return length if length >= 1024 else None
