"""``aks-gpu preflight STACK --alternatives``: the quota headroom of each model's top placements, so a user whose region
has no quota sees where there is.

The placements are ``aks-gpu alternatives``' (``planner.alternatives_cmd.report``): per model its current one and the
``TOP`` cheapest distinct (size, region, priority). Azure says, per region (``facts.fetch_regions``), the usage and
limit of each quota row and whether the subscription may use the size there (and Spot VMs of it). A placement has room
when the size is offered and every row it draws on has the vCPUs free: a regular VM its family and the region's
``cores``, a Spot VM the region's ``lowPriorityCores``. Each placement is judged alone, as an alternative.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aks_gpu_inference.components.core import quota
from aks_gpu_inference.planner.azure.facts import AzureFacts
from aks_gpu_inference.planner.report.tables import table

TOP = 6
"""Placements per model asked about besides the current one: the cheapest distinct (size, region, priority)."""


@dataclass(frozen=True)
class Headroom:
    model: str
    rung: dict[str, Any]
    rows: tuple[str, ...]
    """Each quota row: ``name: V needed, F free of L``."""
    offered: str
    room: bool

    @property
    def placement(self) -> str:
        r = self.rung
        mark = " (current)" if r["current"] else ""
        return f"{r['vm_size']} {r['region']} {r['priority']} tp {r['tp']}, {r['nodes']} node(s){mark}"


def top(doc: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(model, rung): each model's current placement, then its ``TOP`` cheapest distinct (size, region, priority)."""
    found = []
    for entry in doc["models"]:
        seen = {(entry["current"]["vm_size"], entry["current"]["region"], entry["current"]["priority"])}
        found.append((entry["model"], entry["current"]))
        for rung in entry["rungs"]:
            key = (rung["vm_size"], rung["region"], rung["priority"])
            if key not in seen and len(seen) <= TOP:
                seen.add(key)
                found.append((entry["model"], rung))
    return found


def wanted(placements: list[tuple[str, dict[str, Any]]]) -> dict[str, set[str]]:
    """Region -> the sizes to ask the Resource SKUs API about there."""
    regions: dict[str, set[str]] = {}
    for _, rung in placements:
        regions.setdefault(rung["region"], set()).add(rung["vm_size"])
    return regions


def _offered(rung: dict[str, Any], facts: AzureFacts) -> tuple[bool, str]:
    sku = facts.skus.get(rung["vm_size"])
    if sku is None:
        return False, f"not offered in {facts.region}"
    if sku.blocked_region:
        return False, f"restricted for the subscription ({sku.reason})"
    if rung["priority"] == "spot" and sku.spot is False:
        return False, "no Spot VMs of this size (LowPriorityCapable false)"
    usable = [z for z in sku.zones if z not in sku.blocked_zones]
    return True, f"offered, zones {', '.join(usable) or 'none (regional)'}"


def judge(model: str, rung: dict[str, Any], facts: AzureFacts) -> Headroom:
    """One placement against its region's answers."""
    offered, words = _offered(rung, facts)
    sku = facts.skus.get(rung["vm_size"])
    if rung["priority"] == "spot":
        names = [quota.SPOT]
    else:
        names = [sku.family if sku and sku.family else rung["quota_family"] or f"family of {rung['vm_size']}", quota.REGIONAL]
    rows, enough = [], True
    for name in names:
        usage = facts.usages.get(quota.normalise(name))
        if usage is None:
            rows.append(f"{name}: no such quota in {facts.region}")
            enough = False
            continue
        free = usage.limit - usage.current
        rows.append(f"{usage.name}: {rung['vcpus']} needed, {free} free of {usage.limit}")
        enough = enough and rung["vcpus"] <= free
    return Headroom(model, rung, tuple(rows), words, offered and enough)


def verdicts(placements: list[tuple[str, dict[str, Any]]], by_region: dict[str, AzureFacts]) -> list[Headroom]:
    return [judge(model, rung, by_region[rung["region"]]) for model, rung in placements]


def render(found: list[Headroom], subscription: str) -> str:
    rows = [
        [h.model, h.placement, "room" if h.room else "NO ROOM", "; ".join(h.rows), h.offered, f"${h.rung['usd_per_month']:,.0f}"]
        for h in found
    ]
    lines = [
        f"Quota headroom of the top placements (aks-gpu alternatives; Azure, subscription {subscription}); advice, "
        "it does not change the exit code",
        table(["model", "placement", "verdict", "quota", "size", "$/month"], rows),
    ]
    for model in dict.fromkeys(h.model for h in found):
        mine = [h for h in found if h.model == model]
        current, elsewhere = mine[0], [h for h in mine[1:] if h.room]
        if not current.room and elsewhere:
            lines.append(f"{model}: no room where it is; room at {elsewhere[0].placement} (cheapest with room)")
        elif not current.room:
            lines.append(f"{model}: no room where it is nor at the placements asked about: request quota (aks-gpu preflight)")
    return "\n".join(lines)
