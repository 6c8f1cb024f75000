"""Writes a planned stack to disk: resources.json, one YAML per Kubernetes object, one JSON per
Azure resource, the resource graph (Mermaid and DOT text; SVG when graphviz is installed), and the plan to
look at: summary.json, plan.md and the picture plan.html (``summary``, ``picture``)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from aks_gpu_inference.planner.engine.program import ProgramRun
from aks_gpu_inference.planner.engine.values import kubernetes_object
from aks_gpu_inference.planner.report import picture, plan_markdown, summary

if TYPE_CHECKING:
    from aks_gpu_inference.planner.charts import ChartRender
    from aks_gpu_inference.planner.plan import Plan


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")


def _parent(urn: str | None) -> str | None:
    """``<type>::<name>`` of a parent URN; None for the stack itself."""
    if not urn:
        return None
    parts = urn.split("::")
    parent_type = parts[2].split("$")[-1]
    return None if parent_type == "pulumi:pulumi:Stack" else f"{parent_type}::{parts[3]}"


def resource_records(run: ProgramRun) -> list[dict[str, Any]]:
    return [
        {
            "type": r.type,
            "name": r.name,
            "parent": _parent(r.parent),
            "custom": r.custom,
            "inputs": r.inputs,
            "options": _options(r.options),
        }
        for r in run.resources
    ]


def _options(options: dict[str, Any]) -> dict[str, Any]:
    """A resource's options without noise: the SDK registers about a hundred alias specs per AgentPool (one per
    API version of the type), which the mocks echo as empty strings; only aliases that say something are kept."""
    aliases = [a for a in options.get("aliases") or [] if a]
    kept = {k: v for k, v in options.items() if k != "aliases"}
    return {**kept, "aliases": aliases} if aliases else kept


def mermaid(run: ProgramRun) -> str:
    ids = {r.urn: f"n{i}" for i, r in enumerate(run.resources)}
    lines = ["graph TD"]
    for r in run.resources:
        lines.append(f'  {ids[r.urn]}["{r.name}<br/><small>{r.type}</small>"]')
    for r in run.resources:
        if r.parent in ids:
            lines.append(f"  {ids[r.parent]} --> {ids[r.urn]}")
        for dep in r.options.get("dependsOn", []):
            if dep in ids and dep != r.parent:
                lines.append(f"  {ids[dep]} -.-> {ids[r.urn]}")
    return "\n".join(lines) + "\n"


def dot(run: ProgramRun) -> str:
    ids = {r.urn: f"n{i}" for i, r in enumerate(run.resources)}
    lines = ["digraph stack {", "  rankdir=LR;", "  node [shape=box, fontname=Helvetica];"]
    for r in run.resources:
        style = "" if r.custom else ", style=dashed"
        lines.append(f'  {ids[r.urn]} [label="{r.name}\\n{r.type}"{style}];')
    for r in run.resources:
        if r.parent in ids:
            lines.append(f"  {ids[r.parent]} -> {ids[r.urn]};")
        for dep in r.options.get("dependsOn", []):
            if dep in ids and dep != r.parent:
                lines.append(f"  {ids[dep]} -> {ids[r.urn]} [style=dotted];")
    lines.append("}")
    return "\n".join(lines) + "\n"


# libyaml's emitter with the safe representer: what yaml.safe_dump writes, several times faster (a CRD is megabytes).
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def write_plan(run: ProgramRun, out_dir: Path) -> dict[str, int]:
    """Write every artifact of a plan to ``out_dir`` (replacing what a previous plan left there)."""
    if out_dir.exists():
        shutil.rmtree(out_dir)
    (out_dir / "kubernetes").mkdir(parents=True)
    (out_dir / "azure").mkdir()
    (out_dir / "resources.json").write_text(
        json.dumps({"project": run.project, "stack": run.stack, "resources": resource_records(run)}, indent=2) + "\n"
    )
    (out_dir / "outputs.json").write_text(json.dumps(run.outputs, indent=2, sort_keys=True) + "\n")
    counts = {"kubernetes": 0, "azure": 0}
    for r in run.resources:
        if r.is_kubernetes:
            obj = kubernetes_object(r)
            namespace = obj["metadata"].get("namespace")
            stem = "-".join(filter(None, [obj.get("kind", "object").lower(), namespace, obj["metadata"]["name"]]))
            (out_dir / "kubernetes" / f"{_slug(stem)}.yaml").write_text(yaml.dump(obj, Dumper=_DUMPER, sort_keys=False))
            counts["kubernetes"] += 1
        elif r.is_azure:
            kind = r.type.split(":")[-1]
            (out_dir / "azure" / f"{_slug(kind)}-{_slug(r.name)}.json").write_text(
                json.dumps({"type": r.type, "name": r.name, "inputs": r.inputs}, indent=2) + "\n"
            )
            counts["azure"] += 1
    (out_dir / "graph.mmd").write_text(mermaid(run))
    (out_dir / "graph.dot").write_text(dot(run))
    if shutil.which("dot"):
        subprocess.run(
            ["dot", "-Tsvg", "-o", str(out_dir / "graph.svg"), str(out_dir / "graph.dot")], check=False, capture_output=True
        )
    return counts


def write(plan: Plan, out_dir: Path) -> dict[str, int]:
    """Every file of a plan in ``out_dir``: the stack's objects (``write_plan``), then the verdicts, claims,
    gateway paths and deployability findings as JSON, and the summary as JSON, Markdown and a picture; the counts
    of manifests and Azure resources written."""
    counts = write_plan(plan.run, out_dir)
    _json(out_dir / "policy.json", [v.__dict__ for v in plan.verdicts])
    _json(out_dir / "claims.json", [v.__dict__ for v in plan.claims])
    _json(out_dir / "gateway.json", plan.gateway)
    deployability = {
        "as_of": plan.options.as_of.isoformat(),
        "findings": [f.as_dict() for f in plan.findings],
        "charts": [chart_summary(r) for r in plan.renders],
    }
    _json(out_dir / "deployability.json", deployability)
    document = summary.build(plan)
    _json(out_dir / "summary.json", document)
    (out_dir / "plan.md").write_text(plan_markdown.markdown(document))
    (out_dir / "plan.html").write_text(picture.html(document))
    return counts


def _json(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value, indent=2) + "\n")


def chart_summary(render: ChartRender) -> dict[str, Any]:
    """How one chart was rendered, for deployability.json."""
    return {
        "chart": render.chart,
        "version": render.version,
        "resource": render.resource.urn,
        "rendered_by": render.source,
        "archive": render.archive,
        "objects": len(render.objects),
        "crds": len(render.crds),
        "hooks": len(render.hooks),
        "problems": render.problems,
        "helm4_differences": render.helm4,
        "snapshot": render.caveat,
    }
