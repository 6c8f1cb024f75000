"""Summaries of a planned stack for people: resources by type, GPU pools, list-price cost estimate, the models' memory
fit, the gateway's routes, claim satisfiability and deployability."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from aks_gpu_inference.components.core import catalog
from aks_gpu_inference.planner.azure.pools import agent_pool
from aks_gpu_inference.planner.azure.quota import kaito_nodes, region_of
from aks_gpu_inference.planner.charts.model import CONFIG_FILE
from aks_gpu_inference.planner.engine.program import ProgramRun
from aks_gpu_inference.planner.engine.values import plain
from aks_gpu_inference.planner.report.tables import table

if TYPE_CHECKING:
    from aks_gpu_inference.planner.deploy.model import DeployModel


@dataclass
class PoolLine:
    pool: str
    vm_size: str
    nodes_min: int
    nodes_max: int
    mig_profile: str | None
    spot: bool
    spot_max_price: float | None = None
    """``spotMaxPrice``: -1 (or None) pays up to the on-demand price."""

    def spot_ceiling(self, region: str) -> float | None:
        """The most a Spot node costs per hour in ``region``: its max price, else the on-demand price."""
        if self.spot_max_price is not None and self.spot_max_price > 0:
            return self.spot_max_price
        return catalog.vm_price(self.vm_size, region)

    @property
    def sku(self) -> catalog.GpuSku | None:
        return catalog.skus().get(self.vm_size)

    def hourly(self, region: str) -> float | None:
        """On-demand list price of one node in ``region``; for a Spot pool its ceiling (Spot prices are not in the
        snapshot)."""
        return self.spot_ceiling(region) if self.spot else catalog.vm_price(self.vm_size, region)


def pool_lines(run: ProgramRun) -> list[PoolLine]:
    """Every node that costs money: agent pools (standalone AgentPools, AKS-managed GPU pools, the cluster's
    inline pools) and the GPU nodes KAITO provisions for its workspaces."""
    lines = []
    for r in run.resources:
        if not r.type.startswith(("azure-native:", "kubernetes:kaito.sh/")):
            continue  # converting every chart object (CRDs included) costs tens of milliseconds for nothing
        inputs = plain(r.inputs)
        if (kaito := kaito_nodes(r)) is not None:
            lines.append(PoolLine(kaito[0], kaito[1], kaito[2], kaito[2], None, False))
            continue
        if (pool := agent_pool(r)) is not None:
            profiles = [pool[1] | {"name": pool[0]}]
        elif r.type.endswith("containerservice:ManagedCluster"):
            profiles = inputs.get("agentPoolProfiles") or []
        else:
            continue
        for p in profiles:
            count = p.get("count", 1)
            low, high = (p.get("minCount", count), p.get("maxCount", count)) if p.get("enableAutoScaling") else (count, count)
            lines.append(
                PoolLine(
                    p.get("name", "?"),
                    p.get("vmSize", "?"),
                    low,
                    high,
                    p.get("gpuInstanceProfile"),
                    p.get("scaleSetPriority") == "Spot",
                    p.get("spotMaxPrice"),
                )
            )
    return lines


def resources_by_type(run: ProgramRun) -> str:
    counts = Counter(r.type for r in run.resources)
    return table(["resource type", "count"], [[t, n] for t, n in sorted(counts.items())])


def gpu_pools(run: ProgramRun, served: dict[str, str] | None = None) -> str:
    """The GPU pools; ``served``: how each pool's GPUs are requested when the plan knows better than the size
    does (``advertised``), e.g. a pool whose GPUs only the DRA driver publishes."""
    rows = []
    for line in pool_lines(run):
        sku = line.sku
        if sku is None or line.pool.startswith("kaito "):
            continue
        resource, per_node = sku.gpu_resource(line.mig_profile)
        schedulable = (served or {}).get(line.pool, f"{resource} x{per_node}")
        nodes = f"{line.nodes_min}" if line.nodes_min == line.nodes_max else f"{line.nodes_min}-{line.nodes_max}"
        rows.append(
            [
                line.pool,
                line.vm_size,
                sku.gpu_model,
                nodes,
                sku.gpus,
                f"{sku.total_gpu_memory_gb:g} GB",
                schedulable,
                "spot" if line.spot else "regular",
            ]
        )
    if not rows:
        return "(no GPU pools)"
    return table(["pool", "vm size", "gpu", "nodes", "gpus/node", "vram/node", "schedulable as", "priority"], rows)


def advertised(model, claims: list) -> dict[str, str]:
    """How each GPU pool of a deploy model serves its GPUs: the device plugin's resource where one runs (or AKS
    runs it), else DRA claims where the plan's claims are satisfied there, else nothing."""
    found = {}
    for pool in model.pools:
        if pool.sku is None:
            continue
        resources = [f"{name} x{count}" for name, count in pool.extended.items()]
        classes = sorted(
            {v.device_class for v in claims if v.satisfiable and pool.name in [p.strip() for p in v.pool.split(",")]}
            - {"dranet.net"}
        )
        if resources:
            found[pool.name] = ", ".join(resources)
        elif classes:
            found[pool.name] = f"DRA only ({', '.join(classes)})"
        else:
            found[pool.name] = "not advertised (no device plugin or DRA driver)"
    return found


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

    served = assemble(run, model.charts if model else [], model.claims if model else None)
    for pool in served.pools:
        if pool.sku is not None and pool.sku.gpu_vendor == "nvidia":
            resource, per_node = pool.sku.gpu_resource(pool.mig_profile)
            pool.extended.setdefault(resource, per_node)
    kept = kept_up(served)
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
            tier = plain(r.inputs).get("sku", {}).get("tier", "Free")
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
            "n/a" if row.monthly_high is None else _range(row.monthly_low, row.monthly_high),
        ]
        for row in estimate.rows
    ]
    rows.append(["total", "", "", "", _range(estimate.low, estimate.high)])
    notes = "\n".join(f"  note: {n}" for n in estimate.notes)
    return table(["item", "vm size", "nodes", "$/hour/node", "$/month"], rows) + "\n" + notes


