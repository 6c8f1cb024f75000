"""Checks the values a component passes to a chart against that chart version's own values.

Helm ignores a key it does not know, so a misspelt or misplaced value is silently dropped and the
chart's default runs. The check reads the pinned chart's ``values.schema.json`` (when the chart has
one) and its ``values.yaml`` key tree from an upstream copy (``planner.upstream``): a key that is
in neither is an error, except below paths the chart passes through verbatim (the profile's
``free_form``, or an empty ``{}`` default).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import yaml

# libyaml's parser with the safe constructor: the values yaml.safe_load gives, several times faster.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@cache
def _chart_folder_data(folder: Path) -> tuple[dict[str, Any], dict[str, Any] | None, dict[str, str]]:
    """(default values, schema or None, subchart key -> subchart folder name) of one chart folder."""
    values_file = next((folder / n for n in ("values.yaml", "values.tmpl.yaml") if (folder / n).is_file()), None)
    defaults = {}
    if values_file:
        # Some charts append extra documents (examples) after the values: Helm reads the first.
        first = next(iter(yaml.load_all(values_file.read_text(), Loader=_LOADER)), None)
        defaults = first if isinstance(first, dict) else {}
    schema_file = folder / "values.schema.json"
    schema = json.loads(schema_file.read_text()) if schema_file.is_file() else None
    subcharts = {}
    chart_file = folder / "Chart.yaml"
    if chart_file.is_file():
        for dep in (yaml.load(chart_file.read_text(), Loader=_LOADER) or {}).get("dependencies") or []:
            subcharts[dep.get("alias") or dep["name"]] = dep["name"]
    return defaults, schema, subcharts


def chart_folder(upstream: Path, chart: str, version: str) -> Path | None:
    folder = upstream / "charts" / chart / version
    return folder if folder.is_dir() else None


def unknown_keys(values: Any, defaults: Any, free_form: tuple[str, ...], path: str = "") -> list[str]:
    """Dotted paths in ``values`` that the defaults tree does not have."""
    if not isinstance(values, dict) or not isinstance(defaults, dict) or not defaults:
        return []
    problems = []
    for key, value in values.items():
        here = f"{path}.{key}" if path else str(key)
        if here in free_form or key == "global":
            continue
        if key not in defaults:
            problems.append(here)
        elif isinstance(defaults[key], dict) and isinstance(value, dict):
            problems += unknown_keys(value, defaults[key], free_form, here)
    return problems


def check(upstream: Path, chart: str, version: str, values: dict[str, Any], free_form: tuple[str, ...] = ()) -> list[str] | None:
    """Problems with ``values`` for the pinned chart; None when no upstream copy of it exists."""
    folder = chart_folder(upstream, chart, version)
    if folder is None:
        return None
    defaults, schema, subcharts = _chart_folder_data(folder)
    problems = []
    if schema is not None:
        import jsonschema

        validator = jsonschema.Draft7Validator(schema)
        for error in sorted(validator.iter_errors(values), key=lambda e: list(e.absolute_path)):
            where = ".".join(str(p) for p in error.absolute_path) or "(top level)"
            problems.append(f"values.{where}: {error.message} (values.schema.json)")
    sub_values = {}
    for key, sub in subcharts.items():
        if key in values:
            sub_values[key] = (sub, values[key])
    own = {k: v for k, v in values.items() if k not in sub_values}
    # Keys the chart's values.yaml never mentions: Helm drops them without a word.
    for where in unknown_keys(own, defaults, free_form):
        problems.append(f"values.{where}: not a value of {chart} {version} (Helm ignores unknown keys)")
    for key, (sub, value) in sub_values.items():
        sub_folder = folder / "charts" / sub
        if sub_folder.is_dir() and isinstance(value, dict):
            sub_defaults, _schema, _subs = _chart_folder_data(sub_folder)
            prefix = tuple(p[len(key) + 1 :] for p in free_form if p.startswith(key + "."))
            for where in unknown_keys(value, {**sub_defaults, "enabled": True}, prefix):
                problems.append(f"values.{key}.{where}: not a value of subchart {sub} (Helm ignores unknown keys)")
    return problems
