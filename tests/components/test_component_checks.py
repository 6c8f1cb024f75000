"""Nothing is registered before a refusal: every component's own check of the stack's input runs in one pass, on the
facts each component derives from its args, before the program registers its first resource, and names the stack
file's key path. The program runs once: no child process, no dry run."""

from __future__ import annotations

import copy
import json
import runpy
import sys

import pytest

from aks_gpu_inference.components.core.errors import ConfigError
from aks_gpu_inference.components.stack.component_checks import component_problems
from aks_gpu_inference.components.stack.config import parse_stack_config
from aks_gpu_inference.planner.engine import program as engine
from aks_gpu_inference.planner.inputs.stackfile import add_secret_placeholders
from tests.conftest import REPO, STACKS, stack_config

PROJECT = "aks-gpu-inference"


def run(stack: str, mutate) -> tuple[Exception | None, int]:
    """The repo's program on a changed stack file, as the engine would run it: the error and how many resources it
    registered first."""
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
    # Each refused by a component's own validator, which the program reaches after the resource group, the cluster,
    # its pools and identities.
    ("train", training("checkpoint_prefix", "../x"), "training.checkpoint_prefix='../x': path segments must not be empty"),
    ("train", training("image", "rayproject/ray:latest"), "training.image='rayproject/ray:latest': uses the latest tag"),
    (
        "prod",
        lambda c: c[f"{PROJECT}:models"][0].__setitem__("max_model_len", 10_000_000),
        "models[0].model='meta-llama/Llama-3.3-70B-Instruct': cannot load on Standard_ND96isr_H100_v5",
    ),
    (
        "dev",
        lambda c: c[f"{PROJECT}:models"][0].update(source="huggingface", model="mistralai/Mistral-7B-Instruct-v0.3"),
        None,  # accepted: the planner fills hf_token with a placeholder, so the gated model has its token
    ),
]


@pytest.mark.parametrize("stack, mutate, expected", LATE)
def test_a_components_refusal_comes_before_anything_is_registered(stack, mutate, expected):
    err, registered = run(stack, mutate)
    if expected is None:
        assert err is None and registered > 20
        return
    assert err is not None and expected in str(err)
    assert str(err).startswith(f"Pulumi.{stack}.yaml is invalid:"), "blames the stack file's key, not the component"
    assert registered == 0


def test_the_program_runs_once_in_this_process():
    source = (REPO / "components" / "stack" / "program.py").read_text()
    assert "subprocess" not in source and "precheck" not in source
    assert not (REPO / "components" / "stack" / "precheck.py").exists()
    assert "aks_gpu_inference.components.stack.precheck" not in sys.modules


@pytest.mark.parametrize("stack", STACKS)
def test_every_repo_stack_passes_its_components_checks(stack):
    raw = {k.removeprefix(f"{PROJECT}:"): v for k, v in stack_config(stack).items() if k.startswith(f"{PROJECT}:")}
    assert component_problems(parse_stack_config(raw), secrets=lambda _name: True) == []


def test_a_gated_model_without_its_token_is_refused_with_the_models_key_path():
    raw = {k.removeprefix(f"{PROJECT}:"): v for k, v in stack_config("dev").items() if k.startswith(f"{PROJECT}:")}
    raw["models"][0].update(source="huggingface")
    (line,) = component_problems(parse_stack_config(raw), secrets=lambda name: name != "hf_token")
    assert line.startswith("models[0].source='huggingface': meta-llama/Llama-3.1-8B-Instruct is a gated")


def test_a_driverless_pool_nothing_gives_a_driver_is_a_warning_and_one_the_operator_serves_is_not():
    """``driver: none`` is for clusters whose own operator installs the driver; where this stack installs none, the
    plan warns (the key is not refused: the cluster may well run one)."""
    from tests.conftest import run_stack, stack_config

    config = stack_config("dev")
    config["aks-gpu-inference:gpu_pools"][0]["driver"] = "none"
    (warning,) = [w for w in run_stack(config).warnings if "driver: none" in w]
    assert warning.startswith("gpu_pools[0] a100 has driver: none and nothing in this stack installs its NVIDIA driver")
    assert "add the pool to dra.pools with dra.gpu_operator, or use driver: aks" in warning
    config["aks-gpu-inference:dra"] = {"pools": ["a100"], "gpu_operator": {}}
    assert not [w for w in run_stack(config).warnings if "driver: none" in w]
