"""Bounded loading of YAML and JSON that someone else wrote: stack files, manifests, model facts.

PyYAML's safe loader refuses arbitrary objects but not arbitrary *work*: nine nested anchors of nine
aliases each ("billion laughs") expand to a billion nodes the moment anything walks the data, an
anchor used inside itself builds a recursive structure that ``json.dumps`` refuses with a traceback,
and ``10**400`` or ``.inf`` turn into numbers nothing downstream can serialise. This module composes
each document with libyaml (``CSafeLoader``; the pure-Python loader when the wheel lacks it), walks
the node graph once without expanding aliases, and only then constructs the Python values. The walk
is linear in the size of the text, so a hostile document is refused in the time it takes to read it.

Every refusal is an ``InputError``, a ``components.core.errors.ConfigError`` whose problems say
``source:line: what`` and whose ``line`` is the first problem's line.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import yaml

from components.core.errors import ConfigError

MAX_BYTES = 20 * 2**20
"""Default largest input: 20 MiB, ten times the largest ``helm template`` output the project renders."""

MAX_DEPTH = 100
"""Default deepest nesting of mappings and lists (Kubernetes objects nest about 15 levels deep)."""

MAX_ALIASES = 100_000
"""Default number of nodes aliases may add when expanded: generous for anchors written by hand, a
billionth of a billion-laughs document."""

MAX_INT_DIGITS = 30
"""Default longest integer, in digits: ``2**64`` has 20; nothing the project reads needs more."""

MAX_PROBLEMS = 20
"""Problems reported per file before the rest are summarised."""

_BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_TAG = "tag:yaml.org,2002:"
_STR, _INT, _FLOAT, _MERGE = _TAG + "str", _TAG + "int", _TAG + "float", _TAG + "merge"
_PLAIN_TAGS = {_TAG + t for t in ("str", "int", "float", "bool", "null", "seq", "map", "merge", "timestamp")}
_KINDS = {"int": "an integer", "float": "a number", "bool": "a boolean", "null": "null", "timestamp": "a date"}


class _Loader(_BaseLoader):
    """The safe loader; a subclass so the ``plain`` variant can differ without touching PyYAML's."""


class _PlainLoader(_Loader):
    """JSON-compatible values only: dates stay the text they were written as (as Pulumi reads them)."""


_PlainLoader.add_constructor(_TAG + "timestamp", lambda loader, node: loader.construct_scalar(node))


class InputError(ConfigError):
    """A refused input; ``line`` is the 1-based line of the first problem, when there is one."""

    def __init__(self, context: str, problems: list[str], line: int | None = None):
        super().__init__(context, problems)
        self.line = line


@dataclass(frozen=True)
class Document:
    value: object
    line: int
    """1-based line the document's top node starts on."""
    node: yaml.Node | None = None
    """The composed node graph (with ``keep_nodes=True``): line numbers of anything inside."""


@dataclass(frozen=True)
class _Limits:
    max_depth: int
    max_aliases: int
    max_int_digits: int
    string_keys: bool
    finite_floats: bool
    allow_duplicate_keys: bool
    plain: bool


def read_text(text_or_path: str | Path, source: str | None = None, max_bytes: int = MAX_BYTES) -> tuple[str, str]:
    """The text and its display name; a ``Path`` is read as UTF-8 (a leading BOM dropped)."""
    if not isinstance(text_or_path, Path):
        source = source or "<text>"
        if len(text_or_path) > max_bytes:
            raise InputError(f"{source} is too large", [f"{len(text_or_path):,} characters; the limit is {max_bytes:,} bytes"])
        return text_or_path, source
    path, source = text_or_path, source or str(text_or_path)
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise InputError(f"{source} is too large", [f"{size:,} bytes; the limit is {max_bytes:,} bytes"])
        data = path.read_bytes()
    except OSError as err:
        raise InputError(f"cannot read {source}", [err.strerror or str(err)]) from None
    try:
        return data.decode("utf-8").removeprefix("\ufeff"), source
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise InputError(
            f"{source} is not UTF-8 text",
            [f"{source}:{line}: byte 0x{data[err.start]:02x} at offset {err.start} is not valid UTF-8; save the file as UTF-8"],
            line,
        ) from None


