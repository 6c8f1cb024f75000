"""Summaries of a planned stack for people: resources by type, GPU pools (every node that costs money: ``pool_lines``),
the models' memory fit, the gateway's routes, claim satisfiability and deployability. The cost estimate: ``cost.py``."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from aks_gpu_inference.components.core import catalog
from aks_gpu_inference.planner.azure.pools import agent_pool
from aks_gpu_inference.planner.azure.quota import kaito_nodes
from aks_gpu_inference.planner.charts.model import CONFIG_FILE
from aks_gpu_inference.planner.engine.program import ProgramRun
from aks_gpu_inference.planner.report.tables import table


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
        inputs = r.inputs
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


def deployability(findings, renders, as_of, unchecked_crds=(), notes=(), limits=()) -> str:
    """The Deployability section: which charts were rendered how, every finding, what was not checked
    (``unchecked_crds``: the custom resource kinds whose CRD no chart and no upstream copy has; ``notes``: what
    the data used cannot vouch for; ``limits``: what no offline plan of the stack checks, ``deploy.limits``)."""
    from aks_gpu_inference.planner.deploy import CHECKS

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
    not_checked = [*plan_gaps(renders, unchecked_crds, notes), *limits]
    lines.append("  not checked offline: " + "; ".join(not_checked) + ".")
    return "\n".join(lines)


def plan_gaps(renders, unchecked_crds=(), notes=()) -> list[str]:
    """What this plan could not check, before what no offline plan can (``deploy.limits``): charts not rendered, their
    caveats, what the data used cannot vouch for, and custom resource kinds without a CRD schema."""
    gaps = [f"{r.label}: not rendered, so nothing it creates" for r in renders if not r.rendered]
    gaps += [f"{r.chart} {r.version}: {r.caveat}" for r in renders if r.caveat]
    gaps += list(notes)
    if unchecked_crds:
        gaps.append(f"{', '.join(unchecked_crds)} against a CRD schema (no chart of the stack and no upstream copy has it)")
    return gaps


def model_fits(run: ProgramRun) -> str:
    """The Models section (the stack's ``model_fits`` output), ending in a blank line; empty without models."""
    fits = run.outputs.get("model_fits") or {}
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
    routes = run.outputs.get("gateway_routes") or {}
    if not routes:
        return ""
    from aks_gpu_inference.components.gateway.router_config import auto_model_names

    costs = run.outputs.get("gateway_cost_per_million") or {}
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
