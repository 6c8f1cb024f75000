"""Nothing is registered before a refusal: a component's own check of the stack's input runs (in a dry run under
mocks) before the real program registers its first resource, and names the stack file's key path."""

from __future__ import annotations

import copy
import json
import runpy

import pytest

from aks_gpu_inference.components.core.errors import ConfigError
from aks_gpu_inference.planner.engine import program as engine
from aks_gpu_inference.planner.inputs.stackfile import add_secret_placeholders
from tests.conftest import REPO, stack_config

PROJECT = "aks-gpu-inference"


def run(stack: str, mutate, monkeypatch, precheck: str) -> tuple[Exception | None, int]:
    """The repo's program on a changed stack file, as the engine would run it: the error and how many resources it
    registered first."""
    monkeypatch.setenv("AKS_GPU_PRECHECK", precheck)
    config = copy.deepcopy(stack_config(stack))
    mutate(config)
    flat = {k: v if isinstance(v, str) else json.dumps(v) for k, v in config.items()}
    secrets: list[str] = []
    add_secret_placeholders(PROJECT, flat, secrets)
    monitor = engine.RecordingMonitor(engine.PlaceholderMocks())
    program = lambda: runpy.run_path(str(REPO / "__main__.py"), run_name="__main__")  # noqa: E731
    try:
        engine.run_function(program, PROJECT, stack, flat, secrets, REPO, monitor)
    except ConfigError as err:
        return err, len(monitor.registered)
    return None, len(monitor.registered)


def training(key: str, value):
    return lambda config: config[f"{PROJECT}:training"].__setitem__(key, value)


LATE = [
    # Each refused by a component deep in the program, after the resource group, cluster, pools and identities.
    ("train", training("checkpoint_prefix", "../x"), "training.checkpoint_prefix='../x': path segments must not be empty"),
    ("train", training("image", "rayproject/ray:latest"), "training.image='rayproject/ray:latest': uses the latest tag"),
    (
        "prod",
        lambda c: c[f"{PROJECT}:models"][0].__setitem__("max_model_len", 10_000_000),
        "models[0].model='meta-llama/Llama-3.3-70B-Instruct': cannot load on Standard_ND96isr_H100_v5",
    ),
]


@pytest.mark.parametrize("stack, mutate, expected", LATE)
def test_a_components_refusal_comes_before_anything_is_registered(stack, mutate, expected, monkeypatch):
    err, registered = run(stack, mutate, monkeypatch, precheck="1")
    assert err is not None and expected in str(err)
    assert str(err).startswith(f"Pulumi.{stack}.yaml is invalid:"), "blames the stack file's key, not the component"
    assert registered == 0


def test_without_the_dry_run_the_same_refusal_would_come_late(monkeypatch):
    """What the dry run prevents: under a real engine these registrations would already be creating resources."""
    stack, mutate, expected = LATE[0]
    err, registered = run(stack, mutate, monkeypatch, precheck="0")
    assert expected in str(err) and registered > 20


def test_an_accepted_stack_runs_the_dry_run_and_registers_as_before(monkeypatch):
    err, registered = run("train", lambda _config: None, monkeypatch, precheck="1")
    assert err is None and registered > 20
