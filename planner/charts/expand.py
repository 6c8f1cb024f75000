"""What the stack's Helm charts create, rendered by Helm itself with each chart's exact version and values.

Under the SDK's mocks a ``helm.sh/v4`` Chart is one opaque resource, yet at a real ``pulumi up`` every object
it renders is a child resource that the policy pack sees and that must land, schedule and find its CRD. So the
planner renders each chart from its archive (``sources``) with real Helm (``helm``), the way Pulumi's provider
does:

- ``helm.sh/v4`` Chart (and the old v3 Chart): hooks are never created (pulumi-kubernetes#3284); the chart's
  CRDs (``crds/``, unless ``skipCrds``, and any in templates) are children like the rest;
- ``helm.sh/v3`` Release: one resource at a preview, but an install applies the CRDs and runs the install hooks;
- the release name is the resource name unless ``name`` is set; objects that name no namespace go to the
  release namespace (``namespace``, else the provider's, else ``default``);
- values files are read as Helm 3 reads them (the provider embeds Helm 3): only the first YAML document of a
  chart's ``values.yaml``. Where Helm 4 would render differently, the render says how (``helm4``).
"""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from aks_gpu_inference.planner.charts import helm, hook_needs
from aks_gpu_inference.planner.charts import values as chart_values
from aks_gpu_inference.planner.charts.archive import ChartArchive
from aks_gpu_inference.planner.charts.config_files import render_config_file
from aks_gpu_inference.planner.charts.model import (
    CLUSTER_SCOPED,
    CONFIG_FILE,
    HOOK_ANNOTATION,
    ChartRender,
    Crd,
    Hook,
    with_namespace,
)
from aks_gpu_inference.planner.charts.sources import ChartRef, ChartSources, PullError
from aks_gpu_inference.planner.engine.program import ProgramRun, Registered
from aks_gpu_inference.planner.engine.values import plain
from aks_gpu_inference.planner.inputs.upstream import snapshot_note

CHART_TYPES = ("kubernetes:helm.sh/v4:Chart", "kubernetes:helm.sh/v3:Release", "kubernetes:helm.sh/v3:Chart")
RELEASE = "kubernetes:helm.sh/v3:Release"
INSTALL_HOOKS = frozenset({"pre-install", "post-install"})
"""The hook phases a first install runs (a Release); upgrade, delete, rollback and test hooks run later or never."""


def chart_ref(inputs: dict[str, Any]) -> ChartRef:
    return ChartRef(
        str(inputs.get("chart", "")), str(inputs.get("version", "")), (inputs.get("repositoryOpts") or {}).get("repo")
    )


def render_chart(resource: Registered, sources: ChartSources, namespace: str) -> ChartRender:
    """One registered chart resource rendered as Pulumi's provider would render it."""
    inputs = resource.inputs
    ref = chart_ref(inputs)
    release = str(inputs.get("name") or resource.name)
    values = inputs.get("values") or {}
    render = ChartRender(resource, ref.name, ref.version, release, namespace, values, "unknown")
    try:
        use = helm.backend()
        archive = sources.find(ref)
    except (helm.NoHelm, PullError, OSError) as err:
        render.problems.append(str(err))
        return render
    if archive is None:
        render.problems.append(f"chart {ref.where} {ref.version} not found offline (looked in {sources.describe()})")
        return render
    render.archive, render.caveat = archive.origin, snapshot_note(archive.origin)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="helm4") as side:
        # Helm 4's reading is rendered beside Helm 3's, not after it (loading a 41-document values.yaml is slow).
        helm4 = side.submit(_helm4_render, archive, values, release, namespace) if archive.multi_document_values else None
        try:
            documents = helm.render(archive.as_helm3(), values, release, namespace, use)
        except helm.RenderError as err:
            render.problems.append(f"Helm refuses to render it with these values: {err}")
            return render
        render.source = use
        render.values_problems = chart_values.unread(archive, values)
        _apply_pulumi_semantics(render, documents, skip_crds=bool(inputs.get("skipCrds")), archive=archive)
        if helm4 is not None:
            render.helm4 = _helm4_differences(render, helm4.result())
    return render


def _apply_pulumi_semantics(render: ChartRender, documents: list[helm.Document], skip_crds: bool, archive: ChartArchive) -> None:
    release = render.resource.type == RELEASE
    skipped = {id(d) for d in documents if skip_crds and d.from_crds_folder and d.obj["kind"] == "CustomResourceDefinition"}
    crd_docs = [d for d in documents if d.obj["kind"] == "CustomResourceDefinition" and id(d) not in skipped]
    cluster_kinds = {
        (d.obj.get("spec") or {}).get("names", {}).get("kind")
        for d in crd_docs
        if d.obj.get("spec", {}).get("scope") == "Cluster"
    }
    render.crds = [Crd.of(d.obj) for d in crd_docs]
    for doc in documents:
        if id(doc) in skipped:
            continue
        phases = {
            p.strip()
            for p in str(((doc.obj.get("metadata") or {}).get("annotations") or {}).get(HOOK_ANNOTATION, "")).split(",")
            if p.strip()
        }
        if phases:
            name = str((doc.obj.get("metadata") or {}).get("name", ""))
            why = hook_needs.needed_by(archive.name, doc.obj["kind"], name)
            render.hooks.append(Hook(doc.obj["kind"], name, doc.source, ",".join(sorted(phases)), why))
            if not (release and phases & INSTALL_HOOKS):
                continue
        render.objects.append(with_namespace(doc.obj, render.namespace, cluster_kinds))


def _key(obj: dict[str, Any]) -> tuple[str, str, str]:
    metadata = obj.get("metadata") or {}
    return (str(obj.get("kind")), str(metadata.get("namespace") or ""), str(metadata.get("name", "")))


