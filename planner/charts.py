"""What the stack's Helm charts create: each chart rendered with its exact version and values.

Under the SDK's mocks a ``helm.sh/v4`` Chart is one opaque resource, yet at a real ``pulumi up``
every object it renders is a child resource that the policy pack sees and that must land, schedule
and find its CRD. So the planner renders each chart: with ``helm template`` when helm is on the
PATH and the chart can be pulled, otherwise from the profile the project keeps of that pinned
chart (``components/chart_profiles/``, format in its README). Hooks are kept apart: Pulumi's
``helm.sh/v4`` Chart never runs them (``cmd.DisableHooks``), ``helm.sh/v3`` Release does.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from .engine import ProgramRun, Registered
from .render import plain

PROFILES = Path(__file__).resolve().parent.parent / "components" / "chart_profiles"
CHART_TYPES = ("kubernetes:helm.sh/v4:Chart", "kubernetes:helm.sh/v3:Release", "kubernetes:helm.sh/v3:Chart")
HOOK_ANNOTATION = "helm.sh/hook"

# Kinds Kubernetes itself serves without a namespace; custom kinds are looked up in their CRDs.
CLUSTER_SCOPED = frozenset(
    {
        "APIService",
        "CSIDriver",
        "ClusterRole",
        "ClusterRoleBinding",
        "CustomResourceDefinition",
        "DeviceClass",
        "IngressClass",
        "MutatingWebhookConfiguration",
        "Namespace",
        "Node",
        "PersistentVolume",
        "PriorityClass",
        "RuntimeClass",
        "StorageClass",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "ValidatingWebhookConfiguration",
        "GatewayClass",
        "ResourceSlice",
        "VolumeAttachment",
    }
)


@dataclass(frozen=True)
class Crd:
    group: str
    kind: str
    versions: tuple[str, ...] = ()
    scope: str = "Namespaced"


@dataclass(frozen=True)
class Hook:
    kind: str
    name: str
    template: str
    hook: str
    required: str = ""
    """What needs the hook's output; empty when nothing the stack uses does."""


@dataclass
class ChartRender:
    """One chart (or release) of the stack and what it creates."""

    resource: Registered
    chart: str
    version: str
    release: str
    namespace: str
    values: dict[str, Any]
    source: str
    """``helm template`` or ``profile <file>``; ``unknown`` when neither was possible."""
    objects: list[dict[str, Any]] = field(default_factory=list)
    hooks: list[Hook] = field(default_factory=list)
    crds: list[Crd] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    free_form: tuple[str, ...] = ()
    values_checked: bool | None = None
    """Whether the values were checked against an upstream copy of the chart (None: not yet asked)."""

    @property
    def runs_hooks(self) -> bool:
        """``helm.sh/v3`` Release runs hooks like the helm CLI; the v4 Chart skips them."""
        return self.resource.type == "kubernetes:helm.sh/v3:Release"

    @property
    def label(self) -> str:
        return f"chart {self.chart} {self.version} ({self.resource.name})"


def chart_name(reference: str) -> str:
    """``oci://registry.k8s.io/networking/charts/dranet`` -> ``dranet``; ``repo/name`` -> ``name``."""
    return reference.rstrip("/").rsplit("/", 1)[-1]


# ---------------------------------------------------------------- profiles


@cache
def load_profile(chart: str, version: str) -> dict[str, Any] | None:
    path = PROFILES / f"{chart}@{version}.yaml"
    if not path.is_file():
        return None
    profile = yaml.safe_load(path.read_text())
    profile["_file"] = path.name
    return profile


def profiles() -> list[dict[str, Any]]:
    """Every profile the project keeps."""
    found = []
    for path in sorted(PROFILES.glob("*@*.yaml")):
        chart, version = path.stem.split("@", 1)
        found.append(load_profile(chart, version))
    return found


_MISSING = object()
_OMIT = object()
_REFERENCE = re.compile(r"\$\{([A-Za-z0-9_.\-]+)\}")


def lookup(values: Any, path: str) -> Any:
    """The value at dotted ``path`` in nested mappings, or ``_MISSING``."""
    node = values
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return _MISSING
        node = node[part]
    return node


def _truthy(value: Any) -> bool:
    return value not in (None, False, "", 0, {}, []) and value is not _MISSING


