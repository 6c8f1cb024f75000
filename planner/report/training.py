"""The plan's training section: the run's GPU cost as nodes x hourly price x hours, every price with
its source (the catalog's list price, the pool's Spot ceiling, a seed's own figure), side by side, and the longest
the job can hold its nodes. One home for its content: the printed plan and plan.md both render it from here."""

from __future__ import annotations

from aks_gpu_inference.planner.report.cost import money
from aks_gpu_inference.planner.report.tables import table

HEADERS = ["price", "$/node-hour", "total", "source"]


def _money(value: float | None) -> str:
    return "unknown" if value is None else money(value)


def heading(cost: dict) -> str:
    return f"Training run cost: {cost['nodes']} x {cost['vm_size']} for {cost['hours']:g} hours (GPU nodes only)"


def rows(cost: dict) -> list[list[str]]:
    # Outputs drop None values: an unknown price has no key.
    return [[r["label"], _money(r.get("usd_per_node_hour")), _money(r.get("total_usd")), r["source"]] for r in cost["rows"]]


def worst_case(cost: dict) -> str:
    """The longest the job can hold its nodes, and what that costs on demand."""
    return (
        f"At most {cost['max_hours']:g} hours ({_money(cost.get('max_on_demand_usd'))} on demand): KubeRay's deadline "
        "applies to each attempt, and every retry may run to it."
    )


def text(run) -> str:
    cost = (run.outputs.get("training") or {}).get("cost")
    if not cost:
        return ""
    return heading(cost) + "\n" + table(HEADERS, rows(cost)) + "\n" + worst_case(cost) + "\n\n"
