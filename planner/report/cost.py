"""The plan's monthly list-price estimate: every node that costs money (``sections.pool_lines``) at its region's price,
the floor raised to the nodes the workloads keep up, and the control-plane fee."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from aks_gpu_inference.components.core import catalog
from aks_gpu_inference.planner.azure.quota import region_of
from aks_gpu_inference.planner.engine.program import ProgramRun
from aks_gpu_inference.planner.report.sections import PoolLine, pool_lines
from aks_gpu_inference.planner.report.tables import table

if TYPE_CHECKING:
    from aks_gpu_inference.planner.deploy.model import DeployModel, NodePool


def money(value: float) -> str:
    """Dollars with thousands separators and cents."""
    return f"${value:,.2f}"


@dataclass
class CostRow:
    item: str
    vm_size: str
    nodes: str
    hourly: float | None
    """USD per node-hour: the list price, or a Spot pool's ceiling (``spot``); None when unknown."""
    monthly_low: float | None
    monthly_high: float | None
    spot: bool = False


@dataclass
class CostEstimate:
    rows: list[CostRow]
    low: float
    high: float
    notes: list[str]


def price_region(run: ProgramRun, location: str | None = None) -> tuple[str, bool]:
    """The region the stack's nodes are priced in: the managed cluster's, else ``location`` (the stack's), else the
    catalog's reference region; and whether it is the stack's own."""
    region = region_of(run.resources, location)
    return (region, True) if region else (catalog.REFERENCE_REGION, False)


def kept_lines(run: ProgramRun, model: DeployModel | None = None) -> tuple[list[PoolLine], list[str]]:
    """``pool_lines`` with each autoscaled pool's floor raised to the nodes its GPU workloads keep up (a model's
    ``min_replicas``, KEDA's ``minReplicaCount``, Dynamo's and Ray's workers: ``capacity.kept_up``), and what keeps
    them, in words. ``model``: the plan's deploy model, for its charts and claims. The pools are taken to advertise
    their GPUs whether or not a device plugin was seen (an unrendered chart): what a workload keeps up is its own
    count; whether the pool serves it is the scheduling check's."""
    from aks_gpu_inference.planner.deploy.capacity import kept_up
    from aks_gpu_inference.planner.deploy.model import assemble

    model = model if model is not None else assemble(run, [])
    kept = kept_up(replace(model, pools=[_advertising(pool) for pool in model.pools]))
    lines, said = [], []
    for line in pool_lines(run):
        nodes, workloads = kept.get(line.pool, (0, []))
        if nodes > line.nodes_min:
            floor = min(nodes, line.nodes_max)
            spot = "; Spot, so in the upper end only" if line.spot else ""
            said.append(f"{line.pool} {floor} of {line.nodes_max} node(s) ({', '.join(workloads)}{spot})")
            line = replace(line, nodes_min=floor)
        lines.append(line)
    return lines, said


def cost_rows(run: ProgramRun, location: str | None = None, model: DeployModel | None = None) -> CostEstimate:
    """Monthly list-price estimate in the stack's region (``price_region``): nodes x hourly price x 730 h, plus the
    control-plane fee. The lower end counts the nodes the workloads keep up (``kept_lines``), not only the pools'
    minimum. A Spot pool costs at most its ceiling (``spotMaxPrice``, or the on-demand price when that is -1 or unset):
    the range's upper end includes it, the lower end does not (the market price is unknown offline)."""
    region, own = price_region(run, location)
    rows, low_total, high_total, unpriced, spot = [], 0.0, 0.0, [], []
    lines, kept = kept_lines(run, model)
    for line in lines:
        hourly = line.hourly(region)
        if hourly is None:
            sku = catalog.skus().get(line.vm_size)
            if sku is not None and sku.price_note:
                unpriced.append(f"{line.pool} ({line.vm_size}: {sku.price_note})")
            else:
                unpriced.append(f"{line.pool} ({catalog.no_price(line.vm_size, region)})")
            rows.append(CostRow(line.pool, line.vm_size, _nodes(line), None, None, None, line.spot))
            continue
        low, high = line.nodes_min * hourly * catalog.HOURS_PER_MONTH, line.nodes_max * hourly * catalog.HOURS_PER_MONTH
        if line.spot:
            spot.append(line.pool)
            low = 0.0
        low_total, high_total = low_total + low, high_total + high
        rows.append(CostRow(line.pool, line.vm_size, _nodes(line), hourly, low, high, line.spot))
    for r in run.resources:
        if r.type.endswith("containerservice:ManagedCluster"):
            tier = r.inputs.get("sku", {}).get("tier", "Free")
            hourly = catalog.control_plane_usd_per_hour(tier)
            fee = hourly * catalog.HOURS_PER_MONTH
            low_total, high_total = low_total + fee, high_total + fee
            rows.append(CostRow(f"control plane ({tier})", "-", "-", hourly, fee, fee))
    prices = catalog.price_snapshot(region)
    where = f"region {region}" if own else f"region {region}, the catalog's reference: the stack names no region"
    notes = [
        "List-price estimate: pay-as-you-go Linux, 730 h/month, before discounts, disks, egress and support.",
        f"VM prices: {prices['source']} (the Azure Retail Prices API, {where}, as of {prices['date']}).",
        f"Control plane: {catalog.control_plane_source()}.",
    ]
    if kept:
        notes.append(
            "The lower end counts the nodes running workloads keep up (the autoscaler removes no node a pod runs on): "
            + "; ".join(kept)
            + "."
        )
    if spot:
        notes.append(
            f"Spot ({', '.join(spot)}): at most the ceiling shown (the pool's spotMaxPrice, else the on-demand price); "
            "the market price is not known offline, so the total's lower end leaves it out."
        )
    if unpriced:
        notes.append(f"Not in the total: {'; '.join(unpriced)}.")
    return CostEstimate(rows, low_total, high_total, notes)


def cost_estimate(run: ProgramRun, location: str | None = None, model: DeployModel | None = None) -> str:
    """The cost section: ``cost_rows`` as a table with its notes."""
    estimate = cost_rows(run, location, model)
    rows = [
        [
            row.item,
            row.vm_size,
            row.nodes,
            "n/a" if row.hourly is None else f"{'Spot <= ' if row.spot else ''}${row.hourly:,.3f}",
            money_range(row.monthly_low, row.monthly_high),
        ]
        for row in estimate.rows
    ]
    rows.append(["total", "", "", "", money_range(estimate.low, estimate.high)])
    notes = "\n".join(f"  note: {n}" for n in estimate.notes)
    return table(["item", "vm size", "nodes", "$/hour/node", "$/month"], rows) + "\n" + notes


def _nodes(line: PoolLine) -> str:
    return str(line.nodes_min) if line.nodes_min == line.nodes_max else f"{line.nodes_min}-{line.nodes_max}"


def money_range(low: float | None, high: float | None) -> str:
    """``$1.00`` or ``$0.00 - $5,362.58``, as the cost table writes a range; ``n/a`` when unpriced."""
    if low is None or high is None:
        return "n/a"
    return money(low) if abs(high - low) < 0.005 else f"{money(low)} - {money(high)}"


def _advertising(pool: NodePool) -> NodePool:
    """The pool as if its GPUs were advertised (a copy: the plan's own model keeps what it found)."""
    if pool.sku is None or pool.sku.gpu_vendor != "nvidia":
        return pool
    resource, per_node = pool.sku.gpu_resource(pool.mig_profile)
    return replace(pool, extended={resource: per_node, **pool.extended})
