"""A plan to look at: ``summary.json``, one document a program can read, from ``build(plan)``, and how its values
read as text. ``plan_markdown`` writes ``plan.md`` and ``picture`` draws ``plan.html`` from the same document.

``summary.json`` (``schema_version`` 1; keys are added, never renamed, within a version):

- ``stack``, ``project``, ``stack_file``, ``as_of``: which plan, judged on which date.
- ``verdict``: ``state`` (``works``, ``fails`` or ``incomplete``), ``pulumi_up_would_work`` (true only when it works),
  ``incomplete`` (what was not checked and ``how`` to check it), the plan's ``exit_code``, and the counts that decide
  it: ``blockers``, ``mandatory`` (policy), ``unsatisfiable_claims``; besides ``warnings``, ``advisory``, ``exempted``.
- ``resources``: what would be created: ``total``, ``components`` / ``azure`` / ``kubernetes`` counts, ``by_type``.
- ``pools``: every node pool and the nodes KAITO provisions (``provisioned_by``): size, node range, priority,
  ``gpu`` (null for a CPU pool), list price, ``workloads``.
- ``workloads``: every pod template and the pools it fits (``deploy.scheduling``), GPUs or DRA claims it asks for.
- ``cost``: the monthly list-price estimate as the printed table has it (``cost.cost_rows``): ``region`` (whose
  list prices), ``rows``, ``total`` (``usd_per_month_min``/``max``), ``notes`` (price sources, what is not in the total).
- ``training_cost``: the stack's training run cost (null without one).
- ``quota``: ``region``, the usages ``rows`` (vCPUs at maximum node counts), ``preview_features``, ``note``,
  ``limits_checked_by`` (the command that reads the subscription's limits).
- ``models``: the vLLM memory fit of each model the stack serves.
- ``checks``: each deployability check with its ``blockers`` and ``warnings``.
- ``rollouts``: each GPU workload and what a rolling update of it does on its pools (``workload``, ``rollout``).
- ``platform_pool``: what the CPU pool AksCluster adds by default runs, and how to opt out; null without one.
- ``findings``: every deployability finding (check, level, object, message, fix).
- ``policy``: ``mandatory`` / ``advisory`` / ``exempted`` counts, the ``verdicts`` and ``exemptions``.
- ``claims``: ``unsatisfiable`` count and each DRA claim template's ``verdicts``.
- ``charts``: each chart: version, namespace, how it was rendered, objects.
- ``request_paths``: per Gateway: listeners, ``auth``, ``budget``, ``proxy_pools``, ``filters`` (in order), the
  ``router`` (its decisions and default), ``backends`` (model -> kind, object, target, workloads, pools, cost per
  million tokens), and ``rows``: who answers each kind of request, as the plan prints them.
- ``endpoints``: the in-cluster model endpoints the stack outputs and the workloads behind them.
- ``images``: every image the cluster pulls, by registry, and what uses it.
- ``not_checked``: what no offline plan checks (this plan's own gaps first).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from aks_gpu_inference.components.core import quota as quota_notes
from aks_gpu_inference.planner import verdict
from aks_gpu_inference.planner.azure import preflight
from aks_gpu_inference.planner.azure import quota as demand
from aks_gpu_inference.planner.deploy import CHECKS
from aks_gpu_inference.planner.report import cost, sections, topology

if TYPE_CHECKING:
    from aks_gpu_inference.planner.plan import Plan

SCHEMA_VERSION = 1


def build(plan: Plan) -> dict[str, Any]:
    """The summary document of a plan (see the module docstring for its keys)."""
    run, stack = plan.run, plan.stack
    topo = topology.build(plan.model, plan.upstream, run.outputs)
    names = {r.urn: f"{r.type.rsplit(':', 1)[-1]} {r.name}" for r in run.resources}
    chains = {g["gateway"]: g for g in plan.gateway["gateways"]}
    estimate = _cost(run, stack.config.get(f"{stack.project}:location"), plan.model)
    return {
        "schema_version": SCHEMA_VERSION,
        "stack": stack.stack,
        "project": stack.project,
        "stack_file": stack.path.name,
        "as_of": plan.options.as_of.isoformat(),
        "verdict": _verdict(plan),
        "resources": _resources(run),
        "pools": _pools(plan, topo, estimate),
        "workloads": [w.as_dict() for w in topo.workloads],
        "cost": estimate,
        "training_cost": (run.outputs.get("training") or {}).get("cost"),
        "quota": _quota(plan),
        "models": [{"name": name} | fit for name, fit in sorted((run.outputs.get("model_fits") or {}).items())],
        "checks": _checks(plan),
        "rollouts": [{"workload": workload, "rollout": what} for workload, what in plan.rollouts],
        "platform_pool": plan.platform_pool,
        "findings": [f.as_dict() for f in plan.findings],
        "policy": {
            "mandatory": len(plan.mandatory),
            "advisory": len(plan.verdicts) - len(plan.mandatory),
            "exempted": len(plan.exempted),
            "verdicts": [
                {
                    "policy": v.policy,
                    "enforcement": v.enforcement,
                    "where": names.get(v.urn, v.urn or "stack"),
                    "message": v.message,
                }
                for v in plan.verdicts
            ],
            "exemptions": [
                {"rule": e.rule, "where": names.get(e.urn, e.urn), "message": e.message, "why": e.why} for e in plan.exempted
            ],
        },
        "claims": {
            "unsatisfiable": sum(not v.satisfiable for v in plan.claims),
            "verdicts": [dict(v.__dict__) for v in plan.claims],
        },
        "charts": [
            {
                "chart": r.chart,
                "version": r.version,
                "namespace": r.namespace,
                "rendered_by": r.source if r.rendered else None,
                "objects": len(r.objects),
            }
            for r in plan.renders
        ],
        "request_paths": [
            asdict(flow)
            | {
                "filters": chains.get(flow.gateway, {}).get("chain", []),
                "rows": [{"request": q, "answer": a} for q, a in chains.get(flow.gateway, {}).get("rows", [])],
            }
            for flow in topo.flows
        ],
        "endpoints": [asdict(e) for e in topo.endpoints],
        "images": plan.gateway["images"],
        "not_checked": _not_checked(plan),
    }


def _verdict(plan: Plan) -> dict[str, Any]:
    blockers, mandatory = len(plan.blockers), len(plan.mandatory)
    state, gaps = plan.state, plan.gaps
    return {
        "state": state,
        "pulumi_up_would_work": state == "works",
        "exit_code": 1 if plan.failed else 0,
        "blockers": blockers,
        "mandatory": mandatory,
        "unsatisfiable_claims": sum(not v.satisfiable for v in plan.claims),
        "warnings": sum(f.level == "warning" for f in plan.findings),
        "advisory": len(plan.verdicts) - mandatory,
        "exempted": len(plan.exempted),
        "incomplete": [g.as_dict() for g in gaps],
    }


def _resources(run) -> dict[str, Any]:
    counts = Counter(r.type for r in run.resources)
    return {
        "total": len(run.resources),
        "components": sum(n for t, n in counts.items() if not t.startswith(("azure-native:", "kubernetes:", "pulumi:"))),
        "azure": sum(1 for r in run.resources if r.is_azure),
        "kubernetes": sum(1 for r in run.resources if r.is_kubernetes),
        "by_type": dict(sorted(counts.items())),
    }


def _cost(run, location: str | None, model=None) -> dict[str, Any]:
    """The cost table's rows and total (``cost.cost_rows``, which the printed table shows), in the stack's region."""
    estimate = cost.cost_rows(run, location, model)
    return {
        "region": cost.price_region(run, location)[0],
        "rows": [
            {
                "item": row.item,
                "vm_size": None if row.vm_size == "-" else row.vm_size,
                "nodes": None if row.nodes == "-" else row.nodes,
                "spot": row.spot,
                "usd_per_hour_per_node": row.hourly,
                "usd_per_month_min": _cents(row.monthly_low),
                "usd_per_month_max": _cents(row.monthly_high),
            }
            for row in estimate.rows
        ],
        "total": {"usd_per_month_min": _cents(estimate.low), "usd_per_month_max": _cents(estimate.high)},
        "notes": estimate.notes,
    }


def _cents(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def _pools(plan: Plan, topo: topology.Topology, cost: dict[str, Any]) -> list[dict[str, Any]]:
    """Every line of the cost table that is nodes (the pools, KAITO's nodes), with its GPUs and workloads."""
    nodes = {p.name: p for p in plan.model.pools}
    served = sections.advertised(plan.model, plan.claims)
    priced = {row["item"]: row for row in cost["rows"]}
    found = []
    for line in sections.pool_lines(plan.run):
        sku, pool, row = line.sku, nodes.get(line.pool), priced.get(line.pool) or {}
        gpu = None
        if sku is not None:
            resource, per_node = sku.gpu_resource(line.mig_profile)
            gpu = {
                "model": sku.gpu_model,
                "per_node": sku.gpus,
                "max_total": sku.gpus * line.nodes_max,
                "vram_gb_per_node": sku.total_gpu_memory_gb,
                "schedulable_as": served.get(line.pool, f"{resource} x{per_node}"),
            }
        found.append(
            {
                "name": line.pool,
                "mode": pool.mode if pool else None,
                "provisioned_by": None if pool else topology.KAITO,
                "vm_size": line.vm_size,
                "nodes_min": line.nodes_min,
                "nodes_max": line.nodes_max,
                "spot": line.spot,
                "mig_profile": line.mig_profile,
                "taints": pool.taints if pool else [],
                "gpu": gpu,
                "usd_per_hour_per_node": row.get("usd_per_hour_per_node"),
                "usd_per_month": {"min": row.get("usd_per_month_min"), "max": row.get("usd_per_month_max")}
                if row.get("usd_per_month_max") is not None
                else None,
                "workloads": [w.id for w in topo.on(line.pool)],
            }
        )
    # The engine registers pools in no fixed order: the system pool first, then by name, KAITO's nodes last.
    return sorted(found, key=lambda p: (p["provisioned_by"] is not None, p["mode"] != "System", p["name"]))


def _quota(plan: Plan) -> dict[str, Any]:
    run, stack = plan.run, plan.stack
    region = demand.region_of(run.resources, stack.config.get(f"{stack.project}:location")) or "the stack's region"
    return {
        "region": region,
        "rows": [
            {"region": n.region, "quota": n.name, "vcpus": n.vcpus, "pools": n.pools, "known": n.known}
            for n in demand.needs(run.resources, region)
        ],
        "preview_features": preflight.stack_asks(run.resources, region).features,
        "note": quota_notes.new_subscription_note(),
        "limits_checked_by": f"aks-gpu preflight {stack.stack}",
    }


def _checks(plan: Plan) -> list[dict[str, Any]]:
    counts = {check: [0, 0] for check in CHECKS}
    for f in plan.findings:
        if f.level != "unchecked":
            counts[f.check][0 if f.level == "blocker" else 1] += 1
    return [{"check": check, "blockers": b, "warnings": w} for check, (b, w) in counts.items()]


def _not_checked(plan: Plan) -> list[str]:
    """What the Deployability section names as not checked offline, this plan's own gaps first."""
    return [*sections.plan_gaps(plan.renders, plan.unchecked_crds, plan.snapshot_notes), *plan.limits]


# ---- how the document's values read, in plan.md and plan.html alike -------------------------------


def nodes_text(low: int | None, high: int | None) -> str:
    if low is None or high is None:
        return "-"
    return str(low) if low == high else f"{low}-{high}"


def headline(summary: dict[str, Any]) -> str:
    """The verdict in one sentence: would ``pulumi up`` work, would it not, or is the plan incomplete."""
    v = summary["verdict"]
    sentence = verdict.headline(v["state"], v["blockers"], v["mandatory"], v["unsatisfiable_claims"], len(v["incomplete"]))
    return f"{sentence} ({v['warnings']} warnings, {v['advisory']} advisory, {v['exempted']} exempted)"
