"""Errors for bad input, worded for the person who wrote the stack file or the component args.

Every message names the full key path (``models[0].tensor_parallel_size``), the bad value and what
would be accepted; values are shown cut to ``MAX_SHOWN`` characters, and nothing of the validation
library's own wording (``input_value=``, class names, URLs) reaches the reader. A secret is never shown
(``secrets.masked``): not under a key named like one, not when it is shaped like a credential, whatever key it
sits under. Nothing here imports Pulumi, so the command line can report these errors without loading the SDKs.
"""

from __future__ import annotations

import difflib
import json
import types
import typing
import unicodedata
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


_HOMOGLYPHS = dict(
    zip(
        "\u0430\u0435\u043e\u0440\u0441\u0443\u0445\u0455\u0456\u0458\u04bb\u0501\u051b\u051d\u04cf\u0410\u0412\u0415\u041a\u041c\u041d\u041e\u0420\u0421\u0422\u0423\u0425\u0405\u0406\u0408",
        "aeopcyxsijhdqwlABEKMHOPCTYXSIJ",
        strict=True,
    )
)  # Cyrillic
_HOMOGLYPHS |= dict(
    zip(
        "\u03bf\u03b1\u03bd\u03c1\u03b9\u03ba\u03c4\u03c5\u03c7\u0391\u0392\u0395\u0396\u0397\u0399\u039a\u039c\u039d\u039f\u03a1\u03a4\u03a5\u03a7",
        "oavpiktuxABEZHIKMNOPTYX",
        strict=True,
    )
)  # Greek
_HOMOGLYPHS |= dict(
    zip("\u2010\u2011\u2012\u2013\u2014\u2015\u2212\u201c\u201d\u201e\u2018\u2019\u201a", "-------\"\"\"'''", strict=True)
)  # dashes and quotes
"""Cyrillic and Greek letters that look like ASCII ones (a subset of Unicode's confusables.txt, UTS #39): the ones a
Cyrillic or Greek keyboard layout types in place of a Latin letter. Others are found by their decomposition."""


def _looks_like(char: str) -> str:
    """The ASCII character ``char`` is mistaken for, or ''."""
    if char in _HOMOGLYPHS:
        return _HOMOGLYPHS[char]
    base = "".join(
        c for c in unicodedata.normalize("NFKD", char) if not unicodedata.combining(c)
    )  # an accented e -> e, a fullwidth u -> u
    return base if base.isascii() and len(base) == 1 and base.isprintable() else ""


def lookalike_hint(text: Any, what: str = "it") -> str:
    """For text with characters outside ASCII, which are mostly look-alikes pasted in by accident (a Cyrillic a
    in a pool name): each one, its code point and name, and the ASCII character it looks like; else ''."""
    if not isinstance(text, str) or text.isascii():
        return ""
    points = []
    for index, char in enumerate(text):
        if char.isascii():
            continue
        like = _looks_like(char)
        looks = f", which looks like {like!r}" if like else ""
        points.append(f"{char!r} (U+{ord(char):04X} {unicodedata.name(char, 'unnamed')}{looks}) at position {index + 1}")
        if len(points) == 3:
            break
    return f"; {what} holds a character outside ASCII: {', '.join(points)}: type it in plain ASCII"


def number_for_text_hint(value: Any) -> str:
    """For a number where text is expected: quote it, and what YAML did to an unquoted version."""
    text = json.dumps(str(value))
    if isinstance(value, float):
        return (
            f"expected a string, and YAML read this unquoted value as a number: write it in quotes ({text}); "
            f"unquoted, YAML also drops trailing zeros (1.30 becomes 1.3), so quote it exactly as you mean it"
        )
    return f"expected a string, and YAML read this unquoted value as a number: write it in quotes ({text})"


def problem_line(path: str, value: Any, message: str) -> str:
    """One problem as ``path=value: message``, with the value masked if secret and its look-alikes pointed at."""
    return f"{path}={shown(value, path)}: {message}{lookalike_hint(value, 'the value')}{lookalike_hint(path, 'the key')}"


class FieldProblem(ValueError):
    """Raised inside a model validator to blame one field rather than the whole model."""

    def __init__(self, field: str, value: Any, problem: str):
        self.field = field
        self.value = value
        self.problem = problem
        super().__init__(problem_line(field, value, problem))


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
                problems.append(problem_line(field, problem.value, problem.problem))
            continue
        message = _PLAIN_MESSAGES.get(item["type"]) or item["msg"].removeprefix("Value error, ")
        if item["type"] == "extra_forbidden":
            accepted = _fields_at(model, loc[:-1]) if model else []
            message = unknown_key_hint(loc[-1] if loc else "", accepted, item["input"])
        elif item["type"] == "missing":
            problems.append(f"{path}: required key is missing")
            continue
        elif item["type"] == "string_type" and isinstance(item["input"], int | float) and not isinstance(item["input"], bool):
            message = number_for_text_hint(item["input"])
        problems.append(problem_line(path, item["input"], message))
    return problems
