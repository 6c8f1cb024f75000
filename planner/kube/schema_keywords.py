"""OpenAPI v3 value keywords as the API server applies them, as pure functions: number bounds and
``multipleOf``, patterns (Python ``re``, RE2-only syntax reported as not checkable), duplicates in
``x-kubernetes-list-type`` set and map lists, and ``required``/``min``/``maxProperties`` of an object."""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from aks_gpu_inference.planner.kube.json_values import Problem, canonical, child, is_int, is_number, show

# Go RE2 syntax that Python's re rejects or reads differently; such patterns are reported as not checked.
_RE2_ONLY = re.compile(r"\[\[:\^?[a-z]+:\]\]|\\[pPzCQE]|\\x\{|\(\?[a-zA-Z]*U")


@functools.cache
def compiled_pattern(pattern: str) -> re.Pattern[str] | str:
    """The compiled pattern, or why it cannot be checked with Python's re."""
    if _RE2_ONLY.search(pattern):
        return "uses RE2 syntax Python's re does not share"
    try:
        return re.compile(pattern)
    except (re.error, OverflowError, RecursionError) as err:
        return f"does not compile with Python's re ({err})"


def number_problems(value: float, s: Mapping[str, Any]) -> list[str]:
    """``minimum``/``maximum`` (``exclusive*`` as booleans, OpenAPI v3.0, or as numbers) and ``multipleOf``."""
    low, high = s.get("minimum"), s.get("maximum")
    ex_low, ex_high = s.get("exclusiveMinimum"), s.get("exclusiveMaximum")
    problems = []
    if is_number(low) and not (value > low if ex_low is True else value >= low):
        problems.append(f"{show(value)} must be greater than {'' if ex_low is True else 'or equal to '}{show(low)}")
    if is_number(high) and not (value < high if ex_high is True else value <= high):
        problems.append(f"{show(value)} must be less than {'' if ex_high is True else 'or equal to '}{show(high)}")
    if is_number(ex_low) and not value > ex_low:
        problems.append(f"{show(value)} must be greater than {show(ex_low)}")
    if is_number(ex_high) and not value < ex_high:
        problems.append(f"{show(value)} must be less than {show(ex_high)}")
    step = s.get("multipleOf")
    if is_number(step) and step > 0:
        ratio = value / step
        if not math.isclose(ratio, round(ratio), rel_tol=0, abs_tol=1e-9):
            problems.append(f"{show(value)} must be a multiple of {show(step)}")
    return problems


def duplicate_problems(value: list, s: Mapping[str, Any], path: str) -> list[tuple[str, str]]:
    """Repeated items of a ``set`` list (or ``uniqueItems``) and repeated keys of a ``map`` list."""
    if s.get("x-kubernetes-list-type") == "set" or s.get("uniqueItems") is True:
        keyed = [(i, canonical(item), item) for i, item in enumerate(value)]
        return _repeats(keyed, path, lambda item: f"value {show(item)}", "set")
    names = [k for k in s.get("x-kubernetes-list-map-keys") or [] if isinstance(k, str)]
    if s.get("x-kubernetes-list-type") != "map" or not names:
        return []
    keyed = [(i, tuple(canonical(item.get(k)) for k in names), item) for i, item in enumerate(value) if isinstance(item, dict)]
    return _repeats(keyed, path, lambda item: "entry for key " + ", ".join(f"{k}={show(item.get(k))}" for k in names), "map")


def _repeats(keyed: list[tuple[int, Any, Any]], path: str, what: Callable[[Any], str], list_type: str) -> list[tuple[str, str]]:
    """Each (index, key, item) whose key an earlier item has, as (path, message)."""
    problems, seen = [], {}
    for i, key, item in keyed:
        if key in seen:
            problems.append((f"{path}[{i}]", f"duplicate {what(item)} (also at [{seen[key]}]; the list is a {list_type})"))
        else:
            seen[key] = i
    return problems


def property_problems(value: dict, s: Mapping[str, Any], path: str) -> list[Problem]:
    """Missing ``required`` fields, and more or fewer properties than ``min``/``maxProperties``."""
    problems: list[Problem] = [
        (child(path, key), "required field is missing", True) for key in s.get("required") or [] if key not in value
    ]
    low, high = s.get("minProperties"), s.get("maxProperties")
    if is_int(low) and len(value) < low:
        problems.append((path, f"has {len(value)} properties, fewer than the minimum {int(low)}", False))
    if is_int(high) and len(value) > high:
        problems.append((path, f"has {len(value)} properties, more than the maximum {int(high)}", True))
    return problems
