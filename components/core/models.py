"""Model facts and the GPU memory fit: will a model load under vLLM on a catalog size, and how much
KV cache is left for requests?

Facts live in ``models.json`` beside this module, addressed by Hugging Face id, each row with its
``source``; ``ModelFactsArgs`` takes the same numbers for any other model. The fit models the vLLM
release the project pins (``PINNED_VLLM_VERSION``). Per GPU of a replica of tensor-parallel size tp::

    budget      = device GiB (gpu_memory.json) x gpu_memory_utilization   (a MIG slice: its own GB, tp 1)
    weights     = (weights_gb if pre-quantized and dtype auto, else params x bytes(dtype)
                   + embeddings kept in bf16 by fp8/int4) / tp
    overhead    = non-torch (NCCL, custom all-reduce when tp > 1)
                  + activation peak of the profile run (grows with vocabulary x max_num_seqs)
                  + MoE workspace (grows with the expert weights on the GPU)
                  + CUDA graphs (grow with the model; vLLM >= 0.21 reserves them inside the budget)
    kv_budget   = budget - weights - overhead
    kv_per_tok  = 2 x layers x max(1, kv_heads / tp) x head_dim x bytes(kv dtype)
    sequence    = full-attention layers x tokens + sliding layers x min(tokens, window)   (in KV bytes)
    kv_tokens   = kv_budget / full-attention bytes per token;  sequences = kv_budget / sequence

``FORMULA`` says the same in README-ready Markdown; ``bench/fit_accuracy.py`` compares it with
published vLLM logs (``bench/fit_reference_points.json``). This module imports nothing from Pulumi
so that ``aks-gpu fit`` stays fast.
"""

from __future__ import annotations

import difflib
import json
import math
import textwrap
from dataclasses import asdict, dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from . import catalog
from .errors import ConfigError, FieldProblem, validation_problems

GB = 1e9
"""Bytes in a GB: the catalog prints GPU memory the way Azure's size pages do."""

GIB = 2**30
"""Bytes in a GiB: vLLM logs memory in GiB."""

PINNED_VLLM_VERSION = "0.32.0"
"""vLLM release the overhead terms model: ``VllmServiceArgs.image`` defaults to
``vllm/vllm-openai:v0.32.0`` (components/serving/vllm_service.py, not imported here: it pulls in Pulumi)."""

NON_TORCH_GIB = 0.25
"""Per-GPU memory outside PyTorch's allocator at tp 1 (cuBLAS workspaces, allocator slack), which vLLM
counts against the budget. Published: 0.24-0.27 GiB on H100 (vLLM 0.19, llm-d-planner#205), 0.26 GiB on
A100 80GB (vLLM 0.31), 0.13 GiB (vLLM 0.11, llm-d-benchmark)."""

NON_TORCH_TP_GIB = 2.1
"""The same with tensor parallelism: NCCL communicators and custom all-reduce buffers. Published:
2.06-2.21 GiB at tp 2 and 4 on H100 (vLLM 0.19), 1.82-2.10 GiB at tp 8 on A100 (vllm#18446)."""

ACTIVATION_BASE_GIB = 0.36
"""Peak activation of vLLM's profile run that does not depend on the vocabulary (the dummy forward pass
of ``max_num_batched_tokens`` tokens). Fitted on vLLM 0.19's per-model figures (llm-d-planner#205):
CodeLlama-7B (vocabulary 32,016) peaks at 0.77 GiB, gemma-2 (256,000) at 3.62-3.66 GiB, whatever the
model's size."""

SAMPLER_BYTES_PER_LOGIT = 23.0
"""Bytes per (scheduled sequence x vocabulary entry) that the profile run's dummy sampler holds at its
peak (fp32 logits and the sort/softmax copies of top-k/top-p), so the activation term is
``ACTIVATION_BASE_GIB + max_num_seqs x vocab_size x SAMPLER_BYTES_PER_LOGIT``. Published figures per
logit: ~37 bytes in vLLM 0.10-0.11 (Llama 4.76 GiB, Qwen3 5.56-5.64 GiB, gpt-oss 7.38 GiB at 1024
sequences, llm-d-benchmark), ~13 bytes in vLLM 0.19 (Llama 1.89 GiB, gpt-oss 2.87 GiB). vLLM 0.31 on
A100 (256 sequences) peaked at 1.21 GiB for Llama-3.1-8B, which this value reproduces; between the
two older releases, it keeps the refusals on the safe side."""

MOE_WORKSPACE_FRACTION = 0.008
"""Extra activation of a mixture of experts (fused-MoE intermediate caches and kernel workspaces) per
GiB of weights on the GPU. vLLM 0.19 on H100: Mixtral-8x7B tp 2 +0.44 GiB over a dense model of its
vocabulary, Qwen3-30B-A3B +0.36, DeepSeek-V2-Lite +0.25, Qwen1.5-MoE-A2.7B +0.26."""

CUDA_GRAPH_BASE_GIB = 0.2
CUDA_GRAPH_GIB_PER_B_PARAMS = 0.008
"""CUDA-graph pool per GPU = ``CUDA_GRAPH_BASE_GIB + CUDA_GRAPH_GIB_PER_B_PARAMS x params_b`` (all
parameters; graphs hold activations of every layer, replicated across tp ranks). Since vLLM 0.21 the
profiler estimates the pool and reserves it inside ``gpu_memory_utilization`` ("CUDA graph memory
profiling is enabled (default since v0.21.0)"); vLLM 0.31 reserved 0.23 GiB for Llama-3.1-8B on A100.
Not reserved with ``--enforce-eager``."""

