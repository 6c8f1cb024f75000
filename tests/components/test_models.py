"""Model facts and the memory-fit formula: the catalog rows, published reference points, refusals and
suggestions, and properties that must hold for every model, size and setting.

Reference points (tolerances stated per test):
- bench/fit_reference_points.json: published vLLM start-up logs (KV budget, KV tokens, weights) across
  releases 0.6-0.31, GPUs and tp sizes, each with its URL, estimated with each point's own release's
  profiler; the same file drives bench/fit_accuracy.py.
- components/core/gpu_memory.json: the memory each GPU reports, in GiB, with sources.
- KAITO's bytesPerToken: phi-4 204800, Phi-4-mini-instruct 131072.
- vLLM PR #12569: Llama-3.1-70B w8a8 (fp8 weights) "Loading model weights took 67.7229 GB"
  (vLLM printed GiB under the name GB).
- vLLM #23278 / #33155: gpt-oss-120b on one H100 loads 65.97 GiB (Marlin) or 64.38 GiB (Triton) of
  weights; vLLM 0.10.1 reports "Available KV cache memory: -2.14 GiB" at the default utilization.
"""

from __future__ import annotations

import importlib.util
import itertools
import math
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from aks_gpu_inference.components.core import catalog, models
from aks_gpu_inference.components.core.errors import validation_problems
from aks_gpu_inference.components.core.models import GIB, ModelFactsArgs, fit, fit_on_memory, fit_options, get_model

MODELS = models.models()
LLAMA_8B = "meta-llama/Llama-3.1-8B-Instruct"
LLAMA_70B = "meta-llama/Llama-3.1-70B-Instruct"
A100_80_X1 = "Standard_NC24ads_A100_v4"
A100_80_X4 = "Standard_NC96ads_A100_v4"
H100_X8 = "Standard_ND96isr_H100_v5"

# (hf_id, params_b, layers, kv_heads, head_dim, max_context) as researched for the brief.
EXPECTED_FACTS = [
    (LLAMA_8B, 8.03, 32, 8, 128, 131072),
    (LLAMA_70B, 70.6, 80, 8, 128, 131072),
    ("meta-llama/Llama-3.3-70B-Instruct", 70.6, 80, 8, 128, 131072),
    ("mistralai/Mistral-7B-Instruct-v0.3", 7.25, 32, 8, 128, 32768),
    ("mistralai/Mixtral-8x7B-Instruct-v0.1", 46.7, 32, 8, 128, 32768),
    ("Qwen/Qwen2.5-7B-Instruct", 7.61, 28, 4, 128, 32768),
    ("Qwen/Qwen2.5-72B-Instruct", 72.7, 80, 8, 128, 32768),
    ("microsoft/phi-4", 14.7, 40, 10, 128, 16384),
    ("microsoft/Phi-4-mini-instruct", 3.84, 32, 8, 128, 131072),
    ("openai/gpt-oss-20b", 21.0, 24, 8, 64, 131072),
    ("openai/gpt-oss-120b", 117.0, 36, 8, 64, 131072),
    ("deepseek-ai/DeepSeek-R1-Distill-Llama-8B", 8.03, 32, 8, 128, 131072),
    ("deepseek-ai/DeepSeek-R1-Distill-Qwen-32B", 32.8, 64, 8, 128, 131072),
]


# --- the catalog ---------------------------------------------------------------------------------


@pytest.mark.parametrize("hf_id, params_b, layers, kv_heads, head_dim, max_context", EXPECTED_FACTS)
def test_catalog_rows_carry_the_researched_facts(hf_id, params_b, layers, kv_heads, head_dim, max_context):
    facts = MODELS[hf_id]
    assert (facts.params_b, facts.layers, facts.kv_heads, facts.head_dim, facts.max_context) == (
        params_b,
        layers,
        kv_heads,
        head_dim,
        max_context,
    )
    assert facts.dtype == "bfloat16"
    assert "config.json" in facts.source


def test_every_row_is_sourced_and_moe_and_prequantized_rows_say_so():
    for facts in MODELS.values():
        assert facts.source and facts.source != "user-supplied"
    assert MODELS["mistralai/Mixtral-8x7B-Instruct-v0.1"].active_params_b == 12.9
    for hf_id, active, weights_gb, sliding_layers in [
        ("openai/gpt-oss-20b", 3.6, 14.7, 12),
        ("openai/gpt-oss-120b", 5.1, 70.8, 18),
    ]:
        facts = MODELS[hf_id]
        assert (facts.active_params_b, facts.weights_gb, facts.sliding_window, facts.sliding_layers) == (
            active,
            weights_gb,
            128,
            sliding_layers,
        )
        assert "mxfp4" in facts.source.lower()


def test_kaito_presets_are_the_published_names():
    presets = {facts.kaito_preset: hf_id for hf_id, facts in MODELS.items() if facts.kaito_preset}
    assert presets == {
        "llama-3.1-8b-instruct": LLAMA_8B,
        "phi-4": "microsoft/phi-4",
        "phi-4-mini-instruct": "microsoft/Phi-4-mini-instruct",
        "mistral-7b-instruct": "mistralai/Mistral-7B-Instruct-v0.3",
        "deepseek-r1-distill-llama-8b": "deepseek-ai/DeepSeek-R1-Distill-Llama-8B",
    }


