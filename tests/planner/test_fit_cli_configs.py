"""``aks-gpu fit`` on a Hugging Face config.json and on one configuration: what vLLM would print ("Available KV
cache memory", "GPU KV cache size", "Maximum concurrency"), the verdict and its exit code, the release and
scheduler flags, and every refusal of bad input as one line with exit code 2 and no traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from aks_gpu_inference.components.core import models
from aks_gpu_inference.planner.cli import main
from tests.conftest import REPO

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hf_configs"
R1 = str(FIXTURES / "deepseek-r1")
OSS = str(FIXTURES / "gpt-oss-120b" / "config.json")


def fit(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["fit", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_model_folder_on_one_gpu_prints_what_vllm_prints(capsys):
    code, out, err = fit(capsys, R1, "--gpu", "H200-141GB", "--tp", "8", "--context", "32768", "--vllm-version", "0.9.2")
    assert code == 0 and err == ""
    expected = models.fit_on_memory(
        json_facts(R1), 0, 8, gpu="H200-141GB", gpu_memory_gib=139.72, max_model_len=32768, vllm_version="0.9.2"
    )
    assert "vLLM 0.9.2" in out and "H200-141GB, tp 8, 139.72 GiB per GPU:" in out
    assert f'{expected.weights_gib_per_gpu:8.2f} GiB per GPU   ("Model loading took")' in out
    assert f'{expected.kv_budget_gib_per_gpu:8.2f} GiB per GPU   ("Available KV cache memory")' in out
    assert f"GPU KV cache size: {expected.kv_tokens:,} tokens   (blocks of 64, 1 group(s))" in out
    assert f"Maximum concurrency for 32,768 tokens per request: {expected.max_concurrency:.2f}x" in out
    assert "verdict: vLLM starts" in out and "effective capacity" not in out


def json_facts(folder: str):
    from aks_gpu_inference.planner.fit_inputs import load_model

    return load_model(folder)


def test_a_hybrid_model_labels_its_effective_capacity_beside_vllms_tokens(capsys):
    code, out, _ = fit(capsys, OSS, "--gpu", "H100-80GB", "--tp", "2", "--context", "131072", "--vllm-version", "0.10.1")
    assert code == 0
    assert "(blocks of 16, 2 group(s))" in out
    assert (
        "effective capacity (hybrid: sliding layers keep only the window):" in out and "tokens of 131,072-token requests" in out
    )


def test_a_configuration_vllm_refuses_exits_1_with_vllms_reason(capsys):
    code, out, _ = fit(capsys, OSS, "--vm-size", "Standard_ND96isr_H100_v5", "--vllm-version", "0.10.1")
    assert code == 1
    assert "verdict: vLLM does not serve it:" in out and "'No available memory for the cache blocks'" in out
    assert "  - tp 2 on Standard_ND96isr_H100_v5" in out
    code, out, _ = fit(capsys, OSS, "--vm-size", "Standard_ND96isr_H100_v5", "--gpu-memory-utilization", "0.95",
                       "--vllm-version", "0.11.0", "--max-num-batched-tokens", "1024")  # fmt: skip
    assert code == 1 and "one 131072-token request needs" in out and "vLLM refuses to start" in out


def test_json_of_one_configuration_carries_vllms_figures(capsys):
    code, out, _ = fit(capsys, R1, "--gpu", "H200-141GB", "--tp", "8", "--context", "16384", "--format", "json",
                       "--vllm-version", "0.10.1", "--max-num-seqs", "256", "--enforce-eager")  # fmt: skip
    report = json.loads(out)
    assert code == 0 and report["fits"] and report["vllm_version"] == "0.10.1"
    (option,) = report["options"]
    for key in ("kv_budget_gib_per_gpu", "kv_tokens", "max_concurrency", "effective_tokens", "kv_needed_gib",
                "longest_request_tokens", "kv_block_size", "hybrid"):  # fmt: skip
        assert key in option, key
    assert option["max_num_seqs"] == 256 and option["cuda_graphs"] is False and option["cuda_graph_gib"] == 0
    assert report["model"]["architecture"] == "DeepseekV3ForCausalLM" and report["model"]["attention"] == "mla"


def test_tensor_parallelism_across_nodes_runs_without_custom_all_reduce(capsys):
    args = ["meta-llama/Llama-3.1-70B-Instruct", "--vm-size", "Standard_ND96isr_H100_v5", "--context", "8192",
            "--vllm-version", "0.10.1", "--format", "json"]  # fmt: skip
    _, one_node, _ = fit(capsys, *args, "--tp", "8")
    code, two_nodes, _ = fit(capsys, *args, "--tp", "16", "--nodes", "2")
    across = json.loads(two_nodes)["options"][0]
    assert code == 0 and across["nodes"] == 2 and across["custom_all_reduce"] is False
    assert across["non_torch_gib"] < json.loads(one_node)["options"][0]["non_torch_gib"]
    code, out, _ = fit(capsys, *args, "--tp", "20", "--nodes", "2")
    assert code == 1 and "tp 20 needs 10 GPUs per node over 2 nodes" in json.loads(out)["problem"]
    # A PCIe size has no NVLink fabric: its ranks spend what NCCL over PCIe does, on one node too.
    _, pcie, _ = fit(capsys, *args[:1], "--vm-size", "Standard_NC96ads_A100_v4", *args[3:], "--tp", "2")
    assert json.loads(pcie)["options"][0]["non_torch_gib"] == across["non_torch_gib"]


def test_the_list_of_options_takes_the_release_and_a_config(capsys):
    code, out, _ = fit(capsys, str(FIXTURES / "qwen3-30b-a3b"), "--context", "8192", "--vllm-version", "0.9.2")
    assert code == 0 and "Fit of qwen3-30b-a3b at 8192 tokens" in out and "vLLM 0.9.2" in out
    assert "KV tokens" in out and "options fit" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["does/not/exist/config.json"], "MODEL 'does/not/exist/config.json': no such file or folder; accepted:"),
        (["/nowhere/model"], "no such file or folder"),
        ([str(FIXTURES / "qwen3-next-80b-a3b")], "architecture 'Qwen3NextForCausalLM' (model_type 'qwen3_next') is not one"),
        ([R1, "--gpu-memory-utilization", "0.99"], "--gpu-memory-utilization 0.99: must be above 0.1 and at most 0.98"),
        ([R1, "--gpu-memory-utilization", "0.05"], "--gpu-memory-utilization 0.05: must be above 0.1 and at most 0.98"),
        ([R1, "--vllm-version", "latest"], "--vllm-version 'latest': a release such as 0.9.2 or 0.11.0"),
        ([R1, "--tp", "8"], "--tp and --nodes fit one configuration: give --vm-size or --gpu with them"),
        ([R1, "--gpu", "RTX-9090"], "--gpu 'RTX-9090': accepted: T4, A10-24GB"),
        ([R1, "--gpu", "H100-80GB", "--vm-size", "Standard_ND96isr_H100_v5"], "--vm-size and --gpu: give one"),
        ([R1, "--vm-size", "Standard_ND96isr_H900_v9"], "--vm-size: 'Standard_ND96isr_H900_v9' is not"),
        ([R1, "--max-num-seqs", "0"], "--max-num-seqs 0: must be at least 1"),
    ],
)
def test_bad_input_is_one_line_with_exit_code_2(capsys, argv, message):
    code, out, err = fit(capsys, *argv)
    assert code == 2 and out == ""
    assert err.startswith("error: ") and message in err and err.count("\n") == 1, err


def test_a_config_with_a_bad_key_or_bad_json_is_one_line(capsys, tmp_path):
    folder = tmp_path / "broken"
    folder.mkdir()
    config = json.loads((FIXTURES / "qwen2.5-0.5b-instruct" / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "num_hidden_layers": -3}))
    code, _, err = fit(capsys, str(folder))
    assert code == 2 and "config.json: num_hidden_layers=-3: a positive integer is required" in err and err.count("\n") == 1
    (folder / "config.json").write_text('{"architectures": ["LlamaForCausalLM"], ')
    code, _, err = fit(capsys, str(folder))
    assert code == 2 and "is not valid JSON" in err and err.count("\n") == 1
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": -1}}))
    code, _, err = fit(capsys, str(folder))
    assert code == 2 and "metadata.total_size=-1: a positive integer" in err
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, err = fit(capsys, str(empty))
    assert code == 2 and "the folder has no config.json" in err


def test_console_script_on_a_config_folder_never_shows_a_traceback():
    for argv, code in [([R1, "--gpu", "H200-141GB", "--tp", "8", "--context", "8192"], 0),
                       ([R1, "--gpu", "H100-80GB", "--tp", "2"], 1),
                       ([str(FIXTURES / "qwen3-next-80b-a3b")], 2)]:  # fmt: skip
        result = subprocess.run([sys.executable, "-m", "aks_gpu_inference.planner", "fit", *argv], capture_output=True,
                                text=True, cwd=REPO, timeout=120)  # fmt: skip
        assert result.returncode == code, (argv, result.stdout, result.stderr)
        assert "Traceback" not in result.stderr