def _helm4_render(archive: ChartArchive, values: dict[str, Any], release: str, namespace: str) -> list[helm.Document] | str:
    """The chart as Helm 4 renders it (every document of its values.yaml merged), or why it could not be."""
    try:
        return helm.render(archive.data, values, release, namespace, "helm-python-sdk")
    except ImportError:
        return f"{', '.join(archive.multi_document_values)} has several YAML documents; Helm 4's render not compared (no helm-python-sdk)"
    except helm.RenderError as err:
        return f"Helm 4 refuses to render it: {err}"


def _helm4_differences(render: ChartRender, documents: list[helm.Document] | str) -> list[str]:
    """What Helm 4, which merges every document of a multi-document ``values.yaml``, would render otherwise."""
    if isinstance(documents, str):
        return [documents]
    helm3 = {_key(o): o for o in render.objects}
    helm4 = {}
    for doc in documents:
        if HOOK_ANNOTATION not in ((doc.obj.get("metadata") or {}).get("annotations") or {}):
            obj = with_namespace(doc.obj, render.namespace, set())
            helm4[_key(obj)] = obj
    changes = [f"adds {k} {n}" for k, _, n in sorted(helm4.keys() - helm3.keys())]
    changes += [f"drops {k} {n}" for k, _, n in sorted(helm3.keys() - helm4.keys())]
    for key in sorted(helm3.keys() & helm4.keys()):
        changed = _changed_paths(helm3[key], helm4[key])
        if changed:
            changes.append(
                f"{key[0]} {key[2]}: " + "; ".join(changed[:8]) + (f"; and {len(changed) - 8} more" if len(changed) > 8 else "")
            )
    return changes


def _changed_paths(a: Any, b: Any, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(a.keys() | b.keys(), key=str):
            if k == "checksum/config" or (path.endswith("annotations") and str(k).startswith("checksum/")):
                continue
            out += _changed_paths(a.get(k), b.get(k), f"{path}.{k}" if path else str(k))
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [p for i, (x, y) in enumerate(zip(a, b, strict=True)) for p in _changed_paths(x, y, f"{path}[{i}]")]
    if a == b:
        return []
    if isinstance(a, dict | list) or isinstance(b, dict | list) or "\n" in f"{a}{b}":
        return [f"{path} differs"]
    return [f"{path} {_short(a)} -> {_short(b)}"]


def _short(value: Any) -> str:
    text = "unset" if value is None else " ".join(str(value).split())
    return text if len(text) <= 40 else text[:37] + "..."


def _provider_namespaces(run: ProgramRun) -> dict[str, str]:
    """Provider URN -> the default namespace it gives objects (its ``namespace`` input)."""
    return {
        r.urn: str(r.inputs["namespace"])
        for r in run.resources
        if r.type == "pulumi:providers:kubernetes" and r.inputs.get("namespace")
    }


def release_namespace(resource: Registered, providers: dict[str, str]) -> str:
    inputs = resource.inputs
    if inputs.get("namespace"):
        return str(inputs["namespace"])
    provider = str(resource.options.get("provider") or "").split("::")
    return providers.get("::".join(provider[:-1]) if len(provider) > 1 else "", "default")


def chart_resources(run: ProgramRun) -> list[Registered]:
    return [r for r in run.resources if r.type in (*CHART_TYPES, CONFIG_FILE)]


def _render(resource: Registered, sources: ChartSources, namespace: str) -> ChartRender:
    if resource.type == CONFIG_FILE:
        return render_config_file(resource, sources.upstream, sources.project_dir, namespace)
    return render_chart(resource, sources, namespace)


def render_charts(run: ProgramRun, sources: ChartSources) -> list[ChartRender]:
    """Every chart of the run rendered, in the run's order. Helm runs outside the GIL (Go behind ctypes, or a
    helm process), so the charts render side by side: a plan waits for the slowest, not for their sum."""
    providers = _provider_namespaces(run)
    resources = chart_resources(run)
    if len(resources) < 2:
        return [_render(r, sources, release_namespace(r, providers)) for r in resources]
    with ThreadPoolExecutor(max_workers=min(4, len(resources)), thread_name_prefix="helm") as pool:
        return list(pool.map(lambda r: _render(r, sources, release_namespace(r, providers)), resources))


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
        namespace = metadata.get("namespace") if obj.get("kind") not in CLUSTER_SCOPED else None
        name = f"{parent.name}:{namespace + '/' if namespace else ''}{metadata.get('name', '')}"
        token = type_token(obj)
        urn = "::".join([*prefix[:2], f"{parent_type}${token}", name])
        options = {"provider": parent.options.get("provider")} if parent.options.get("provider") else {}
        if parent.options.get("dependsOn"):
            options["dependsOn"] = list(parent.options["dependsOn"])
        records.append(
            Registered(urn=urn, type=token, name=name, parent=parent.urn, custom=True, inputs=plain(obj), options=options)
        )
    return records


def expand(run: ProgramRun, sources: ChartSources) -> tuple[ProgramRun, list[ChartRender]]:
    """The run with every chart's objects added as children (as ``pulumi preview`` sees them), plus the renders.

    A ``helm.sh/v3`` Release stays one resource at a real preview: its objects are not added to what the pack
    sees, but they are returned for the deployability checks.
    """
    renders = render_charts(run, sources)
    resources = []
    by_chart = {r.resource.urn: r for r in renders}
    for resource in run.resources:
        resources.append(resource)
        render = by_chart.get(resource.urn)
        if render and resource.type != RELEASE:
            resources.extend(child_records(render))
    return dataclasses.replace(run, resources=resources), renders
