"""What the stack exports of its models, as plain data the planner reads: each model's memory fit, and what a placement
of it must hold (``aks-gpu alternatives`` ranks placements from it without importing the components)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.fit_result import FitResult
from ..serving.vllm_checks import fit_settings

if TYPE_CHECKING:
    from .config import StackConfig

DEFAULT_TOKENS_PER_SECOND = 1500.0
"""A self-hosted replica's assumed output throughput without a gateway: ``SemanticRouterGatewayArgs``' default."""


def fit_summary(fit: FitResult) -> dict:
    """What the stack exports of a memory fit."""
    return {
        "model": fit.model,
        "vm_size": fit.vm_size,
        "gpu": fit.gpu,
        "tp": fit.tp,
        "max_model_len": fit.max_model_len,
        "weights_gib_per_gpu": round(fit.weights_gib_per_gpu, 2),
        "kv_tokens": fit.kv_tokens,
        "full_length_sequences": fit.full_length_sequences,
    }


def placements(config: StackConfig) -> dict[str, dict[str, Any]]:
    """Per model (``models[]``): its facts and fit settings, the replicas a placement holds (the autoscaler's ceiling,
    ``replicas``, or the prefill and decode engines, each on whole nodes), and where it runs now."""
    tokens = config.gateway.self_hosted_tokens_per_second if config.gateway else DEFAULT_TOKENS_PER_SECOND
    pools = {p.name: p for p in config.gpu_pools}
    found = {}
    for m in config.models:
        split, pool = m.disaggregation, pools[m.pool]
        replicas = m.autoscaling.max_replicas if m.autoscaling else m.replicas
        engines = split.prefill_replicas + split.decode_replicas if split else replicas
        found[m.name] = {
            "facts": m.facts().model_dump(),
            "settings": fit_settings(m),
            "replicas": engines,
            "whole_nodes": split is not None,
            "decoders": split.decode_replicas if split else replicas,
            "rdma": m.rdma,
            "tokens_per_second": tokens,
            "current": {
                "pool": pool.name,
                "vm_size": pool.vm_size,
                "region": config.location,
                "spot": pool.spot,
                "tp": m.tensor_parallel_size,
                "mig_profile": pool.mig_profile,
            },
        }
    return found
