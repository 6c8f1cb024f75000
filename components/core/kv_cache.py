"""The KV cache: bytes per token on one GPU (full-attention and sliding-window layers apart), bytes of one
sequence, and how many tokens and full-length sequences a KV budget holds."""

from __future__ import annotations

from .model_facts import ModelFactsArgs


def per_token_bytes(model: ModelFactsArgs, tp: int, kv_cache_dtype: str) -> tuple[int, int]:
    """KV bytes per token on one GPU: (full-attention layers, sliding-window layers)."""
    per_layer = 2 * model.kv_heads_per_gpu(tp) * model.head_dim * model.kv_dtype_bytes(kv_cache_dtype)
    return per_layer * (model.layers - model.sliding_layers), per_layer * model.sliding_layers


def sequence_bytes(model: ModelFactsArgs, tokens: int, tp: int = 1, kv_cache_dtype: str = "auto") -> int:
    """KV bytes one sequence of ``tokens`` tokens holds on one GPU (sliding layers keep at most the window)."""
    full, sliding = per_token_bytes(model, tp, kv_cache_dtype)
    return full * tokens + sliding * min(tokens, model.sliding_window or tokens)


def capacity(model: ModelFactsArgs, kv_budget: float, tokens: int, tp: int, kv_cache_dtype: str) -> tuple[int, int]:
    """(KV tokens, full-length sequences of ``tokens`` tokens) that ``kv_budget`` bytes per GPU hold; none
    when the budget is not positive. Tokens count the full-attention layers (all layers without any)."""
    full, sliding = per_token_bytes(model, tp, kv_cache_dtype)
    kv_tokens = int(max(kv_budget, 0) // (full or sliding))
    sequences = int(max(kv_budget, 0) // sequence_bytes(model, tokens, tp, kv_cache_dtype))
    return kv_tokens, sequences


def longest_context(model: ModelFactsArgs, kv_budget: float, tp: int, kv_cache_dtype: str) -> int | None:
    """The longest context (a multiple of 1024, at most the model's) of which one sequence fits ``kv_budget``
    bytes per GPU, or None when not even 1024 tokens do."""
    full, sliding = per_token_bytes(model, tp, kv_cache_dtype)
    window = model.sliding_window or 0
    if full == 0:
        return None
    fits_window = kv_budget >= (full + sliding) * window
    tokens = (kv_budget - sliding * window) / full if fits_window else kv_budget / (full + sliding)
    length = min(int(tokens) // 1024 * 1024, model.max_context)
    return length if length >= 1024 else None
