"""docs/stack-file.md, made from the typed stack config (``StackConfig``) by ``make docs``; a test fails when the page
and the model differ. Every key a ``Pulumi.<stack>.yaml`` accepts, with its type, default, accepted values, an
example (from the repo's own stacks where one uses it) and the component that reads it; the text is the field's
docstring in the code, read from the source with ``ast`` (the models do not carry their docstrings at run time,
which would cost every import a read of the source)."""

from __future__ import annotations

import ast
import inspect
import json
import re
import textwrap
import types
import typing
from datetime import date
from functools import cache
from itertools import pairwise
from pathlib import Path
from typing import Any, Literal, NamedTuple

import yaml
from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from aks_gpu_inference.components.core.secrets import STACK_SECRETS

PROJECT = "aks-gpu-inference"
REPO = Path(__file__).resolve().parents[1]
STACK_PROGRAM = "the stack program (components/stack/program.py)"


class Key(NamedTuple):
    path: str
    """``gpu_pools[].vm_size``"""
    type: str
    default: str
    accepted: str
    example: str
    reader: str
    text: str


@cache
def _docstrings(cls: type) -> dict[str, str]:
    """Attribute docstrings of one class body: ``name: T = ...`` followed by a string."""
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):
        return {}
    body = ast.parse(source).body[0].body  # type: ignore[attr-defined]
    found = {}
    for statement, following in pairwise(body):
        if (
            isinstance(statement, ast.AnnAssign)
            and isinstance(statement.target, ast.Name)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            text = " ".join(following.value.value.split())
            found[statement.target.id] = re.sub(r"``([^`]+)``", r"`\1`", text)  # reST literals, as Markdown
    return found


def _owner(model: type[BaseModel], field: str) -> type:
    """The class in ``model``'s MRO whose body declares ``field`` (a stack ``ModelConfig`` adds ``pool`` to
    ``VllmServiceArgs``, which declares the rest)."""
    for cls in model.__mro__:
        if field in getattr(cls, "__annotations__", {}):
            return cls
    return model


def _reader(cls: type, inherited: str) -> str:
    """Which component reads a field declared in ``cls``: the component whose args class it is, the stack program for
    the stack's own config classes, else whoever reads the enclosing section."""
    from aks_gpu_inference import components

    name = cls.__name__
    if name.endswith("Args") and name[: -len("Args")] in components.__all__:
        return name[: -len("Args")]
    if cls.__module__.endswith("stack.config"):
        return STACK_PROGRAM
    return inherited


def type_members(annotation: Any) -> list[Any]:
    """The types a field's annotation admits: ``int | None`` -> ``int, NoneType`` (``Annotated`` unwrapped)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return type_members(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [m for a in typing.get_args(annotation) for m in type_members(a)]
    return [annotation]


def _type_name(annotation: Any) -> str:
    names = []
    for member in type_members(annotation):
        origin = typing.get_origin(member)
        if member is type(None):
            continue
        if origin is Literal:
            names.append("string" if all(isinstance(a, str) for a in typing.get_args(member)) else "value")
        elif origin in (list, tuple, set, frozenset):
            names.append(f"list of {_type_name(typing.get_args(member)[0])}")
        elif origin is dict:
            names.append(f"mapping of {_type_name(typing.get_args(member)[1])}")
        elif member is date:
            names.append("date (YYYY-MM-DD)")
        elif isinstance(member, type) and issubclass(member, BaseModel):
            names.append("mapping")
        else:
            names.append({str: "string", int: "whole number", float: "number", bool: "true/false"}.get(member, "value"))
    unique = list(dict.fromkeys(names))
    return " or ".join(unique) + (" (or null)" if type(None) in type_members(annotation) and unique else "")


def _accepted(field: Any) -> str:
    parts = []
    for member in type_members(field.annotation):
        if typing.get_origin(member) is Literal:
            parts.append(", ".join(f"`{v}`" for v in typing.get_args(member)))
        elif typing.get_origin(member) in (list, tuple) and typing.get_origin(typing.get_args(member)[0]) is Literal:
            parts.append("each of " + ", ".join(f"`{v}`" for v in typing.get_args(typing.get_args(member)[0])))
    bounds = {type(m).__name__: m for m in field.metadata}
    low = next((getattr(bounds[k], k.lower()) for k in ("Ge", "Gt") if k in bounds), None)
    high = next((getattr(bounds[k], k.lower()) for k in ("Le", "Lt") if k in bounds), None)
    if low is not None or high is not None:
        strict_low, strict_high = "Gt" in bounds, "Lt" in bounds
        left = f"{'>' if strict_low else '≥'} {low}" if low is not None else ""
        right = f"{'<' if strict_high else '≤'} {high}" if high is not None else ""
        parts.append(" and ".join(p for p in (left, right) if p))
    pattern = next((getattr(m, "pattern", None) for m in field.metadata if getattr(m, "pattern", None)), None)
    if pattern:
        parts.append(f"matches `{pattern}`")
    for member in type_members(field.annotation):
        if member is bool:
            parts.append("`true`, `false`")
    return "; ".join(parts)


def _shown(value: Any) -> str:
    text = json.dumps(value, separators=(", ", ": "), default=str)
    return f"`{text if len(text) <= 70 else text[:69] + '…'}`"


def _default(field: Any) -> str:
    if field.is_required():
        return "required"
    if field.default_factory is not None:
        value = field.default_factory()
        return "none" if value in ([], {}) else _shown(value.model_dump() if isinstance(value, BaseModel) else value)
    value = field.default
    if value is None:
        return "none"
    if value is PydanticUndefined:
        return ""
    return _shown(value.model_dump(mode="json") if isinstance(value, BaseModel) else value)


def _made_up_example(field: Any) -> str:
    """An example for a key no repo stack uses: another accepted value than the default, else the default."""
    default = None if field.is_required() else field.get_default(call_default_factory=True)
    for member in type_members(field.annotation):
        if typing.get_origin(member) is Literal:
            others = [v for v in typing.get_args(member) if v != default]
            return _shown(others[0] if others else default)
        if member is bool:
            return _shown(not default)
        if typing.get_origin(member) in (list, tuple) and typing.get_origin(typing.get_args(member)[0]) is Literal:
            return _shown(list(typing.get_args(typing.get_args(member)[0])[:1]))
    bounds = {type(m).__name__: m for m in field.metadata}
    if default in (None, [], {}) and "Ge" in bounds:
        return _shown(bounds["Ge"].ge)
    return _shown(default) if default not in (None, [], {}) else ""


@cache
def written_examples() -> dict[str, Any]:
    """Examples for the keys no repo stack uses (``stack_examples.yaml`` beside this module)."""
    return yaml.safe_load(Path(__file__).with_name("stack_examples.yaml").read_text())


@cache
def stack_examples() -> dict[str, Any]:
    """The first value each key path takes in the repo's own stacks (``Pulumi.<stack>.yaml``)."""
    found: dict[str, Any] = {}

    def walk(value: Any, path: str) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                where = f"{path}.{key}" if path else str(key)
                found.setdefault(where, item)
                walk(item, where)
        elif isinstance(value, list):
            for item in value:
                walk(item, f"{path}[]")

    for stack in sorted(REPO.glob("Pulumi.*.yaml")):
        config = (yaml.safe_load(stack.read_text()) or {}).get("config") or {}
        walk({k.removeprefix(f"{PROJECT}:"): v for k, v in config.items() if k.startswith(f"{PROJECT}:")}, "")
    return found


def _models_in(annotation: Any) -> list[tuple[type[BaseModel], str]]:
    """Nested models a field holds, with the suffix their keys get (``[]`` for a list's items, ``.<name>`` for a
    mapping's values)."""
    found = []
    for member in type_members(annotation):
        origin = typing.get_origin(member)
        if isinstance(member, type) and issubclass(member, BaseModel):
            found.append((member, ""))
        elif origin in (list, tuple):
            found += [(m, f"[]{suffix}") for m, suffix in _models_in(typing.get_args(member)[0])]
        elif origin is dict:
            found += [(m, f".<name>{suffix}") for m, suffix in _models_in(typing.get_args(member)[1])]
    return found


def field_at(path: str) -> Any:
    """The pydantic field of a key path as ``keys()`` spells it (``gpu_pools[].vm_size``)."""
    from aks_gpu_inference.components.stack.config import StackConfig

    model: type[BaseModel] | None = StackConfig
    field = None
    for part in path.replace("[]", "").replace(".<name>", "").split("."):
        if model is None or part not in model.model_fields:
            raise KeyError(f"{path}: no such key in the stack config")
        field = model.model_fields[part]
        model = section_model(field)
    return field


def section_model(field: Any) -> type[BaseModel] | None:
    """The model a field's value (or each of its items) is, for a section; None for a plain value."""
    nested = _models_in(field.annotation)
    return nested[0][0] if nested else None


def keys() -> list[Key]:
    """Every key of the stack file, depth first, in the order the models declare them."""
    from aks_gpu_inference.components.stack.config import StackConfig

    found: list[Key] = []

    def walk(model: type[BaseModel], prefix: str, reader: str, seen: tuple[type, ...]) -> None:
        for name, field in model.model_fields.items():
            path = f"{prefix}.{name}" if prefix else name
            owner = _owner(model, name)
            who = _reader(owner, reader)
            text = _docstrings(owner).get(name, "")
            example = stack_examples().get(path)
            nested = isinstance(example, dict) or (isinstance(example, list) and any(isinstance(e, dict) for e in example))
            if example is None or nested:  # a section's keys have their own examples
                written = written_examples().get(path)
                shown = (
                    _shown(written) if written is not None else "" if _models_in(field.annotation) else _made_up_example(field)
                )
            else:
                shown = _shown(example)
            found.append(Key(path, _type_name(field.annotation), _default(field), _accepted(field), shown, who, text))
            for nested, suffix in _models_in(field.annotation):
                if nested not in seen:  # a recursive model is described once
                    walk(nested, path + suffix, _reader(nested, who), (*seen, nested))

    walk(StackConfig, "", STACK_PROGRAM, (StackConfig,))
    return found


def _anchor(path: str) -> str:
    return re.sub(r"[^a-z0-9_-]", "", path.lower().replace(".", "-"))


def reference() -> str:
    """The generated body of docs/stack-file.md."""
    rows = keys()
    lines = [
        f"{len(rows)} keys. Each lives in the project's namespace: `{PROJECT}:<key>` at the top of `Pulumi.<stack>.yaml`'s "
        "`config:`, nested keys below it as YAML; `[]` marks a list's items, `<name>` a mapping's own keys. Unknown "
        "keys are refused, naming their path. The secrets are not here: "
        + ", ".join(f"`{s}`" for s in STACK_SECRETS)
        + " are set with `pulumi config set --secret <key>` and never written in plain text.",
        "",
    ]
    for top in dict.fromkeys(k.path.split(".")[0].split("[")[0] for k in rows):
        lines += [f"## {top}", ""]
        for key in (k for k in rows if re.match(rf"{re.escape(top)}(\W|$)", k.path)):
            lines.append(f'<a id="{_anchor(key.path)}"></a>**`{key.path}`** — {key.type}; default {key.default}')
            details = [key.text] if key.text else []
            if key.accepted:
                details.append(f"Accepted: {key.accepted}.")
            if key.example:
                details.append(f"Example: {key.example}.")
            details.append(f"Read by: {key.reader}.")
            lines += [": " + " ".join(details), ""]
    return "\n".join(lines)
