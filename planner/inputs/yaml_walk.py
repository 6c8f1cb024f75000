"""One linear pass over a composed YAML document's node graph, before anything is constructed: nesting,
alias expansion (memoised, so a billion laughs costs what its text costs), integer length, values their tag
cannot convert, duplicate and non-string keys. ``safe_yaml`` runs it on every document it loads."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

import yaml

from aks_gpu_inference.planner.inputs.bounded import MAX_ALIASES, MAX_DEPTH, MAX_INT_DIGITS, MAX_PROBLEMS, InputError, clip

TAG = "tag:yaml.org,2002:"
"""The prefix of YAML's core tags (``!!str`` is ``tag:yaml.org,2002:str``)."""
_STR, _INT, _FLOAT, _MERGE = TAG + "str", TAG + "int", TAG + "float", TAG + "merge"
_PLAIN_TAGS = {TAG + t for t in ("str", "int", "float", "bool", "null", "seq", "map", "merge", "timestamp")}
_KINDS = {"int": "an integer", "float": "a number", "bool": "a boolean", "null": "null", "timestamp": "a date"}


@dataclass(frozen=True)
class Bounds:
    """The limits of one load (``safe_yaml.Limits`` with their defaults filled in)."""

    max_depth: int = MAX_DEPTH
    max_aliases: int = MAX_ALIASES
    max_int_digits: int = MAX_INT_DIGITS
    string_keys: bool = False
    finite_floats: bool = False
    allow_duplicate_keys: bool = False
    plain: bool = False

    @classmethod
    def of(cls, limits: Mapping[str, Any]) -> Bounds:
        """The limits given as keywords; a TypeError for one that is not a limit, as Python raises."""
        if unknown := sorted(set(limits) - {f.name for f in fields(cls)}):
            raise TypeError(f"iter_documents() got an unexpected keyword argument {unknown[0]!r}")
        return cls(**limits)


