"""What ``test_key_effects.py`` needs to change one key of a repo stack and see what the change does: key paths over a
stack file's config, the repo stack a key is changed in, other values of the key's type, and the run under the mocks.

A key path is the reference's (``components/stack/reference.py`` ``keys()``): ``models[].autoscaling.min_replicas``,
where ``[]`` stands for a list's first entry."""

from __future__ import annotations

import contextlib
import copy
import datetime
import functools
import gc
import hashlib
import itertools
import json
import re
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal
from unittest import mock

from pulumi.runtime import rpc
from pydantic import TypeAdapter, ValidationError

from aks_gpu_inference.components.core.errors import ConfigError
from aks_gpu_inference.components.stack import reference as stack_doc
from aks_gpu_inference.components.stack.config import parse_stack_config
from aks_gpu_inference.planner.engine import program
from aks_gpu_inference.planner.inputs.stackfile import add_secret_placeholders
from tests.conftest import PROJECT, REPO, STACKS, engine_config, stack_config

ABSENT = object()
"""A key the stack file leaves out."""

MAX_TRIES = 5
"""Other values tried per key; the first that shows an effect ends the test."""


# --- key paths over a stack file's config -------------------------------------------------------------------------


def parts(path: str) -> list[str]:
    """``models[].autoscaling.min_replicas`` -> ``models, [], autoscaling, min_replicas``."""
    if ".<name>" in path:
        raise NotImplementedError(f"{path}: a key under a mapping of sections: teach tests/key_effects.py which entry to change")
    return [p for p in re.split(r"\.|(\[\])", path) if p]


def get(config: dict, path: str) -> Any:
    """The value at ``path`` (None for null), ABSENT where the stack file leaves it or a section above it out."""
    node: Any = config
    for part in parts(path):
        if part == "[]":
            node = node[0] if isinstance(node, list) and node else ABSENT
        else:
            node = node.get(part, ABSENT) if isinstance(node, dict) else ABSENT
        if node is ABSENT:
            return ABSENT
    return node


def put(config: dict, path: str, value: Any) -> None:
    """Set ``path`` (ABSENT removes it); sections on the way that are left out are written as ``{}``."""
    keys, node = parts(path), config
    for part, following in itertools.pairwise(keys):
        if part == "[]":
            node = node[0]
        else:
            if node.get(part) is None:
                node[part] = [] if following == "[]" else {}
            node = node[part]
    if value is ABSENT:
        node.pop(keys[-1], None)
    else:
        node[keys[-1]] = value


def project_keys(config: dict) -> dict:
    """The project's keys of a stack file's ``config:``, without their namespace."""
    return {k.removeprefix(f"{PROJECT}:"): v for k, v in config.items() if k.startswith(f"{PROJECT}:")}


@functools.cache
def _provider_keys(stack: str) -> dict:
    """A repo stack's keys of other namespaces (``azure-native:location``), which no change touches."""
    return {k: v for k, v in stack_config(stack).items() if not k.startswith(f"{PROJECT}:")}


@functools.cache
def _repo_stack(stack: str) -> dict:
    return project_keys(stack_config(stack))


def repo_stack(stack: str) -> dict:
    """A repo stack's project keys, to change."""
    return copy.deepcopy(_repo_stack(stack))


def is_list(field: Any) -> bool:
    return any(typing.get_origin(m) in (list, tuple) for m in stack_doc.type_members(field.annotation))


def optional_section(field: Any) -> bool:
    """A section the stack file may leave out: a model that defaults to none, a list of models that defaults empty, or
    a section on by default that null turns off (``cluster.platform_pool``)."""
    if stack_doc.section_model(field) is None or field.is_required():
        return False
    return not on_by_default(field) or type(None) in stack_doc.type_members(field.annotation)


def on_by_default(field: Any) -> bool:
    return field.get_default(call_default_factory=True) not in (None, [])


def in_scope(path: str) -> bool:
    """Every key that holds a value, and every section that may be left out."""
    field = stack_doc.field_at(path)
    return stack_doc.section_model(field) is None or optional_section(field)


