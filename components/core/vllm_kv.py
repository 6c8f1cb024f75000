"""vLLM's own arithmetic on a KV budget, release by release: the blocks it allocates, the "GPU KV cache size" and
"Maximum concurrency" it prints, and the start-up check that refuses a context one request cannot hold.

Read at the tags (``vllm/v1/core/kv_cache_utils.py`` and ``vllm/v1/kv_cache_interface.py``):

- every layer's page is ``block_size`` tokens of its per-token bytes; a full-attention layer needs
  ``cdiv(max_model_len, block_size)`` pages per request, a sliding-window layer
  ``cdiv(min(window - 1 + max_num_batched_tokens, max_model_len), block_size) + 1`` (``SlidingWindowSpec``,
  from 0.8.3; before, every layer is full attention);
- ``check_enough_kv_cache_memory`` refuses to start when the available memory is not positive ("No available
  memory for the cache blocks") or below the pages of one request at max_model_len ("To serve at least one
  request with the models's max seq len ...");
- one attention type (or the hybrid manager off, before 0.9.1): ``num_blocks = available // page // layers``,
  "GPU KV cache size" = ``num_blocks x block_size``; concurrency ``tokens / max_model_len`` up to 0.9.0, then
  ``num_blocks / cdiv(max_model_len, block_size)`` (``get_max_concurrency_for_kv_cache_config``);
- full and sliding layers with the hybrid manager (0.9.1+): layers are grouped in groups of the smaller count
  (``_get_kv_cache_groups_uniform_page_size``), ``num_blocks = available // page // group_size``, "GPU KV cache
  size" = ``num_blocks // groups x block_size`` (so the tokens divide the pool by every layer, padding
  included), concurrency = ``num_blocks`` / the blocks one full-length request takes in every group.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .vllm_releases import HYBRID_KV_MANAGER_SINCE, SLIDING_WINDOW_SPEC_SINCE, release


@dataclass(frozen=True)
class KvLayout:
    """The KV cache of one GPU as vLLM specifies it."""

    full_layers: int
    """Layers that keep every token."""
    sliding_layers: int
    """Layers that keep at most ``window`` tokens (0 when the release treats them as full attention)."""
    window: int
    """Tokens a sliding layer keeps (0 without sliding layers)."""
    layer_bytes: int
    """KV bytes one token takes in one layer on this GPU (the same in every layer)."""
    block_size: int
    """Tokens per block."""
    max_num_batched_tokens: int
    """Tokens per scheduler step: a sliding layer holds the window plus one step's tokens."""
    hybrid_manager: bool
    """vLLM groups full and sliding layers (0.9.1+), instead of allocating every layer alike."""
    block_concurrency: bool
    """vLLM prints concurrency in blocks (0.9.1+), instead of tokens / max_model_len."""

    @property
    def page(self) -> int:
        return self.block_size * self.layer_bytes

    def request_pages(self, tokens: int) -> int:
        """Pages one request of ``tokens`` tokens takes in all layers (``max_memory_usage_bytes``)."""
        full = math.ceil(tokens / self.block_size)
        sliding = math.ceil(min(self.window - 1 + self.max_num_batched_tokens, tokens) / self.block_size) + 1
        return self.full_layers * full + (self.sliding_layers * sliding if self.sliding_layers else 0)


def layout(
    layers: int,
    sliding_layers: int,
    window: int | None,
    layer_bytes: int,
    *,
    block_size: int,
    max_num_batched_tokens: int,
    vllm_version: str,
) -> KvLayout:
    """The KV layout vLLM ``vllm_version`` builds for ``layers`` attention layers, ``sliding_layers`` of them with
    a ``window``; a release without ``SlidingWindowSpec`` treats them as full attention."""
    at = release(vllm_version)
    if at < SLIDING_WINDOW_SPEC_SINCE or not window:
        sliding_layers = 0
    return KvLayout(
        full_layers=layers - sliding_layers,
        sliding_layers=sliding_layers,
        window=window or 0 if sliding_layers else 0,
        layer_bytes=layer_bytes,
        block_size=block_size,
        max_num_batched_tokens=max_num_batched_tokens,
        hybrid_manager=at >= HYBRID_KV_MANAGER_SINCE,
        block_concurrency=at >= HYBRID_KV_MANAGER_SINCE,
    )


@dataclass(frozen=True)
class KvReport:
    """What vLLM prints and decides for a KV budget."""

    num_blocks: int
    """Blocks vLLM allocates (0 when the budget is not positive)."""
    groups: int
    """KV cache groups (1 unless the hybrid manager groups full and sliding layers)."""
    tokens: int
    """"GPU KV cache size: N tokens" as vLLM prints it."""
    max_concurrency: float
    """"Maximum concurrency for max_model_len tokens per request: X" as vLLM prints it."""
    needed_bytes: int
    """KV bytes one request of max_model_len needs on one GPU (the start-up check)."""
    longest_request: int
    """The longest request the budget holds alone (vLLM's ``estimate_max_model_len``, not capped); 0 if none."""
    available_bytes: float
    """The budget the report was made for ("Available KV cache memory")."""

    @property
    def starts(self) -> bool:
        """vLLM's start-up check passes: a positive budget that holds one request of max_model_len."""
        return self.available_bytes > 0 and self.needed_bytes <= self.available_bytes


def report(kv: KvLayout, available: float, max_model_len: int) -> KvReport:
    """vLLM's KV configuration for ``available`` bytes per GPU at ``max_model_len``."""
    needed = kv.request_pages(max_model_len) * kv.page
    longest = _longest_request(kv, available)
    if available <= 0:
        return KvReport(0, 1, 0, 0.0, needed, 0, available)
    hybrid = kv.hybrid_manager and kv.full_layers and kv.sliding_layers
    if hybrid:
        group_size = min(kv.full_layers, kv.sliding_layers)
        full_groups, sliding_groups = math.ceil(kv.full_layers / group_size), math.ceil(kv.sliding_layers / group_size)
        groups = full_groups + sliding_groups
        blocks = int(available // kv.page // group_size)
        tokens = blocks // groups * kv.block_size
        one = KvLayout(
            full_groups, sliding_groups, kv.window, kv.layer_bytes, kv.block_size, kv.max_num_batched_tokens, True, True
        )
        concurrency = blocks / one.request_pages(max_model_len)
        return KvReport(blocks, groups, tokens, concurrency, needed, longest, available)
    layers = kv.full_layers + kv.sliding_layers
    blocks = int(available // kv.page // layers)
    tokens = blocks * kv.block_size
    if not kv.block_concurrency:
        concurrency = tokens / max_model_len
    elif kv.sliding_layers and not kv.full_layers:
        concurrency = blocks / (kv.request_pages(max_model_len) // kv.sliding_layers)
    else:
        concurrency = blocks / math.ceil(max_model_len / kv.block_size)
    return KvReport(blocks, 1, tokens, concurrency, needed, longest, available)


def _longest_request(kv: KvLayout, available: float) -> int:
    """The largest context whose one request fits ``available`` (binary search, as ``estimate_max_model_len``)."""
    if available <= 0 or kv.request_pages(1) * kv.page > available:
        return 0
    low, high = 1, 1
    while kv.request_pages(high) * kv.page <= available and high < 2**40:
        low, high = high, high * 2
    while low < high - 1:
        middle = (low + high) // 2
        low, high = (middle, high) if kv.request_pages(middle) * kv.page <= available else (low, middle)
    return low
