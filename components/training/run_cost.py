"""What a training run's GPU nodes cost: nodes x hourly price x hours, for the catalog's on-demand list
price, the pool's Spot price where it is known, and the seeds' own figure for the size where a seed gives
one. Plain data, no Pulumi, so the plan prints it without the engine."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from ..core import catalog

if TYPE_CHECKING:
    from ..core.catalog import GpuSku
    from .distributed_training_args import DistributedTrainingArgs

SEED_PRICES: dict[str, tuple[str, float, str]] = {
    # Seed 002, section 7, scenario B (4 nodes x $40.00 x 48 h = $7,680.00 of GPU compute): the seed's
    # own rate, which is not the catalog's list price.
    "Standard_ND96isr_H100_v5": (
        "seed 002 figure",
        40.0,
        "seed 002 scenario B: 'Standard Pay-As-You-Go rate: ~$40.00/hr per instance'",
    ),
}
"""Hourly prices a seed states for a VM size: (row label, USD per node-hour, the seed's words)."""


@dataclass(frozen=True)
class CostRow:
    """One way of pricing the run."""

    label: str
    """What the price is: ``on-demand (catalog)``, ``Spot``, ``seed 002 figure``."""
    usd_per_node_hour: float | None
    """Price of one node for one hour in USD; None when unknown."""
    total_usd: float | None
    """``nodes x usd_per_node_hour x hours``; None when the price is unknown."""
    source: str
    """Where the price comes from, or why it is unknown."""


@dataclass(frozen=True)
class TrainingCost:
    """The GPU compute cost of one run (the head's share of the CPU pool and the checkpoints' storage are left out)."""

    vm_size: str
    nodes: int
    hours: float
    rows: tuple[CostRow, ...]
    max_hours: float
    """The longest the job can hold the nodes: every attempt (``backoff_limit + 1``) running to its per-attempt
    deadline (``DistributedTrainingArgs.max_job_hours``)."""

    @property
    def on_demand_usd(self) -> float | None:
        """The catalog on-demand total, or None when the catalog has no price."""
        return self.rows[0].total_usd

    @property
    def max_on_demand_usd(self) -> float | None:
        """The catalog on-demand price of ``max_hours``, or None when the catalog has no price."""
        price = self.rows[0].usd_per_node_hour
        return None if price is None else round(self.nodes * price * self.max_hours, 2)

    def as_dict(self) -> dict[str, Any]:
        """Plain data for stack outputs and the plan."""
        return {
            "vm_size": self.vm_size,
            "nodes": self.nodes,
            "hours": self.hours,
            "rows": [asdict(r) for r in self.rows],
            "max_hours": self.max_hours,
            "max_on_demand_usd": self.max_on_demand_usd,
        }


def _row(label: str, price: float | None, nodes: int, hours: float, source: str) -> CostRow:
    total = None if price is None else round(nodes * price * hours, 2)
    return CostRow(label, price, total, source)


def _spot_row(nodes: int, hours: float, spot_max_price: float | None) -> CostRow:
    if spot_max_price is not None and spot_max_price > 0:
        source = "the pool's spot_max_price: Azure evicts above it, so the run costs at most this (the market price is lower)"
        return _row("Spot (at most)", spot_max_price, nodes, hours, source)
    why = (
        "unknown: the pool pays the Spot market price up to the on-demand price (spot_max_price -1) and the catalog has no Spot prices"
        if spot_max_price == -1
        else "unknown: the pool's spot_max_price was not given and the catalog has no Spot prices"
    )
    return _row("Spot", None, nodes, hours, why)


def training_cost(
    args: DistributedTrainingArgs, pool_sku: GpuSku, spot_max_price: float | None = None, *, region: str | None = None
) -> TrainingCost:
    """The run's GPU cost: ``args.workers`` nodes of ``pool_sku`` for ``args.hours``, at ``region``'s list prices
    (default: the catalog's reference region).

    Rows, in order: the on-demand list price in the region (its source and date); for a Spot run the Spot price, which
    is known only as the pool's ``spot_max_price`` ceiling; and, for a size a seed prices, the seed's figure, labelled
    as the seed's.
    """
    region = region or catalog.REFERENCE_REGION
    nodes, hours = args.workers, args.hours
    hourly = catalog.vm_price(pool_sku.name, region)
    catalog_source = (
        f"catalog list price ({catalog.price_source(region)}, {catalog.price_snapshot(region)['date']}"
        + (f"; {pool_sku.price_note}" if pool_sku.price_note else "")
        + ")"
        if hourly is not None
        else f"unknown: {catalog.no_price(pool_sku.name, region)}"
    )
    rows = [_row("on-demand (catalog)", hourly, nodes, hours, catalog_source)]
    if args.spot:
        rows.append(_spot_row(nodes, hours, spot_max_price))
    if pool_sku.name in SEED_PRICES:
        label, price, words = SEED_PRICES[pool_sku.name]
        rows.append(_row(label, price, nodes, hours, words))
    return TrainingCost(pool_sku.name, nodes, hours, tuple(rows), round(args.max_job_hours, 2))