CUDA_GRAPHS_IN_BUDGET_SINCE = (0, 21)
"""First vLLM release whose profiler reserves CUDA-graph memory inside the budget."""

DEFAULT_VOCAB_SIZE = 152_064
"""Vocabulary assumed for a model whose facts omit ``vocab_size`` (Qwen2.5's; Llama 3 has 128,256)."""

RUNTIME_OVERHEAD_GIB = round(NON_TORCH_GIB + ACTIVATION_BASE_GIB + CUDA_GRAPH_BASE_GIB, 2)
"""The fixed part of the per-GPU overhead at tp 1 (non-torch, activation base, CUDA-graph base); the
vocabulary, MoE and model-size terms come on top (see ``FORMULA``)."""

TP_OVERHEAD_GIB = round(NON_TORCH_TP_GIB - NON_TORCH_GIB, 2)
"""Extra fixed per-GPU memory with tensor parallelism (NCCL and custom all-reduce buffers)."""

DEFAULT_GPU_MEMORY_UTILIZATION = 0.9
"""``VllmServiceArgs.gpu_memory_utilization``'s default, passed to vLLM explicitly (vLLM's own default
was 0.9 and is 0.92 in current releases)."""

VLLM_MAX_NUM_SEQS_LARGE_GPU = 1024
VLLM_MAX_NUM_SEQS = 256
"""vLLM's default ``--max-num-seqs``: 1024 on GPUs with at least 70 GiB that are not A100s (H100, H200,
MI300X), else 256 (vllm tests/engine/test_arg_utils.py ``test_defaults_with_usage_context``)."""

WARN_BELOW_SEQUENCES = 4
"""Warn when fewer full-length sequences than this fit at once: requests would queue."""

TP_SIZES = (1, 2, 4, 8)
"""Tensor-parallel sizes ``fit_options`` tries (within one VM)."""

WEIGHT_BYTES = {"bfloat16": 2.0, "float16": 2.0, "fp8": 1.0, "int4": 0.5}
"""Bytes per parameter for each weight dtype."""

WEIGHT_DTYPES = ("auto", *WEIGHT_BYTES)
"""Accepted ``dtype`` values; ``auto`` is the checkpoint as published."""

KV_CACHE_DTYPES = ("auto", "fp8")
"""Accepted ``kv_cache_dtype`` values; ``auto`` stores the KV cache in the model's dtype."""


@cache
def gpu_memory_table() -> dict[str, dict]:
    """``gpu_memory.json``: per catalog ``gpu_model``, the memory the device reports (``device_gib``) and its source."""
    return json.loads(Path(__file__).with_name("gpu_memory.json").read_text())["gpus"]


def _formula() -> str:
    devices = ", ".join(f"{gpu} {row['device_gib']:g}" for gpu, row in gpu_memory_table().items())
    bullets = [
        f"Budget = the memory the GPU reports to CUDA, in GiB (`components/core/gpu_memory.json`: {devices}) x "
        f"`gpu_memory_utilization` (default {DEFAULT_GPU_MEMORY_UTILIZATION}). A vGPU size gets its share of the "
        'GPU; a MIG slice counts the GB in its name ("3g.40gb" -> 40e9 bytes) and serves tp 1; a GPU without a '
        "published figure counts its catalog GB as 1e9 bytes.",
        "Weights = weight bytes / tp: the row's `weights_gb` for a pre-quantized checkpoint with dtype `auto`, "
        "else parameters x bytes per parameter (bfloat16/float16 2, fp8 1, int4 0.5) plus, for fp8/int4, the "
        "input and output embeddings (2 x vocab x heads x head_dim parameters) that the quantizers keep in the "
        "model's dtype. Quantization scales are not counted.",
        f"Overhead = non-torch memory ({NON_TORCH_GIB} GiB at tp 1, {NON_TORCH_TP_GIB} GiB with tp > 1: NCCL and "
        f"custom all-reduce) + the activation peak of vLLM's profile run, {ACTIVATION_BASE_GIB} GiB + max_num_seqs "
        f"x vocab x {SAMPLER_BYTES_PER_LOGIT:g} bytes (the dummy sampler's fp32 logits and their sort/softmax "
        f"copies; vLLM's default max_num_seqs is {VLLM_MAX_NUM_SEQS_LARGE_GPU} on GPUs of 70 GiB or more other "
        f"than the A100, else {VLLM_MAX_NUM_SEQS}) + for a mixture of experts {MOE_WORKSPACE_FRACTION:g} x its "
        f"weights per GPU (fused-MoE workspaces) + CUDA graphs, {CUDA_GRAPH_BASE_GIB} GiB + "
        f"{CUDA_GRAPH_GIB_PER_B_PARAMS:g} GiB per billion parameters, which vLLM reserves inside the budget "
        "since 0.21.",
        "KV budget = budget - weights - overhead. The model loads when it is positive.",
        "KV bytes per token = 2 (K and V) x layers x KV heads on the GPU x head_dim x KV dtype bytes (auto = "
        "the model's dtype, 2; fp8 = 1). Each GPU holds kv_heads / tp heads; with tp > kv_heads every GPU holds "
        "one replicated head.",
        "Sliding-window layers hold at most `sliding_window` tokens per sequence. KV tokens = KV budget / "
        "per-token bytes of the full-attention layers; full-length sequences = KV budget / (bytes of one "
        "sequence of `max_model_len` tokens).",
        "It fits when tp divides the attention heads and the KV heads (or KV heads divide tp), the context is "
        "within the model's maximum, the weights load and at least one full-length sequence fits. Fewer than "
        f"{WARN_BELOW_SEQUENCES} full-length sequences is a warning: requests queue.",
        "Checked by `bench/fit_accuracy.py` against published vLLM logs (`bench/fit_reference_points.json`): "
        "the KV budget within 8% wherever vLLM left at least a quarter of its budget for the KV cache, and "
        "vLLM's fits / does-not-fit verdict where it left less or none.",
    ]
    lines = [f"Memory fit (vLLM {PINNED_VLLM_VERSION}, one replica of tensor-parallel size `tp` on one VM), per GPU:", ""]
    lines += [textwrap.fill(b, width=98, initial_indent="- ", subsequent_indent="  ", break_on_hyphens=False) for b in bullets]
    return "\n".join(lines) + "\n"