def test_lookup_by_id_any_case_or_kaito_preset():
    assert get_model(LLAMA_8B) is MODELS[LLAMA_8B]
    assert get_model("META-LLAMA/llama-3.1-8b-instruct") is MODELS[LLAMA_8B]
    assert get_model("phi-4-mini-instruct") is MODELS["microsoft/Phi-4-mini-instruct"]


def test_unknown_model_names_the_id_close_matches_and_custom_facts():
    with pytest.raises(models.UnknownModelError) as raised:
        get_model("llama-3.1-70b")
    message = str(raised.value)
    assert "'llama-3.1-70b' is not a model in the catalog" in message
    assert "did you mean 'meta-llama/Llama-3.1-70B-Instruct'" in message
    assert "ModelFactsArgs" in message and "config.json" in message
    with pytest.raises(
        models.UnknownModelError, match=r"'nobody/nothing' is not a model in the catalog \(components/core/models.json\)\. "
    ):
        get_model("nobody/nothing")


def test_custom_facts_fit_like_catalog_rows():
    custom = ModelFactsArgs(
        hf_id="me/llama-clone",
        params_b=8.03,
        layers=32,
        kv_heads=8,
        head_dim=128,
        max_context=131072,
        vocab_size=128256,
        hidden_size=4096,
        intermediate_size=14336,
    )
    assert custom.source == "user-supplied" and custom.attention_heads is None
    mine, theirs = fit(custom, A100_80_X1, max_model_len=8192), fit(LLAMA_8B, A100_80_X1, max_model_len=8192)
    assert (mine.weights_gib_per_gpu, mine.kv_tokens, mine.full_length_sequences) == (
        theirs.weights_gib_per_gpu,
        theirs.kv_tokens,
        theirs.full_length_sequences,
    )


@pytest.mark.parametrize(
    "change, field",
    [
        ({"context": 4096}, "context"),
        ({"sliding_layers": 40}, "sliding_layers"),
        ({"sliding_layers": 4}, "sliding_window"),
        ({"sliding_window": 4096}, "sliding_layers"),
        ({"active_params_b": 9.0}, "active_params_b"),
        ({"attention_heads": 12}, "attention_heads"),
        ({"kv_heads": 0}, "kv_heads"),
        ({"dtype": "float32"}, "dtype"),
    ],
)
def test_model_facts_args_name_the_bad_field(change, field):
    values = dict(hf_id="me/m", params_b=8.0, layers=32, kv_heads=8, head_dim=128, max_context=8192) | change
    with pytest.raises(ValidationError) as raised:
        ModelFactsArgs(**values)
    assert any(problem.startswith(field) for problem in validation_problems(raised.value)), validation_problems(raised.value)


# --- reference points ----------------------------------------------------------------------------


def test_weights_match_vllm_log_for_llama_8b_within_3_percent():
    weights = fit(LLAMA_8B, A100_80_X1).weights_gib_per_gpu
    assert weights == pytest.approx(14.99, rel=0.03)
    assert abs(weights / 14.99 - 1) < 0.003, "actually within 0.3% (14.957 GiB)"


@pytest.mark.parametrize(
    "hf_id, bytes_per_token",
    [
        (LLAMA_8B, 131072),
        ("microsoft/phi-4", 204800),  # KAITO bytesPerToken
        ("microsoft/Phi-4-mini-instruct", 131072),  # KAITO bytesPerToken
        ("deepseek-ai/DeepSeek-R1-Distill-Llama-8B", 131072),
    ],
)
def test_kv_bytes_per_token_exact(hf_id, bytes_per_token):
    assert MODELS[hf_id].kv_bytes_per_token() == bytes_per_token
    assert fit_on_memory(hf_id, 80).kv_bytes_per_token_per_gpu == bytes_per_token


def test_kv_tokens_from_vllm_kv_memory_within_1_percent():
    # vLLM: "Available KV cache memory: 19.28 GiB" -> "GPU KV cache size: 157,936 tokens".
    tokens = 19.28 * GIB / MODELS[LLAMA_8B].kv_bytes_per_token()
    assert tokens == pytest.approx(157_936, rel=0.01)


def test_fp8_weights_match_vllm_pr_12569_within_half_a_percent():
    # fp8 quantizers keep the embeddings and lm_head in bf16 (2 x 128256 x 8192 parameters at 2 bytes).
    weights = fit(LLAMA_70B, H100_X8, dtype="fp8").weights_gib_per_gpu
    assert weights == pytest.approx(67.7229, rel=0.005)
    without_embeddings = MODELS[LLAMA_70B].params_b * 1e9 / GIB
    assert weights - without_embeddings == pytest.approx(2 * 128256 * 8192 / GIB, rel=1e-9)


