"""The one range of vLLM's ``gpu_memory_utilization`` the project accepts, in the stack file (VllmService,
Dynamo), the memory fit and ``aks-gpu fit``, and its default. Pure, so the command line can show it without
loading the fit."""

from __future__ import annotations

DEFAULT_GPU_MEMORY_UTILIZATION = 0.9
"""``VllmServiceArgs.gpu_memory_utilization``'s default, passed to vLLM explicitly (vLLM's own default
was 0.9 and is 0.92 in current releases)."""

GPU_MEMORY_UTILIZATION_ABOVE = 0.1
GPU_MEMORY_UTILIZATION_AT_MOST = 0.98
"""Above 0.1 (less leaves no room for a model's weights), at most 0.98 (the rest is the CUDA context and what
vLLM's profiler cannot see)."""

UTILIZATION_ACCEPTED = f"above {GPU_MEMORY_UTILIZATION_ABOVE} and at most {GPU_MEMORY_UTILIZATION_AT_MOST}"
"""The range in words, for error messages."""


def utilization_problem(value: float) -> str | None:
    """Why ``value`` is not an accepted ``gpu_memory_utilization``, or None."""
    if GPU_MEMORY_UTILIZATION_ABOVE < value <= GPU_MEMORY_UTILIZATION_AT_MOST:
        return None
    return f"must be {UTILIZATION_ACCEPTED}"
