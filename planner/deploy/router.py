"""The semantic router's config as the router will read it, checked against the router's own Go types.

The chart (semantic-router 0.3.0) renders ``.Values.config`` into ``config.yaml``. Helm first merges
the stack's ``config`` over the sample config in the chart's values.yaml (maps merge key by key, lists
replace, a null deletes), then ``templates/configmap.yaml`` sets ``global.router.skip_processing`` from
``router.skipProcessing``. The router only logs a warning for a key its types do not know
(``pkg/config/validate.go``) and runs without it, so every unknown or misplaced key is a blocker here:
what the stack meant is not what the router does.
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import yaml

from aks_gpu_inference.components.gateway import router_fields
from aks_gpu_inference.planner.deploy.finding import Finding
from aks_gpu_inference.planner.deploy.model import DeployModel

CHART = "semantic-router"


def helm_merge(defaults: Any, values: Any) -> Any:
    """Helm's coalescing of user values over chart defaults: maps merge, a null deletes, anything else replaces."""
    if not isinstance(defaults, dict) or not isinstance(values, dict):
        return values
    merged = dict(defaults)
    for key, value in values.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = helm_merge(defaults.get(key), value)
    return merged


def chart_defaults(upstream: Path | None, version: str) -> dict | None:
    """The sample ``config`` of the chart's values.yaml (its first YAML document), or None without an upstream copy."""
    path = upstream / "charts" / CHART / version / "values.yaml" if upstream else None
    if path is None or not path.is_file():
        return None
    return copy.deepcopy(_sample_config(str(path)))


@functools.lru_cache(maxsize=4)
def _sample_config(path: str) -> dict:
    # Read once per plan: both the router check and the request paths need it (callers get a copy).
    with open(path, encoding="utf-8") as handle:
        return (next(yaml.load_all(handle, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))) or {}).get("config") or {}


def effective_config(values: dict, defaults: dict | None) -> dict:
    """The config.yaml the router reads for these chart values (the sample merged in when known)."""
    config = helm_merge(defaults, values.get("config") or {}) if defaults is not None else dict(values.get("config") or {})
    skip = ((values.get("router") or {}).get("skipProcessing")) or {"enabled": False}
    config = helm_merge(config, {"global": {"router": {"skip_processing": skip}}})
    return config


def configs(model: DeployModel, upstream: Path | None) -> list[tuple[Any, dict, bool]]:
    """(chart render, effective config, whether the chart's sample config was merged in) per router chart."""
    found = []
    for chart in model.charts:
        if chart.chart.rsplit("/", 1)[-1] == CHART:
            defaults = chart_defaults(upstream, chart.version)
            found.append((chart, effective_config(chart.values, defaults), defaults is not None))
    return found


def check(model: DeployModel, upstream: Path | None) -> list[Finding]:
    findings = []
    for chart, config, merged in configs(model, upstream):
        version = chart.version.removeprefix("v")
        try:
            problems = router_fields.unknown_fields(config, version)
        except ValueError as err:
            findings.append(Finding("router-config", "warning", chart.label, str(err), "pin a router version this project knows"))
            continue
        for problem in problems:
            findings.append(
                Finding(
                    "router-config",
                    "blocker",
                    chart.label,
                    f"the router ignores {problem}" + ("" if merged else " (chart sample config not merged: no upstream copy)"),
                    "use the config keys of this router version (components/gateway/router_fields)",
                )
            )
    return findings
