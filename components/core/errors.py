"""Errors for bad input, worded for the person who wrote the stack file or the component args.

Every message names the full key path (``models[0].tensor_parallel_size``), the bad value and what
would be accepted; values are shown cut to ``MAX_SHOWN`` characters, and nothing of the validation
library's own wording (``input_value=``, class names, URLs) reaches the reader. A secret is never shown
(``secrets.masked``): not under a key named like one, not when it is shaped like a credential, whatever key it
sits under. Nothing here imports Pulumi, so the command line can report these errors without loading the SDKs.
"""

from __future__ import annotations

import difflib
import types
import typing
from typing import Any

from .secrets import STACK_SECRETS, is_secret_key, looks_secret, masked, redact

REFERENCE = "docs/stack-file.md"
"""The generated stack-file reference (``make docs``), which refusals point at."""

MAX_SHOWN = 80
"""Longest value a message shows; longer ones are cut and end in ``…``."""


def shown(value: Any, key: Any = None) -> str:
    """``repr(value)`` for a message, cut to ``MAX_SHOWN`` characters; secrets in it masked (all of it when
    ``key``, the key or key path it stands under, is named like a secret)."""
    last = str(key).rsplit(".", 1)[-1].split("[", 1)[0] if key is not None else None
    value = masked(value, last)
    if isinstance(value, str) and value.startswith("<secret"):
        return value
    text = repr(value)
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 1] + "…"


class FieldProblem(ValueError):
    """Raised inside a model validator to blame one field rather than the whole model."""

    def __init__(self, field: str, value: Any, problem: str):
        self.field = field
        self.value = value
        self.problem = problem
        super().__init__(f"{field}={shown(value, field)}: {problem}")


class FieldProblems(ValueError):
    """Several ``FieldProblem``s of one validator, reported point by point."""

    def __init__(self, problems: list[FieldProblem]):
        self.problems = problems
        super().__init__("; ".join(str(p) for p in problems))


class ConfigError(ValueError):
    """Input that cannot be built; ``problems`` holds one line per bad field."""

    def __init__(self, context: str, problems: list[str]):
        self.context = context
        self.problems = problems
        # A problem that is itself a ConfigError's text keeps its own points, indented under it. Each line is
        # redacted once more: a credential that reached a message some other way is still not printed.
        self.problems = problems = [redact(p) for p in problems]
        lines = "\n".join("  - " + p.replace("\n", "\n    ") for p in problems)
        super().__init__(f"{context}:\n{lines}")


class StackFileConfigError(ConfigError):
    """The stack file itself is at fault (not a component's arguments): reported as the file's error."""


def _path(loc: tuple) -> str:
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path


_PLAIN_MESSAGES = {
    "model_type": "expected a mapping of keys to values",
    "model_attributes_type": "expected a mapping of keys to values",
    "dict_type": "expected a mapping of keys to values",
    "list_type": "expected a list",
    "string_type": "expected a string",
    "int_type": "expected a whole number",
    "int_parsing": "expected a whole number",
    "float_type": "expected a number",
    "float_parsing": "expected a number",
    "bool_type": "expected true or false",
    "bool_parsing": "expected true or false",
}
"""Validation error types whose library wording names Python types; these say what to write instead."""


def _members(annotation: Any) -> list[Any]:
    """The types an annotation allows: unions, ``Optional`` and ``Annotated`` unwrapped."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _members(typing.get_args(annotation)[0])
    if origin is typing.Union or origin is types.UnionType:
        return [m for arg in typing.get_args(annotation) for m in _members(arg)]
    return [annotation]


def _fields_at(model: Any, loc: tuple) -> list[str]:
    """The keys accepted where ``loc`` points inside ``model`` (a pydantic model class), or none."""
    current: list[Any] = [model]
    for part in loc:
        following = []
        for member in (m for c in current for m in _members(c)):
            origin = typing.get_origin(member)
            fields = getattr(member, "model_fields", None)
            if isinstance(part, str) and isinstance(fields, dict) and part in fields:
                following.append(fields[part].annotation)
            elif isinstance(part, int) and origin in (list, tuple, set, frozenset) and typing.get_args(member):
                following.append(typing.get_args(member)[0])
            elif origin is dict and len(typing.get_args(member)) == 2:
                following.append(typing.get_args(member)[1])
        current = following
    return [name for c in current for m in _members(c) for name in (getattr(m, "model_fields", None) or {})]


def unknown_key_hint(key: Any, accepted: list[str], value: Any = None) -> str:
    """``did you mean ...?`` for a misspelt key, else where the accepted keys are listed; for a key that
    holds a secret, where the stack's secrets go."""
    if is_secret_key(key, value) or looks_secret(value):
        stack_secret = difflib.get_close_matches(str(key).lower(), STACK_SECRETS, n=1, cutoff=0.6)
        where = (
            f"the stack secret {stack_secret[0]!r} is set on its own, encrypted: pulumi config set --secret {stack_secret[0]} ..."
            if stack_secret
            else "secrets never go in the stack file's plain keys: the stack's own are "
            + ", ".join(STACK_SECRETS)
            + " (pulumi config set --secret ...)"
        )
        return (
            f"unknown key, and its value looks like a secret (not shown here): {where}; a secret that was committed "
            "in plain text is readable in the file's history, so rotate it"
        )
    close = difflib.get_close_matches(str(key), accepted, n=2, cutoff=0.7) if accepted else []
    if close:
        return f"unknown key; did you mean {' or '.join(repr(c) for c in close)}? ({REFERENCE} lists every key)"
    if accepted:
        return f"unknown key; accepted here: {', '.join(accepted)} ({REFERENCE} lists every key)"
    return f"unknown key ({REFERENCE} lists every key)"


def validation_problems(error: Any, prefix: str = "", model: Any = None) -> list[str]:
    """Turn a pydantic ValidationError into ``key.path=value: what is wrong`` lines.

    ``model`` (the validated class) lets an unknown key be answered with the closest accepted one.
    """
    problems = []
    for item in error.errors(include_url=False):
        loc = tuple(p for p in item["loc"] if not (isinstance(p, str) and p.startswith("function-")))
        path = _path(((prefix,) if prefix else ()) + loc)
        cause = (item.get("ctx") or {}).get("error")
        causes = cause.problems if isinstance(cause, FieldProblems) else [cause] if isinstance(cause, FieldProblem) else []
        if causes:
            for problem in causes:
                field = f"{path}.{problem.field}" if path else problem.field
                problems.append(f"{field}={shown(problem.value, field)}: {problem.problem}")
            continue
        message = _PLAIN_MESSAGES.get(item["type"]) or item["msg"].removeprefix("Value error, ")
        if item["type"] == "extra_forbidden":
            accepted = _fields_at(model, loc[:-1]) if model else []
            message = unknown_key_hint(loc[-1] if loc else "", accepted, item["input"])
        elif item["type"] == "missing":
            problems.append(f"{path}: required key is missing")
            continue
        problems.append(f"{path}={shown(item['input'], path)}: {message}")
    return problems
