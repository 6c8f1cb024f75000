"""Errors for bad input, worded for the person who wrote the stack file or the component args.

Every message names the key path, the bad value and what would be accepted. Nothing here imports
Pulumi, so the command line can report these errors without loading the SDKs.
"""

from __future__ import annotations

from typing import Any


class FieldProblem(ValueError):
    """Raised inside a model validator to blame one field rather than the whole model."""

    def __init__(self, field: str, value: Any, problem: str):
        self.field = field
        self.value = value
        super().__init__(f"{field}={value!r}: {problem}")


class ConfigError(ValueError):
    """Input that cannot be built; ``problems`` holds one line per bad field."""

    def __init__(self, context: str, problems: list[str]):
        self.context = context
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"{context}:\n{lines}")


def _path(loc: tuple) -> str:
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path


def validation_problems(error: Any, prefix: str = "") -> list[str]:
    """Turn a pydantic ValidationError into ``key.path=value: what is wrong`` lines."""
    problems = []
    for item in error.errors(include_url=False):
        loc = tuple(p for p in item["loc"] if not (isinstance(p, str) and p.startswith("function-")))
        path = _path(((prefix,) if prefix else ()) + loc)
        cause = (item.get("ctx") or {}).get("error")
        if isinstance(cause, FieldProblem):
            field = f"{path}.{cause.field}" if path else cause.field
            problems.append(f"{field}={cause.value!r}: {str(cause).split(': ', 1)[1]}")
            continue
        message = item["msg"].removeprefix("Value error, ")
        if item["type"] == "extra_forbidden":
            message = "unknown key (check the spelling; see the README for accepted keys)"
        elif item["type"] == "missing":
            problems.append(f"{path}: required key is missing")
            continue
        problems.append(f"{path}={item['input']!r}: {message}")
    return problems
