"""What a self-hosted model's tokens cost: its VM's list price spread over an assumed throughput. The gateway quotes
it to the router per model (``semantic_router_gateway_args``) and ``aks-gpu alternatives`` ranks placements by it.
Plain Python: no Pulumi.
"""

from __future__ import annotations


def self_hosted_cost_per_million(price_usd_per_hour: float, tokens_per_second: float) -> float:
    """Estimated USD per 1M output tokens for a self-hosted pool.

    ``price_usd_per_hour`` is the pool's hourly price (all its nodes); ``tokens_per_second`` is an *assumed* sustained
    aggregate output throughput, so the result is an estimate for vSR's pricing fields, not a bill. A pool that is idle
    part of the time costs more per token than this.
    """
    if price_usd_per_hour < 0:
        raise ValueError(f"price_usd_per_hour must be >= 0, got {price_usd_per_hour}")
    if tokens_per_second <= 0:
        raise ValueError(f"tokens_per_second must be > 0, got {tokens_per_second}")
    tokens_per_hour = tokens_per_second * 3600
    return price_usd_per_hour / tokens_per_hour * 1_000_000
