"""vLLM's KV arithmetic and profiler, release by release, as the fit models them: blocks, "GPU KV cache size",
"Maximum concurrency", the start-up check, scheduler defaults, non-torch memory and the pinned image.

Expected figures are vLLM's own formulas at the tags (vllm/v1/core/kv_cache_utils.py, kv_cache_interface.py,
engine/arg_utils.py, v1/worker/gpu_worker.py of the released wheels), worked by hand below, and published
figures where a log printed them: DeepSeek-V2-Lite needs "0.95 GiB KV cache" for one 32768-token request
(vllm#15871, vLLM 0.8.3).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from aks_gpu_inference.components.core import models, vllm_kv, vllm_releases
from aks_gpu_inference.components.core.hf_config import facts_from_config
from aks_gpu_inference.components.core.models import GIB, fit_on_memory

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hf_configs"


def facts(name: str):
    index = FIXTURES / name / "model.safetensors.index.json"
    config = json.loads((FIXTURES / name / "config.json").read_text())
    return facts_from_config(config, json.loads(index.read_text()) if index.is_file() else None, hf_id=name)


def layout(version: str, layers=32, sliding=0, window=None, layer_bytes=4096, block=16, batched=8192):
    return vllm_kv.layout(
        layers, sliding, window, layer_bytes, block_size=block, max_num_batched_tokens=batched, vllm_version=version
    )


def test_one_attention_type_divides_the_pool_by_every_layer():
    kv = layout("0.9.2")
    report = vllm_kv.report(kv, 10 * GIB + 12345, 10000)
    blocks = (10 * GIB + 12345) // (16 * 4096) // 32
    assert (report.num_blocks, report.tokens, report.groups) == (blocks, blocks * 16, 1)
    assert report.max_concurrency == blocks / math.ceil(10000 / 16)
    assert report.needed_bytes == 32 * math.ceil(10000 / 16) * 16 * 4096
    # Up to 0.9.0 vLLM printed tokens / max_model_len.
    assert vllm_kv.report(layout("0.8.5"), 10 * GIB + 12345, 10000).max_concurrency == blocks * 16 / 10000


def test_hybrid_manager_groups_layers_and_prints_tokens_over_every_group():
    # Gemma 3 1B: 26 layers, 22 sliding (window 512), 4 full -> groups of 4: 1 full + 6 sliding (2 padding layers).
    kv = layout("0.10.1", layers=26, sliding=22, window=512, layer_bytes=1024)
    available = 20 * GIB
    report = vllm_kv.report(kv, available, 32768)
    blocks = available // (16 * 1024) // 4
    assert (report.groups, report.num_blocks, report.tokens) == (7, blocks, blocks // 7 * 16)
    sliding_pages = math.ceil(min(512 - 1 + 8192, 32768) / 16) + 1
    assert report.max_concurrency == blocks / (math.ceil(32768 / 16) + 6 * sliding_pages)
    assert report.needed_bytes == (4 * 2048 + 22 * sliding_pages) * 16 * 1024
    # Before the hybrid manager (0.9.0) the sliding layers were allocated as full attention...
    unified = vllm_kv.report(layout("0.9.0", layers=26, sliding=22, window=512, layer_bytes=1024), available, 32768)
    assert unified.tokens == available // (16 * 1024) // 26 * 16 and unified.groups == 1
    assert unified.needed_bytes == report.needed_bytes, "...but checked with their window from 0.8.3"
    # ...and before 0.8.3 they had no spec of their own at all.
    assert vllm_kv.report(
        layout("0.8.2", layers=26, sliding=22, window=512, layer_bytes=1024), available, 32768
    ).needed_bytes == (26 * 2048 * 16 * 1024)


def test_gpt_oss_tokens_divide_by_all_layers_and_the_effective_capacity_is_labelled():
    oss = facts("gpt-oss-120b")
    run = fit_on_memory(oss, 0, 2, gpu="H100-80GB", gpu_memory_gib=79.11, vllm_version="0.10.1", max_model_len=131072)
    assert run.hybrid and run.kv_cache_groups == 2
    per_token_all_layers = 36 * 2 * 4 * 64 * 2
    assert run.kv_tokens == pytest.approx(run.kv_budget_gib_per_gpu * GIB / per_token_all_layers, rel=0.001)
    # One request keeps 131072 tokens in the 18 full layers, only window + a step in the 18 sliding ones.
    assert run.effective_tokens > 1.8 * run.kv_tokens
    assert run.effective_tokens == int(run.max_concurrency * 131072)


def test_mla_keeps_one_latent_per_token_per_layer_on_every_rank():
    r1 = facts("deepseek-r1")
    assert [r1.kv_layer_bytes(tp) for tp in (1, 8, 16)] == [(512 + 64) * 2] * 3
    assert r1.kv_layer_bytes(8, "fp8") == 576
    # vllm#15871 (0.8.3): DeepSeek-V2-Lite-Chat "To serve ... (32768), (0.95 GiB KV cache is needed".
    lite = facts("deepseek-v2-lite-chat")
    kv = models.kv_layout(lite, 2, "auto", max_num_batched_tokens=8192, vllm_version="0.8.3", gpu="A10-24GB")
    assert round(vllm_kv.report(kv, 0.93 * GIB, 32768).needed_bytes / GIB, 2) == 0.95
    # FlashMLA pages MLA in 64-token blocks on Hopper; elsewhere 16, and 128 on Blackwell from 0.10.
    assert vllm_releases.kv_block_size("0.9.2", "H200-141GB", mla=True) == 64
    assert vllm_releases.kv_block_size("0.9.2", "A100-80GB", mla=True) == 16
    assert vllm_releases.kv_block_size("0.10.1", "GB200-192GB", mla=True) == 128
    assert vllm_releases.kv_block_size("0.10.1", "H100-80GB", mla=False) == 16


def test_the_start_up_check_refuses_as_vllm_does_and_names_the_longest_context():
    r1 = facts("deepseek-r1")
    starts = fit_on_memory(r1, 0, 8, gpu="H200-141GB", gpu_memory_gib=139.72, vllm_version="0.9.2", max_model_len=163840)
    assert starts.fits and starts.kv_block_size == 64 and starts.kv_needed_gib == pytest.approx(61 * 1152 * 163840 / GIB)
    tight = fit_on_memory(
        r1, 0, 8, gpu="H200-141GB", gpu_memory_gib=139.72, vllm_version="0.9.2", gpu_memory_utilization=0.66, max_model_len=163840
    )
    assert not tight.fits and tight.problem_kind == "kv" and tight.kv_budget_gib_per_gpu > 0
    assert (
        "vLLM refuses to start" in tight.problem
        and f"the longest it holds is {tight.longest_request_tokens} tokens" in tight.problem
    )
    assert tight.longest_request_tokens < 163840
    shorter = fit_on_memory(
        r1,
        0,
        8,
        gpu="H200-141GB",
        gpu_memory_gib=139.72,
        vllm_version="0.9.2",
        gpu_memory_utilization=0.66,
        max_model_len=tight.longest_request_tokens,
    )
    assert shorter.fits and shorter.full_length_sequences >= 1


@pytest.mark.parametrize(
    "version, gpu, device_gib, expected",
    [
        ("0.8.0", "A100-80GB", 79.15, (1024, 2048)),
        ("0.8.0", "H100-80GB", 79.11, (1024, 8192)),
        ("0.8.4", "A100-80GB", 79.15, (256, 2048)),
        ("0.8.5", "A100-80GB", 79.15, (1024, 8192)),
        ("0.9.2", "A100-80GB", 79.15, (256, 2048)),
        ("0.11.0", "H200-141GB", 139.72, (1024, 8192)),
        ("0.11.0", "A10-24GB", 22.18, (256, 2048)),
    ],
)
def test_scheduler_defaults_per_release(version, gpu, device_gib, expected):
    assert vllm_releases.scheduler_defaults(version, gpu, device_gib) == expected


def test_from_0_10_1_a_default_max_num_seqs_is_at_most_the_batched_tokens():
    run = fit_on_memory("meta-llama/Llama-3.1-8B-Instruct", 0, gpu="H100-80GB", gpu_memory_gib=79.11, max_num_batched_tokens=512,
                        vllm_version="0.10.1", max_model_len=512)  # fmt: skip
    assert (run.max_num_seqs, run.max_num_batched_tokens) == (512, 512)
    older = fit_on_memory("meta-llama/Llama-3.1-8B-Instruct", 0, gpu="H100-80GB", gpu_memory_gib=79.11, max_num_batched_tokens=512,
                          vllm_version="0.9.2", max_model_len=512)  # fmt: skip
    assert older.max_num_seqs == 1024


def test_non_torch_memory_follows_each_releases_profiler():
    nt = models.non_torch_gib
    assert nt("0.8.5", 1) > nt("0.9.2", 1), "0.8.0-0.9.0 count the CUDA context"
    assert nt("0.10.1", 4) > nt("0.11.0", 4), "0.11 snapshots after NCCL starts"
    assert nt("0.10.1", 2, custom_all_reduce=False) < nt("0.10.1", 2), "no custom all-reduce buffers across nodes"
    assert (
        nt(models.PINNED_VLLM_VERSION, 1) == models.NON_TORCH_GIB and nt(models.PINNED_VLLM_VERSION, 2) == models.NON_TORCH_TP_GIB
    )


def test_the_default_release_is_the_image_vllm_service_pins():
    from aks_gpu_inference.components.serving.vllm_service_args import VllmServiceArgs

    assert VllmServiceArgs.model_fields["image"].default == vllm_releases.VLLM_IMAGE
    assert vllm_releases.VLLM_IMAGE.endswith(f":v{models.PINNED_VLLM_VERSION}")
    assert models.DEFAULT_SETTINGS["vllm_version"] == models.PINNED_VLLM_VERSION
    assert vllm_releases.image_version("vllm/vllm-openai:v0.10.1.1") == "0.10.1"
    assert vllm_releases.image_version("myacr.azurecr.io/vllm/vllm-openai:v0.9.2") == "0.9.2"
    assert vllm_releases.image_version("vllm/vllm-openai@sha256:" + "0" * 64) is None
    assert vllm_releases.image_version("vllm/vllm-openai:latest") is None


@pytest.mark.parametrize("version", ["latest", "", "v", "0", "nightly-0.9"])
def test_a_version_that_names_no_release_is_refused(version):
    with pytest.raises(ValueError, match="a release such as"):
        vllm_releases.release(version)
    assert vllm_releases.release("0.10.1.1") == (0, 10, 1) and vllm_releases.release("v0.6.5.dev") == (0, 6, 5)


def test_enforce_eager_and_custom_all_reduce_change_only_their_terms():
    base = dict(gpu="H100-80GB", gpu_memory_gib=79.11, max_model_len=8192)
    graphs = fit_on_memory("meta-llama/Llama-3.1-70B-Instruct", 0, 2, **base)
    eager = fit_on_memory("meta-llama/Llama-3.1-70B-Instruct", 0, 2, cuda_graphs=False, **base)
    assert graphs.cuda_graph_gib > 0 and eager.cuda_graph_gib == 0
    assert eager.kv_budget_gib_per_gpu - graphs.kv_budget_gib_per_gpu == pytest.approx(graphs.cuda_graph_gib)
    pods = fit_on_memory("meta-llama/Llama-3.1-70B-Instruct", 0, 2, vllm_version="0.10.1", custom_all_reduce=False, **base)
    node = fit_on_memory("meta-llama/Llama-3.1-70B-Instruct", 0, 2, vllm_version="0.10.1", **base)
    assert not pods.custom_all_reduce and pods.non_torch_gib < node.non_torch_gib
    assert pods.kv_budget_gib_per_gpu - node.kv_budget_gib_per_gpu == pytest.approx(node.non_torch_gib - pods.non_torch_gib)


def _load_tool():
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "tools" / "vllm_release_facts.py"
    spec = importlib.util.spec_from_file_location("vllm_release_facts", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_release_facts_tool_reads_the_markers_of_the_source(tmp_path):
    tool = _load_tool()
    release = tmp_path / "0.11.0" / "vllm"
    for relative, text in {
        "v1/worker/gpu_worker.py": "init_worker_distributed_environment(self)\nself.init_snapshot = MemorySnapshot()\n"
        "with memory_profiling(x): pass\n",
        "v1/kv_cache_interface.py": "class SlidingWindowSpec(AttentionSpec):\n",
        "config/scheduler.py": "    disable_hybrid_kv_cache_manager: bool = False\n",
        "engine/arg_utils.py": 'if device_memory >= 70 * GiB_bytes and "a100" not in device_name:\n',
        "model_executor/layers/quantization/mxfp4.py": "return Mxfp4Backend.TRITON\n",
    }.items():
        (release / relative).parent.mkdir(parents=True, exist_ok=True)
        (release / relative).write_text(text)
    assert tool.facts(release.parent) == tool.expected("0.11.0")
    assert tool.main([str(tmp_path)]) == 0
    (release / "v1/kv_cache_interface.py").write_text("")
    assert tool.main([str(tmp_path)]) == 1, "a threshold that disagrees with the source fails"


def test_the_release_thresholds_agree_with_vllms_released_source():
    import os

    sources = os.environ.get("VLLM_SOURCES", "")
    if not sources or not Path(sources).is_dir():
        pytest.skip("VLLM_SOURCES (unpacked vLLM wheels, one folder per release) is not set; see tools/vllm_release_facts.py")
    assert _load_tool().main([sources]) == 0


def test_only_nvlink_nodes_pay_the_nvlink_channels_and_custom_all_reduce():
    from aks_gpu_inference.components.core.memory_fit import nvlink_node

    assert nvlink_node("H100-80GB") and nvlink_node("A100-80GB") and nvlink_node("H200-141GB")
    assert not nvlink_node("A10-24GB") and not nvlink_node("T4") and not nvlink_node("H100-NVL-94GB")
    assert not nvlink_node("RTX 4090 D") and not nvlink_node("L40S") and nvlink_node("B300"), "names outside the catalog"
    base = dict(gpu_memory_gib=22.18, vllm_version="0.10.1", max_model_len=4096)
    a10 = fit_on_memory("Qwen/Qwen2.5-7B-Instruct", 0, 2, gpu="A10-24GB", **base)
    assert not a10.custom_all_reduce and a10.non_torch_gib == models.non_torch_gib("0.10.1", 2, custom_all_reduce=False)


def test_a_pcie_size_does_not_lend_its_fabric_to_the_sizes_it_suggests():
    # Llama 70B at 0.5 does not start on four PCIe A100s; the bigger size suggested is fitted with its own NVLink.
    miss = models.fit(
        "meta-llama/Llama-3.1-70B-Instruct", "Standard_NC96ads_A100_v4", 4, gpu_memory_utilization=0.5, vllm_version="0.10.1"
    )
    assert not miss.fits and not miss.custom_all_reduce
    (bigger,) = [s for s in miss.suggestions if s.kind == "vm_size"]
    assert models.catalog.get_sku(bigger.value).nvlink
    tp = int(bigger.text.split("(tp ")[1].split(",")[0])
    again = models.fit("meta-llama/Llama-3.1-70B-Instruct", bigger.value, tp, gpu_memory_utilization=0.5, vllm_version="0.10.1")
    assert again.custom_all_reduce and f"{again.full_length_sequences} sequence(s)" in bigger.text