# --- what a stack does ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Refusal:
    problems: tuple[str, ...]

    def names(self, path: str, below: bool = True) -> bool:
        """A problem at ``path`` (any list index), or whose text names ``path`` as a dotted path
        (``set gpu_pools[].rdma: true``) or with the project's namespace (``aks-gpu-inference:location``): a bare word
        is prose, not a key; with ``below``, also a problem at or naming a key below it (``not in rdma.pools``)."""
        start = rf"(?<![\w.\[]){re.escape(path)}"
        for problem in self.problems:
            line = re.sub(r"\[\d+\]", "[]", problem)
            where = [p.strip() for p in line.split("=", 1)[0].split("+")]
            if path in where or (below and any(p.startswith((f"{path}.", f"{path}[")) for p in where)):
                return True
            if below and re.search(rf"{start}(\.|\[\]\.?)\w", line):
                return True
            if re.search(r"[.\[]", path) and re.search(rf"{start}(?![\w.\[])", line):
                return True
            if re.search(rf"{PROJECT}:{re.escape(path)}(?![\w.\[])", line):  # the key as the engine spells it
                return True
        return False


@dataclass(frozen=True)
class Plan:
    """What a stack registers (by URN), exports and warns, as comparable text."""

    resources: dict[str, str]
    outputs: str
    warnings: tuple[str, ...]

    def difference(self, other: Plan) -> str:
        """What ``other`` changes, in a few words; '' for nothing."""
        added, removed = other.resources.keys() - self.resources.keys(), self.resources.keys() - other.resources.keys()
        edited = [urn for urn in self.resources.keys() & other.resources.keys() if self.resources[urn] != other.resources[urn]]
        said = [f"{len(found)} {what}" for found, what in ((added, "added"), (removed, "removed"), (edited, "changed")) if found]
        said += ["the outputs"] if self.outputs != other.outputs else []
        said += ["the warnings"] if self.warnings != other.warnings else []
        return ", ".join(said)


def _digested(value: Any) -> Any:
    """``program.mask_secrets``, but a secret becomes a digest of itself: the tests' secrets are placeholders, and a key
    whose only effect is inside a secret (``cluster.kubelogin_mode`` shapes the kubeconfig) still shows."""
    if rpc.is_rpc_secret(value):
        text = json.dumps(value.get("value"), sort_keys=True, default=str)
        return f"<secret {hashlib.sha256(text.encode()).hexdigest()[:12]}>"
    if isinstance(value, dict):
        return {k: _digested(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_digested(v) for v in value]
    return _masked(value)


_masked = program.mask_secrets


@contextlib.contextmanager
def _quick() -> Iterator[None]:
    """A run at a fraction of the time: the collector leaves alone what was alive before it (the SDK's modules;
    ``aks-gpu plan`` runs without it, ``planner/cli.py``). The engine itself skips the SDK's source positions."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def outcome(stack: str, project: dict, unset: tuple[str, ...] = ()) -> Plan | Refusal:
    """Run the stack program on repo stack ``stack``'s file with ``project`` as its project keys, the secrets the
    file lacks filled as the planner fills them (``unset`` ones left out)."""
    config = engine_config({**_provider_keys(stack), **{f"{PROJECT}:{k}": v for k, v in project.items()}})
    secret_keys: list[str] = []
    add_secret_placeholders(PROJECT, config, secret_keys)
    for key in unset:
        config.pop(f"{PROJECT}:{key}")
        secret_keys.remove(f"{PROJECT}:{key}")
    try:
        with _quick(), mock.patch.object(program, "mask_secrets", _digested):
            run = program.run_program(REPO, PROJECT, stack, config, secret_keys)
    except ConfigError as err:
        return Refusal(tuple(err.problems))
    resources = {
        r.urn: json.dumps(
            [r.parent, r.custom, r.inputs, {k: sorted(v) if k == "dependsOn" else v for k, v in r.options.items()}],
            sort_keys=True,
            default=str,
        )
        for r in run.resources
    }
    return Plan(resources, json.dumps(_without_echoes(run.outputs), sort_keys=True, default=str), run.warnings)


def _without_echoes(outputs: dict) -> dict:
    """The outputs but each model's facts, which ``model_placements`` repeats verbatim for ``aks-gpu alternatives`` to
    fit again: a fact's effect is the fit (``model_fits``, the engine's arguments, a refusal), and through its echo
    every fact, even one nothing reads, would pass."""
    placements = {
        name: {k: v for k, v in placement.items() if k != "facts"}
        for name, placement in outputs.get("model_placements", {}).items()
    }
    return {**outputs, "model_placements": placements} if placements else outputs


# --- the stack a key is changed in ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """An explicit row of ``test_key_effects.py``'s tables, for what the generic derivation cannot do."""

    why: str
    values: list[Any] = field(default_factory=list)
    """Other values to try (``OTHER_VALUES``, or a ``BASES`` row's own)."""
    make: Callable[[dict], Any] | None = None
    """The section to add, from the stack's project keys (``SECTIONS``)."""
    stack: str = ""
    edit: Callable[[dict], None] | None = None
    """The repo stack to change the key in, and how to change it first (``BASES``)."""
    limit: bool = False
    """The key only bounds another: its effect is a refusal that quotes the value, whoever it blames."""
    unset: tuple[str, ...] = ()
    """Secrets the base leaves unset (the planner fills every other with a placeholder)."""


