"""The qualification gates run the software the gated pool runs: gate 5 the disaggregated engines' image (vLLM or
Dynamo's runtime), gates 4 and 6 the training image, so a passing gate qualifies what serves or trains."""

from __future__ import annotations

import pytest

from aks_gpu_inference.components.core import pins
from aks_gpu_inference.components.gpu.gate_jobs import GATES
from aks_gpu_inference.components.gpu.qualification_gates import QualificationGatesArgs, gate_image
from aks_gpu_inference.components.stack.config import parse_stack_config
from aks_gpu_inference.components.stack.gate_images import workload_gate_images
from aks_gpu_inference.components.training.ray_manifests import RAY_GID
from tests.conftest import stack_config


def images(config: dict) -> dict[int, str]:
    stack = parse_stack_config({k.partition(":")[2]: v for k, v in config.items() if k.startswith("aks-gpu-inference:")})
    args = stack.rdma.gates.model_copy(update=workload_gate_images(stack))
    return {gate.number: gate_image(args, gate) for gate in GATES}


def test_llmd_gate_5_runs_the_engines_image():
    config = stack_config("llmd")
    by_gate = images(config)
    assert by_gate[5] == pins.image("vllm")
    config["aks-gpu-inference:models"][0]["image"] = "myacr.azurecr.io/vllm/vllm-openai:v0.32.0-patched"
    assert images(config)[5] == "myacr.azurecr.io/vllm/vllm-openai:v0.32.0-patched"
    assert {by_gate[n] for n in (1, 2, 3, 4, 6)} == {pins.image("gate-tools")}


def test_dynamo_gate_5_runs_the_dynamo_runtime():
    assert images(stack_config("dynamo"))[5] == pins.image("dynamo-vllm-runtime")


def test_train_nccl_gates_run_the_training_image():
    config = stack_config("train")
    by_gate = images(config)
    training = config["aks-gpu-inference:training"]["image"]
    assert by_gate[4] == by_gate[6] == training
    assert {by_gate[n] for n in (1, 2, 3)} == {pins.image("gate-tools")}, "perftest lives in the tools image"


def test_gates_in_the_training_image_join_the_group_the_workers_join():
    """The training image keeps torchrun where its workers' ray is, under /home/ray: the gate pods get the same group."""

    def settings(config: dict) -> dict:
        stack = parse_stack_config({k.partition(":")[2]: v for k, v in config.items() if k.startswith("aks-gpu-inference:")})
        return workload_gate_images(stack)

    assert settings(stack_config("train"))["supplemental_groups"] == [RAY_GID] == [100]
    assert "supplemental_groups" not in settings(stack_config("dynamo")), "the Dynamo runtime keeps its Python in /usr"
    config = stack_config("train")
    config["aks-gpu-inference:rdma"]["gates"]["supplemental_groups"] = []
    assert "supplemental_groups" not in settings(config), "a stack's own choice is kept"


def test_an_image_the_stack_sets_itself_is_kept():
    config = stack_config("llmd")
    config["aks-gpu-inference:rdma"]["gates"]["nixl_image"] = "myacr.azurecr.io/nixl-bench:1.4.1"
    assert images(config)[5] == "myacr.azurecr.io/nixl-bench:1.4.1"


@pytest.mark.parametrize("field", ["nccl_image", "nixl_image"])
def test_gate_images_must_be_pinned(field):
    with pytest.raises(ValueError, match="pin the image"):
        QualificationGatesArgs.model_validate({"pool": "h100", field: "vllm/vllm-openai:latest"})
