"""Values that Helm silently ignores: keys no part of the chart reads.

Helm drops a key it does not know without a word, so a misspelt or misplaced value leaves the chart's default
running. Helm itself already refuses what a ``values.schema.json`` forbids (the render fails). What remains is
judged as Helm uses values: a key is read when the chart's ``values.yaml`` has it (the first document, as Helm 3
reads it), or a template reads it (``.Values.a.b``, ``index .Values "a-b"``), or a template takes a parent of it
whole (``toYaml .Values.resources``, ``with .Values.env``), or it lies below an empty map the chart passes through.
A key under a subchart's alias belongs to the parent's ``values.yaml`` and to the subchart's templates and values.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from aks_gpu_inference.planner.charts.archive import ChartArchive, SubChart

_CHAIN = re.compile(r"\.Values((?:\.[A-Za-z_][A-Za-z0-9_]*)+)")
_INDEX = re.compile(r"index\s+\$?\.Values((?:\.[A-Za-z_][A-Za-z0-9_]*)*)\s+\"([^\"]+)\"")


@cache
def _references(chart: SubChart) -> tuple[frozenset[str], frozenset[str]]:
    """(paths a template reads whole, paths that are a prefix of a read) of one chart's templates."""
    whole, prefixes = set(), set()
    for text in chart.templates.values():
        chains = [m[1][1:] for m in _CHAIN.finditer(text)]
        chains += [f"{m[1][1:]}.{m[2]}" if m[1] else m[2] for m in _INDEX.finditer(text)]
        for chain in chains:
            whole.add(chain)
            parts = chain.split(".")
            prefixes.update(".".join(parts[:i]) for i in range(1, len(parts)))
    return frozenset(whole), frozenset(prefixes)


def _read_by_templates(chart: SubChart, path: str, below: str = "") -> bool:
    """Whether a template of ``chart`` reads ``path``, or a parent of it deeper than ``below`` whole (a parent chart
    that takes a subchart's whole map, to check ``enabled`` say, does not read every key in it)."""
    whole, prefixes = _references(chart)
    parts = path.split(".")
    first = len(below.split(".")) + 1 if below else 1
    return path in prefixes or any(".".join(parts[:i]) in whole for i in range(first, len(parts) + 1))


def _merged(base: Any, override: Any) -> Any:
    if isinstance(base, dict) and isinstance(override, dict):
        return {**base, **{k: _merged(base.get(k), v) for k, v in override.items()}}
    return override if override is not None else base


def unread(archive: ChartArchive, values: dict[str, Any]) -> list[str]:
    """Every value path that Helm would ignore, each with why, for the top chart and its subcharts."""
    top = archive.charts[""]
    return _walk(archive, top, values, top.values, "", "", [])


def _walk(
    archive: ChartArchive, chart: SubChart, values: Any, defaults: Any, path: str, own: str, readers: list[tuple[SubChart, str]]
) -> list[str]:
    """``path``: the key path from the top chart's values; ``own``: the same path inside ``chart``'s values;
    ``readers``: parent charts (and the path prefix they read it under) whose templates may read these values too."""
    if not isinstance(values, dict) or not isinstance(defaults, dict) or (path and not defaults):
        return []
    problems = []
    for key, value in values.items():
        here, inside = f"{path}.{key}" if path else str(key), f"{own}.{key}" if own else str(key)
        if key == "global" and not own:
            continue
        sub = _subchart(archive, chart, str(key)) if not own else None
        if sub is not None:
            inherited = _merged(sub.values, defaults.get(key) if isinstance(defaults.get(key), dict) else {})
            problems += _walk(archive, sub, value, {"enabled": True, **inherited}, here, "", [*readers, (chart, str(key))])
            continue
        known = key in defaults or _read_by_templates(chart, inside)
        known = known or any(_read_by_templates(parent, f"{prefix}.{inside}", prefix) for parent, prefix in readers)
        if not known:
            problems.append(
                f"values.{here}: not a value of {_label(archive, chart)} (neither its values.yaml nor a template reads it)"
            )
        elif key in defaults and isinstance(value, dict) and not _taken_whole(chart, inside):
            problems += _walk(archive, chart, value, defaults[key], here, inside, readers)
    return problems


def _taken_whole(chart: SubChart, path: str) -> bool:
    return path in _references(chart)[0]


def _subchart(archive: ChartArchive, chart: SubChart, key: str) -> SubChart | None:
    name = chart.aliases.get(key)
    if name is None:
        return None
    return archive.charts.get(f"{chart.path}/charts/{name}" if chart.path else f"charts/{name}")


def _label(archive: ChartArchive, chart: SubChart) -> str:
    return f"{archive.name} {archive.version}" if not chart.path else f"subchart {chart.name} of {archive.name} {archive.version}"