@dataclass(frozen=True)
class Tables:
    other_values: dict[str, Row]
    sections: dict[str, Row]
    bases: dict[str, Row]


def _cost(stack: str) -> tuple:
    """Cheaper stacks first: the gateway and Dynamo register the most resources, then the longer file."""
    config = _repo_stack(stack)
    return ("gateway" in config, "dynamo" in config, len(json.dumps(config, default=str)))


ORDER = sorted(STACKS, key=_cost)


def example(path: str) -> Any:
    """A value for ``path`` from the repo's stacks, else from ``components/stack/reference_examples.yaml``; ABSENT for none."""
    for stack in ORDER:
        value = get(_repo_stack(stack), path)
        if value is not ABSENT and value is not None:
            return copy.deepcopy(value)
    return copy.deepcopy(stack_doc.written_examples().get(path, ABSENT))


def section(path: str, project: dict, tables: Tables) -> Any:
    """A section for ``path`` (a list of one entry for a list): its ``SECTIONS`` row, else its required keys' examples."""
    if path in tables.sections:
        return tables.sections[path].make(project)
    field = stack_doc.field_at(path)
    item = f"{path}[]" if is_list(field) else path
    entry = {}
    for name, child in stack_doc.section_model(field).model_fields.items():
        if child.is_required():
            value = section(f"{item}.{name}", project, tables) if stack_doc.section_model(child) else example(f"{item}.{name}")
            if value is ABSENT:
                raise LookupError(
                    f"{item}.{name}: no example to build {path} from: add one to components/stack/reference_examples.yaml"
                )
            entry[name] = value
    return [entry] if is_list(field) else entry


def missing(project: dict, path: str) -> str | None:
    """The outermost section on the way to ``path`` that ``project`` lacks (one left out that defaults to a section
    does not count, one set to null does); None when ``path`` has a place."""
    node, walked = project, ""
    for part in parts(path)[:-1]:
        walked = walked + part if part == "[]" or not walked else f"{walked}.{part}"
        if part == "[]":
            node = node[0] if isinstance(node, list) and node else None
            if node is None:
                return walked.removesuffix("[]")
            continue
        field = stack_doc.field_at(walked)
        if node is ABSENT or part not in node:
            if field.is_required() or field.get_default(call_default_factory=True) in (None, []):
                return walked
            node = ABSENT
        elif node[part] is None:
            return walked
        else:
            node = node[part]
    return None


