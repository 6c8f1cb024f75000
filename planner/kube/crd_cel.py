"""CEL for ``x-kubernetes-validations`` rules: cel-python loaded on first use, programs compiled once per
rule text, and a value typed as the Kubernetes CEL environment types it for its schema (``number`` as double,
``int-or-string`` as either, ``format`` date-time/duration/byte as timestamp/duration/bytes, reserved or dashed
property names escaped as ``__namespace__``/``__dash__``), with the Kubernetes library functions cel-python
lacks (``cel_library``). Nothing here imports cel-python until a rule is evaluated.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from typing import Any

from aks_gpu_inference.planner.kube.json_values import is_int, is_number
from aks_gpu_inference.policies.cel import cel_environment

OLD_SELF = re.compile(r"\boldSelf\b")
"""A transition rule names ``oldSelf``: it does not run on create."""
_CEL_RESERVED = frozenset(
    [
        "true",
        "false",
        "null",
        "in",
        "as",
        "break",
        "const",
        "continue",
        "else",
        "for",
        "function",
        "if",
        "import",
        "let",
        "loop",
        "package",
        "namespace",
        "return",
        "var",
        "void",
        "while",
    ]
)
_CEL_NAME = re.compile(r"[a-zA-Z_.\-/][a-zA-Z0-9_.\-/]*")


def cel_field_name(name: str) -> str | None:
    """How a CEL rule refers to a property (Kubernetes' escaping); None when it cannot."""
    if name in _CEL_RESERVED:
        return f"__{name}__"
    if not _CEL_NAME.fullmatch(name):
        return None
    return name.replace("__", "__underscores__").replace(".", "__dot__").replace("-", "__dash__").replace("/", "__slash__")


class CelEngine:
    """cel-python, loaded on first use: one environment, compiled programs cached by rule text."""

    _instance: CelEngine | None = None

    def __init__(self) -> None:
        import celpy
        from celpy import celtypes

        from aks_gpu_inference.planner.kube.cel_library import FUNCTIONS

        self.celpy, self.ct = celpy, celtypes
        self.env = cel_environment()
        self.functions = FUNCTIONS
        self.programs: dict[str, tuple[Any, str | None]] = {}

    @classmethod
    def get(cls) -> CelEngine:
        if cls._instance is None:
            cls._instance = cls()
        return cls._instance

    def program(self, rule: str) -> tuple[Any, str | None]:
        cached = self.programs.get(rule)
        if cached is None:
            try:
                cached = (self.env.program(self.env.compile(rule), functions=self.functions), None)
            except Exception as err:  # CELParseError and anything the parser raises
                first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
                cached = (None, f"does not compile in cel-python: {first}")
            self.programs[rule] = cached
        return cached

    def evaluate(self, program: Any, activation: dict[str, Any]) -> tuple[str, Any]:
        """("value", result), ("error", why) for what the API server also rejects, or ("unsupported", why)."""
        try:
            result = program.evaluate(activation)
        except self.celpy.CELEvalError as err:
            result = err
        except Exception as err:
            return "unsupported", f"cel-python raised {type(err).__name__}: {str(err)[:160]}"
        if isinstance(result, self.celpy.CELEvalError):
            messages = _error_messages(result)
            if missing := [m for m in messages if re.match(r"undeclared reference to '([^']+)'", m)]:
                name = re.match(r"undeclared reference to '([^']+)'", missing[0]).group(1)
                return "unsupported", f"uses {name!r}, which cel-python does not provide"
            keys = [found.group(1) for m in messages if (found := re.match(r"no such (?:member|key)[^']*'([^']+)'", m))]
            if keys and len(keys) == len(messages):
                # Every failing branch read an absent field: cel-go fails the same way ("no such key").
                return "error", f"no such key: {', '.join(dict.fromkeys(keys))}"
            return "unsupported", f"cel-python could not evaluate it: {messages[0][:160] if messages else result}"
        return "value", result

    def to_cel(self, value: Any, s: Mapping[str, Any] | None, top: bool = False) -> Any:
        """``value`` typed as the Kubernetes CEL environment types it for schema ``s``."""
        ct = self.ct
        if value is None:
            return None
        if s is None:
            return self.celpy.json_to_cel(value)
        if isinstance(value, bool):
            return ct.BoolType(value)
        if is_number(value):
            return self._number(value, s)
        if isinstance(value, str):
            return self._string(value, s)
        if isinstance(value, list):
            items = s.get("items") if isinstance(s.get("items"), Mapping) else None
            return ct.ListType([self.to_cel(v, items) for v in value])
        if isinstance(value, dict):
            return self._object(value, s, top)
        return self.celpy.json_to_cel(value)

    def _number(self, value: float, s: Mapping[str, Any]) -> Any:
        if s.get("type") == "number":
            return self.ct.DoubleType(float(value))
        if is_int(value) and (s.get("type") == "integer" or s.get("x-kubernetes-int-or-string")):
            return self.ct.IntType(int(value))
        return self.celpy.json_to_cel(value)

    def _string(self, value: str, s: Mapping[str, Any]) -> Any:
        ct = self.ct
        fmt = s.get("format") if s.get("type") == "string" else None
        try:
            if fmt in ("date-time", "datetime", "date"):
                return ct.TimestampType(value if fmt != "date" else f"{value}T00:00:00Z")
            if fmt == "duration":
                return ct.DurationType(value)
            if fmt == "byte":
                return ct.BytesType(base64.b64decode(value, validate=True))
        except Exception:
            pass
        return ct.StringType(value)

    def _object(self, value: dict, s: Mapping[str, Any], top: bool) -> Any:
        ct = self.ct
        props = s.get("properties") or {}
        extra = s.get("additionalProperties")
        resource = top or s.get("x-kubernetes-embedded-resource") is True
        out = {}
        for key, v in value.items():
            sub = props.get(key)
            if resource and key == "metadata" and isinstance(v, dict):
                # Only name and generateName of the metadata are visible to rules.
                meta = {k: v[k] for k in ("name", "generateName") if isinstance(v.get(k), str)}
                out[ct.StringType(key)] = self.celpy.json_to_cel(meta)
            elif sub is not None:
                name = cel_field_name(key)
                if name is not None:
                    out[ct.StringType(name)] = self.to_cel(v, sub)
            elif resource and key in ("apiVersion", "kind"):
                out[ct.StringType(key)] = self.to_cel(v, None)
            elif isinstance(extra, Mapping):
                out[ct.StringType(key)] = self.to_cel(v, extra)
            elif extra is True:
                out[ct.StringType(key)] = self.celpy.json_to_cel(v)
            # else: a field kept by x-kubernetes-preserve-unknown-fields, not visible to rules
        return ct.MapType(out)


_NESTED_ERROR = re.compile(r"""CELEvalError\(\*\((["'])(.*?)\1, <class""")


def _error_messages(err: BaseException) -> list[str]:
    """The leaf messages of a cel-python error. When both operands of ``||``/``&&`` fail, cel-python reports
    "no matching overload ... applied to (CELEvalError, CELEvalError)" and keeps the operands' errors as text."""
    message = str(err.args[0]) if err.args else str(err)
    if "CELEvalError" not in message:
        return [message]
    text = " ".join(str(a) for a in err.args[1:]).replace("\\", "")
    nested = [m for _, m in _NESTED_ERROR.findall(text)]
    leaves = [m for m in nested if "CELEvalError" not in m]
    return leaves or [message]
