"""Hostile-input generators and an in-process runner of the real command line, shared by
tests/test_fuzz.py (a small, fixed budget) and bench/fuzz_long.py (a long random run).

Inputs start from the repo's own files (Pulumi.dev.yaml, tests/fixtures/scan, a models.json row) and
are mutated two ways: as text (lines deleted, duplicated, swapped, re-indented, values replaced with
hostile YAML, bytes inserted, the file truncated) and as data (a value anywhere replaced with a huge
integer, NaN, a non-string key, a recursive list, deep nesting, ...).
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import math
import re
import shutil
from pathlib import Path

import yaml
from hypothesis import strategies as st

from aks_gpu_inference.planner.cli import main

REPO = Path(__file__).resolve().parent.parent
STACK_TEXT = (REPO / "Pulumi.dev.yaml").read_text()
MANIFESTS = {
    p.relative_to(REPO / "tests/fixtures/scan").as_posix(): p.read_text()
    for p in sorted((REPO / "tests/fixtures/scan").rglob("*"))
    if p.suffix in (".yaml", ".yml") and p.is_file()
}
MANIFEST_DOCUMENTS = []
"""The documents of each scan fixture that parses, as data to mutate."""
for _text in MANIFESTS.values():
    with contextlib.suppress(yaml.YAMLError):  # a fixture broken on purpose gets text mutations only
        MANIFEST_DOCUMENTS.append([d for d in yaml.load_all(_text, Loader=yaml.CSafeLoader) if d is not None] or [{}])
STACK_DATA = yaml.load(STACK_TEXT, Loader=yaml.CSafeLoader)
FACTS = json.loads((REPO / "components/core/models.json").read_text())["models"][0]

BIG = str(10**400)


def laughs(levels: int = 9, width: int = 9) -> str:
    """A billion-laughs mapping: ``levels`` anchors, each a list of ``width`` aliases of the one before."""
    lines = ['l0: &l0 ["lol"]']
    for i in range(1, levels):
        lines.append(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]")
    return "\n".join(lines) + "\n"


HOSTILE_YAML = [
    BIG,
    "1" * 31,
    "-" + "9" * 40,
    "0x" + "f" * 40,
    ".nan",
    ".inf",
    "-.inf",
    "1.0e400",
    "~",
    "''",
    "[]",
    "{}",
    "-1",
    "0",
    "yes",
    "2024-01-01",
    "2024-13-45",
    "!!binary aGk=",
    "!!set {a}",
    "!!timestamp nope",
    "!!int abc",
    "!!python/object/apply:os.system [ls]",
    "!custom x",
    "&x [*x]",
    "*nowhere",
    "{a: 1, a: 2}",
    "{1: x}",
    "{[1, 2]: x}",
    "[" * 120 + "]" * 120,
    '"\\x00\\ud800"',
    "'" + "x" * 2000 + "'",
    "{{ .Values.image }}",
]
"""Values that have crashed, or could crash, a loader or the code behind it."""


def _deep(depth: int) -> object:
    value: object = "leaf"
    for _ in range(depth):
        value = [value]
    return value


def _recursive() -> list:
    value: list = []
    value.append(value)
    return value


HOSTILE_DATA = [
    10**400,
    10**25,
    -(10**30),
    math.nan,
    math.inf,
    -math.inf,
    1e308,
    None,
    True,
    "",
    "x" * 5000,
    "<secret:x>",
    [],
    {},
    {1: "x"},
    {True: "x"},
    ["a", 1, None],
    "deep",
    "recursive",
]
"""Python values spliced into parsed data ("deep" and "recursive" are built fresh each time)."""


def hostile_value(name: object) -> object:
    """A fresh copy: later mutations may write into it."""
    return _deep(150) if name == "deep" else _recursive() if name == "recursive" else copy.deepcopy(name)


@st.composite
def text_mutation(draw, text: str, hostile: list[str] = HOSTILE_YAML) -> str:
    """``text`` with one to three line-level edits."""
    lines = text.splitlines() or [""]
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(lines) - 1))
        kind = draw(st.sampled_from(["value", "value", "delete", "duplicate", "swap", "indent", "insert", "key", "truncate"]))
        if kind == "value":
            match = re.match(r"^(\s*(?:- )?[^:#]+:\s)", lines[i])
            prefix = match.group(1) if match else lines[i][: len(lines[i]) - len(lines[i].lstrip())]
            lines[i] = prefix + draw(st.sampled_from(hostile))
        elif kind == "delete" and len(lines) > 1:
            del lines[i]
        elif kind == "duplicate":
            lines.insert(i, lines[i])
        elif kind == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif kind == "indent":
            shift = draw(st.integers(-4, 4))
            lines[i] = " " * max(0, shift) + lines[i][max(0, -shift) :]
        elif kind == "insert":
            at = draw(st.integers(0, len(lines[i])))
            lines[i] = lines[i][:at] + draw(st.text(max_size=6)) + lines[i][at:]
        elif kind == "key":
            indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
            lines.insert(
                i + 1, f"{indent}{draw(st.sampled_from(['x', 'count', '1', 'name', '<<']))}: {draw(st.sampled_from(hostile))}"
            )
        elif kind == "truncate":
            lines = lines[: i + 1]
            lines[-1] = lines[-1][: draw(st.integers(0, len(lines[-1])))]
    return "\n".join(lines) + "\n"


def _paths(data: object) -> list[tuple]:
    """Every path into ``data`` (at most 12 steps deep; a recursive list is entered once)."""
    found, stack, seen = [], [((), data)], set()
    while stack:
        prefix, value = stack.pop()
        found.append(prefix)
        if id(value) in seen or len(prefix) >= 12:
            continue
        if isinstance(value, (dict, list)):
            seen.add(id(value))
        items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
        stack.extend(((*prefix, key), child) for key, child in items)
    return found


@st.composite
def data_mutation(draw, data: object) -> object:
    """A deep copy of ``data`` with one to two values replaced by hostile ones (the top is kept)."""
    data = copy.deepcopy(data)
    for _ in range(draw(st.integers(1, 2))):
        paths = [p for p in _paths(data) if p]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = data
        for step in path[:-1]:
            parent = parent[step]
        parent[path[-1]] = hostile_value(draw(st.sampled_from(HOSTILE_DATA)))
    return data


@st.composite
def mild_mutation(draw, data: object) -> object:
    """A deep copy of ``data`` with one number or boolean changed, or one mapping entry dropped: plausible
    edits, so that some mutated stack files pass validation and plan in full."""
    data = copy.deepcopy(data)
    paths = [p for p in _paths(data) if len(p) > 2]
    path = draw(st.sampled_from(paths))
    parent = data
    for step in path[:-1]:
        parent = parent[step]
    value = parent[path[-1]]
    if isinstance(value, bool):
        parent[path[-1]] = not value
    elif isinstance(value, int):
        parent[path[-1]] = draw(st.integers(0, max(8, 2 * value)))
    elif isinstance(parent, dict):
        del parent[path[-1]]
    return data


def stack_texts() -> st.SearchStrategy[str]:
    """Mutated Pulumi.dev.yaml texts: hostile text, hostile values, plausible values."""

    def dump(data: object) -> str:
        return yaml.dump(data, Dumper=yaml.CSafeDumper, sort_keys=False)

    return st.one_of(text_mutation(STACK_TEXT), data_mutation(STACK_DATA).map(dump), mild_mutation(STACK_DATA).map(dump))


def manifest_texts() -> st.SearchStrategy[str]:
    """Mutated scan fixtures (every document of a file mutated as data, or the file as text)."""
    texts = list(MANIFESTS.values())
    as_data = (
        st.sampled_from(MANIFEST_DOCUMENTS)
        .flatmap(data_mutation)
        .map(lambda docs: yaml.dump_all(docs, Dumper=yaml.CSafeDumper, sort_keys=False))
    )
    return st.one_of(st.sampled_from(texts).flatmap(text_mutation), as_data)


def facts_texts() -> st.SearchStrategy[str]:
    """Mutated model-facts JSON files (JSON text; hostile tokens include NaN, 1e999, deep arrays)."""
    text = json.dumps(FACTS, indent=1)
    hostile_json = [BIG, "1e999", "NaN", "-Infinity", "null", '"x"', "[]", "{}", "-1", "0", "1.5", "[" * 5000 + "]" * 5000]
    as_data = data_mutation(FACTS).map(_facts_json)
    return st.one_of(text_mutation(text, hostile_json), as_data)


def _facts_json(data: object) -> str:
    try:
        return json.dumps(data, indent=1, allow_nan=True, default=str)
    except (ValueError, RecursionError):  # a recursive list has no JSON text
        return "[" * 5000 + "]" * 5000


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    """``planner.cli.main(argv)`` in this process: exit code (argparse's SystemExit included), stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 2
    return code, out.getvalue(), err.getvalue()


def make_project(directory: Path) -> Path:
    """A Pulumi project folder outside the repo (so no test sees its stack files): the repo's
    Pulumi.yaml and program."""
    directory.mkdir(parents=True, exist_ok=True)
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(REPO / name, directory / name)
    return directory


def plan(project: Path, text: str, stack: str = "fuzz") -> tuple[int, str, str, Path]:
    """Write ``Pulumi.<stack>.yaml`` and plan it offline, without helm, into a fresh out folder."""
    (project / f"Pulumi.{stack}.yaml").write_text(text)
    out = project / "out" / stack
    shutil.rmtree(out, ignore_errors=True)
    code, stdout, stderr = run_cli(["plan", stack, "--project-dir", str(project), "--out", str(out), "-q"])
    return code, stdout, stderr, out
