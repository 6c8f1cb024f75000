"""Model facts from a Hugging Face config.json, and the weights counted from them layer by layer.

Fixtures (tests/fixtures/hf_configs/<model>/config.json) are written by hand from the published configs of
the Hugging Face repos they are named after (deepseek-ai/DeepSeek-R1, deepseek-ai/DeepSeek-V2-Lite-Chat,
moonshotai/Kimi-K2-Instruct, Qwen/Qwen3-30B-A3B, Qwen/Qwen2.5-0.5B-Instruct, openai/gpt-oss-120b,
google/gemma-2-9b-it, google/gemma-3-1b-it, casperhansen/llama-3.3-70b-instruct-awq, Qwen/Qwen3-Next-80B-A3B-
Instruct), keeping the keys vLLM reads; DeepSeek-R1's index keeps only its ``metadata.total_size``.

Published weights a fit must reproduce ("Model loading took"): gpt-oss-120b on one H100 loads 65.97 GiB with
Marlin (vLLM 0.10.1, vllm#23278) and 64.38 GiB with the Triton kernels (vLLM 0.11, llm-d-benchmark);
Qwen3-30B-A3B 56.88 GiB at tp 1 (vLLM 0.19, llm-d-planner#205) and 14.2474 GiB per GPU at tp 4 (vLLM 0.8.5,
four A10s, vllm#17469); Qwen2.5-0.5B 0.9271 GiB (vLLM 0.8.5, index id 33295060080).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from aks_gpu_inference.components.core import weights
from aks_gpu_inference.components.core.errors import ConfigError
from aks_gpu_inference.components.core.hf_config import SUPPORTED, UnsupportedArchitecture, facts_from_config, max_context
from aks_gpu_inference.components.core.models import GIB

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hf_configs"


def config(name: str) -> dict:
    return json.loads((FIXTURES / name / "config.json").read_text())


def facts(name: str):
    index = FIXTURES / name / "model.safetensors.index.json"
    return facts_from_config(config(name), json.loads(index.read_text()) if index.is_file() else None, hf_id=name)


@pytest.mark.parametrize(
    "name, expected",
    [
        ("deepseek-r1", (61, 128, "mla", 256, 3, 0, None, "fp8_block", 163840)),
        ("deepseek-v2-lite-chat", (27, 16, "mla", 64, 1, 0, None, "none", 163840)),
        ("kimi-k2-instruct", (61, 64, "mla", 384, 1, 0, None, "fp8_block", 131072)),
        ("qwen3-30b-a3b", (48, 4, "gqa", 128, 0, 0, None, "none", 40960)),
        ("gpt-oss-120b", (36, 8, "gqa", 128, 0, 18, 128, "mxfp4", 131072)),
        ("gemma-2-9b-it", (42, 8, "gqa", None, 0, 21, 4096, "none", 8192)),
        ("gemma-3-1b-it", (26, 1, "gqa", None, 0, 22, 512, "none", 32768)),
        ("gemma-3-27b-it", (62, 16, "gqa", None, 0, 52, 1024, "none", 131072)),
        ("llama-3.3-70b-instruct-awq", (80, 8, "gqa", None, 0, 0, None, "int4", 131072)),
    ],
)
def test_each_family_is_read_as_vllm_reads_it(name, expected):
    layers, kv_heads, attention, experts, dense, sliding, window, quantization, context = expected
    f = facts(name)
    assert (f.layers, f.kv_heads, f.attention, f.experts, f.dense_layers) == (layers, kv_heads, attention, experts, dense)
    assert (f.sliding_layers, f.sliding_window, f.quantization, f.max_context) == (sliding, window, quantization, context)
    assert f.source.startswith("Hugging Face config.json")
    assert f.architecture == config(name)["architectures"][0].replace("ForConditionalGeneration", "ForCausalLM")


def test_parameter_counts_match_the_published_model_sizes():
    expected = {  # (total, active) in billions, as the model cards state them
        "deepseek-r1": (671, 37),
        "kimi-k2-instruct": (1026, 32),
        "qwen3-30b-a3b": (30.5, 3.3),
        "deepseek-v2-lite-chat": (15.7, 2.4),
        "gemma-2-9b-it": (9.24, None),
        "gemma-3-1b-it": (1.0, None),
        "gemma-3-27b-it": (27.4, None),
        "qwen2.5-0.5b-instruct": (0.49, None),
    }
    for name, (total, active) in expected.items():
        f = facts(name)
        assert f.params_b == pytest.approx(total, rel=0.02), name
        if active:
            assert f.active_params_b == pytest.approx(active, rel=0.15), name


def test_deepseek_r1_layer_count_explains_its_published_checkpoint():
    # 688,586,727,753 bytes in the index, the multi-token-prediction layer included.
    f = facts("deepseek-r1")
    counted = weights._stored_bytes(f, weights.model_parts(f) + weights.skipped_parts(f), f.quantization)
    assert f.checkpoint_gb == pytest.approx(688.587, abs=0.001)
    assert counted / 1e9 == pytest.approx(f.checkpoint_gb, rel=0.002)
    loaded = weights.checkpoint_weight_bytes(f)
    assert 670e9 < loaded < 676e9, "vLLM does not load the MTP layer (~15 GB)"


def test_the_layers_vllm_skips_come_with_the_checkpoint_size_they_are_taken_off():
    r1 = facts("deepseek-r1")
    assert r1.skipped_layers == 1
    # Without the index there is no measured size to correct, so config.json's MTP layer is not written.
    assert facts_from_config(config("deepseek-r1")).skipped_layers == 0
    with pytest.raises(ValueError, match=r"skipped_layers.*leave it out, or give checkpoint_gb"):
        r1.model_validate({**r1.model_dump(), "checkpoint_gb": None})


@pytest.mark.parametrize(
    "name, tp, version, gpu, published_gib",
    [
        ("gpt-oss-120b", 1, "0.10.1", "H100-80GB", 65.97),
        ("gpt-oss-120b", 1, "0.11.0", "H100-80GB", 64.38),
        ("gpt-oss-120b", 1, "0.11.0", "A100-80GB", 65.97),
        ("qwen3-30b-a3b", 1, "0.19.0", "H100-80GB", 56.88),
        ("qwen3-30b-a3b", 4, "0.8.5", "A10-24GB", 14.2474),
        ("qwen2.5-0.5b-instruct", 1, "0.8.5", "RTX 4090 D", 0.9271),
    ],
)
def test_weights_per_gpu_match_what_vllm_loaded(name, tp, version, gpu, published_gib):
    per_gpu = weights.per_gpu_weight_bytes(facts(name), tp, vllm_version=version, gpu=gpu) / GIB
    assert per_gpu == pytest.approx(published_gib, rel=0.01)


def test_tensor_parallelism_splits_what_vllm_splits_and_keeps_the_rest_whole():
    r1 = facts("deepseek-r1")
    per_gpu = [weights.per_gpu_weight_bytes(r1, tp) for tp in (1, 2, 4, 8, 16)]
    assert per_gpu == sorted(per_gpu, reverse=True)
    parts = weights.model_parts(r1)
    assert parts.replicated == r1.layers * r1.hidden * (r1.q_lora_rank + r1.kv_lora_rank + r1.qk_rope_head_dim)
    # Doubling tp halves only the split part: MLA's a-projections, norms and routers stay on every rank.
    assert per_gpu[3] - per_gpu[4] < per_gpu[3] / 2
    # Past the KV heads, k/v projections are replicated, not split further.
    qwen = facts("qwen3-30b-a3b")
    kv = weights.model_parts(qwen).kv * 2
    assert weights.per_gpu_weight_bytes(qwen, 4) - weights.per_gpu_weight_bytes(qwen, 8) == pytest.approx(
        (weights.per_gpu_weight_bytes(qwen, 4) - kv / 4) / 2, rel=0.02
    )


def test_quantized_checkpoints_store_what_their_format_does():
    awq = facts("llama-3.3-70b-instruct-awq")
    assert weights.linear_bytes(awq, "int4") == pytest.approx(0.5 + 2.5 / 128)
    assert weights.checkpoint_weight_bytes(awq) / 1e9 == pytest.approx(39.8, rel=0.02), "the AWQ repo's 39.8 GB"
    assert weights.checkpoint_weight_bytes(awq, "fp8") == weights.checkpoint_weight_bytes(awq), "already quantized"
    bf16 = facts("qwen3-30b-a3b")
    assert weights.checkpoint_weight_bytes(bf16, "fp8") < 0.52 * weights.checkpoint_weight_bytes(bf16)
    assert weights.linear_bytes(facts("deepseek-r1"), "fp8_block") == pytest.approx(1 + 4 / 128**2)
    assert weights.expert_bytes(facts("gpt-oss-120b"), "mxfp4") == pytest.approx(0.53125)


def test_max_context_follows_vllms_rope_scaling_rules():
    assert max_context({"max_position_embeddings": 4096}) == 4096
    yarn = {
        "max_position_embeddings": 163840,
        "rope_scaling": {"type": "yarn", "factor": 40, "original_max_position_embeddings": 4096},
    }
    assert max_context(yarn) == 163840
    assert max_context({"max_position_embeddings": 32768, "rope_scaling": {"rope_type": "yarn", "factor": 4.0,
                        "original_max_position_embeddings": 32768}}) == 131072  # fmt: skip
    assert max_context({"max_position_embeddings": 131072, "rope_scaling": {"rope_type": "llama3", "factor": 8.0}}) == 131072
    assert max_context({"max_position_embeddings": 131072, "model_type": "gemma3_text", "rope_scaling": {"rope_type": "linear",
                        "factor": 8.0}}) == 131072  # fmt: skip
    assert max_context({"max_position_embeddings": 8192, "seq_length": 4096}) == 4096, "the smallest key"


def test_an_architecture_it_cannot_model_is_refused_by_name():
    with pytest.raises(UnsupportedArchitecture) as raised:
        facts("qwen3-next-80b-a3b")
    message = str(raised.value)
    assert "architecture 'Qwen3NextForCausalLM' (model_type 'qwen3_next') is not one aks-gpu fit can model" in message
    assert "not guessed" in message and all(name in message for name in SUPPORTED)
    with pytest.raises(UnsupportedArchitecture, match="architecture None"):
        facts_from_config({"model_type": "llama"})


@pytest.mark.parametrize(
    "quantization, refused",
    [
        ({"quant_method": "bitsandbytes", "load_in_4bit": True}, "'bitsandbytes'"),
        ({"quant_method": "gptq", "bits": 8, "group_size": 128}, "'gptq' (bits 8)"),
        (
            {"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": {"num_bits": 4, "type": "float"}}}},
            "4-bit float",
        ),
    ],
)
def test_a_quantization_it_cannot_model_is_refused_by_name(quantization, refused):
    bad = {**config("llama-3.3-70b-instruct-awq"), "quantization_config": quantization}
    with pytest.raises(UnsupportedArchitecture, match="is not a format aks-gpu fit models") as raised:
        facts_from_config(bad)
    assert refused in str(raised.value)


def test_quantization_configs_it_models():
    base = config("llama-3.3-70b-instruct-awq")
    cases = [
        ({"quant_method": "gptq", "bits": 4, "group_size": -1, "desc_act": False}, ("int4", None)),
        ({"quant_method": "fp8", "activation_scheme": "dynamic"}, ("fp8", None)),
        (
            {
                "quant_method": "compressed-tensors",
                "config_groups": {"group_0": {"weights": {"num_bits": 8, "type": "float", "strategy": "channel"}}},
            },
            ("fp8", None),
        ),
        (
            {
                "quant_method": "compressed-tensors",
                "config_groups": {"group_0": {"weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128}}},
            },
            ("int4", 128),
        ),
    ]
    for quant, (method, group) in cases:
        f = facts_from_config({**base, "quantization_config": quant})
        assert (f.quantization, f.quant_group_size) == (method, group), quant


@pytest.mark.parametrize(
    "change, problem",
    [
        ({"num_hidden_layers": None}, "num_hidden_layers=None: a positive integer is required"),
        ({"hidden_size": "4096"}, "hidden_size='4096': a positive integer is required"),
        ({"vocab_size": 0}, "vocab_size=0: a positive integer is required"),
        ({"max_position_embeddings": None}, "max_position_embeddings: required key is missing"),
    ],
)
def test_a_missing_or_bad_key_is_named(change, problem):
    bad = {**config("qwen2.5-0.5b-instruct"), **change}
    with pytest.raises(ConfigError) as raised:
        facts_from_config(bad)
    assert problem in raised.value.problems


def test_a_bad_index_is_named():
    with pytest.raises(ConfigError, match=r"model\.safetensors\.index\.json") as raised:
        facts_from_config(config("deepseek-r1"), {"metadata": {"total_size": "688GB"}})
    assert raised.value.problems == ["metadata.total_size='688GB': a positive integer"]


def test_gemma_ties_its_embeddings_unless_the_config_says_otherwise():
    tied = facts("gemma-2-9b-it")
    untied = facts_from_config({**config("gemma-2-9b-it"), "tie_word_embeddings": False})
    assert tied.tie_word_embeddings and not untied.tie_word_embeddings
    assert untied.params_b - tied.params_b == pytest.approx(256000 * 3584 / 1e9, rel=1e-3)


def test_sliding_window_of_a_qwen_config_is_ignored_unless_used():
    qwen = config("qwen2.5-0.5b-instruct")
    assert facts_from_config(qwen).sliding_layers == 0
    used = copy.deepcopy(qwen) | {"use_sliding_window": True}
    assert facts_from_config(used).sliding_layers == 24


def test_a_vision_language_gemma_3_is_its_text_model_plus_the_vision_towers_weights():
    mm = facts("gemma-3-27b-it")
    assert mm.encoder_params_b == pytest.approx((27 * (4 * 1152**2 + 2 * 1152 * 4304) + 1152 * 5376) / 1e9, abs=1e-4)
    assert mm.hidden_size == 5376 and mm.vocab_size == 262208 and mm.tie_word_embeddings
    text_only = facts_from_config({**config("gemma-3-27b-it")["text_config"], "architectures": ["Gemma3ForCausalLM"]})
    assert mm.params_b - text_only.params_b == pytest.approx(mm.encoder_params_b, abs=0.001)
    broken = {**config("gemma-3-27b-it"), "vision_config": {"hidden_size": 1152}}
    with pytest.raises(ConfigError, match="cannot be fitted"):
        facts_from_config(broken)