def iter_documents(
    text_or_path: str | Path,
    *,
    source: str | None = None,
    max_bytes: int = MAX_BYTES,
    max_depth: int = MAX_DEPTH,
    max_aliases: int = MAX_ALIASES,
    max_int_digits: int = MAX_INT_DIGITS,
    string_keys: bool = False,
    finite_floats: bool = False,
    allow_duplicate_keys: bool = False,
    plain: bool = False,
    keep_nodes: bool = False,
) -> Iterator[Document]:
    """Each document of a (multi-document) YAML text or file, checked before it is constructed.

    Always refused: input over ``max_bytes``, text that is not UTF-8, nesting deeper than
    ``max_depth``, aliases adding more than ``max_aliases`` nodes in all, an anchor used inside
    itself, integers longer than ``max_int_digits`` digits, values their tag cannot convert, and
    (unless ``allow_duplicate_keys``) a key repeated in one mapping. On request: keys that are not
    strings (``string_keys``), ``.nan``/``.inf``/overflowing floats (``finite_floats``), and anything
    JSON cannot hold (``plain``: dates are kept as text, ``!!binary``/``!!set``/... refused).
    """
    text, source = read_text(text_or_path, source, max_bytes)
    limits = _Limits(max_depth, max_aliases, max_int_digits, string_keys, finite_floats, allow_duplicate_keys, plain)
    loader = (_PlainLoader if plain else _Loader)(text)
    budget = [max_aliases]
    try:
        while loader.check_node():
            node = loader.get_node()
            _Walk(loader, node, source, limits, budget).run()
            value = loader.construct_document(node)
            yield Document(value, node.start_mark.line + 1, node if keep_nodes else None)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f"{source}:{mark.line + 1}:{mark.column + 1}: " if mark else f"{source}: "
        problem = "; ".join(p for p in (err.context, err.problem) if p)
        raise InputError(f"{source} is not valid YAML", [where + problem], mark.line + 1 if mark else None) from None
    except yaml.YAMLError as err:
        raise InputError(f"{source} is not valid YAML", [f"{source}: {str(err).splitlines()[0]}"]) from None
    except RecursionError:  # only the pure-Python composer recurses; libyaml stops at 1000 levels
        raise InputError(f"{source} nests too deeply", [f"{source}: more than {max_depth} levels"]) from None
    finally:
        loader.dispose()


def load_documents(text_or_path: str | Path, **options) -> list[Document]:
    """``iter_documents`` as a list; pass ``keep_nodes=True`` for line numbers inside a document."""
    return list(iter_documents(text_or_path, **options))


def load_all(text_or_path: str | Path, **options) -> list[tuple[object, int]]:
    """Every document with the line it starts on; the options of ``iter_documents``."""
    return [(doc.value, doc.line) for doc in iter_documents(text_or_path, **options)]


def load(text_or_path: str | Path, **options) -> object:
    """The one document of a single-document file (None when empty); several documents are refused."""
    docs = load_all(text_or_path, **options)
    if len(docs) > 1:
        source = options.get("source") or str(text_or_path if isinstance(text_or_path, Path) else "<text>")
        raise InputError(
            f"{source} holds {len(docs)} YAML documents",
            [f"{source}:{docs[1][1]}: a second document starts here; the file must hold one"],
        )
    return docs[0][0] if docs else None


class _Walk:
    """One pass over a document's node graph: shared nodes (aliases) are visited once, their
    expanded size and depth added up from memoised subtotals."""

    def __init__(self, loader, root: yaml.Node, source: str, limits: _Limits, budget: list[int]):
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
                    kind = _KINDS.get(key_node.tag.removeprefix(_TAG), f"tagged {_short(key_node.tag)}")
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
    return "!!" + tag.removeprefix(_TAG) if tag.startswith(_TAG) else tag


def clip(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
