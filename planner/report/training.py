"""The plan's training section: the run's GPU cost as nodes x hourly price x hours, every price with
its source (the catalog's list price, the pool's Spot ceiling, a seed's own figure), side by side."""

from __future__ import annotations

from aks_gpu_inference.planner.engine.values import plain
from aks_gpu_inference.planner.report.sections import money
from aks_gpu_inference.planner.report.tables import table


def _money(value: float | None) -> str:
    return "unknown" if value is None else money(value)


def text(run) -> str:
    training = plain(run.outputs.get("training") or {})
    cost = training.get("cost")
    if not cost:
        return ""
    # Outputs drop None values: an unknown price has no key.
    rows = [[r["label"], _money(r.get("usd_per_node_hour")), _money(r.get("total_usd")), r["source"]] for r in cost["rows"]]
    head = f"Training run cost: {cost['nodes']} x {cost['vm_size']} for {cost['hours']:g} hours (GPU nodes only)"
    return head + "\n" + table(["price", "$/node-hour", "total", "source"], rows) + "\n" + worst_case(cost) + "\n\n"


def worst_case(cost: dict) -> str:
    """The longest the job can hold its nodes, and what that costs on demand."""
    return (
        f"At most {cost['max_hours']:g} hours ({_money(cost.get('max_on_demand_usd'))} on demand): KubeRay's deadline "
        "applies to each attempt, and every retry may run to it."
    )
