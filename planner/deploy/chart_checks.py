"""Charts: ones Helm could not render, hooks that Pulumi's v4 Chart never runs, and values Helm ignores."""

from __future__ import annotations

from aks_gpu_inference.planner.deploy.finding import Finding
from aks_gpu_inference.planner.deploy.model import DeployModel


def rendered(model: DeployModel) -> list[Finding]:
    """A chart Helm refused (a blocker: ``pulumi up`` fails the same way) or that was not at hand (a warning
    naming what that leaves unchecked: never a silent pass)."""
    findings = []
    for chart in model.charts:
        if chart.rendered:
            continue
        refused = bool(chart.archive)
        findings.append(
            Finding(
                "charts",
                "blocker" if refused else "warning",
                chart.label,
                "; ".join(chart.problems)
                + ("" if refused else ": nothing it creates was checked (objects, CRDs, pods, policies, values)"),
                "use values this chart version accepts"
                if refused
                else "pass --charts DIR with its archive, or --pull to fetch it into the chart cache",
            )
        )
    return findings


def hooks(model: DeployModel) -> list[Finding]:
    """A v4 Chart whose needed objects are hooks: one finding per chart, naming each needed hook."""
    findings = []
    for chart in model.charts:
        if chart.runs_hooks:
            continue
        needed = [h for h in chart.hooks if h.required]
        if needed:
            findings.append(
                Finding(
                    "helm-hooks",
                    "blocker",
                    chart.label,
                    "helm.sh/v4 Chart skips Helm hooks (pulumi-kubernetes#3284), yet the stack needs them: "
                    + "; ".join(f"{h.kind} {h.name} ({h.hook}): {h.required}" for h in needed),
                    "install the chart with helm.v3.Release (it runs hooks), or create what the hooks create",
                )
            )
    return findings


def values(model: DeployModel) -> list[Finding]:
    """Values Helm would ignore: the key is in no values.yaml and no template reads it."""
    return [
        Finding(
            "chart-values",
            "blocker",
            chart.label,
            problem,
            "use the value names of this chart version (its values.yaml and templates)",
        )
        for chart in model.charts
        for problem in chart.values_problems or []
    ]