@dataclass(frozen=True)
class Base:
    """A repo stack, with the sections added that the key needs a place in, or edited by a ``BASES`` row."""

    stack: str
    added: tuple[str, ...] = ()
    edited: str = ""

    def project(self, tables: Tables) -> dict:
        project = repo_stack(self.stack)
        if self.edited and (edit := tables.bases[self.edited].edit) is not None:
            edit(project)
        for path in self.added:
            put(project, path, section(path, project, tables))
        return project

    def unset(self, tables: Tables) -> tuple[str, ...]:
        return tables.bases[self.edited].unset if self.edited else ()

    def __str__(self) -> str:
        return self.stack + "".join(f" + {p}" for p in self.added) + (f" (edited for {self.edited})" if self.edited else "")


def base_row(path: str, tables: Tables) -> str | None:
    """The ``BASES`` row of ``path``: its own, else one ending in ``.`` for the section above it."""
    if path in tables.bases:
        return path
    return next((key for key in tables.bases if key.endswith(".") and path.startswith(key)), None)


def bases(path: str, tables: Tables) -> typing.Iterator[Base]:
    """Where to change ``path``, best first: its ``BASES`` row; else the stacks that set it, then those where it has a
    place, then those where the sections it needs can be added (cheaper stacks first within each)."""
    if (row := base_row(path, tables)) is not None:
        yield Base(tables.bases[row].stack, edited=row)
        return
    setting = [s for s in ORDER if get(_repo_stack(s), path) not in (ABSENT, None)]
    yield from (Base(s) for s in setting)
    yield from (Base(s) for s in ORDER if s not in setting and missing(_repo_stack(s), path) is None)
    for stack in ORDER:
        added: tuple[str, ...] = ()
        try:
            while (gap := missing(Base(stack, added).project(tables), path)) is not None and gap not in added:
                added = (*added, gap)
            if added and missing(Base(stack, added).project(tables), path) is None:
                yield Base(stack, added)
        except LookupError:  # a section this stack cannot hold (no example, or nothing for it to refer to)
            continue


# --- other values of a key ------------------------------------------------------------------------------------------


def current(project: dict, path: str) -> Any:
    """The value the typed config settles on for ``path`` (its default where the file leaves it out), as JSON."""
    node: Any = parse_stack_config(copy.deepcopy(project))
    for part in parts(path):
        node = node[0] if part == "[]" else getattr(node, part)
    return TypeAdapter(Any).dump_python(node, mode="json")


def _bounds(field: Any) -> tuple[float | None, float | None]:
    low = high = None
    for rule in field.metadata:
        if getattr(rule, "ge", None) is not None:
            low = rule.ge
        if getattr(rule, "gt", None) is not None:
            low = rule.gt + (1 if isinstance(rule.gt, int) else 1e-3)
        if getattr(rule, "le", None) is not None:
            high = rule.le
        if getattr(rule, "lt", None) is not None:
            high = rule.lt - (1 if isinstance(rule.lt, int) else 1e-3)
    return low, high


def next_text(text: str) -> list[str]:
    """Text like ``text``: its last digit moved on (``v1.8.2`` -> ``v1.8.3``, ``50Mi`` -> ``51Mi``), or a suffix."""
    digits = list(re.finditer(r"\d", text))
    if digits:
        at = digits[-1].start()
        return [text[:at] + str((int(text[at]) + 1) % 10) + text[at + 1 :]]
    return [f"{text}-b", f"{text}b"] if text else ["b"]