def _nodes(line: PoolLine) -> str:
    return str(line.nodes_min) if line.nodes_min == line.nodes_max else f"{line.nodes_min}-{line.nodes_max}"


def _range(low: float, high: float) -> str:
    return money(low) if abs(high - low) < 0.005 else f"{money(low)} - {money(high)}"


def deployability(findings, renders, as_of, unchecked_crds=(), notes=()) -> str:
    """The Deployability section: which charts were rendered how, every finding, what was not checked
    (``unchecked_crds``: the custom resource kinds whose CRD no chart and no upstream copy has; ``notes``: what
    the data used cannot vouch for)."""
    from aks_gpu_inference.planner.deploy import CHECKS, NOT_CHECKED

    blockers = sum(f.level == "blocker" for f in findings)
    warnings = sum(f.level == "warning" for f in findings)
    lines = [
        f"Deployability (would `pulumi up` work? judged as of {as_of.isoformat()}): {blockers} blockers, {warnings} warnings"
    ]
    counts = {check: [0, 0] for check in CHECKS}
    for f in findings:
        if f.level != "unchecked":  # gaps, listed under the verdict
            counts[f.check][0 if f.level == "blocker" else 1] += 1
    lines.append("  " + ", ".join(f"{check} {b}/{w}" for check, (b, w) in counts.items()) + "  (blockers/warnings per check)")
    if renders:
        rows = [
            [
                r.chart,
                r.version,
                # kubernetes:helm.sh/v4:Chart -> "v4 Chart"
                " ".join(r.resource.type.split("/", 1)[1].split(":")),
                r.namespace,
                len(r.objects),
                len(r.crds),
                len(r.hooks),
                r.source if r.rendered else "not rendered",
                "n/a" if r.resource.type == CONFIG_FILE else {True: "yes", None: "no"}[r.values_checked],
            ]
            for r in renders
        ]
        lines.append(
            table(["chart", "version", "as", "namespace", "objects", "CRDs", "hooks", "rendered by", "values checked"], rows)
        )
    for r in renders:
        if r.helm4:
            lines.append(
                f"  warning: {r.label} is planned as Helm 3 renders it (Pulumi's provider embeds Helm 3, which reads only "
                f"the first document of a multi-document values.yaml); Helm 4, which merges them all, would render: "
                + "; ".join(r.helm4)
            )
    if findings:
        lines.append(
            table(
                ["level", "check", "object", "problem", "fix"], [[f.level, f.check, f.object, f.message, f.fix] for f in findings]
            )
        )
    not_checked = [*plan_gaps(renders, unchecked_crds, notes), *NOT_CHECKED]
    lines.append("  not checked offline: " + "; ".join(not_checked) + ".")
    return "\n".join(lines)


