"""Charts: hooks that Pulumi's v4 Chart never runs, and values the chart does not know."""

from __future__ import annotations

from pathlib import Path

from .. import chart_values
from . import Finding
from .model import DeployModel


def hooks(model: DeployModel) -> list[Finding]:
    findings = []
    for chart in model.charts:
        if chart.runs_hooks:
            continue
        for hook in chart.hooks:
            if not hook.required:
                continue
            findings.append(
                Finding(
                    "helm-hooks",
                    "blocker",
                    chart.label,
                    f"{hook.kind} {hook.name} is a Helm {hook.hook} hook, which helm.sh/v4 Chart skips "
                    f"(pulumi-kubernetes#3284), yet {hook.required}",
                    "install the chart with helm.v3.Release (it runs hooks), or create what the hook creates",
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