@dataclass
class _Context:
    values: dict[str, Any]
    names: dict[str, str]
    defaults: dict[str, Any]

    def value(self, path: str, default: Any = None) -> Any:
        found = lookup(self.values, path)
        return default if found is _MISSING else found

    def reference(self, path: str) -> Any:
        if path in self.names:
            return self.names[path]
        found = lookup(self.values, path)
        if found is _MISSING:
            if path not in self.defaults:
                raise KeyError(f"${{{path}}} has no value and no entry in the profile's defaults")
            return self.defaults[path]
        return found

    def holds(self, condition: Any) -> bool:
        if condition is None:
            return True
        if isinstance(condition, list):
            return all(self.holds(c) for c in condition)
        value = self.value(condition["path"], condition.get("default"))
        if "equals" in condition:
            return value == condition["equals"]
        if "not_equals" in condition:
            return value != condition["not_equals"]
        return _truthy(value)


def _render(node: Any, ctx: _Context) -> Any:
    if isinstance(node, dict):
        if "$value" in node:
            result = ctx.value(node["$value"], _MISSING)
            return _render(node.get("default"), ctx) if result is _MISSING else result
        if "$if" in node:
            branch = node.get("then", _OMIT) if ctx.holds(node["$if"]) else node.get("else", _OMIT)
            return branch if branch is _OMIT else _render(branch, ctx)
        if "$concat" in node:
            parts = [_render(part, ctx) for part in node["$concat"]]
            return [item for part in parts if isinstance(part, list) for item in part]
        out = {}
        for key, child in node.items():
            rendered = _render(child, ctx)
            if rendered is _OMIT:
                continue
            if isinstance(child, dict) and ("$value" in child or "$concat" in child) and rendered in (None, {}, []):
                continue  # Helm's `with`: an empty value leaves the key out
            out[key] = rendered
        return out
    if isinstance(node, list):
        return [r for r in (_render(item, ctx) for item in node) if r is not _OMIT]
    if isinstance(node, str) and "${" in node:
        whole = _REFERENCE.fullmatch(node)
        if whole:
            return ctx.reference(whole[1])
        return _REFERENCE.sub(lambda m: str(ctx.reference(m[1])), node)
    return node


def _fullname(rule: str, chart: str, release: str, values: dict[str, Any]) -> str:
    override = values.get("fullnameOverride")
    if override:
        return str(override)[:63].rstrip("-")
    if rule == "release":
        return release
    if rule == "release-chart":
        name = values.get("nameOverride") or chart
        return (release if name in release else f"{release}-{name}")[:63].rstrip("-")
    return _REFERENCE.sub(lambda m: {"release": release, "chart": chart}[m[1]], rule)


def render_profile(profile: dict[str, Any], release: str, namespace: str, values: dict[str, Any]) -> ChartRender:
    """The objects, hooks and CRDs a profiled chart renders with ``values`` (no ChartRender.resource set)."""
    chart = profile["chart"]
    names = {"release": release, "namespace": namespace, "chart": chart}
    names["fullname"] = _fullname(profile.get("fullname", "release-chart"), chart, release, values)
    ctx = _Context(values, names, profile.get("defaults") or {})
    cluster_kinds = {c["kind"] for c in profile.get("crds") or [] if c.get("scope") == "Cluster"}
    objects = [
        with_namespace(_render(entry["manifest"], ctx), namespace, cluster_kinds)
        for entry in profile.get("objects") or []
        if ctx.holds(entry.get("when"))
    ]
    hooks = [
        Hook(h["kind"], _render(h["name"], ctx), h.get("template", ""), h.get("hook", ""), h.get("required") or "")
        for h in profile.get("hooks") or []
        if ctx.holds(h.get("when"))
    ]
    crds = [
        Crd(c["group"], c["kind"], tuple(c.get("versions") or ()), c.get("scope", "Namespaced"))
        for c in profile.get("crds") or []
        if ctx.holds(c.get("when"))
    ]
    render = ChartRender(
        resource=None,  # type: ignore[arg-type]
        chart=chart,
        version=str(profile["version"]),
        release=release,
        namespace=namespace,
        values=values,
        source=f"profile {profile.get('_file', chart)}",
        objects=objects,
        hooks=hooks,
        crds=crds,
        notes=list(profile.get("notes") or []),
        free_form=tuple(profile.get("free_form") or ()),
    )
    return render


def with_namespace(obj: dict[str, Any], namespace: str, cluster_kinds: set[str] | frozenset[str] = frozenset()) -> dict[str, Any]:
    """Pulumi's Chart puts namespaced objects that name no namespace into the release namespace.

    ``cluster_kinds``: custom kinds the chart's CRDs declare cluster-scoped."""
    metadata = obj.setdefault("metadata", {})
    kind = obj.get("kind")
    if kind not in CLUSTER_SCOPED and kind not in cluster_kinds and not metadata.get("namespace") and kind != "List":
        metadata["namespace"] = namespace
    return obj


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
