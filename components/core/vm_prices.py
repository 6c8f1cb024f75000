"""List prices of Azure VM sizes per region: ``vm_prices.json`` beside this module (the Retail Prices snapshot
``tools/azure_region_data.py`` takes, with its source and date). ``catalog`` re-exports these, so sizes and their
prices are read from one place. Imports nothing from Pulumi.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

HOURS_PER_MONTH = 730
"""Azure's pricing calculator bills a month as 730 hours."""
REFERENCE_REGION = "eastus"
"""The region whose list prices ``GpuSku.price_usd_per_hour`` and ``aks-gpu fit`` quote (where every repo stack runs);
a stack is priced for its own region with ``vm_price(size, region)``."""


@cache
def _vm_prices() -> dict:
    return json.loads(Path(__file__).with_name("vm_prices.json").read_text())


def price_source(region: str) -> str:
    """Where ``vm_price(..., region)`` comes from: the snapshot's file and map."""
    return f'{_vm_prices()["source"]}, initialOnDemandPrices["{region}"]'


def vm_price(vm_size: str, region: str) -> float | None:
    """Pay-as-you-go Linux list price of one node in ``region``, USD per hour (``vm_prices.json``), or None: the
    snapshot has no price for the size there (not sold there, or not a size the file keeps: ``price_known``)."""
    return _vm_prices()["usd_per_hour"].get(region, {}).get(vm_size)


def price_known(vm_size: str) -> bool:
    """Whether ``vm_prices.json`` was generated for the size, so that a missing regional price means "not sold there"."""
    return vm_size in _vm_prices()["sizes"]


def price_regions() -> list[str]:
    """The regions the price snapshot covers."""
    return list(_vm_prices()["usd_per_hour"])


def regions_selling(vm_size: str) -> list[str]:
    """The regions whose snapshot prices the size (Microsoft sells it there; a subscription may still be refused it)."""
    return [region for region, table in _vm_prices()["usd_per_hour"].items() if vm_size in table]


def no_price(vm_size: str, region: str) -> str:
    """Why ``vm_price(vm_size, region)`` is None, in words."""
    if not price_known(vm_size):
        return f"no price known for {vm_size} (components/core/vm_prices.json keeps the catalog's and the stacks' sizes)"
    if region not in _vm_prices()["usd_per_hour"]:
        return f"no price known for {vm_size} in {region}: the Retail Prices snapshot has no map for that region"
    return (
        f"no price known for {vm_size} in {region}: the Retail Prices snapshot of {_vm_prices()['date']} does not sell it there"
    )


def price_snapshot(region: str = REFERENCE_REGION) -> dict[str, str]:
    """Date, region and source of the list prices quoted for ``region``."""
    prices = _vm_prices()
    return {"date": prices["date"], "region": region, "source": price_source(region), "note": prices["source_note"]}
