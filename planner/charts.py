"""What the stack's Helm charts create: each chart rendered with its exact version and values.

Under the SDK's mocks a ``helm.sh/v4`` Chart is one opaque resource, yet at a real ``pulumi up``
every object it renders is a child resource that the policy pack sees and that must land, schedule
and find its CRD. So the planner renders each chart: with ``helm template`` when helm is on the
PATH and the chart can be pulled, otherwise from the profile the project keeps of that pinned
chart (``components/chart_profiles/``, format in its README). Hooks are kept apart: Pulumi's
``helm.sh/v4`` Chart never runs them (``cmd.DisableHooks``), ``helm.sh/v3`` Release does.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import yaml

from .chart_profiles import load_profile, profiles, render_profile
from .chart_render import CLUSTER_SCOPED, HOOK_ANNOTATION, ChartRender, Crd, Hook, chart_name, with_namespace
from .engine import ProgramRun, Registered
from .render import plain

__all__ = [
    "CHART_TYPES",
    "CLUSTER_SCOPED",
    "ChartRender",
    "child_records",
    "expand",
    "helm_available",
    "profiles",
    "render_chart",
    "render_profile",
]

CHART_TYPES = ("kubernetes:helm.sh/v4:Chart", "kubernetes:helm.sh/v3:Release", "kubernetes:helm.sh/v3:Chart")

# ---------------------------------------------------------------- helm template


def helm_available() -> bool:
    return shutil.which("helm") is not None


def render_with_helm(chart_ref: str, repo: str | None, version: str, release: str, namespace: str, values: dict) -> ChartRender:
    """``helm template`` with hooks and CRDs, split as Pulumi would treat them. Raises on failure."""
    with tempfile.TemporaryDirectory(prefix="aks-gpu-helm-") as tmp:
        values_file = Path(tmp) / "values.yaml"
        values_file.write_text(yaml.safe_dump(values))
        command = ["helm", "template", release, chart_ref, "--version", version, "--namespace", namespace]
        command += ["--include-crds", "--values", str(values_file)]
        if repo:
            command += ["--repo", repo]
        done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    if done.returncode != 0:
        raise RuntimeError((done.stderr.strip().splitlines() or ["helm template failed"])[-1])
    objects, hooks, crds = [], [], []
    documents = [d for d in yaml.safe_load_all(done.stdout) if isinstance(d, dict) and "kind" in d]
    cluster_kinds = {
        (d.get("spec") or {}).get("names", {}).get("kind")
        for d in documents
        if d["kind"] == "CustomResourceDefinition" and (d.get("spec") or {}).get("scope") == "Cluster"
    }
    for doc in documents:
        metadata = doc.get("metadata") or {}
        hook = (metadata.get("annotations") or {}).get(HOOK_ANNOTATION)
        if hook:
            hooks.append(Hook(doc["kind"], metadata.get("name", ""), "", hook))
            continue
        if doc["kind"] == "CustomResourceDefinition":
            spec = doc.get("spec") or {}
            crds.append(
                Crd(
                    spec.get("group", ""),
                    (spec.get("names") or {}).get("kind", ""),
                    tuple(v.get("name") for v in spec.get("versions") or []),
                    spec.get("scope", "Namespaced"),
                )
            )
        objects.append(with_namespace(doc, namespace, cluster_kinds))
    return ChartRender(
        resource=None,  # type: ignore[arg-type]
        chart=chart_name(chart_ref),
        version=version,
        release=release,
        namespace=namespace,
        values=values,
        source="helm template",
        objects=objects,
        hooks=hooks,
        crds=crds,
    )


# ---------------------------------------------------------------- the stack's charts


def render_chart(resource: Registered, use_helm: bool) -> ChartRender:
    """Render one registered chart resource: helm when allowed and working, else its profile."""
    inputs = plain(resource.inputs)
    reference = str(inputs.get("chart", ""))
    chart = chart_name(reference)
    version = str(inputs.get("version", ""))
    release = str(inputs.get("name") or resource.name)
    namespace = str(inputs.get("namespace") or "default")
    values = inputs.get("values") or {}
    repo = (inputs.get("repositoryOpts") or {}).get("repo")
    notes = []
    if use_helm and helm_available():
        try:
            render = render_with_helm(reference, repo, version, release, namespace, values)
        except (RuntimeError, OSError, subprocess.TimeoutExpired, yaml.YAMLError) as err:
            notes.append(f"helm template failed ({err}); used the project's profile instead")
        else:
            render.resource = resource
            profile = load_profile(chart, version)
            if profile:
                _adopt_profile_knowledge(render, profile)
            return render
    profile = load_profile(chart, version)
    if profile is None:
        render = ChartRender(resource, chart, version, release, namespace, values, "unknown")
        render.notes.append(f"no profile components/chart_profiles/{chart}@{version}.yaml and no helm: objects unknown")
        return render
    render = render_profile(profile, release, namespace, values)
    render.resource = resource
    render.notes = notes + render.notes
    return render


def _adopt_profile_knowledge(render: ChartRender, profile: dict[str, Any]) -> None:
    """helm says which objects are hooks, not what needs them: take that, and the free-form value
    paths, from the profile rendered with the same values."""
    profiled = render_profile(profile, render.release, render.namespace, render.values)
    required = {(h.kind, h.name): h.required for h in profiled.hooks}
    render.hooks = [Hook(h.kind, h.name, h.template, h.hook, required.get((h.kind, h.name), "")) for h in render.hooks]
    render.free_form = profiled.free_form
    render.notes += profiled.notes


def chart_resources(run: ProgramRun) -> list[Registered]:
    return [r for r in run.resources if r.type in CHART_TYPES]


def render_charts(run: ProgramRun, use_helm: bool = True) -> list[ChartRender]:
    return [render_chart(r, use_helm) for r in chart_resources(run)]


def type_token(obj: dict[str, Any]) -> str:
    """The Pulumi type token of a manifest: ``apps/v1`` + ``Deployment`` -> ``kubernetes:apps/v1:Deployment``."""
    api_version = str(obj.get("apiVersion", "v1"))
    group_version = api_version if "/" in api_version else f"core/{api_version}"
    return f"kubernetes:{group_version}:{obj.get('kind', 'Unknown')}"


def child_records(render: ChartRender) -> list[Registered]:
    """The chart's objects as the child resources a real preview registers (v4 Chart children)."""
    parent = render.resource
    prefix = parent.urn.split("::")
    parent_type = prefix[2]
    records = []
    for obj in render.objects:
        metadata = obj.get("metadata") or {}
        namespace = metadata.get("namespace")
        name = f"{parent.name}:{namespace + '/' if namespace else ''}{metadata.get('name', '')}"
        token = type_token(obj)
        urn = "::".join([*prefix[:2], f"{parent_type}${token}", name])
        options = {"provider": parent.options.get("provider")} if parent.options.get("provider") else {}
        if parent.options.get("dependsOn"):
            options["dependsOn"] = list(parent.options["dependsOn"])
        records.append(Registered(urn=urn, type=token, name=name, parent=parent.urn, custom=True, inputs=obj, options=options))
    return records


def expand(run: ProgramRun, use_helm: bool = True) -> tuple[ProgramRun, list[ChartRender]]:
    """The run with every chart's objects added as children (as ``pulumi preview`` sees them), plus the renders.

    A ``helm.sh/v3`` Release stays one resource at a real preview: its objects are not added to
    what the pack sees, but they are returned for the deployability checks.
    """
    renders = render_charts(run, use_helm)
    resources = []
    by_chart = {r.resource.urn: r for r in renders}
    for resource in run.resources:
        resources.append(resource)
        render = by_chart.get(resource.urn)
        if render and resource.type != "kubernetes:helm.sh/v3:Release":
            resources.extend(child_records(render))
    return ProgramRun(run.project, run.stack, resources, run.outputs), renders
