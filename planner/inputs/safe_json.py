"""Bounded loading of JSON someone else wrote (``aks-gpu fit`` model facts): the limits of
``planner.inputs.safe_yaml`` for JSON, whose parser is C and cheap but accepts ``NaN``, ``1e999``, a
10,000-digit integer and nesting until the interpreter's recursion limit."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

from aks_gpu_inference.planner.inputs.bounded import MAX_BYTES, MAX_DEPTH, MAX_INT_DIGITS, InputError, clip, read_text


def load_json(
    text_or_path: str | Path,
    *,
    source: str | None = None,
    max_bytes: int = MAX_BYTES,
    max_depth: int = MAX_DEPTH,
    max_int_digits: int = MAX_INT_DIGITS,
) -> object:
    """A JSON text or file with the same bounds: size, UTF-8, depth, integer length, finite numbers
    (``NaN``, ``Infinity`` and ``1e999`` refused) and no duplicate keys."""
    text, source = read_text(text_or_path, source, max_bytes)
    hooks = _Hooks(text, source, max_int_digits)
    try:
        value = json.loads(
            text,
            parse_int=hooks.parse_int,
            parse_float=hooks.parse_float,
            parse_constant=hooks.parse_constant,
            object_pairs_hook=hooks.pairs,
        )
    except json.JSONDecodeError as err:
        raise InputError(f"{source} is not valid JSON", [f"{source}:{err.lineno}:{err.colno}: {err.msg}"], err.lineno) from None
    except RecursionError:
        raise InputError(
            f"{source} nests too deeply", [f"{source}: more than {max_depth} levels of objects and arrays"]
        ) from None
    _check_depth(value, source, max_depth)
    return value


class _Hooks:
    """``json.loads`` hooks that refuse, with the line, what the bounds do not accept."""

    def __init__(self, text: str, source: str, max_int_digits: int):
        self.text, self.source, self.max_int_digits = text, source, max_int_digits

    def refuse(self, context: str, literal: str, detail: str, occurrence: int = 0) -> None:
        """Raise, on the line of the ``occurrence``-th appearance of ``literal`` (the parser gives no position)."""
        matches = list(re.finditer(rf"(?<![\w.]){re.escape(literal)}(?![\w.])", self.text))
        match = matches[min(occurrence, len(matches) - 1)] if matches else None
        line = self.text.count("\n", 0, match.start()) + 1 if match else 0
        source = self.source
        raise InputError(f"{source} {context}", [f"{source}:{line}: {detail}" if line else f"{source}: {detail}"], line or None)

    def parse_int(self, literal: str) -> int:
        if len(literal.lstrip("-")) > self.max_int_digits:
            self.refuse(
                "has an integer that is too large",
                literal,
                f"{clip(literal)} has {len(literal.lstrip('-'))} digits; at most {self.max_int_digits} are accepted",
            )
        return int(literal)

    def parse_float(self, literal: str) -> float:
        value = float(literal)
        if not math.isfinite(value):
            self.refuse(
                "has a number that is not finite", literal, f"{clip(literal)} overflows to {value}; write a finite number"
            )
        return value

    def parse_constant(self, literal: str) -> float:
        self.refuse("has a number that is not finite", literal, f"{literal} is not a JSON number; write a finite number")
        raise AssertionError  # refuse raised

    def pairs(self, items: list[tuple[str, object]]) -> dict:
        result: dict = {}
        for key, value in items:
            if key in result:
                self.refuse("has duplicate keys", json.dumps(key), f"duplicate key {clip(key)!r}", occurrence=1)
            result[key] = value
        return result


def _check_depth(value: object, source: str, max_depth: int) -> None:
    """Refuse objects and arrays nested deeper than ``max_depth``."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > max_depth:
            raise InputError(f"{source} nests too deeply", [f"{source}: more than {max_depth} levels of objects and arrays"])
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        stack.extend((child, depth + 1) for child in children)
