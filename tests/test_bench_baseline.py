"""The planner benchmark compares like with like only while its baseline registers the same raw
resources as the stack program; this keeps the two from drifting apart unnoticed."""

import importlib.util

import pytest

from planner import engine, stackfile
from tests.conftest import REPO


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("plan_bench", REPO / "bench" / "plan_bench.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("scenario", ["dev", "16 pools"])
def test_baseline_registers_the_same_raw_resources(bench, scenario):
    stack = stackfile.read_stack(REPO, "dev")
    config = stack.config if scenario == "dev" else bench.sixteen_pool_config(stack.project, stack.config)
    secret_keys = list(stack.secret_keys)
    stackfile.add_secret_placeholders(stack.project, config, secret_keys)
    runs = [
        engine.run_program(REPO, stack.project, "dev", config, secret_keys, main=main) for main in ("__main__.py", bench.BASELINE)
    ]
    ours, theirs = (bench.raw_resources(run) for run in runs)
    assert ours.keys() == theirs.keys()
    assert [k for k in ours if ours[k] != theirs[k]] == []
