"""Model facts: the numbers the memory fit needs about a model (its Hugging Face ``config.json``), the
catalog of them in ``models.json`` beside this module, and the lookup by Hugging Face id or KAITO preset.
"""

from __future__ import annotations

import difflib
import json
import math
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .errors import ConfigError, FieldProblem, FieldProblems, validation_problems
from .weights import WEIGHT_BYTES, checkpoint_weight_bytes

GB = 1e9
"""Bytes in a GB: the catalog prints GPU memory the way Azure's size pages do."""

GIB = 2**30
"""Bytes in a GiB: vLLM logs memory in GiB."""

WEIGHT_DTYPES = ("auto", *WEIGHT_BYTES)
"""Accepted ``dtype`` values; ``auto`` is the checkpoint as published."""

KV_CACHE_DTYPES = ("auto", "fp8")
"""Accepted ``kv_cache_dtype`` values; ``auto`` stores the KV cache in the model's dtype."""


MLA_ONLY = ("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim", "q_lora_rank")
"""Facts of multi-head latent attention, which a grouped-query model does not have."""

MOE_ONLY = ("experts_per_token", "shared_expert_intermediate_size", "dense_layers")
"""Facts of a mixture of experts, which a dense model does not have."""

LAYERWISE = ("tie_word_embeddings", "attention_bias", "encoder_params_b", "skipped_layers", "checkpoint_gb")
"""Facts only the layer-by-layer count of an ``architecture`` reads (``weights.py``); without one, ``params_b`` counts
every weight."""


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

    hidden_size: int | None = Field(None, gt=0, le=1_000_000)
    """Width of the residual stream (``hidden_size``): the profile run's activations and the CUDA-graph
    buffers scale with it. Default None: ``attention_heads x head_dim`` (Llama's shape), else what a dense
    transformer of ``params_b`` and ``layers`` has (parameters ~ 12 x layers x hidden^2)."""

    intermediate_size: int | None = Field(None, gt=0, le=10_000_000)
    """MLP width (``intermediate_size``; per expert, ``moe_intermediate_size`` where the config has one, for
    a mixture of experts). Default None: 3.5 x ``hidden_size`` (Llama 3 8B's 14336 / 4096)."""

    experts_per_token: int | None = Field(None, gt=0, le=1_000)
    """Experts each token is routed to (``num_experts_per_tok``), for a mixture of experts: the fused-MoE
    workspace scales with it. Default None: 2 (Mixtral's) for a mixture of experts."""

    sliding_window: int | None = Field(None, gt=0, le=100_000_000)
    """Tokens a sliding-window layer keeps per sequence. Default None (no sliding window)."""

    sliding_layers: int = Field(0, ge=0, le=10_000)
    """How many layers use the sliding window. Default 0."""

    attention: Literal["gqa", "mla"] = "gqa"
    """``gqa``: every layer keeps keys and values of ``kv_heads`` heads of ``head_dim``; ``mla``: multi-head
    latent attention (DeepSeek V2/V3, Kimi K2) keeps one latent of ``kv_lora_rank + qk_rope_head_dim`` per token
    per layer, the same on every tensor-parallel rank. Default gqa."""

    kv_lora_rank: int | None = Field(None, gt=0, le=65_536)
    """MLA: width of the compressed KV latent (``kv_lora_rank``). Required for ``mla``."""

    qk_rope_head_dim: int | None = Field(None, gt=0, le=65_536)
    """MLA: width of the rotary key part cached beside the latent (``qk_rope_head_dim``). Required for ``mla``."""

    qk_nope_head_dim: int | None = Field(None, gt=0, le=65_536)
    """MLA: non-rotary query/key width per head (``qk_nope_head_dim``); sizes the attention weights. Default None."""

    v_head_dim: int | None = Field(None, gt=0, le=65_536)
    """MLA: value width per head (``v_head_dim``); sizes the attention weights. Default None."""

    q_lora_rank: int | None = Field(None, gt=0, le=65_536)
    """MLA: rank of the compressed query (``q_lora_rank``); None when queries are projected directly."""

    experts: int | None = Field(None, gt=0, le=4_096)
    """Routed experts per MoE layer (``num_local_experts``, ``num_experts``, ``n_routed_experts``). Default
    None: counted from ``params_b`` (the catalog rows)."""

    shared_expert_intermediate_size: int | None = Field(None, gt=0, le=10_000_000)
    """Total MLP width of the experts every token passes through (DeepSeek's ``n_shared_experts x
    moe_intermediate_size``, Qwen2-MoE's ``shared_expert_intermediate_size``). Default None (none)."""

    dense_layers: int = Field(0, ge=0, le=10_000)
    """Leading layers of a mixture of experts that have a dense MLP instead (DeepSeek's
    ``first_k_dense_replace``). Default 0."""

    dense_intermediate_size: int | None = Field(None, gt=0, le=10_000_000)
    """MLP width of those dense layers (DeepSeek's ``intermediate_size``). Default None."""

    quantization: Literal["none", "fp8", "fp8_block", "mxfp4", "int4"] = "none"
    """How the checkpoint stores its linear weights: ``fp8`` (one scale per tensor or channel), ``fp8_block``
    (a scale per 128 x 128 block), ``mxfp4`` (experts only, 4 bits + a scale per 32), ``int4`` (GPTQ/AWQ,
    a scale and a zero per ``quant_group_size``). Embeddings, norms and routers stay in ``dtype``. Default
    none; only with ``architecture``."""

    quant_group_size: int | None = Field(None, gt=0, le=1_000_000)
    """``int4``: weights sharing one scale and zero (``group_size``; None per channel). Default None."""

    tie_word_embeddings: bool = False
    """The output projection reuses the input embeddings (``tie_word_embeddings``). Default False."""

    attention_bias: bool = False
    """The query/key/value projections have biases (Qwen2, gpt-oss). Default False."""

    architecture: str | None = None
    """Hugging Face ``architectures[0]`` when the facts come from a config.json; the weights are then counted
    layer by layer as vLLM loads them (``weights.per_gpu_weight_bytes``). Default None: parameters x dtype."""

    checkpoint_gb: float | None = Field(None, gt=0, le=1_000_000, allow_inf_nan=False)
    """Bytes of the safetensors checkpoint in GB (``model.safetensors.index.json`` ``metadata.total_size``);
    what the layer count does not explain is spread over the ranks. Default None."""

    encoder_params_b: float = Field(0, ge=0, le=100_000, allow_inf_nan=False)
    """Parameters outside the decoder, in billions: a vision tower and its projector (Gemma 3's SigLIP), held in
    ``dtype`` and split over tp. Default 0."""

    skipped_layers: int = Field(0, ge=0, le=10_000)
    """Layers stored in the checkpoint that vLLM does not load for serving (DeepSeek's multi-token-prediction
    ``num_nextn_predict_layers``), taken off ``checkpoint_gb``; refused without it. Default 0."""

    kaito_preset: str | None = None
    """KAITO preset name serving this model, if any. Default None."""

    gated: bool | None = None
    """Whether the Hugging Face repository is gated: it downloads only with a token of an account that accepted its
    terms (``hf_token``). Default None: not known, so a model without a token is planned with a warning."""

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
        if self.attention == "mla" and (self.kv_lora_rank is None or self.qk_rope_head_dim is None):
            raise FieldProblem("attention", self.attention, "mla needs kv_lora_rank and qk_rope_head_dim")
        if self.dense_layers > self.layers:
            raise FieldProblem("dense_layers", self.dense_layers, f"more than the model's {self.layers} layers")
        if self.quantization != "none" and self.architecture is None:
            raise FieldProblem("quantization", self.quantization, "give the architecture the quantized weights belong to")
        if problems := self._idle_facts():
            raise FieldProblems(problems)
        return self

    def _idle_facts(self) -> list[FieldProblem]:
        """Facts the fit has no use for in this kind of model, refused rather than ignored: multi-head latent
        attention's widths on another attention, a mixture of experts' on a dense model, and what only the
        layer-by-layer count reads (``weights.py``) without the ``architecture`` it counts by."""
        kinds = (
            (MLA_ONLY, self.attention != "mla", "multi-head latent attention's (attention mla)"),
            (MOE_ONLY, not (self.experts or self.is_moe), "a mixture of experts' (experts or active_params_b)"),
            (LAYERWISE, self.architecture is None, "read only when the weights are counted layer by layer: give architecture"),
        )
        problems = [
            FieldProblem(name, getattr(self, name), f"{why}; this model has no use for it: leave it out")
            for names, idle, why in kinds
            if idle
            for name in names
            if getattr(self, name) not in (None, False, 0)
        ]
        if self.skipped_layers and self.architecture is not None and self.checkpoint_gb is None:
            # weights.checkpoint_weight_bytes: the layer count never includes them, only the measured size does.
            why = "layers vLLM skips are taken off the checkpoint's measured size (checkpoint_gb): leave it out, or give checkpoint_gb"
            problems.append(FieldProblem("skipped_layers", self.skipped_layers, why))
        if self.dense_intermediate_size is not None and not self.dense_layers:
            why = "the width of a mixture of experts' dense layers (dense_layers): leave it out, or give dense_layers"
            problems.append(FieldProblem("dense_intermediate_size", self.dense_intermediate_size, why))
        return problems

    def weight_bytes(self, dtype: str = "auto") -> float:
        """Bytes of all weights in ``dtype`` (``auto``: ``weights_gb`` if given, else the model's dtype).

        fp8 and int4 quantizers keep the input and output embeddings in the model's dtype; they are
        counted at that size when the vocabulary and the attention heads are known.
        """
        check_choice("dtype", dtype, WEIGHT_DTYPES)
        if self.architecture is not None:
            return checkpoint_weight_bytes(self, dtype)
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

    @property
    def hidden(self) -> int:
        """``hidden_size``, or its Llama-shaped default (see the field)."""
        if self.hidden_size:
            return self.hidden_size
        if self.attention_heads:
            return self.attention_heads * self.head_dim
        return round(math.sqrt(self.params_b * 1e9 / (12 * self.layers)))

    @property
    def intermediate(self) -> int:
        """``intermediate_size``, or 3.5 x the hidden size (see the field)."""
        return self.intermediate_size or int(3.5 * self.hidden)

    def kv_dtype_bytes(self, kv_cache_dtype: str = "auto") -> int:
        """Bytes per KV element: the model's dtype for ``auto``, 1 for fp8."""
        check_choice("kv_cache_dtype", kv_cache_dtype, KV_CACHE_DTYPES)
        return 1 if kv_cache_dtype == "fp8" else int(WEIGHT_BYTES[self.dtype])

    def kv_bytes_per_token(self, kv_cache_dtype: str = "auto") -> int:
        """KV cache bytes one token costs across all layers of the whole model (KAITO's bytesPerToken); for
        MLA, the latent of one rank (every rank holds the same)."""
        return self.layers * self.kv_layer_bytes(1, kv_cache_dtype)

    def kv_layer_bytes(self, tp: int, kv_cache_dtype: str = "auto") -> int:
        """KV bytes one token costs in one layer on one GPU at tensor-parallel size ``tp``: keys and values of
        the GPU's KV heads, or the MLA latent (vLLM's ``MLAAttentionSpec``: one head of kv_lora_rank +
        qk_rope_head_dim, not split by tp)."""
        size = self.kv_dtype_bytes(kv_cache_dtype)
        if self.attention == "mla":
            assert self.kv_lora_rank is not None and self.qk_rope_head_dim is not None
            return (self.kv_lora_rank + self.qk_rope_head_dim) * size
        return 2 * self.kv_heads_per_gpu(tp) * self.head_dim * size

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


def check_choice(name: str, value: str, accepted: tuple[str, ...]) -> None:
    """Raise a ValueError naming ``name``, ``value`` and the accepted values unless ``value`` is one of them."""
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