def _load_bench():
    path = Path(__file__).resolve().parents[2] / "bench" / "fit_accuracy.py"
    spec = importlib.util.spec_from_file_location("fit_accuracy", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


BENCH = _load_bench()
REFERENCE = BENCH.load()
OUTCOMES = {o.id: o for o in BENCH.evaluate_all(REFERENCE)}


def test_reference_points_are_sourced_and_cover_sizes_tps_gpus_and_a_large_moe():
    points = REFERENCE["points"]
    assert len(points) >= 8
    for point in points:
        assert point["url"] and point["vllm_version"] and point["checkpoint"], point["id"]
        for key in ("gpu", "tp", "gpu_memory_utilization", "max_model_len", "dtype", "kv_cache_dtype"):
            assert key in point, (point["id"], key)
        assert point["gpu"] in models.gpu_memory_table() or point["device_gib"] > 0, "a GPU outside the table says its GiB"
        assert "fits" in point["published"]
    capacity = [o for o in OUTCOMES.values() if o.kind == "capacity"]
    assert {o.tp for o in capacity} >= {1, 2, 4}
    assert {o.gpu for o in capacity} >= {"H100-80GB", "A100-80GB", "A100-40GB"}
    assert any("70B" in o.model and o.tp == 2 for o in capacity) and any("70B" in o.model and o.tp == 4 for o in capacity)
    assert any("8B" in o.model for o in capacity) and any("Mixtral" in o.model for o in capacity)
    assert any(o.model == "openai/gpt-oss-120b" for o in OUTCOMES.values()), "the large MoE that does not fit one H100"


@pytest.mark.parametrize("point_id", [o.id for o in OUTCOMES.values() if o.kind == "capacity"])
def test_kv_budget_within_8_percent_of_the_published_vllm_log(point_id):
    outcome = OUTCOMES[point_id]
    assert REFERENCE["tolerance"] == 0.08
    assert abs(outcome.error) <= 0.08, (
        f"{point_id}: estimated {outcome.estimated_kv_gib:.2f} GiB, vLLM {outcome.published_kv_gib}"
    )
    assert outcome.estimated_fits and outcome.published_fits
    if outcome.token_error is not None:
        assert abs(outcome.token_error) <= 0.08, f"{point_id}: {outcome.estimated_tokens} tokens, vLLM {outcome.published_tokens}"


@pytest.mark.parametrize("point_id", [o.id for o in OUTCOMES.values() if o.kind == "verdict"])
def test_fits_or_not_as_vllm_did_where_it_left_little_or_no_kv_room(point_id):
    outcome = OUTCOMES[point_id]
    assert outcome.estimated_fits == outcome.published_fits, point_id
    if outcome.published_kv_gib is not None and outcome.published_kv_gib < 0:
        assert outcome.estimated_kv_gib < 0.25, f"{point_id}: vLLM's KV budget was negative"


def test_kv_budget_error_over_every_counted_point_max_and_mean():
    # The counting rule is the file's: capacity points are those where vLLM left capacity_share of its budget.
    assert REFERENCE["capacity_share"] == 0.25
    capacity = [o for o in OUTCOMES.values() if o.kind == "capacity"]
    errors = [abs(o.error) for o in capacity]
    assert len(capacity) >= 29, "the widened set: vLLM issues and PRs, llm-d-benchmark, llm-d-planner"
    assert max(errors) <= 0.05, max(zip(errors, (o.id for o in capacity), strict=True))
    assert sum(errors) / len(errors) <= 0.015
    assert {o.url for o in capacity} >= {
        "https://github.com/vllm-project/vllm/pull/10511",
        "https://github.com/llm-d-incubation/llm-d-planner/pull/205",
    }


def test_the_bench_runs_and_reports_every_point(capsys):
    assert BENCH.main([]) == 0
    out = capsys.readouterr().out
    assert all(point["id"] in out for point in REFERENCE["points"])
    assert "capacity points: KV budget within" in out and "0 'fits' where vLLM did not; all ok" in out


def test_the_overhead_models_the_vllm_release_vllm_service_pins():
    from aks_gpu_inference.components.serving.vllm_service_args import VllmServiceArgs

    assert VllmServiceArgs.model_fields["image"].default == f"docker.io/vllm/vllm-openai:v{models.PINNED_VLLM_VERSION}"
    pinned = models.release(models.PINNED_VLLM_VERSION)
    assert pinned >= models.CUDA_GRAPHS_IN_BUDGET_SINCE, "the pinned release reserves CUDA graphs inside the budget"
    assert fit(LLAMA_8B, A100_80_X1, max_model_len=8192).cuda_graph_gib > 0


@pytest.mark.parametrize(
    "gpu_model, gib",
    [("H100-80GB", 79.11), ("A100-80GB", 79.15), ("A100-40GB", 39.39), ("H100-NVL-94GB", 93.02), ("H200-141GB", 139.72),
     ("T4", 14.57), ("A10-24GB", 22.18), ("MI300X-192GB", 191.98)],
)  # fmt: skip
def test_budget_is_the_memory_the_device_reports_in_gib(gpu_model, gib):
    row = models.gpu_memory_table()[gpu_model]
    assert row["device_gib"] == gib and row["source"]
    sku = next(s for s in catalog.skus().values() if s.gpu_model == gpu_model and s.gpu_fraction == 1 and not s.retired)
    result = fit(LLAMA_8B, sku.name, max_model_len=1024, suggest=False)
    assert result.gpu_memory_gib == gib
    assert result.budget_gib_per_gpu == pytest.approx(gib * 0.9)
    if sku.gpu_memory_gb >= 80 and gpu_model != "MI300X-192GB":
        assert result.gpu_memory_gib > sku.gpu_memory_gb * 1e9 / GIB, "HBM GPUs report more than the catalog's GB"


def test_every_current_gpu_reports_a_published_figure_or_falls_back_to_the_catalog_gb():
    for sku in catalog.skus().values():
        result = fit_on_memory(
            LLAMA_8B,
            sku.gpu_memory_gb,
            gpu_memory_gib=models.device_memory_gib(sku.gpu_model, sku.gpu_memory_gb, sku.gpu_fraction),
        )
        if sku.gpu_model in models.gpu_memory_table():
            assert result.gpu_memory_gib == pytest.approx(
                models.gpu_memory_table()[sku.gpu_model]["device_gib"] * sku.gpu_fraction
            )
        else:
            assert result.gpu_memory_gib == pytest.approx(sku.gpu_memory_gb * 1e9 / GIB)
    vgpu = fit(LLAMA_8B, "Standard_NV18ads_A10_v5", max_model_len=1024, suggest=False)
    assert vgpu.gpu_memory_gib == pytest.approx(22.18 * 0.5), "a vGPU gets its share of the GPU"


def test_gpt_oss_120b_does_not_fit_one_80gb_gpu_at_the_default_utilization():
    # vllm#23278 (vLLM 0.10.1, one H100): "Model loading took 65.9651 GiB", "Available KV cache memory: -2.14 GiB".
    result = fit("openai/gpt-oss-120b", H100_X8)
    assert result.weights_gib_per_gpu == pytest.approx(65.97, rel=0.01)
    assert not result.fits and result.problem_kind == "weights" and result.kv_budget_gib_per_gpu < 0
    for length in (1024, 16384, 131072):
        assert not fit("openai/gpt-oss-120b", H100_X8, max_model_len=length, suggest=False).fits
    assert {(s.kind, s.value) for s in result.suggestions} >= {("tp", 2)}
    assert fit("openai/gpt-oss-120b", H100_X8, 2).fits, "tp 2, as vLLM's gpt-oss recipe runs it on H100"
    # vllm#27508 (vLLM 0.11, 0.95): 1.71 GiB of KV cache, too little for the 131072-token context.
    higher = fit("openai/gpt-oss-120b", H100_X8, gpu_memory_utilization=0.95, suggest=False)
    assert not higher.fits and higher.problem_kind == "kv" and higher.kv_budget_gib_per_gpu > 0
    assert fit("openai/gpt-oss-120b", H100_X8, gpu_memory_utilization=0.95, max_model_len=16384).fits


def test_llama_70b_bf16_at_tp2_fits_two_80gb_gpus():
    # 65.7 GiB of weights per GPU against 0.9 x 79.15 GiB: the catalog's 80e9 bytes (67.1 GiB) refused it.
    result = fit(LLAMA_70B, "Standard_NC48ads_A100_v4", 2, max_model_len=8192)
    assert result.fits and result.full_length_sequences >= 1 and result.max_num_seqs == models.VLLM_MAX_NUM_SEQS
    assert result.weights_gib_per_gpu == pytest.approx(65.75, abs=0.01)
    assert result.budget_gib_per_gpu == pytest.approx(79.15 * 0.9)
    assert fit(LLAMA_70B, A100_80_X4, 2, max_model_len=8192).fits


def test_overhead_terms_follow_the_published_breakdowns():
    # vLLM 0.31, Llama-3.1-8B on one A100 80GB: 0.26 GiB non-torch, 1.21 GiB activation, 0.23 GiB CUDA graphs.
    a100 = fit(LLAMA_8B, A100_80_X1, max_model_len=8192)
    assert (a100.max_num_seqs, a100.max_num_batched_tokens) == (256, 2048)
    assert a100.non_torch_gib == pytest.approx(0.26, abs=0.05)
    assert a100.activation_gib == pytest.approx(1.21, abs=0.1)
    assert a100.cuda_graph_gib == pytest.approx(0.23, abs=0.05)
    assert a100.overhead_gib == pytest.approx(a100.non_torch_gib + a100.activation_gib + a100.cuda_graph_gib)
    # vLLM 0.19 on H100 (llm-d-planner#205, 1024 sequences, 8192 tokens): 1.89 GiB Llama-3.1-8B, 2.21 Qwen2.5-7B.
    for hf_id, published in ((LLAMA_8B, 1.89), ("Qwen/Qwen2.5-7B-Instruct", 2.21)):
        run = fit_on_memory(hf_id, 80, gpu="H100-80GB", gpu_memory_gib=79.19, max_model_len=8192, vllm_version="0.19.0")
        assert (run.max_num_seqs, run.max_num_batched_tokens) == (1024, 8192)
        assert run.activation_gib == pytest.approx(published, abs=0.15), hf_id
    # The pinned release samples 1024 rows on H100 by default (llm-d-benchmark, vLLM 0.11: 4.76 GiB for Llama).
    h100 = fit(LLAMA_8B, H100_X8, max_model_len=8192)
    assert h100.max_num_seqs == 1024 and h100.activation_gib == pytest.approx(4.76, rel=0.15)
    # Non-torch memory jumps with tensor parallelism (NCCL, custom all-reduce): 2.06-2.21 GiB in vLLM 0.19.
    assert fit(LLAMA_8B, H100_X8, 2, max_model_len=8192).non_torch_gib == pytest.approx(2.1, abs=0.15)
    # The forward term is one layer's MLP intermediates per token: the fused-MoE caches for a mixture of experts.
    mixtral = MODELS["mistralai/Mixtral-8x7B-Instruct-v0.1"]
    assert models.forward_bytes_per_token(mixtral, 2) == 2 * (2 * (14336 + 7168) + 2 * 4096)
    assert models.forward_bytes_per_token(MODELS[LLAMA_8B], 1) == 2 * (3 * 14336 + 2 * 4096)
    eager = fit_on_memory(LLAMA_8B, 40, gpu_memory_gib=39.39, cuda_graphs=False)
    assert (
        eager.cuda_graph_gib == 0
        and eager.kv_budget_gib_per_gpu > fit_on_memory(LLAMA_8B, 40, gpu_memory_gib=39.39).kv_budget_gib_per_gpu
    )
    assert fit_on_memory(LLAMA_8B, 40, gpu_memory_gib=39.39, vllm_version="0.20.1").cuda_graph_gib == 0, "before 0.21"


def test_no_overhead_term_depends_on_the_gpu_name():
    # Same reported memory, same scheduler sizes: an A100 and an H100 get the same estimate, term by term.
    for hf_id, tp in ((LLAMA_8B, 1), ("openai/gpt-oss-120b", 1), (LLAMA_70B, 2), ("mistralai/Mixtral-8x7B-Instruct-v0.1", 2)):
        for seqs, tokens in ((256, 2048), (1024, 8192)):
            a100, h100 = (
                fit_on_memory(hf_id, 80, tp, gpu=gpu, gpu_memory_gib=79.15, max_num_seqs=seqs, max_num_batched_tokens=tokens)
                for gpu in ("A100-80GB", "H100-80GB")
            )
            assert replace(a100, gpu="") == replace(h100, gpu=""), (hf_id, tp, seqs)
    # Only vLLM's own defaults tell them apart (tests/engine/test_arg_utils.py test_defaults_with_usage_context).
    assert models.vllm_default_max_num_seqs("A100-80GB", 79.15) == 256
    assert models.vllm_default_max_num_seqs("H100-80GB", 79.15) == 1024
    assert models.vllm_default_max_num_batched_tokens("A100-80GB", 79.15) == 2048
    assert models.vllm_default_max_num_batched_tokens("H100-80GB", 79.15) == 8192


@pytest.mark.parametrize("vm_size", [A100_80_X1, H100_X8])
@pytest.mark.parametrize("memory_gib", [79.15, 79.11])
def test_gpt_oss_120b_at_0_9_is_refused_on_both_80gb_gpus_as_vllm_refuses_it(vm_size, memory_gib):
    # vllm#23278 (H100, 0.9): "Available KV cache memory: -2.14 GiB"; the A100 reports the same ~79 GiB.
    gpu = catalog.get_sku(vm_size).gpu_model
    result = fit_on_memory("openai/gpt-oss-120b", 80, gpu=gpu, gpu_memory_gib=memory_gib, gpu_memory_utilization=0.9)
    assert not result.fits and result.problem_kind in ("weights", "kv")
    assert result.kv_budget_gib_per_gpu < models.sequence_bytes(MODELS["openai/gpt-oss-120b"], 131072) / GIB
    assert not fit("openai/gpt-oss-120b", vm_size, suggest=False).fits


def test_llama_8b_fits_one_a100_80gb_at_8k():
    result = fit(LLAMA_8B, A100_80_X1, max_model_len=8192)
    assert result.fits and result.warning is None and result.suggestions == ()
    assert result.full_length_sequences >= 4 and result.kv_tokens >= result.full_length_sequences * 8192
    assert result.price_usd_per_hour == catalog.get_sku(A100_80_X1).price_usd_per_hour


def test_llama_8b_at_full_context_warns_about_few_sequences():
    result = fit(LLAMA_8B, A100_80_X1)
    assert result.fits and result.max_model_len == 131072
    assert result.full_length_sequences == 3 and "only 3 sequence(s) of 131072 tokens" in result.warning
    assert fit(LLAMA_8B, A100_80_X1, warn_below_sequences=3).warning is None


def test_llama_70b_bf16_does_not_fit_one_a100_80gb_and_suggests_tp_or_fp8():
    result = fit(LLAMA_70B, A100_80_X4)
    assert not result.fits and result.problem_kind == "weights"
    assert "exceed the 71.2 GiB budget per GPU" in result.problem
    kinds = {(s.kind, s.value) for s in result.suggestions}
    assert kinds & {("tp", 2), ("tp", 4), ("dtype", "fp8")}
    for suggestion in result.suggestions:
        if suggestion.kind == "tp":
            assert fit(LLAMA_70B, A100_80_X4, suggestion.value).fits
            assert not fit(LLAMA_70B, A100_80_X4, suggestion.value // 2).fits, "the smallest tp that fits"


def test_a_single_gpu_size_suggests_a_bigger_size_the_cheapest_that_fits():
    result = fit(LLAMA_70B, A100_80_X1)
    assert not result.fits
    (bigger,) = [s for s in result.suggestions if s.kind == "vm_size"]
    assert bigger.value == fit_options(LLAMA_70B)[0].vm_size
    assert not any(s.kind == "tp" for s in result.suggestions), "one GPU: no tp to add"


def test_fp8_kv_cache_and_shorter_context_are_suggested_when_the_kv_cache_is_short():
    result = fit(LLAMA_8B, A100_80_X1, gpu_memory_utilization=0.40)
    assert not result.fits and result.problem_kind == "kv"
    by_kind = {s.kind: s.value for s in result.suggestions}
    assert by_kind["kv_cache_dtype"] == "fp8"
    assert fit(LLAMA_8B, A100_80_X1, gpu_memory_utilization=0.40, kv_cache_dtype="fp8").fits
    length = by_kind["max_model_len"]
    assert length % 1024 == 0
    assert fit(LLAMA_8B, A100_80_X1, gpu_memory_utilization=0.40, max_model_len=length).fits
    assert not fit(LLAMA_8B, A100_80_X1, gpu_memory_utilization=0.40, max_model_len=length + 1024).fits, "the largest"


def test_context_beyond_the_model_maximum_is_refused():
    result = fit("microsoft/phi-4", A100_80_X1, max_model_len=32768)
    assert not result.fits and result.problem_kind == "context"
    assert result.problem == "max_model_len 32768 exceeds the model's maximum context of 16384 tokens"
    assert [(s.kind, s.value) for s in result.suggestions] == [("max_model_len", 16384)]


@pytest.mark.parametrize(
    "hf_id, vm_size, tp, why",
    [
        ("Qwen/Qwen2.5-7B-Instruct", "Standard_ND96asr_v4", 8, "does not divide the 28 attention heads"),
        ("microsoft/phi-4", "Standard_NC96ads_A100_v4", 4, "does not divide the 10 KV heads"),
    ],
)
def test_tp_must_divide_the_heads(hf_id, vm_size, tp, why):
    result = fit(hf_id, vm_size, tp)
    assert not result.fits and result.problem_kind == "tp" and why in result.problem
    same_vm = [s for s in result.suggestions if s.kind == "tp"]
    assert same_vm and MODELS[hf_id].tp_problem(same_vm[0].value) is None


def test_kv_heads_are_replicated_when_tp_exceeds_them():
    qwen = MODELS["Qwen/Qwen2.5-7B-Instruct"]  # 4 KV heads, 28 attention heads
    assert [qwen.kv_heads_per_gpu(tp) for tp in (1, 2, 4, 28)] == [4, 2, 1, 1]
    assert qwen.tp_problem(28) is None
    assert "not a multiple of the 4 KV heads" in qwen.tp_problem(14)
    assert "does not divide the 28 attention heads" in qwen.tp_problem(8)
    assert fit_on_memory(qwen, 80, 4).kv_bytes_per_token_per_gpu == fit_on_memory(qwen, 80, 28).kv_bytes_per_token_per_gpu


@pytest.mark.parametrize(
    "vm_size, tp, mig_profile, why",
    [
        (A100_80_X1, 2, None, "tp 2 needs 2 GPUs on one node; Standard_NC24ads_A100_v4 has 1"),
        (A100_80_X4, 2, "MIG3g", "a MIG slice serves tp 1 only"),
        ("Standard_NC6s_v3", 1, None, "Standard_NC6s_v3 is retired (2025-09-30)"),
    ],
)
def test_vm_level_refusals(vm_size, tp, mig_profile, why):
    result = fit(LLAMA_8B, vm_size, tp, mig_profile=mig_profile, max_model_len=8192)
    assert not result.fits and result.problem_kind == "vm" and why in result.problem
    assert result.suggestions, "a size or setting that works is offered"


def test_mig_slice_uses_the_slice_memory():
    assert models.mig_slice_gb("1g.10gb") == 10 and models.mig_slice_gb("3g.47gb") == 47
    small = fit(LLAMA_8B, A100_80_X1, mig_profile="MIG2g", max_model_len=8192)
    assert small.gpu == "A100-80GB MIG 2g.20gb" and small.gpu_memory_gib == pytest.approx(20e9 / GIB)
    assert small.replicas_per_vm == 3 and small.gpu_share == pytest.approx(1 / 3)
    assert not small.fits and small.problem_kind == "kv", "the weights load; the rest of the slice holds under 8192 tokens"
    assert (small.suggestions[0].kind, small.suggestions[0].value) == ("mig_profile", "MIG3g")
    assert fit(LLAMA_8B, A100_80_X1, mig_profile="MIG3g", max_model_len=8192).fits
    with pytest.raises(ValueError, match="does not support MIG"):
        fit(LLAMA_8B, "Standard_NC4as_T4_v3", mig_profile="MIG1g")


def test_sliding_window_layers_hold_at_most_the_window():
    oss = MODELS["openai/gpt-oss-20b"]
    per_layer = 2 * 8 * 64 * 2
    assert models.sequence_bytes(oss, 131072) == per_layer * (12 * 131072 + 12 * 128)
    assert models.sequence_bytes(oss, 100) == per_layer * 24 * 100
    assert oss.kv_bytes_per_token() == per_layer * 24


@pytest.mark.parametrize(
    "kwargs",
    [
        {"tp": 0},
        {"gpu_memory_utilization": 0},
        {"gpu_memory_utilization": 1.2},
        {"dtype": "fp4"},
        {"kv_cache_dtype": "int8"},
        {"max_num_seqs": 0},
        {"max_num_batched_tokens": 0},
        {"vllm_version": "latest"},
    ],
)
def test_bad_arguments_raise(kwargs):
    with pytest.raises(ValueError):
        fit(LLAMA_8B, A100_80_X1, **kwargs)


# --- fit_options ---------------------------------------------------------------------------------


def test_fit_options_lists_every_current_size_that_serves_the_model_cheapest_first():
    options = fit_options(LLAMA_8B, 8192)
    assert options and all(o.fits for o in options)
    prices = [o.price_usd_per_hour for o in options]
    priced = [p for p in prices if p is not None]
    assert priced == sorted(priced) and prices[: len(priced)] == priced, "unpriced last"
    assert not {o.vm_size for o in options} & {n for n, s in catalog.skus().items() if s.retired}
    assert all(o.tp <= catalog.get_sku(o.vm_size).gpus for o in options)
    assert {o.tp for o in options} == {1, 2, 4, 8}
    assert any(o.mig_profile for o in options) and any(o.gpu.startswith("MI300X") for o in options)
    first = options[0]
    assert (first.vm_size, first.price_usd_per_hour) == ("Standard_NV36ads_A10_v5", 3.2), "the cheapest size that holds it"
    a100 = [o.mig_profile for o in options if o.vm_size == A100_80_X1]
    assert a100[0] == "MIG3g" and a100[-1] is None, "a smaller share of the same VM first"
    for a, b in itertools.pairwise(options):
        if a.price_usd_per_hour == b.price_usd_per_hour:
            assert a.gpu_share <= b.gpu_share


def test_fit_options_uses_vgpu_memory_per_vm():
    options = {o.vm_size for o in fit_options("microsoft/Phi-4-mini-instruct", 4096)}
    assert "Standard_NV18ads_A10_v5" in options  # 12 GB of a vGPU
    assert not options & {"Standard_NV6ads_A10_v5", "Standard_NV12ads_A10_v5"}


def test_fit_options_all_includes_the_refused_with_reasons():
    every = fit_options(LLAMA_70B, fitting_only=False)
    assert any(not o.fits and o.problem for o in every) and any(o.fits for o in every)


# --- properties ----------------------------------------------------------------------------------

CATALOG_MODELS = sorted(MODELS)
SIZES = catalog.current_sizes()
custom_models = st.builds(
    ModelFactsArgs,
    hf_id=st.just("me/custom"),
    params_b=st.floats(0.1, 500),
    layers=st.integers(1, 128),
    kv_heads=st.sampled_from([1, 2, 4, 8, 16, 32]),
    head_dim=st.sampled_from([64, 80, 128, 256]),
    max_context=st.integers(1024, 262144),
)
any_model = st.one_of(st.sampled_from(CATALOG_MODELS).map(MODELS.get), custom_models)


@settings(max_examples=200, deadline=None)
@given(any_model, st.sampled_from(SIZES), st.sampled_from([1, 2, 4, 8]), st.integers(1, 262144), st.integers(1, 262144))
def test_more_context_never_increases_full_sequences_and_kv_capacity_ignores_context(model, vm_size, tp, a, b):
    short, long_ = sorted((min(a, model.max_context), min(b, model.max_context)))
    at_short = fit(model, vm_size, tp, max_model_len=short, suggest=False)
    at_long = fit(model, vm_size, tp, max_model_len=long_, suggest=False)
    assert at_long.full_length_sequences <= at_short.full_length_sequences
    assert at_long.kv_tokens == at_short.kv_tokens


@settings(max_examples=200, deadline=None)
@given(any_model, st.floats(4, 300), st.sampled_from(models.WEIGHT_DTYPES))
def test_more_tp_never_increases_weights_per_gpu(model, memory_gb, dtype):
    weights = [fit_on_memory(model, memory_gb, tp, dtype=dtype).weights_gib_per_gpu for tp in (1, 2, 4, 8)]
    assert weights == sorted(weights, reverse=True)


@settings(max_examples=200, deadline=None)
@given(any_model, st.floats(4, 300), st.sampled_from([1, 2, 4, 8]), st.integers(1, 131072))
def test_fp8_never_uses_more_memory_than_bf16(model, memory_gb, tp, length):
    bf16 = fit_on_memory(model, memory_gb, tp, dtype="bfloat16", max_model_len=length)
    fp8 = fit_on_memory(model, memory_gb, tp, dtype="fp8", kv_cache_dtype="fp8", max_model_len=length)
    assert fp8.weights_gib_per_gpu <= bf16.weights_gib_per_gpu
    assert fp8.kv_bytes_per_token_per_gpu <= bf16.kv_bytes_per_token_per_gpu
    assert fp8.kv_tokens >= bf16.kv_tokens and fp8.full_length_sequences >= bf16.full_length_sequences
    assert fp8.fits or not bf16.fits


@settings(max_examples=200, deadline=None)
@given(any_model, st.floats(4, 300), st.sampled_from([1, 2, 4, 8]), st.integers(1, 262144))
def test_the_numbers_add_up(model, memory_gb, tp, length):
    result = fit_on_memory(model, memory_gb, tp, max_model_len=length)
    total = result.weights_gib_per_gpu + result.overhead_gib + result.kv_budget_gib_per_gpu
    assert math.isclose(total, result.budget_gib_per_gpu, rel_tol=1e-9)
    pool = max(result.kv_budget_gib_per_gpu, 0) * GIB
    # vLLM's blocks never hold more than the pool, and miss at most one block of every layer.
    block = result.kv_block_size * result.kv_bytes_per_token_per_gpu
    assert (
        result.kv_tokens * result.kv_bytes_per_token_per_gpu
        <= pool
        < (result.kv_tokens + result.kv_block_size) * (result.kv_bytes_per_token_per_gpu) + block
        or result.kv_tokens == 0
    )
    if result.fits:
        assert result.kv_needed_gib <= result.kv_budget_gib_per_gpu
        assert result.full_length_sequences == int(result.max_concurrency) >= 1
        assert result.longest_request_tokens >= length


def test_a_services_own_max_num_seqs_sizes_its_profile_run():
    """Before: VllmService's fit used vLLM's default batch even when the service set --max-num-seqs."""
    from types import SimpleNamespace

    from aks_gpu_inference.components.serving.vllm_checks import service_fit
    from aks_gpu_inference.components.serving.vllm_service_args import VllmServiceArgs

    pool = SimpleNamespace(sku=catalog.get_sku("Standard_NC40ads_H100_v5"), mig_profile=None)
    base = {"name": "llama", "model": "meta-llama/Llama-3.1-8B-Instruct", "max_model_len": 8192}
    default = service_fit(VllmServiceArgs(**base), pool)
    small = service_fit(VllmServiceArgs(**base, max_num_seqs=64), pool)
    assert small.kv_tokens > default.kv_tokens
    assert small.kv_tokens == models.fit(base["model"], pool.sku.name, 1, max_model_len=8192, max_num_seqs=64).kv_tokens


def test_a_service_fits_the_release_its_image_names_and_its_own_flags():
    """VllmService passes its image's vLLM release, and --enforce-eager, --max-num-batched-tokens and
    --disable-custom-all-reduce from extra_args, to the fit."""
    from types import SimpleNamespace

    from aks_gpu_inference.components.serving.vllm_checks import service_fit
    from aks_gpu_inference.components.serving.vllm_service_args import VllmServiceArgs

    pool = SimpleNamespace(sku=catalog.get_sku(H100_X8), mig_profile=None)
    base = {"name": "llama", "model": LLAMA_70B, "max_model_len": 8192, "tensor_parallel_size": 2}
    pinned = service_fit(VllmServiceArgs(**base), pool)
    assert pinned.vllm_version == models.PINNED_VLLM_VERSION and pinned.cuda_graph_gib > 0
    older = service_fit(VllmServiceArgs(**base, image="vllm/vllm-openai:v0.10.1"), pool)
    assert older.vllm_version == "0.10.1" and older.cuda_graph_gib == 0, "CUDA graphs count from 0.21"
    digest = service_fit(VllmServiceArgs(**base, image="vllm/vllm-openai@sha256:" + "a" * 64), pool)
    assert digest.vllm_version == models.PINNED_VLLM_VERSION, "a digest names no release: the pinned one"
    flags = ["--enforce-eager", "--max-num-batched-tokens=4096", "--disable-custom-all-reduce"]
    tuned = service_fit(VllmServiceArgs(**base, extra_args=flags), pool)
    assert (tuned.cuda_graphs, tuned.max_num_batched_tokens, tuned.custom_all_reduce) == (False, 4096, False)
