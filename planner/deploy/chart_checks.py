"""Charts: hooks that Pulumi's v4 Chart never runs, and values the chart does not know."""

from __future__ import annotations

from pathlib import Path

from .. import chart_values
from . import Finding
from .model import DeployModel


def hooks(model: DeployModel) -> list[Finding]:
    """A v4 Chart whose needed objects are hooks: one finding per chart, naming each needed hook."""
    findings = []
    for chart in model.charts:
        if chart.source == "unknown":
            findings.append(
                Finding(
                    "helm-hooks",
                    "warning",
                    chart.label,
                    "what this chart creates is unknown (no helm on the PATH and no profile): nothing it renders was checked",
                    f"install helm, or add components/chart_profiles/{chart.chart}@{chart.version}.yaml",
                )
            )
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


def values(model: DeployModel, upstream: Path | None) -> list[Finding]:
    findings = []
    for chart in model.charts:
        problems = chart_values.check(upstream, chart.chart, chart.version, chart.values, chart.free_form) if upstream else None
        chart.values_checked = problems is not None
        for problem in problems or []:
            findings.append(
                Finding(
                    "chart-values",
                    "blocker",
                    chart.label,
                    problem,
                    "use the value names of this chart version (its values.yaml / values.schema.json)",
                )
            )
    return findings