def plan_gaps(renders, unchecked_crds=(), notes=()) -> list[str]:
    """What this plan could not check, before what no offline plan can (``NOT_CHECKED``): charts not rendered, their
    caveats, what the data used cannot vouch for, and custom resource kinds without a CRD schema."""
    gaps = [f"{r.label}: not rendered, so nothing it creates" for r in renders if not r.rendered]
    gaps += [f"{r.chart} {r.version}: {r.caveat}" for r in renders if r.caveat]
    gaps += list(notes)
    if unchecked_crds:
        gaps.append(f"{', '.join(unchecked_crds)} against a CRD schema (no chart of the stack and no upstream copy has it)")
    return gaps


def model_fits(run: ProgramRun) -> str:
    """The Models section (the stack's ``model_fits`` output), ending in a blank line; empty without models."""
    fits = plain(run.outputs.get("model_fits") or {})
    if not fits:
        return ""
    endpoints = run.outputs.get("model_endpoints") or {}
    rows = [
        [
            name,
            f["model"],
            f["gpu"],
            f["tp"],
            f["max_model_len"],
            f"{f['weights_gib_per_gpu']:.1f} GiB",
            f["kv_tokens"],
            f["full_length_sequences"],
            endpoints.get(name, ""),
        ]
        for name, f in sorted(fits.items())
    ]
    headers = ["name", "model", "gpu", "tp", "context", "weights/gpu", "kv tokens", "full seqs", "endpoint"]
    return "Models (vLLM memory fit per GPU, see `aks-gpu fit`)\n" + table(headers, rows) + "\n\n"


def gateway_routes(run: ProgramRun) -> str:
    """The Gateway section (the stack's ``gateway_routes`` output), ending in a blank line; empty without a gateway."""
    routes = plain(run.outputs.get("gateway_routes") or {})
    if not routes:
        return ""
    from aks_gpu_inference.components.gateway.router_config import auto_model_names

    costs = plain(run.outputs.get("gateway_cost_per_million") or {})
    endpoint = run.outputs.get("gateway_endpoint") or f"(after deploy: {run.outputs.get('gateway_address_command')})"
    auto = " or ".join(f'"{m}"' for m in auto_model_names())
    rows = [
        [
            model,
            backend,
            f"${costs.get(model, {}).get('prompt', 0):,.2f}",
            f"${costs.get(model, {}).get('completion', 0):,.2f}",
        ]
        for model, backend in sorted(routes.items())
    ]
    return (
        f"Gateway: {endpoint}  (clients send model {auto} or a model below; authentication required)\n"
        + table(["model", "backend", "$/1M prompt", "$/1M completion"], rows)
        + "\n  note: self-hosted cost = the replica's share of its VM's list price at the assumed throughput; Azure OpenAI\n"
        "  prices are unverified third-party list prices. Estimates, not quotes.\n\n"
    )


def claim_satisfiability(verdicts: list) -> str:
    """The Claim satisfiability section (``claims.Verdict`` rows), ending in a blank line; empty without claims."""
    if not verdicts:
        return ""
    unsatisfiable = sum(not v.satisfiable for v in verdicts)
    rows = [
        [f"{v.namespace}/{v.template}", v.request, v.device_class, v.pool, v.needed, "yes" if v.satisfiable else "NO", v.reason]
        for v in verdicts
    ]
    return (
        f"Claim satisfiability (simulated ResourceSlices, CEL evaluated with cel-python): {unsatisfiable} unsatisfiable\n"
        + table(["claim template", "request", "device class", "pool", "needs", "ok", "why"], rows)
        + "\n\n"
    )