class NodeWalk:
    """One pass over a document's node graph: shared nodes (aliases) are visited once, their
    expanded size and depth added up from memoised subtotals."""

    def __init__(self, loader, root: yaml.Node, source: str, limits: Bounds, budget: list[int]):
        self.loader, self.root, self.source, self.limits, self.budget = loader, root, source, limits, budget
        self.problems: list[tuple[int, str, str]] = []
        self._parents: dict[int, tuple[yaml.Node, object]] | None = None

    def run(self) -> None:
        """Check every node once; documents that reuse a node (aliases) get a second, memoised pass."""
        max_depth, plain, seen, reused = self.limits.max_depth, self.limits.plain, set(), False
        stack: list[tuple[yaml.Node, int]] = [(self.root, 1)]
        while stack:
            node, depth = stack.pop()
            if id(node) in seen:
                reused = True
                continue
            seen.add(id(node))
            if depth > max_depth:
                self._fail(f"{self.source} nests too deeply", node, f"more than {max_depth} levels of mappings and lists")
            if type(node) is yaml.ScalarNode:
                if node.tag != _STR:
                    self._scalar(node)
                continue
            if plain and node.tag not in _PLAIN_TAGS:
                self._problem(f"{self.source} has a value JSON cannot hold", node, f"tag {_short(node.tag)} is not accepted here")
            if type(node) is yaml.MappingNode:
                self._mapping(node)
            stack.extend((child, depth + 1) for child in _children(node))
        if reused:
            self._expanded(len(seen))
        if self.problems:
            self._refuse()

    def _refuse(self) -> None:
        """Raise the problems found, first line first, at most ``MAX_PROBLEMS`` of them spelled out."""
        self.problems.sort(key=lambda problem: problem[0])
        contexts = {context for _, context, _ in self.problems}
        details = [detail for _, _, detail in self.problems[:MAX_PROBLEMS]]
        if len(self.problems) > MAX_PROBLEMS:
            details.append(f"... and {len(self.problems) - MAX_PROBLEMS} more")
        context = contexts.pop() if len(contexts) == 1 else f"{self.source} is refused ({len(self.problems)} problems)"
        raise InputError(context, details, self.problems[0][0])

    def _expanded(self, unique: int) -> None:
        """Size and depth of the document with its aliases expanded, from memoised subtotals; refuse
        an anchor used inside itself, too deep an expansion, or aliases over the budget."""
        size: dict[int, int] = {}
        height: dict[int, int] = {}
        entered: set[int] = set()
        reused: yaml.Node | None = None
        stack: list[tuple[yaml.Node, bool]] = [(self.root, False)]
        while stack:
            node, leaving = stack.pop()
            key = id(node)
            if leaving:
                children = _children(node)
                size[key] = 1 + sum(size[id(c)] for c in children)
                height[key] = 1 + max((height[id(c)] for c in children), default=0)
                if height[key] > self.limits.max_depth:
                    detail = f"aliases nest the document more than {self.limits.max_depth} levels deep"
                    self._fail(f"{self.source} nests too deeply", node, detail)
                continue
            if key in size:
                if reused is None or size[key] > size[id(reused)]:
                    reused = node
                continue
            if key in entered:
                self._fail(f"{self.source} has a recursive alias", node, "the anchor starting here is used inside itself")
            entered.add(key)
            stack.append((node, True))
            stack.extend((c, False) for c in _children(node))
        total = size[id(self.root)]
        self.budget[0] -= total - unique
        if self.budget[0] < 0 and reused is not None:
            self._fail(
                f"{self.source} expands aliases too far",
                reused,
                f"aliases of the anchor starting here expand the document from {unique:,} to {total:,} nodes; "
                f"at most {self.limits.max_aliases:,} added nodes are accepted",
            )

    def _fail(self, context: str, node: yaml.Node, detail: str) -> None:
        raise InputError(context, [f"{self.source}:{node.start_mark.line + 1}: {detail}"], node.start_mark.line + 1)

    def _problem(self, context: str, node: yaml.Node, detail: str, at: yaml.Node | None = None) -> None:
        """Record a problem of ``node`` (its key path), on the line of ``at`` (default: ``node``)."""
        where, line = self.path(node), (at or node).start_mark.line + 1
        self.problems.append((line, context, f"{self.source}:{line}: {where + ': ' if where else ''}{detail}"))

    def _scalar(self, node: yaml.ScalarNode) -> None:
        tag = node.tag
        if tag in (_STR, _MERGE):
            return
        if self.limits.plain and tag not in _PLAIN_TAGS:
            self._problem(f"{self.source} has a value JSON cannot hold", node, f"tag {_short(tag)} is not accepted here")
            return
        if tag == _INT:
            if node.value.isdigit() and len(node.value) <= self.limits.max_int_digits:
                return  # a plain decimal: the common case, and int() cannot fail on it
            digits = re.sub(r"^[-+]?(0[xob])?|[_:]", "", node.value)
            if len(digits) > self.limits.max_int_digits:
                self._problem(
                    f"{self.source} has an integer that is too large",
                    node,
                    f"{clip(node.value)} has {len(digits)} digits; at most {self.limits.max_int_digits} are accepted",
                )
                return
        constructor = self.loader.yaml_constructors.get(tag) or self.loader.yaml_constructors.get(None)
        try:
            value = constructor(self.loader, node)
        except (yaml.YAMLError, ValueError, TypeError, AttributeError, LookupError, ArithmeticError) as err:
            problem = getattr(err, "problem", None) or str(err) or type(err).__name__
            self._problem(
                f"{self.source} has a value its tag cannot convert", node, f"{clip(node.value)} as {_short(tag)}: {problem}"
            )
            return
        if self.limits.finite_floats and isinstance(value, float) and not math.isfinite(value):
            self._problem(
                f"{self.source} has a number that is not finite",
                node,
                f"{clip(node.value)} is {value}; write a finite number (.nan and .inf are not accepted)",
            )

    def _mapping(self, node: yaml.MappingNode) -> None:
        keys = {k.value for k, _ in node.value if k.tag == _STR}
        if len(keys) == len(node.value):
            return  # string keys, all different: the common case
        seen: dict[object, int] = {}
        for key_node, _value in node.value:
            if key_node.tag == _MERGE:
                continue
            line = key_node.start_mark.line + 1
            if not isinstance(key_node, yaml.ScalarNode):
                if self.limits.string_keys:
                    kind = "a list" if isinstance(key_node, yaml.SequenceNode) else "a mapping"
                    self._problem(
                        f"{self.source} has a key that is not a string",
                        node,
                        f"the key at line {line} is {kind}; keys must be strings",
                        key_node,
                    )
                continue
            if key_node.tag == _STR:
                identity: object = key_node.value
            else:
                if self.limits.string_keys:
                    kind = _KINDS.get(key_node.tag.removeprefix(TAG), f"tagged {_short(key_node.tag)}")
                    self._problem(
                        f"{self.source} has a key that is not a string",
                        node,
                        f"key {clip(key_node.value)} at line {line} is {kind}; keys must be strings (quote it: '{clip(key_node.value)}')",
                        key_node,
                    )
                identity = self._scalar_key(key_node)
            if identity in seen and not self.limits.allow_duplicate_keys:
                self._problem(
                    f"{self.source} has duplicate keys",
                    node,
                    f"duplicate key {clip(key_node.value)!r} at line {line} (first at line {seen[identity]})",
                    key_node,
                )
            seen.setdefault(identity, line)

    def _scalar_key(self, node: yaml.ScalarNode) -> object:
        """What a non-string scalar key becomes in the dict (1, 0x1 and true are one key), or its text."""
        constructor = self.loader.yaml_constructors.get(node.tag)
        try:
            value = constructor(self.loader, node) if constructor else None
            hash(value)
        except Exception:  # reported by _scalar; here only the identity matters
            value = None
        return (node.tag, node.value) if value is None else value

    def path(self, target: yaml.Node) -> str:
        """``a.b[2].c`` from the document's top to ``target`` (worked out only when reporting)."""
        if self._parents is None:
            self._parents = {}
            stack = [self.root]
            while stack:
                node = stack.pop()
                for step, child in _steps(node):
                    if id(child) not in self._parents and child is not self.root:
                        self._parents[id(child)] = (node, step)
                        stack.append(child)
        parts, node = [], target
        while id(node) in self._parents and len(parts) < 64:
            node, step = self._parents[id(node)]
            parts.append(step)
        text = ""
        for step in reversed(parts):
            text += f"[{step}]" if isinstance(step, int) else (f".{step}" if text else str(step))
        return text


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return node.value if isinstance(node, yaml.SequenceNode) else []


def _steps(node: yaml.Node) -> list[tuple[object, yaml.Node]]:
    if isinstance(node, yaml.MappingNode):
        steps: list[tuple[object, yaml.Node]] = []
        for key, value in node.value:
            name = clip(key.value) if isinstance(key, yaml.ScalarNode) else "?"
            steps += [(name, value), (name, key)]
        return steps
    return list(enumerate(node.value)) if isinstance(node, yaml.SequenceNode) else []


def _short(tag: str) -> str:
    return "!!" + tag.removeprefix(TAG) if tag.startswith(TAG) else tag
