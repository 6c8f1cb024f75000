"""cel-python's parser, built once and then loaded from the tool's cache folder (``policies.cel``).

Each case runs in a fresh interpreter with its own ``XDG_CACHE_HOME``: the parser is a per-process
singleton, and what is under test is what a new process finds on disk.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.planner.imports import REPO

EXPRESSIONS = [
    'device.driver == "dra.net" && device.attributes["dra.net"].rdma == true',
    "device.driver in ['gpu.nvidia.com', 'mig.nvidia.com'] && device.attributes['gpu.nvidia.com'].type != 'vfio'",
    "!(device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) < 0) || size(device.name) > 3",
    "1 + 2 * 3 == 7 ? [1, 2][0] : {'a': b'x'}.a",
]
BAD = ["device.driver ==", "device.driver == 'x' &&& true", "(((", "'unterminated"]

PROBE = f"""
import json
from celpy.celparser import CELParser
from aks_gpu_inference.policies.cel import cel_environment
env = cel_environment()
trees = [env.compile(e).pretty() for e in {EXPRESSIONS!r}]
errors = []
for e in {BAD!r}:
    try:
        env.compile(e)
    except Exception as err:
        errors.append(f"{{type(err).__name__}}: {{err.args[0]}}")
print(json.dumps({{"loaded": CELParser.CEL_PARSER.source_path == "<deserialized>", "trees": trees, "errors": errors}}))
"""


def _probe(cache: Path) -> dict:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    result = subprocess.run([sys.executable, "-c", PROBE], cwd=REPO, env=env, capture_output=True, text=True, check=True)
    return json.loads(result.stdout)


def _saved(cache: Path) -> list[Path]:
    return sorted((cache / "aks-gpu" / "cel").glob("*"))


def test_the_first_process_builds_and_saves_the_parser_the_next_loads_the_same_one(tmp_path):
    built = _probe(tmp_path)
    [saved] = _saved(tmp_path)
    assert not built["loaded"] and saved.name.startswith("parser-lark") and saved.suffix == ".pickle"
    loaded = _probe(tmp_path)
    assert loaded["loaded"]
    assert loaded["trees"] == built["trees"] and loaded["errors"] == built["errors"], "the loaded parser parses alike"
    assert len(built["errors"]) == len(BAD)


@pytest.mark.slow
def test_a_corrupt_or_foreign_file_is_ignored_and_replaced(tmp_path):
    _probe(tmp_path)
    [saved] = _saved(tmp_path)
    for junk in (saved.read_bytes()[:1000], b"not a pickle", json.dumps({"data": {}}).encode()):
        saved.write_bytes(junk)
        assert not _probe(tmp_path)["loaded"], "rebuilt"
        assert _saved(tmp_path) == [saved], "rewritten in place, no partial file left"
    assert _probe(tmp_path)["loaded"]


def test_an_unwritable_cache_only_costs_the_build(tmp_path):
    blocker = tmp_path / "aks-gpu"
    blocker.write_text("a file where the cache folder would be")
    assert _probe(tmp_path)["trees"] and not _probe(tmp_path)["loaded"]


SCAN = """
import sys
from aks_gpu_inference.planner import scan
from aks_gpu_inference.policies.rules import _device_classes
report = scan.run(["tests/fixtures/seeds/seed004-dranet-device-class.yaml"])
(item,) = report.located
print(sorted(_device_classes.classify(item.resource.props)), "celpy" in sys.modules)
"""


def test_a_device_class_seen_before_is_judged_without_cel_python(tmp_path):
    """The first scan evaluates the selector (and keeps the parser and the verdict); the next reads the verdict
    back and never imports cel-python; a corrupt verdict file is evaluated again."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}

    def scan() -> str:
        return subprocess.run([sys.executable, "-c", SCAN], cwd=REPO, env=env, capture_output=True, text=True, check=True).stdout

    assert scan().strip() == "['rdma'] True"
    assert scan().strip() == "['rdma'] False"
    (verdict,) = (tmp_path / "aks-gpu" / "cel" / "verdicts").iterdir()
    verdict.write_text("{not json")
    assert scan().strip() == "['rdma'] True"
    assert scan().strip() == "['rdma'] False"


def test_exists_one_short_circuits_each_element_and_an_error_is_a_value():
    """cel-python 0.5.0 raised on an element without the field, failing the HTTPRoute CRD's unique-rule-name rule for
    every route that names one rule of several; CEL says: false, true, an error that ``||`` absorbs."""
    from celpy import celtypes

    from aks_gpu_inference.policies.cel import cel_environment

    env, s = cel_environment(), celtypes.StringType
    unique = "self.all(l1, !has(l1.name) || self.exists_one(l2, has(l2.name) && l1.name == l2.name))"
    one_named = celtypes.ListType([celtypes.MapType({s("name"): s("a")}), celtypes.MapType({s("x"): celtypes.IntType(1)})])
    twice = celtypes.ListType([celtypes.MapType({s("name"): s("a")}), celtypes.MapType({s("name"): s("a")})])
    program = env.program(env.compile(unique))
    assert bool(program.evaluate({"self": one_named}))
    assert not bool(program.evaluate({"self": twice}))
    assert bool(env.program(env.compile("[1, 2, 3].exists_one(x, x > 2)")).evaluate({}))
    assert not bool(env.program(env.compile("[1, 2, 3].exists_one(x, x > 1)")).evaluate({}))
    assert bool(env.program(env.compile("true || [1, 0].exists_one(x, 1 / x > 0)")).evaluate({}))