def _numbers(member: type, now: Any, low: float | None, high: float | None) -> list[Any]:
    """Numbers near ``now`` first, then far (a limit shows only past it), within the key's bounds."""
    start = now if isinstance(now, int | float) and not isinstance(now, bool) else (low if low is not None else 1)
    if member is int:
        near = [start + 1, start - 1, start * 2, start // 2, start * 100, low, high]
    else:
        near = [round(start * 0.9, 4), round(start * 1.1, 4), start + 1, round(start / 100, 4), start * 100, low, high]
    return [member(n) for n in near if n is not None and (low is None or n >= low) and (high is None or n <= high)]


def _lists(item: Any, now: Any, seed: Any) -> list[Any]:
    items = list(now or [])
    choices = list(typing.get_args(item)) if typing.get_origin(item) is Literal else []
    found = [items[:-1]] if items else []
    found += [[*items, m] for m in choices if m not in items]
    if not choices and item is str:
        found.append([*items, next_text(items[-1] if items else (seed or [""])[0])[0]])
    elif not choices and item is int:
        found.append([*items, max(items, default=0) + 1])
    return found


def derived(field: Any, now: Any, seed: Any = None) -> list[Any]:
    """Other values of the key's own type, near ``now`` (or near ``seed``, an example, when ``now`` is None)."""
    found: list[Any] = []
    low, high = _bounds(field)
    for member in stack_doc.type_members(field.annotation):
        origin, args = typing.get_origin(member), typing.get_args(member)
        if origin is Literal:
            found += list(args)
        elif member is bool:
            found.append(not now)
        elif member in (int, float):
            found += _numbers(member, now if now is not None else seed, low, high)
        elif member is str:
            found += next_text(now if isinstance(now, str) else seed if isinstance(seed, str) else "")
        elif member is datetime.date:
            found.append((datetime.date.fromisoformat(now or seed) + datetime.timedelta(days=1)).isoformat())
        elif origin in (list, tuple):
            found += _lists(args[0], now, seed)
        elif origin is dict and args[1] in (str, int):
            found.append({**(now or {}), "effect": "on" if args[1] is str else 1})
        elif member is type(None) and now is not None:
            found.append(None)
    return found


def _typed(value: Any, field: Any) -> bool:
    """A value the key's type names itself: a member of a Literal, true or false, null."""
    members = [a for m in stack_doc.type_members(field.annotation) if typing.get_origin(m) is Literal for a in typing.get_args(m)]
    return value is None or isinstance(value, bool) or any(value == a and type(value) is type(a) for a in members)


def other_values(path: str, project: dict, tables: Tables) -> list[tuple[Any, bool]]:
    """Other values of ``path``, best first, each with whether it is known good somewhere: its ``OTHER_VALUES`` row,
    the repo stacks' values, the written example (all known), values derived from the key's type (known when the type
    names them); each accepted by the type, none the base's own."""
    rows = (tables.other_values.get(path), tables.bases.get(path))
    if given := next((row.values for row in rows if row is not None and row.values), None):
        return [(value, True) for value in given]
    field = stack_doc.field_at(path)
    now = current(project, path)
    used = [get(_repo_stack(stack), path) for stack in ORDER]
    used.append(stack_doc.written_examples().get(path, ABSENT))
    seed = example(path)
    annotation = typing.Annotated[(field.annotation, *field.metadata)] if field.metadata else field.annotation
    checker, found = TypeAdapter(annotation), []
    known = [*used, seed]
    for value in [*known, *derived(field, now, None if seed is ABSENT else seed)]:
        if value is ABSENT or value == now or any(value == v for v, _ in found):
            continue
        try:
            checker.validate_python(value)
        except ValidationError:
            continue
        found.append((value, any(value == v for v in known) or _typed(value, field)))
    return found[:MAX_TRIES]


@dataclass(frozen=True)
class Change:
    what: str
    """``models[].replicas=2``, ``prometheus added``"""
    project: dict
    known: bool
    """Whether the new value is one the key takes somewhere: a refusal of it is the context's, not the value's."""


def changes(path: str, project: dict, tables: Tables) -> list[Change]:
    """The changes to try: a section left out or added, else other values."""
    field = stack_doc.field_at(path)
    if optional_section(field) and path not in tables.other_values:
        changed, now = copy.deepcopy(project), get(project, path)
        if on_by_default(field):
            put(changed, path, None if now is not None else ABSENT)
            return [Change(f"{path} {'set to null' if now is not None else 'left out'}", changed, True)]
        if now in (ABSENT, None, []):
            put(changed, path, section(path, project, tables))
            return [Change(f"{path} added", changed, True)]
        put(changed, path, ABSENT)
        return [Change(f"{path} left out", changed, True)]
    tried = []
    for value, known in other_values(path, project, tables):
        changed = copy.deepcopy(project)
        put(changed, path, value)
        tried.append(Change(f"{path}={json.dumps(value)}", changed, known))
    return tried
