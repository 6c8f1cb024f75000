"""The printed plan: every section in order, from a ``planner.plan.Plan``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aks_gpu_inference.planner import verdict
from aks_gpu_inference.planner.report import cost, gateway, quota, sections, training
from aks_gpu_inference.planner.report.tables import table

if TYPE_CHECKING:
    from aks_gpu_inference.planner.plan import Plan


def plan_text(plan: Plan) -> str:
    """What ``aks-gpu plan`` prints before the line naming the files it wrote."""
    run, stack = plan.run, plan.stack
    location = stack.config.get(f"{stack.project}:location")
    parts = [
        f"Plan of stack '{stack.stack}' ({stack.path.name}) — offline, not a diff against live state\n\n",
        "".join(f"warning: {w}\n" for w in stack.warnings) + ("\n" if stack.warnings else ""),
        sections.resources_by_type(run) + "\n\n",
        "GPU pools\n" + sections.gpu_pools(run, sections.advertised(plan.model, plan.claims)) + "\n\n",
        "Monthly cost estimate\n" + cost.cost_estimate(run, location, plan.model) + "\n",
        f"  note: {plan.platform_pool}\n\n" if plan.platform_pool else "\n",
        quota.text(run, stack.stack, location) + "\n\n",
        training.text(run),
        sections.model_fits(run) + sections.gateway_routes(run),
        sections.claim_satisfiability(plan.claims),
        sections.deployability(
            plan.findings, plan.renders, plan.options.as_of, plan.unchecked_crds, plan.snapshot_notes, plan.limits
        )
        + "\n\n",
        rollouts_text(plan),
        gateway.text(plan.gateway) + "\n\n",
        verdicts_text(plan) + "\n",
        verdict_text(plan),
    ]
    return "".join(parts)


def rollouts_text(plan: Plan) -> str:
    """What a rolling update of each GPU workload does on its pools; empty without GPU workloads."""
    if not plan.rollouts:
        return ""
    return (
        "Rollouts (what an update of each GPU workload does on its pools)\n"
        + table(["workload", "rollout"], [list(r) for r in plan.rollouts])
        + "\n\n"
    )


def verdict_text(plan: Plan) -> str:
    """The last word: would ``pulumi up`` work, would it not, or is the plan incomplete (and how to complete it)."""
    claims = sum(not v.satisfiable for v in plan.claims)
    gaps = plan.gaps
    lines = [f"Verdict: {verdict.headline(plan.state, len(plan.blockers), len(plan.mandatory), claims, len(gaps))}"]
    for gap in gaps:
        lines += [f"  not checked: {gap.what}", f"    how to check: {gap.how}"]
    return "\n".join(lines) + "\n"


def verdicts_text(plan: Plan) -> str:
    """The policy verdicts and what the pack config accepts on purpose (node agents)."""
    names = {r.urn: f"{r.type.rsplit(':', 1)[-1]} {r.name}" for r in plan.run.resources}
    mandatory = len(plan.mandatory)
    lines = [
        f"Policy verdicts (aks-gpu-guardrails): {mandatory} mandatory, {len(plan.verdicts) - mandatory} advisory, "
        f"{len(plan.exempted)} exempted (node agents the pack config accepts)"
    ]
    rows = [[v.enforcement, v.policy, names.get(v.urn, v.urn or "stack"), v.message] for v in plan.verdicts]
    rows += [["exempted", e.rule, names.get(e.urn, e.urn), f"{e.message}: {e.why}"] for e in plan.exempted]
    if rows:
        lines.append(table(["level", "rule", "where", "finding"], rows))
    return "\n".join(lines) + "\n"
