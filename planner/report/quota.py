"""The plan's quota section: the vCPUs each quota row must allow at the pools' maximum node counts,
the preview features the stack needs registered, and what only ``aks-gpu preflight`` can check."""

from __future__ import annotations

from aks_gpu_inference.components.core import quota
from aks_gpu_inference.planner.azure import preflight
from aks_gpu_inference.planner.azure import quota as demand
from aks_gpu_inference.planner.report.tables import table


def text(run, stack: str, fallback_region: str | None = None) -> str:
    region = demand.region_of(run.resources, fallback_region) or "the stack's region"
    needs = demand.needs(run.resources, region)
    rows = [[n.region, n.name if n.known else f"{n.name} (unknown offline)", n.vcpus, ", ".join(n.pools)] for n in needs]
    lines = [f"Quota: vCPUs at the pools' maximum node counts, upgrade surge included (Compute usages names, {region})"]
    lines.append(table(["region", "quota", "vCPUs", "pools"], rows) if rows else "no node pools")
    lines.append(f"note: {quota.new_subscription_note()}")
    features = preflight.stack_asks(run.resources, region).features
    if features:
        lines.append("preview features the subscription must have registered: " + ", ".join(features))
    lines.append(
        f"not checked offline: the subscription's limits and usage, the sizes and zones it may use, the Kubernetes "
        f"versions AKS offers in {region}, feature registration. Run `aks-gpu preflight {stack}` (signs in to Azure)."
    )
    return "\n".join(lines)
