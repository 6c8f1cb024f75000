"""Every pod template fits at least one node pool, as the scheduler would judge it.

A pool fits when the pod tolerates every NoSchedule/NoExecute taint of its nodes (the GPU taint,
``CriticalAddonsOnly`` on the system pool, the Spot taint AKS adds), its ``nodeSelector`` and
required node affinity match the labels AKS sets plus the pool's own, its GPU or MIG requests are
advertised there in that number, and its DRA claims are satisfiable there. A pod with no pool stays
Pending and Pulumi's readiness wait times out; a DaemonSet that runs nowhere is only a warning.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aks_gpu_inference.planner.deploy.finding import Finding
from aks_gpu_inference.planner.deploy.model import DeployModel, KubeObject, NodePool
from aks_gpu_inference.policies.manifests import get, items, resources_of, tolerates


def _expression_matches(expression: Mapping[str, Any], labels: dict[str, str]) -> bool:
    key, operator = expression.get("key"), expression.get("operator")
    values = [str(v) for v in items(expression.get("values"))]
    present = key in labels
    if operator == "In":
        return present and labels[key] in values
    if operator == "NotIn":
        return not present or labels[key] not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt") and present and values:
        try:
            number, bound = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return number > bound if operator == "Gt" else number < bound
    return False


def selector_problems(spec: Mapping[str, Any], pool: NodePool) -> list[str]:
    """Why a pod spec's placement rules exclude ``pool``; empty when the pool fits."""
    problems = []
    for taint in pool.taints:
        effect = taint.rpartition(":")[2]
        if effect in ("NoSchedule", "NoExecute") and not tolerates(spec.get("tolerations"), taint):
            problems.append(f"does not tolerate {taint}")
    for key, value in (spec.get("nodeSelector") or {}).items():
        if pool.labels.get(key) != str(value):
            have = pool.labels.get(key)
            problems.append(f"nodeSelector {key}={value} (nodes have {key}={have})" if have else f"nodeSelector {key}={value}")
    terms = items(get(spec, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"))
    if terms and not any(
        all(_expression_matches(e, pool.labels) for e in items(get(term, "matchExpressions")))
        for term in terms
        if isinstance(term, Mapping)
    ):
        problems.append("required node affinity matches none of its nodes' labels")
    return problems


def resource_problems(spec: Mapping[str, Any], pool: NodePool) -> list[str]:
    problems = []
    wanted: dict[str, float] = {}
    for list_name in ("containers", "initContainers"):
        for container in items(spec.get(list_name)):
            for name, amount in resources_of(container).items():
                if "/" in str(name):  # extended resources: nvidia.com/gpu, nvidia.com/mig-1g.10gb, ...
                    try:
                        number = float(amount)
                    except (TypeError, ValueError):
                        continue
                    # Init containers run one at a time: the pod needs the larger of the two.
                    wanted[name] = (
                        max(wanted.get(name, 0), number) if list_name == "initContainers" else wanted.get(name, 0) + number
                    )
    for name, amount in wanted.items():
        offered = pool.extended.get(name, 0)
        if amount > offered:
            where = f"{offered:g}" if offered else "none"
            problems.append(f"requests {amount:g} {name}, nodes advertise {where}")
    return problems


def claim_problems(model: DeployModel, obj: KubeObject, spec: Mapping[str, Any], pool: NodePool) -> list[str]:
    problems = []
    namespace = obj.namespace or "default"
    for claim in items(spec.get("resourceClaims")):
        template = get(claim, "resourceClaimTemplateName")
        if not isinstance(template, str):
            continue
        verdicts = [v for v in model.claims if v.template == template and v.namespace == namespace]
        if not verdicts:
            problems.append(f"claim template {namespace}/{template} is not in the stack")
            continue
        if not any(v.satisfiable and pool.name in [p.strip() for p in v.pool.split(",")] for v in verdicts):
            problems.append(f"claim template {template} cannot be satisfied on its nodes")
    return problems


def fitting_pools(model: DeployModel, obj: KubeObject, spec: Mapping[str, Any]) -> tuple[list[NodePool], dict[str, list[str]]]:
    fits, why = [], {}
    for pool in model.pools:
        problems = selector_problems(spec, pool) + resource_problems(spec, pool) + claim_problems(model, obj, spec, pool)
        if problems:
            why[pool.name] = problems
        else:
            fits.append(pool)
    return fits, why


def check(model: DeployModel) -> list[Finding]:
    findings = []
    for obj, template in model.pods():
        fits, why = fitting_pools(model, obj, template.spec)
        if fits:
            continue
        reasons = "; ".join(f"{pool}: {', '.join(problems)}" for pool, problems in why.items()) or "the stack has no node pools"
        if obj.kind == "DaemonSet":
            findings.append(
                Finding(
                    "scheduling",
                    "warning",
                    obj.label,
                    f"runs on no node ({reasons})",
                    "remove it if the stack does not need it, or fix its node selection",
                )
            )
        else:
            findings.append(
                Finding(
                    "scheduling",
                    "blocker",
                    obj.label,
                    f"fits no node pool, so its pods stay Pending ({reasons})",
                    "add tolerations/node selection for a pool that can run it (platform pods: the CPU user pool)",
                )
            )
    return findings