FORMULA = _formula()
"""The fit formula as README-ready Markdown."""


class UnknownModelError(ValueError):
    """Raised for a model id the catalog does not know."""


class ModelFactsArgs(BaseModel):
    """The numbers the fit needs about a model; the values of its Hugging Face ``config.json``.

    Every number is finite and at most a bound (``le=``) far above any published model, so a typo or
    a hostile facts file is refused instead of overflowing the fit's float arithmetic."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    hf_id: str = Field(min_length=1)
    """Hugging Face id, e.g. ``meta-llama/Llama-3.1-8B-Instruct``. Required."""

    params_b: float = Field(gt=0, le=100_000, allow_inf_nan=False)
    """Parameters in billions (all experts for a mixture of experts), at most 100,000. Required."""

    active_params_b: float | None = Field(None, gt=0, le=100_000, allow_inf_nan=False)
    """Parameters active per token, for a mixture of experts. Default None (dense); informational."""

    layers: int = Field(gt=0, le=10_000)
    """Transformer layers (``num_hidden_layers``), at most 10,000. Required."""

    kv_heads: int = Field(gt=0, le=10_000)
    """Key/value heads (``num_key_value_heads``), at most 10,000. Required."""

    attention_heads: int | None = Field(None, gt=0, le=10_000)
    """Query heads (``num_attention_heads``); vLLM needs them divisible by tp. Default None: only the
    KV-head rule is checked."""

    head_dim: int = Field(gt=0, le=65_536)
    """Dimension per head (``head_dim``, or ``hidden_size / num_attention_heads``), at most 65,536. Required."""

    max_context: int = Field(gt=0, le=100_000_000)
    """Longest context the model supports (``max_position_embeddings``), at most 100,000,000 tokens. Required."""

    dtype: Literal["bfloat16", "float16"] = "bfloat16"
    """Dtype of the published weights and of an ``auto`` KV cache. Default bfloat16, as most
    checkpoints ship."""

    weights_gb: float | None = Field(None, gt=0, le=1_000_000, allow_inf_nan=False)
    """On-GPU weights in GB for a pre-quantized checkpoint (e.g. MXFP4), used with dtype ``auto``.
    Default None: parameters x bytes of ``dtype``."""

    vocab_size: int | None = Field(None, gt=0, le=10_000_000)
    """Vocabulary (``vocab_size``): the profile run's sampler and the bf16 embeddings of fp8/int4 weights
    scale with it. Default None: ``DEFAULT_VOCAB_SIZE`` for the overhead, no embedding correction."""

    sliding_window: int | None = Field(None, gt=0, le=100_000_000)
    """Tokens a sliding-window layer keeps per sequence. Default None (no sliding window)."""

    sliding_layers: int = Field(0, ge=0, le=10_000)
    """How many layers use the sliding window. Default 0."""

    kaito_preset: str | None = None
    """KAITO preset name serving this model, if any. Default None."""

    source: str = "user-supplied"
    """Where the numbers come from. Default "user-supplied"."""

    @model_validator(mode="after")
    def _consistent(self) -> ModelFactsArgs:
        if self.sliding_layers > self.layers:
            raise FieldProblem("sliding_layers", self.sliding_layers, f"more than the model's {self.layers} layers")
        if self.sliding_layers and self.sliding_window is None:
            raise FieldProblem("sliding_window", None, "required when sliding_layers > 0")
        if self.sliding_window is not None and not self.sliding_layers:
            raise FieldProblem("sliding_layers", 0, "say how many layers use sliding_window")
        if self.active_params_b is not None and self.active_params_b > self.params_b:
            raise FieldProblem("active_params_b", self.active_params_b, f"more than params_b ({self.params_b})")
        if self.attention_heads is not None and self.attention_heads % self.kv_heads:
            raise FieldProblem("attention_heads", self.attention_heads, f"not a multiple of kv_heads ({self.kv_heads})")
        return self

    def weight_bytes(self, dtype: str = "auto") -> float:
        """Bytes of all weights in ``dtype`` (``auto``: ``weights_gb`` if given, else the model's dtype).

        fp8 and int4 quantizers keep the input and output embeddings in the model's dtype; they are
        counted at that size when the vocabulary and the attention heads are known.
        """
        _check_choice("dtype", dtype, WEIGHT_DTYPES)
        if dtype == "auto":
            return self.weights_gb * GB if self.weights_gb else self.params_b * 1e9 * WEIGHT_BYTES[self.dtype]
        kept = 0.0
        if WEIGHT_BYTES[dtype] < WEIGHT_BYTES[self.dtype] and self.vocab_size and self.attention_heads:
            kept = 2 * self.vocab_size * self.attention_heads * self.head_dim * (WEIGHT_BYTES[self.dtype] - WEIGHT_BYTES[dtype])
        return self.params_b * 1e9 * WEIGHT_BYTES[dtype] + kept

    @property
    def is_moe(self) -> bool:
        """True for a mixture of experts (``active_params_b`` given)."""
        return self.active_params_b is not None

    def kv_dtype_bytes(self, kv_cache_dtype: str = "auto") -> int:
        """Bytes per KV element: the model's dtype for ``auto``, 1 for fp8."""
        _check_choice("kv_cache_dtype", kv_cache_dtype, KV_CACHE_DTYPES)
        return 1 if kv_cache_dtype == "fp8" else int(WEIGHT_BYTES[self.dtype])

    def kv_bytes_per_token(self, kv_cache_dtype: str = "auto") -> int:
        """KV cache bytes one token costs across all layers of the whole model (KAITO's bytesPerToken)."""
        return 2 * self.layers * self.kv_heads * self.head_dim * self.kv_dtype_bytes(kv_cache_dtype)

    def kv_heads_per_gpu(self, tp: int) -> int:
        """KV heads each GPU holds at tensor-parallel size ``tp`` (one, replicated, when tp > kv_heads)."""
        return max(1, math.ceil(self.kv_heads / tp))

    def tp_problem(self, tp: int) -> str | None:
        """Why vLLM refuses tensor-parallel size ``tp`` for this model, or None."""
        if self.attention_heads is not None and self.attention_heads % tp:
            return f"tp {tp} does not divide the {self.attention_heads} attention heads (vLLM requires it)"
        if tp <= self.kv_heads and self.kv_heads % tp:
            return f"tp {tp} does not divide the {self.kv_heads} KV heads (vLLM requires it)"
        if tp > self.kv_heads and tp % self.kv_heads:
            return f"tp {tp} is not a multiple of the {self.kv_heads} KV heads (vLLM replicates them evenly)"
        return None


def _check_choice(name: str, value: str, accepted: tuple[str, ...]) -> None:
    if value not in accepted:
        raise ValueError(f"{name}={value!r}: accepted: {', '.join(accepted)}")


@cache
def models() -> dict[str, ModelFactsArgs]:
    """Every model in the catalog, by Hugging Face id."""
    rows = json.loads(Path(__file__).with_name("models.json").read_text())["models"]
    result = {}
    for index, row in enumerate(rows):
        try:
            facts = ModelFactsArgs.model_validate(row)
        except ValidationError as err:
            raise ConfigError(f"models.json row {index} is invalid", validation_problems(err)) from None
        result[facts.hf_id] = facts
    return result


def get_model(name: str) -> ModelFactsArgs:
    """Look up a model by Hugging Face id (any case) or KAITO preset name; the error suggests close ids."""
    catalog_models = models()
    if name in catalog_models:
        return catalog_models[name]
    for facts in catalog_models.values():
        if name.lower() in (facts.hf_id.lower(), (facts.kaito_preset or "").lower()):
            return facts
    # Match the name against whole ids, the part after the organisation, and KAITO preset names.
    keys: dict[str, str] = {}
    for hf_id, facts in catalog_models.items():
        for key in (hf_id, hf_id.split("/", 1)[-1], facts.kaito_preset):
            if key:
                keys.setdefault(key.lower(), hf_id)
    close = dict.fromkeys(keys[c] for c in difflib.get_close_matches(name.lower(), keys, n=5, cutoff=0.6))
    hint = f"; did you mean {' or '.join(repr(c) for c in list(close)[:3])}?" if close else "."
    raise UnknownModelError(
        f"{name!r} is not a model in the catalog (components/core/models.json){hint} For any other model, give its "
        "facts from its config.json as ModelFactsArgs (hf_id, params_b, layers, kv_heads, head_dim, max_context; "
        f"optional attention_heads, weights_gb, sliding_window, sliding_layers). Known: {', '.join(catalog_models)}"
    )


@dataclass(frozen=True)
class Suggestion:
    """One change that, by itself, makes the model fit."""

    kind: Literal["tp", "mig_profile", "vm_size", "max_model_len", "dtype", "kv_cache_dtype"]
    """Which setting to change."""

    value: int | str
    """The new value of that setting."""

    text: str
    """The change in words, with what it gives."""


@dataclass(frozen=True)
class FitResult:
    """How one model fits one GPU configuration; every memory figure is per GPU unless named otherwise."""

    model: str
    """Hugging Face id."""
    vm_size: str | None
    """Catalog VM size, or None for a bare GPU memory figure."""
    gpu: str
    """GPU model, with the MIG slice when on one (e.g. ``A100-80GB MIG 3g.40gb``)."""
    tp: int
    """Tensor-parallel size: GPUs one replica uses."""
    mig_profile: str | None
    """AKS ``gpuInstanceProfile`` (e.g. MIG3g) when on a MIG slice, else None."""
    replicas_per_vm: int
    """Replicas of this configuration one VM holds (GPUs // tp, or MIG slices)."""
    max_model_len: int
    """Context length checked, in tokens."""
    dtype: str
    """Weight dtype asked for."""
    kv_cache_dtype: str
    """KV cache dtype asked for."""
    gpu_memory_utilization: float
    """Fraction of GPU memory vLLM may use."""
    gpu_memory_gib: float
    """Memory of the GPU or MIG slice."""
    budget_gib_per_gpu: float
    """GPU memory x utilization."""
    weights_gib_per_gpu: float
    """Weights one GPU holds."""
    overhead_gib: float
    """Runtime overhead counted per GPU: the sum of the four terms below."""
    non_torch_gib: float
    """Memory outside PyTorch's allocator (cuBLAS, NCCL and custom all-reduce buffers)."""
    activation_gib: float
    """Activation peak of vLLM's profile run, including the MoE workspace."""
    cuda_graph_gib: float
    """CUDA-graph pool vLLM reserves inside the budget (0 with CUDA graphs off)."""
    max_num_seqs: int
    """Sequences vLLM schedules at once (its default for the GPU unless given); sizes the sampler term."""
    kv_budget_gib_per_gpu: float
    """What is left for the KV cache (negative when the weights do not load)."""
    kv_bytes_per_token: int
    """KV bytes per token for the whole model (all layers, all KV heads)."""
    kv_bytes_per_token_per_gpu: int
    """KV bytes per token on one GPU (all layers, its share of KV heads)."""
    kv_tokens: int
    """Tokens of full-attention KV cache one replica holds; independent of the context length."""
    full_length_sequences: int
    """Sequences of ``max_model_len`` tokens that fit at once."""
    price_usd_per_hour: float | None
    """List price of the VM (not of the replica), or None when the catalog has none."""
    price_usd_per_month: float | None
    """The same for 730 hours."""
    problem: str | None = None
    """Why it does not fit, or None."""
    problem_kind: Literal["vm", "tp", "context", "weights", "kv"] | None = None
    """Which check failed: the VM (GPU count, MIG, retired), tp vs heads, context, weights, KV cache."""
    warning: str | None = None
    """Set when it fits but fewer than ``warn_below_sequences`` full-length sequences do."""
    suggestions: tuple[Suggestion, ...] = field(default_factory=tuple)
    """Single changes that make it fit, when it does not."""

    @property
    def fits(self) -> bool:
        """True when the model loads and at least one full-length sequence fits."""
        return self.problem is None

    @property
    def gpu_share(self) -> float:
        """GPUs one replica occupies (a fraction for a MIG slice)."""
        return self.tp if self.mig_profile is None else 1 / catalog.mig_slices_per_gpu(self.mig_profile)

    def as_dict(self) -> dict:
        """Plain JSON-ready values, including ``fits``; GiB and dollar figures rounded to 4 decimals."""
        values = {k: round(v, 4) if isinstance(v, float) else v for k, v in asdict(self).items()}
        return {**values, "fits": self.fits}


def _resolve(model: ModelFactsArgs | str) -> ModelFactsArgs:
    return model if isinstance(model, ModelFactsArgs) else get_model(model)


def _check_args(tp: int, max_model_len: int | None, utilization: float, dtype: str, kv_cache_dtype: str) -> None:
    if tp < 1:
        raise ValueError(f"tp={tp!r}: must be at least 1")
    if max_model_len is not None and max_model_len < 1:
        raise ValueError(f"max_model_len={max_model_len!r}: must be at least 1")
    if not 0 < utilization <= 1:
        raise ValueError(f"gpu_memory_utilization={utilization!r}: must be in (0, 1]")
    _check_choice("dtype", dtype, WEIGHT_DTYPES)
    _check_choice("kv_cache_dtype", kv_cache_dtype, KV_CACHE_DTYPES)


def _per_token_bytes(model: ModelFactsArgs, tp: int, kv_cache_dtype: str) -> tuple[int, int]:
    """KV bytes per token on one GPU: (full-attention layers, sliding-window layers)."""
    per_layer = 2 * model.kv_heads_per_gpu(tp) * model.head_dim * model.kv_dtype_bytes(kv_cache_dtype)
    return per_layer * (model.layers - model.sliding_layers), per_layer * model.sliding_layers


def sequence_bytes(model: ModelFactsArgs, tokens: int, tp: int = 1, kv_cache_dtype: str = "auto") -> int:
    """KV bytes one sequence of ``tokens`` tokens holds on one GPU (sliding layers keep at most the window)."""
    full, sliding = _per_token_bytes(model, tp, kv_cache_dtype)
    return full * tokens + sliding * min(tokens, model.sliding_window or tokens)


def device_memory_gib(gpu_model: str, catalog_gb: float, gpu_fraction: float = 1.0) -> float:
    """GiB a GPU of the catalog reports to CUDA: ``gpu_memory.json``, scaled by a vGPU's share; without a
    published figure, the catalog's GB read as 1e9 bytes (which is less than any HBM GPU reports)."""
    row = gpu_memory_table().get(gpu_model)
    if row is None:
        return catalog_gb * GB / GIB
    return row["device_gib"] * gpu_fraction


def vllm_default_max_num_seqs(gpu: str, device_gib: float) -> int:
    """vLLM's default ``--max-num-seqs`` for a GPU: 1024 with at least 70 GiB unless it is an A100, else 256."""
    if device_gib >= 70 and "A100" not in gpu.upper():
        return VLLM_MAX_NUM_SEQS_LARGE_GPU
    return VLLM_MAX_NUM_SEQS


@dataclass(frozen=True)
class Overhead:
    """Per-GPU memory inside vLLM's budget that is neither weights nor KV cache, in bytes."""

    non_torch: float
    activation: float
    cuda_graphs: float

    @property
    def total(self) -> float:
        return self.non_torch + self.activation + self.cuda_graphs


def runtime_overhead(
    model: ModelFactsArgs, tp: int, weights_per_gpu: float, max_num_seqs: int, *, cuda_graphs: bool = True
) -> Overhead:
    """The overhead terms of ``FORMULA`` for ``model`` at ``tp`` with ``weights_per_gpu`` bytes on each GPU."""
    non_torch = (NON_TORCH_TP_GIB if tp > 1 else NON_TORCH_GIB) * GIB
    vocab = model.vocab_size or DEFAULT_VOCAB_SIZE
    activation = ACTIVATION_BASE_GIB * GIB + max_num_seqs * vocab * SAMPLER_BYTES_PER_LOGIT
    if model.is_moe:
        activation += MOE_WORKSPACE_FRACTION * weights_per_gpu
    graphs = (CUDA_GRAPH_BASE_GIB + CUDA_GRAPH_GIB_PER_B_PARAMS * model.params_b) * GIB if cuda_graphs else 0.0
    return Overhead(non_torch, activation, graphs)


def fit_on_memory(
    model: ModelFactsArgs | str,
    gpu_memory_gb: float,
    tp: int = 1,
    *,
    max_model_len: int | None = None,
    gpu_memory_utilization: float = DEFAULT_GPU_MEMORY_UTILIZATION,
    dtype: str = "auto",
    kv_cache_dtype: str = "auto",
    warn_below_sequences: int = WARN_BELOW_SEQUENCES,
    gpu: str = "",
    gpu_memory_gib: float | None = None,
    max_num_seqs: int | None = None,
    cuda_graphs: bool = True,
) -> FitResult:
    """Fit a model on ``tp`` GPUs of ``gpu_memory_gb`` each, outside the catalog (no price, no suggestions).

    ``max_model_len`` defaults to the model's ``max_context``, as vLLM's does. ``gpu_memory_gib`` is the
    memory the device reports, when known (it replaces ``gpu_memory_gb`` read as 1e9 bytes);
    ``max_num_seqs`` defaults to vLLM's for the GPU; ``cuda_graphs=False`` is ``--enforce-eager`` (or a
    vLLM older than 0.21, which did not reserve graph memory inside the budget).
    """
    model = _resolve(model)
    _check_args(tp, max_model_len, gpu_memory_utilization, dtype, kv_cache_dtype)
    if max_num_seqs is not None and max_num_seqs < 1:
        raise ValueError(f"max_num_seqs={max_num_seqs!r}: must be at least 1")
    length = max_model_len or model.max_context
    device_gib = gpu_memory_gib if gpu_memory_gib is not None else gpu_memory_gb * GB / GIB
    seqs = max_num_seqs or vllm_default_max_num_seqs(gpu, device_gib)
    budget = device_gib * GIB * gpu_memory_utilization
    weights = model.weight_bytes(dtype) / tp
    terms = runtime_overhead(model, tp, weights, seqs, cuda_graphs=cuda_graphs)
    overhead = terms.total
    kv_budget = budget - weights - overhead
    full, sliding = _per_token_bytes(model, tp, kv_cache_dtype)
    kv_tokens = int(max(kv_budget, 0) // (full or sliding))
    sequences = int(max(kv_budget, 0) // sequence_bytes(model, length, tp, kv_cache_dtype))

    problem, kind = model.tp_problem(tp), "tp"
    if problem is None and length > model.max_context:
        problem, kind = f"max_model_len {length} exceeds the model's maximum context of {model.max_context} tokens", "context"
    if problem is None and kv_budget <= 0:
        problem, kind = (
            f"weights ({weights / GIB:.1f} GiB) + overhead ({overhead / GIB:.1f} GiB) exceed the "
            f"{budget / GIB:.1f} GiB budget per GPU",
            "weights",
        )
    if problem is None and sequences < 1:
        problem, kind = (
            f"the {kv_budget / GIB:.2f} GiB KV budget per GPU holds {kv_tokens} tokens, less than one {length}-token sequence",
            "kv",
        )
    warning = None
    if problem is None and sequences < warn_below_sequences:
        warning = f"only {sequences} sequence(s) of {length} tokens fit at once (fewer than {warn_below_sequences})"
    return FitResult(
        model=model.hf_id,
        vm_size=None,
        gpu=gpu,
        tp=tp,
        mig_profile=None,
        replicas_per_vm=1,
        max_model_len=length,
        dtype=dtype,
        kv_cache_dtype=kv_cache_dtype,
        gpu_memory_utilization=gpu_memory_utilization,
        gpu_memory_gib=device_gib,
        budget_gib_per_gpu=budget / GIB,
        weights_gib_per_gpu=weights / GIB,
        overhead_gib=overhead / GIB,
        non_torch_gib=terms.non_torch / GIB,
        activation_gib=terms.activation / GIB,
        cuda_graph_gib=terms.cuda_graphs / GIB,
        max_num_seqs=seqs,
        kv_budget_gib_per_gpu=kv_budget / GIB,
        kv_bytes_per_token=model.kv_bytes_per_token(kv_cache_dtype),
        kv_bytes_per_token_per_gpu=full + sliding,
        kv_tokens=kv_tokens,
        full_length_sequences=sequences,
        price_usd_per_hour=None,
        price_usd_per_month=None,
        problem=problem,
        problem_kind=kind if problem else None,
        warning=warning,
    )


def mig_slice_gb(slice_name: str) -> float:
    """Memory of a MIG slice from its name: ``"1g.10gb"`` -> 10."""
    return float(slice_name.rsplit(".", 1)[1].removesuffix("gb"))


def fit(
    model: ModelFactsArgs | str,
    vm_size: str,
    tp: int = 1,
    *,
    max_model_len: int | None = None,
    gpu_memory_utilization: float = DEFAULT_GPU_MEMORY_UTILIZATION,
    dtype: str = "auto",
    kv_cache_dtype: str = "auto",
    mig_profile: str | None = None,
    warn_below_sequences: int = WARN_BELOW_SEQUENCES,
    max_num_seqs: int | None = None,
    suggest: bool = True,
) -> FitResult:
    """Fit a model on one VM of a catalog size with tensor-parallel size ``tp`` (or on one MIG slice).

    The budget is the memory the VM's GPU reports (``gpu_memory.json``). When it does not fit and
    ``suggest`` is set, ``suggestions`` lists single changes that fit: more GPUs of the same VM, fp8 KV
    cache, fp8 weights, a shorter context, the cheapest other size.
    """
    model = _resolve(model)
    _check_args(tp, max_model_len, gpu_memory_utilization, dtype, kv_cache_dtype)
    sku = catalog.get_sku(vm_size)
    if mig_profile is None:
        memory_gb, gpu, replicas = sku.gpu_memory_gb, sku.gpu_model, max(1, sku.gpus // tp)
        memory_gib = _device_gib(sku)
    else:
        slice_name = catalog.mig_resource_name(vm_size, mig_profile).removeprefix("nvidia.com/mig-")
        memory_gb, gpu = mig_slice_gb(slice_name), f"{sku.gpu_model} MIG {slice_name}"
        memory_gib = memory_gb * GB / GIB
        replicas = sku.gpus * catalog.mig_slices_per_gpu(mig_profile)
    options = dict(
        max_model_len=max_model_len,
        gpu_memory_utilization=gpu_memory_utilization,
        dtype=dtype,
        kv_cache_dtype=kv_cache_dtype,
        warn_below_sequences=warn_below_sequences,
        max_num_seqs=max_num_seqs,
    )
    result = replace(
        fit_on_memory(model, memory_gb, tp, gpu=gpu, gpu_memory_gib=memory_gib, **options),
        vm_size=vm_size,
        mig_profile=mig_profile,
        replicas_per_vm=replicas,
        price_usd_per_hour=sku.price_usd_per_hour,
        price_usd_per_month=sku.monthly_price_usd(),
    )
    vm_problem = None
    if sku.retired:
        vm_problem = f"{vm_size} is retired ({sku.retired})"
    elif mig_profile is not None and tp != 1:
        vm_problem = f"a MIG slice serves tp 1 only, not tp {tp}"
    elif tp > sku.gpus:
        vm_problem = f"tp {tp} needs {tp} GPUs on one node; {vm_size} has {sku.gpus}"
    if vm_problem:
        result = replace(result, problem=vm_problem, problem_kind="vm", warning=None)
    if suggest and not result.fits:
        result = replace(result, suggestions=_suggestions(model, result, options))
    return result


def _device_gib(sku: catalog.GpuSku) -> float:
    return device_memory_gib(sku.gpu_model, sku.gpu_memory_gb, sku.gpu_fraction)


def _same_vm_candidates(sku: catalog.GpuSku) -> list[tuple[int, str | None, float]]:
    """(tp, MIG profile, GiB per replica) on one VM, smallest first; equal MIG slices once."""
    found: dict[float, tuple[int, str | None, float]] = {}
    whole_gib = _device_gib(sku)
    for profile in catalog.MIG_INSTANCE_PROFILES if sku.mig_capable else ():
        memory = mig_slice_gb(sku.mig_profiles[profile]) * GB / GIB
        if memory < whole_gib and memory not in found:
            found[memory] = (1, profile, memory)
    whole = [(tp, None, tp * whole_gib) for tp in TP_SIZES if tp <= sku.gpus]
    return sorted(found.values(), key=lambda c: c[2]) + whole


def _suggestions(model: ModelFactsArgs, result: FitResult, options: dict) -> tuple[Suggestion, ...]:
    vm_size = result.vm_size
    assert vm_size is not None
    if result.problem_kind == "context":
        fixed = fit(
            model, vm_size, result.tp, mig_profile=result.mig_profile, suggest=False, **{**options, "max_model_len": None}
        )
        verdict = "fits" if fixed.fits else "still does not fit"
        return (
            Suggestion(
                "max_model_len", model.max_context, f"--max-model-len {model.max_context} (the model's maximum; {verdict})"
            ),
        )

    found: list[Suggestion] = []
    for tp, profile in _same_vm_changes(result):
        tried = fit(model, vm_size, tp, mig_profile=profile, suggest=False, **options)
        if tried.fits:
            where = f"MIG profile {profile} (tp 1)" if profile else f"tp {tp}"
            found.append(Suggestion("mig_profile" if profile else "tp", profile or tp, f"{where} on {vm_size}: {_gives(tried)}"))
            break
    if result.problem_kind in ("weights", "kv"):
        found += _cheaper_memory(model, result, options)
    others = [o for o in fit_options(model, **options) if o.vm_size != vm_size]
    if others:
        best = others[0]
        where = f"MIG profile {best.mig_profile}" if best.mig_profile else f"tp {best.tp}"
        found.append(Suggestion("vm_size", best.vm_size, f"{best.vm_size} ({where}, {_price(best)}): {_gives(best)}"))
    return tuple(found)


def _same_vm_changes(result: FitResult) -> list[tuple[int, str | None]]:
    """(tp, MIG profile) on the same VM worth trying: more memory when short of it, else the nearest valid tp."""
    assert result.vm_size is not None
    sku = catalog.get_sku(result.vm_size)
    if sku.retired:
        return []
    if result.problem_kind in ("weights", "kv"):
        current = result.tp * result.gpu_memory_gib if result.mig_profile is None else result.gpu_memory_gib
        return [(tp, profile) for tp, profile, memory_gib in _same_vm_candidates(sku) if memory_gib > current]
    nearest = sorted((tp for tp in TP_SIZES if tp <= sku.gpus and tp != result.tp), key=lambda tp: (abs(tp - result.tp), tp))
    same_slice = [(1, result.mig_profile)] if result.mig_profile else []
    return same_slice + [(tp, None) for tp in nearest]


def _cheaper_memory(model: ModelFactsArgs, result: FitResult, options: dict) -> list[Suggestion]:
    """fp8 KV cache, fp8 weights and a shorter context, each tried alone on the same GPUs."""
    found = []
    again = dict(tp=result.tp, mig_profile=result.mig_profile, suggest=False)
    if options["kv_cache_dtype"] == "auto" and model.kv_dtype_bytes() > 1:
        tried = fit(model, result.vm_size, **again, **{**options, "kv_cache_dtype": "fp8"})
        if tried.fits:
            found.append(Suggestion("kv_cache_dtype", "fp8", f"--kv-cache-dtype fp8: {_gives(tried)}"))
    if model.weight_bytes(options["dtype"]) > model.weight_bytes("fp8"):
        tried = fit(model, result.vm_size, **again, **{**options, "dtype": "fp8"})
        if tried.fits:
            found.append(Suggestion("dtype", "fp8", f"fp8 weights (--quantization fp8): {_gives(tried)}"))
    if result.problem_kind == "kv":
        length = _longest_context(model, result)
        if length:
            tried = fit(model, result.vm_size, **again, **{**options, "max_model_len": length})
            if tried.fits:
                found.append(Suggestion("max_model_len", length, f"--max-model-len {length}: {_gives(tried)}"))
    return found


def _longest_context(model: ModelFactsArgs, result: FitResult) -> int | None:
    """The longest context (a multiple of 1024) of which one sequence fits the KV budget, or None."""
    budget = result.kv_budget_gib_per_gpu * GIB
    full, sliding = _per_token_bytes(model, result.tp, result.kv_cache_dtype)
    window = model.sliding_window or 0
    if full == 0:
        return None
    tokens = (budget - sliding * window) / full if budget >= (full + sliding) * window else budget / (full + sliding)
    length = min(int(tokens) // 1024 * 1024, model.max_context)
    return length if length >= 1024 else None


def _gives(result: FitResult) -> str:
    return f"{result.full_length_sequences} sequence(s) of {result.max_model_len} tokens"


def _price(result: FitResult) -> str:
    return f"${result.price_usd_per_hour:.2f}/h" if result.price_usd_per_hour is not None else "no list price"


def fit_options(
    model: ModelFactsArgs | str,
    max_model_len: int | None = None,
    *,
    gpu_memory_utilization: float = DEFAULT_GPU_MEMORY_UTILIZATION,
    dtype: str = "auto",
    kv_cache_dtype: str = "auto",
    warn_below_sequences: int = WARN_BELOW_SEQUENCES,
    max_num_seqs: int | None = None,
    fitting_only: bool = True,
) -> list[FitResult]:
    """Every current catalog size, tp in ``TP_SIZES`` up to the VM's GPUs, and each MIG slice size (tp 1).

    Sorted cheapest first by the VM's hourly list price (unpriced last), then by fewer GPUs per
    replica. With ``fitting_only`` (default) only the configurations that fit.
    """
    model = _resolve(model)
    options = dict(
        max_model_len=max_model_len,
        gpu_memory_utilization=gpu_memory_utilization,
        dtype=dtype,
        kv_cache_dtype=kv_cache_dtype,
        warn_below_sequences=warn_below_sequences,
        max_num_seqs=max_num_seqs,
    )
    results = [
        fit(model, name, tp, mig_profile=profile, suggest=False, **options)
        for name in catalog.current_sizes()
        for tp, profile, _ in _same_vm_candidates(catalog.skus()[name])
    ]
    results = [r for r in results if r.fits or not fitting_only]
    return sorted(results, key=_cost_order)


def _cost_order(result: FitResult) -> tuple:
    price = result.price_usd_per_hour
    return (price is None, price or 0.0, result.gpu_share, result.vm_size)
