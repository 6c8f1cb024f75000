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

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict, Unpack

import yaml

from aks_gpu_inference.planner.inputs.bounded import (
    MAX_ALIASES,
    MAX_BYTES,
    MAX_DEPTH,
    MAX_INT_DIGITS,
    MAX_PROBLEMS,
    InputError,
    clip,
    read_text,
)
from aks_gpu_inference.planner.inputs.yaml_walk import TAG, Bounds, NodeWalk

__all__ = [
    "MAX_ALIASES",
    "MAX_BYTES",
    "MAX_DEPTH",
    "MAX_INT_DIGITS",
    "MAX_PROBLEMS",
    "Document",
    "InputError",
    "Limits",
    "clip",
    "iter_documents",
    "load",
    "load_all",
    "load_documents",
    "read_text",
]

_BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_BaseLoader):
    """The safe loader; a subclass so the ``plain`` variant can differ without touching PyYAML's."""


class _PlainLoader(_Loader):
    """JSON-compatible values only: dates stay the text they were written as (as Pulumi reads them)."""


_PlainLoader.add_constructor(TAG + "timestamp", lambda loader, node: loader.construct_scalar(node))


@dataclass(frozen=True)
class Document:
    value: object
    line: int
    """1-based line the document's top node starts on."""
    node: yaml.Node | None = None
    """The composed node graph (with ``keep_nodes=True``): line numbers of anything inside."""


class Limits(TypedDict, total=False):
    """What ``iter_documents`` (and ``load_documents``, ``load_all``, ``load``) refuse beyond the size, as
    keywords; each may be left out for the default named here."""

    max_depth: int
    """Deepest nesting of mappings and lists. Default ``MAX_DEPTH`` (100)."""
    max_aliases: int
    """Nodes aliases may add when expanded, over all documents. Default ``MAX_ALIASES`` (100,000)."""
    max_int_digits: int
    """Longest integer, in digits. Default ``MAX_INT_DIGITS`` (30)."""
    string_keys: bool
    """Refuse mapping keys that are not strings. Default False."""
    finite_floats: bool
    """Refuse ``.nan``, ``.inf`` and floats that overflow. Default False."""
    allow_duplicate_keys: bool
    """Accept a key repeated in one mapping (the last wins). Default False: refused."""
    plain: bool
    """Only what JSON can hold: dates kept as the text they were written as, other tags refused. Default False."""


def iter_documents(
    text_or_path: str | Path,
    *,
    source: str | None = None,
    max_bytes: int = MAX_BYTES,
    keep_nodes: bool = False,
    **limits: Unpack[Limits],
) -> Iterator[Document]:
    """Each document of a (multi-document) YAML text or file, checked before it is constructed.

    Always refused: input over ``max_bytes``, text that is not UTF-8, nesting deeper than
    ``max_depth``, aliases adding more than ``max_aliases`` nodes in all, an anchor used inside
    itself, integers longer than ``max_int_digits`` digits, values their tag cannot convert, and
    (unless ``allow_duplicate_keys``) a key repeated in one mapping. On request: keys that are not
    strings (``string_keys``), ``.nan``/``.inf``/overflowing floats (``finite_floats``), and anything
    JSON cannot hold (``plain``: dates are kept as text, ``!!binary``/``!!set``/... refused).

    :param text_or_path: the YAML text, or a file to read as UTF-8.
    :param source: the name problems give the input. Default: the path, or ``<text>``.
    :param max_bytes: the largest input accepted. Default ``MAX_BYTES`` (20 MiB).
    :param keep_nodes: keep each document's composed node graph (``Document.node``), for line numbers
        inside it. Default False.
    :param limits: the other bounds (``Limits``).
    """
    text, source = read_text(text_or_path, source, max_bytes)
    bounds = Bounds.of(limits)
    max_depth = bounds.max_depth
    loader = (_PlainLoader if bounds.plain else _Loader)(text)
    budget = [bounds.max_aliases]
    try:
        while loader.check_node():
            node = loader.get_node()
            NodeWalk(loader, node, source, bounds, budget).run()
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
