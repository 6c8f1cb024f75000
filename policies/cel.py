"""cel-python's environment for DeviceClass and claim selectors, made once per process, on first use.

cel-python builds one LALR parser per process from its grammar (``celpy.celparser.CELParser.CEL_PARSER``),
which takes most of a scan of one DeviceClass; lark loads the same parser back from ``Lark.save`` in about
a hundredth of that. So the built parser is kept in the tool's cache folder, under a name keyed by what
decides it: cel-python's grammar and parser module, lark's version and Python's. A file that cannot be
read, is corrupt or holds another parser is ignored and rewritten; a file is written whole or not at all.
The file is lark's own format, a pickle, so it is read from the user's own cache folder only (lark's
``cache=True`` would put it in the shared temporary folder).
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from pathlib import Path
from typing import Any


def cache_folder() -> Path:
    """``$XDG_CACHE_HOME/aks-gpu/cel``, else ``~/.cache/aks-gpu/cel``: where the built parser is kept."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "aks-gpu" / "cel"


@functools.cache
def cel_environment() -> Any:
    """The process's ``celpy.Environment`` (no package, no annotations; the interpreted runner with ``exists_one``
    as CEL defines it, ``_runner``)."""
    import celpy
    from celpy.celparser import CELParser

    if CELParser.CEL_PARSER is not None:  # built already, by cel-python's own Environment
        return celpy.Environment(runner_class=_runner())
    try:
        path = cache_folder() / f"parser-{_key()}.pickle"
    except (OSError, RuntimeError):  # no home folder, or cel-python's sources unreadable: build it
        return celpy.Environment(runner_class=_runner())
    CELParser.CEL_PARSER = loaded = _load(path)
    env = celpy.Environment(runner_class=_runner())  # builds the parser when none was loaded
    if loaded is None:
        _save(CELParser.CEL_PARSER, path)
    return env


@functools.cache
def _runner() -> type:
    """cel-python 0.5.0's interpreted runner, with ``exists_one`` evaluated as CEL defines it. cel-python evaluates its
    predicate without short-circuiting (``build_macro_eval``), so ``has(x.name) && x.name == y`` raises on an element
    without ``name`` instead of being false, and the exception escapes even an enclosing ``true || ...``: the HTTPRoute
    CRD's unique-rule-name rule fails every route that names one rule of several. Here each element's predicate
    short-circuits, and an element whose predicate is an error makes the macro that error (a value, which ``||`` and
    ``&&`` absorb as CEL's logic does), as cel-go's fold ``result + (pred ? 1 : 0)`` does."""
    import celpy
    from celpy.evaluation import CELEvalError, Evaluator

    class ExistsOne(Evaluator):
        def sub_evaluator(self, ast: Any) -> Evaluator:
            return ExistsOne(ast, activation=self.activation)

        def member_dot_arg(self, tree: Any) -> Any:
            if tree.children[1].value != "exists_one":
                return super().member_dot_arg(tree)
            members = self.visit(tree.children[0])
            if isinstance(members, CELEvalError):
                return members
            found = [self.build_ss_macro_eval(tree)(value) for value in members]
            error = next((r for r in found if isinstance(r, CELEvalError)), None)
            return error if error is not None else celpy.celtypes.BoolType(sum(bool(r) for r in found) == 1)

    class Runner(celpy.InterpretedRunner):
        def evaluate(self, context: Any) -> Any:
            return ExistsOne(ast=self.ast, activation=self.new_activation()).evaluate(context)

    return Runner


def _key() -> str:
    """What the built parser depends on: a new cel-python release that changes its grammar or its parser's
    options, another lark, another Python, each get a file of their own."""
    import hashlib  # here and in _save, not at the top: a scan without selectors needs neither (5 ms)

    import celpy.celparser
    import lark

    parser_module = Path(celpy.celparser.__file__)
    digest = hashlib.sha256()
    for part in ((parser_module.parent / "cel.lark").read_bytes(), parser_module.read_bytes()):
        digest.update(hashlib.sha256(part).digest())
    python = "{}{}".format(*sys.version_info[:2])
    return f"lark{lark.__version__}-py{python}-{digest.hexdigest()[:32]}"


def _load(path: Path) -> Any:
    """The parser saved at ``path``, or None (no file, unreadable, corrupt, or not the parser cel-python builds)."""
    import celpy
    import lark
    from celpy.celparser import CELParser

    try:
        with path.open("rb") as file:
            parser = lark.Lark.load(file)
    except Exception:  # missing, unreadable, truncated or foreign: whatever pickle or lark meets first
        return None
    options = getattr(parser, "options", None)
    expected = (
        isinstance(parser, lark.Lark)
        and options.parser == "lalr"
        and options.tree_class is celpy.InterpretedRunner.tree_node_class
        and options.lexer_callbacks == {"IDENT": CELParser.ambiguous_literals}
    )
    return parser if expected else None


def _save(parser: Any, path: Path) -> None:
    """Keep the built parser (lark's own format). An unwritable cache costs the next process the build, nothing more."""
    _write_whole(path, "wb", parser.save)


def _write_whole(path: Path, mode: str, write: Any) -> None:
    """``write(file)`` into a file beside ``path``, then moved in, so a reader never sees half a file; any failure
    leaves no partial file and costs nothing but the cache entry."""
    import tempfile

    partial = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(mode, dir=path.parent, prefix=f".{path.name}.", suffix=".partial", delete=False) as f:
            partial = Path(f.name)
            write(f)
        os.replace(partial, path)
    except Exception:
        if partial is not None:
            with contextlib.suppress(OSError):
                partial.unlink()


# ---- verdicts kept across runs ----------------------------------------------------------------------------


def _cel_sources() -> list[Path]:
    """cel-python's files that decide what a selector means (grammar, parser, evaluation, types), found without
    importing it: a remembered verdict must not pay the import it saves."""
    import importlib.util

    spec = importlib.util.find_spec("celpy")
    if spec is None or spec.origin is None:
        raise RuntimeError("cel-python is not installed")
    folder = Path(spec.origin).parent
    return [folder / name for name in ("__init__.py", "cel.lark", "celparser.py", "evaluation.py", "celtypes.py")]


@functools.cache
def _verdict_key(depends_on: tuple[Path, ...]) -> str:
    import hashlib

    digest = hashlib.sha256()
    for path in (*_cel_sources(), Path(__file__), *depends_on):  # this file: the runner's exists_one
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:32]


def remembered(expressions: tuple[str, ...], depends_on: tuple[Path, ...], compute: Any) -> frozenset[str]:
    """``compute()`` (a frozenset of names) for these selector texts, kept on disk under a key of the texts, cel-python's
    sources and ``depends_on`` (the judging code and the data it evaluates on): a later run with the same inputs reads
    the verdict back without importing cel-python. A missing, corrupt or unwritable cache only costs ``compute()``."""
    import hashlib
    import json

    try:
        key = _verdict_key(depends_on)
        name = hashlib.sha256(json.dumps([key, *expressions]).encode()).hexdigest()[:40]
        path = cache_folder() / "verdicts" / f"{name}.json"
    except (OSError, RuntimeError):
        return compute()
    with contextlib.suppress(OSError, ValueError, TypeError):
        found = json.loads(path.read_text())
        if isinstance(found, list) and all(isinstance(item, str) for item in found):
            return frozenset(found)
    result = compute()
    _write_whole(path, "w", lambda f: json.dump(sorted(result), f))
    return result
