"""The stack's Helm charts, rendered by Helm itself: where each archive comes from (``sources``), Helm run on it
(``helm``), Pulumi's semantics applied to what it renders (``expand``), and the values checked as Helm reads them
(``values``)."""

from aks_gpu_inference.planner.charts.expand import CHART_TYPES, child_records, expand, render_chart, render_charts
from aks_gpu_inference.planner.charts.model import CLUSTER_SCOPED, HOOK_ANNOTATION, ChartRender, Crd, Hook
from aks_gpu_inference.planner.charts.sources import ChartRef, ChartSources

__all__ = [
    "CHART_TYPES",
    "CLUSTER_SCOPED",
    "HOOK_ANNOTATION",
    "ChartRef",
    "ChartRender",
    "ChartSources",
    "Crd",
    "Hook",
    "child_records",
    "expand",
    "render_chart",
    "render_charts",
]
