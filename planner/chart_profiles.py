"""The profiles the project keeps of its pinned charts (``components/chart_profiles/``, format in its
README), and a profile rendered with a release's values: the objects, hooks and CRDs the chart would
create, for when helm is not on the PATH or cannot pull the chart."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from .chart_render import ChartRender, Crd, Hook, with_namespace

PROFILES = Path(__file__).resolve().parent.parent / "components" / "chart_profiles"


@cache
def load_profile(chart: str, version: str) -> dict[str, Any] | None:
    path = PROFILES / f"{chart}@{version}.yaml"
    if not path.is_file():
        return None
    # libyaml's parser with the safe constructor: the values yaml.safe_load gives, several times faster.
    profile = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
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
        return _render_mapping(node, ctx)
    if isinstance(node, list):
        return [r for r in (_render(item, ctx) for item in node) if r is not _OMIT]
    if isinstance(node, str) and "${" in node:
        whole = _REFERENCE.fullmatch(node)
        if whole:
            return ctx.reference(whole[1])
        return _REFERENCE.sub(lambda m: str(ctx.reference(m[1])), node)
    return node


def _render_mapping(node: dict[str, Any], ctx: _Context) -> Any:
    """A mapping of the profile: a ``$value``, ``$if`` or ``$concat`` directive, or plain keys rendered in turn."""
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
        caveat=str(profile.get("caveat") or ""),
        free_form=tuple(profile.get("free_form") or ()),
    )
    return render
