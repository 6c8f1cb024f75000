"""JSON values as the API server's schema validation sees them: types, equality (1 == 1.0, True != 1),
how a value is shown in a message, and the JSON paths problems are reported at."""

from __future__ import annotations

import json
import math
from typing import Any

Problem = tuple[str, str, bool]
"""(JSON path, message, whether it blocks the CEL rules of the value it is in)."""


def child(path: str, key: str) -> str:
    """The JSON path of ``key`` under ``path``."""
    return f"{path}.{key}" if path else key


def is_int(v: Any) -> bool:
    """An integer as JSON schema counts them: 3 and 3.0, not True."""
    if isinstance(v, bool):
        return False
    return isinstance(v, int) or (isinstance(v, float) and math.isfinite(v) and v.is_integer())


def is_number(v: Any) -> bool:
    """An int or float, not a bool."""
    return isinstance(v, (int, float)) and not isinstance(v, bool)


TYPE_CHECKS = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": is_int,
    "number": is_number,
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}
"""JSON schema ``type`` -> whether a value is of it."""


def json_type(v: Any) -> str:
    """The JSON type name of a parsed value (a Python type name for anything else)."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    return type(v).__name__


def show(v: Any, limit: int = 80) -> str:
    """``v`` as JSON for a message, cut to ``limit`` characters."""
    try:
        text = json.dumps(v, sort_keys=True, default=str)
    except (TypeError, ValueError):
        text = repr(v)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def canonical(v: Any) -> Any:
    """A hashable form in which JSON-equal values are equal (1 == 1.0, but True != 1)."""
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return (type(v).__name__, v)
    if is_number(v):
        return ("number", float(v))
    if isinstance(v, list):
        return ("array", tuple(canonical(x) for x in v))
    if isinstance(v, dict):
        return ("object", tuple(sorted((k, canonical(x)) for k, x in v.items())))
    return ("other", repr(v))


def json_equal(a: Any, b: Any) -> bool:
    """Equality as JSON sees it (``canonical``)."""
    return canonical(a) == canonical(b)
