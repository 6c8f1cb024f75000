"""Quota families of VM sizes: which of the subscription's per-region vCPU quotas a node pool draws on.

Azure meters vCPUs twice: per VM family (``standardNDSH100v5Family``) and per region (``cores``), and
Spot VMs apart from both (``lowPriorityCores``). A pool that asks for more than either quota is
accepted, then fails minutes later (seed 002, gotcha 1). Pulumi-free data; the planner sums the
demand and ``aks-gpu preflight`` compares it with the subscription's limits.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

REGIONAL = "cores"
"""The usages row of all on-demand vCPUs in a region (Total Regional vCPUs)."""
SPOT = "lowPriorityCores"
"""The usages row of all Spot vCPUs in a region (Total Regional Low-priority vCPUs)."""


@functools.cache
def _table() -> dict:
    return json.loads(Path(__file__).with_name("quota_families.json").read_text())


def normalise(name: str) -> str:
    """A family name as Azure compares it: ``Standard NCASv3_T4 Family`` == ``standardNCASv3_T4Family``."""
    return re.sub(r"[\s_-]", "", name).lower()


def family_of(vm_size: str) -> str | None:
    """The quota family of ``vm_size`` as the usages API names it, or None when the table lacks it."""
    for family, sizes in _table()["families"].items():
        if vm_size in sizes:
            return family
    return None


def source() -> str:
    """Where the family table comes from."""
    return _table()["source"]


def new_subscription_note() -> str:
    """What a new subscription's GPU quota is, with its source."""
    return _table()["new_subscriptions"]
