"""The weights vLLM loads onto each GPU, counted layer by layer from a model's Hugging Face architecture: which
parts tensor parallelism splits and which every rank holds whole, how each quantization format stores them,
and the copies vLLM makes after loading. Used for facts that name an ``architecture``; catalog rows without
one keep parameters x bytes.

Sources (read at the tags): vLLM's ``DeepseekV2MLAAttention`` builds ``q_a_proj`` and ``kv_a_proj_with_mqa`` as
``ReplicatedLinear``, the MoE router as a replicated ``gate``, and ``QKVParallelLinear`` replicates KV heads when
tp exceeds them (vllm@v0.9.2:vllm/model_executor/models/deepseek_v2.py, .../layers/linear.py);
``MLACommonImpl.process_weights_after_loading`` keeps ``kv_b_proj`` and adds bf16 ``W_UV``/``W_UK_T``
(vllm@v0.9.2:vllm/v1/attention/backends/mla/common.py); ``VocabParallelEmbedding`` pads the vocabulary to 64;
the MXFP4 MoE pads the hidden size to 256 and each rank's intermediate size to 128 for Marlin and 64 for the
Triton kernels (vllm@v0.11.0:vllm/model_executor/layers/quantization/mxfp4.py), whose swizzled layout also
holds the hidden size at 256 (gpt-oss-120b loads 64.38 GiB with Triton, 65.97 GiB with Marlin).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Protocol

from .vllm_releases import PINNED_VLLM_VERSION, TRITON_MXFP4_SINCE, gpu_generation, release


class ModelShape(Protocol):
    """What the weight count reads of a model: ``ModelFactsArgs`` has it (a protocol, so that the facts can count
    their weights here without this module importing them back)."""

    layers: int
    kv_heads: int
    attention_heads: int | None
    head_dim: int
    dtype: str
    vocab_size: int | None
    experts: int | None
    experts_per_token: int | None
    attention: str
    kv_lora_rank: int | None
    qk_rope_head_dim: int | None
    qk_nope_head_dim: int | None
    v_head_dim: int | None
    q_lora_rank: int | None
    shared_expert_intermediate_size: int | None
    dense_layers: int
    dense_intermediate_size: int | None
    quantization: str
    quant_group_size: int | None
    tie_word_embeddings: bool
    attention_bias: bool
    checkpoint_gb: float | None
    encoder_params_b: float
    skipped_layers: int

    @property
    def hidden(self) -> int: ...

    @property
    def intermediate(self) -> int: ...


WEIGHT_BYTES = {"bfloat16": 2.0, "float16": 2.0, "fp8": 1.0, "int4": 0.5}
"""Bytes per parameter for each weight dtype."""

FP8_BLOCK = 128
"""Side of the square block that shares one fp32 scale in block-quantized fp8 (DeepSeek's ``weight_block_size``)."""

MXFP4_BLOCK = 32
"""Values sharing one 8-bit scale in MXFP4."""

DEFAULT_INT4_GROUP = 128
"""Group size assumed when int4 weights are asked for a checkpoint that is not quantized."""

VOCAB_PADDING = 64
"""``VocabParallelEmbedding`` pads the vocabulary to a multiple of this before splitting it."""


@dataclass(frozen=True)
class Parts:
    """Parameter counts of a model by how vLLM places and stores them."""

    sharded: float = 0
    """Linear weights split evenly over the tensor-parallel ranks (stored in the quantized format)."""
    replicated: float = 0
    """Linear weights every rank holds whole (MLA's a-projections; quantized format)."""
    kv: float = 0
    """Key and value projections: split over at most as many ranks as there are KV heads."""
    experts: float = 0
    """Routed experts' weights (quantized format), split over the ranks along their intermediate size."""
    kept: float = 0
    """Weights that stay in the model's dtype and are split (embeddings, output projection, biases)."""
    kept_replicated: float = 0
    """Weights that stay in the model's dtype on every rank (norms, routers)."""

    def __add__(self, other: Parts) -> Parts:
        return Parts(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))

    def __mul__(self, times: float) -> Parts:
        return Parts(*(getattr(self, f.name) * times for f in fields(self)))

    @property
    def total(self) -> float:
        return sum(getattr(self, f.name) for f in fields(self))


def _attention(m: ModelShape) -> Parts:
    hidden, heads = m.hidden, m.attention_heads or m.kv_heads
    if m.attention == "mla":
        nope, rope = m.qk_nope_head_dim or m.head_dim, m.qk_rope_head_dim or 0
        value, latent = m.v_head_dim or m.head_dim, m.kv_lora_rank or 0
        query = hidden * heads * (nope + rope)
        replicated, kept_replicated = hidden * (latent + rope), latent
        if m.q_lora_rank:
            query = m.q_lora_rank * heads * (nope + rope)
            replicated += hidden * m.q_lora_rank
            kept_replicated += m.q_lora_rank
        sharded = query + latent * heads * (nope + value) + heads * value * hidden
        return Parts(sharded=sharded, replicated=replicated, kept_replicated=kept_replicated)
    bias = (heads + 2 * m.kv_heads) * m.head_dim if m.attention_bias else 0
    return Parts(sharded=2 * hidden * heads * m.head_dim, kv=2 * hidden * m.kv_heads * m.head_dim, kept=bias)


def _mlp(m: ModelShape, moe: bool) -> Parts:
    hidden = m.hidden
    if not moe:
        return Parts(sharded=3 * hidden * (m.dense_intermediate_size or m.intermediate))
    experts = m.experts or 0
    shared = 3 * hidden * (m.shared_expert_intermediate_size or 0)
    return Parts(sharded=shared, experts=3 * hidden * m.intermediate * experts, kept_replicated=hidden * experts)


def _layer(m: ModelShape, moe: bool) -> Parts:
    return _attention(m) + _mlp(m, moe) + Parts(kept_replicated=2 * m.hidden)


def model_parts(m: ModelShape, vocab: int | None = None) -> Parts:
    """Parameters of the layers vLLM loads, by placement; ``vocab`` overrides the vocabulary (padding)."""
    moe_layers = m.layers - m.dense_layers if m.experts else 0
    embeddings = (vocab or m.vocab_size or 0) * m.hidden * (1 if m.tie_word_embeddings else 2)
    return (
        _layer(m, False) * (m.layers - moe_layers)
        + _layer(m, True) * moe_layers
        + Parts(kept=embeddings + m.encoder_params_b * 1e9, kept_replicated=m.hidden)
    )


def skipped_parts(m: ModelShape) -> Parts:
    """Parameters on disk that vLLM does not load: DeepSeek's multi-token-prediction layer is a decoder layer
    plus its own embeddings, output head and a 2 x hidden -> hidden projection."""
    if not m.skipped_layers:
        return Parts()
    extra = Parts(sharded=2 * m.hidden * m.hidden, kept=2 * (m.vocab_size or 0) * m.hidden)
    return (_layer(m, bool(m.experts)) + extra) * m.skipped_layers


def _quantization(m: ModelShape, dtype: str) -> str:
    """The storage of the linear weights: the checkpoint's own, or the dtype asked for an unquantized one."""
    if m.quantization != "none" or dtype in ("auto", "bfloat16", "float16"):
        return m.quantization
    return {"fp8": "fp8", "int4": "int4"}[dtype]


def linear_bytes(m: ModelShape, quantization: str) -> float:
    """Bytes per parameter of a quantized linear weight (scales included)."""
    plain = WEIGHT_BYTES[m.dtype]
    if quantization == "fp8":
        return 1.0
    if quantization == "fp8_block":
        return 1.0 + 4 / FP8_BLOCK**2
    if quantization == "int4":
        group = m.quant_group_size or (DEFAULT_INT4_GROUP if m.quantization == "none" else 0)
        return 0.5 + (2.5 / group if group else 0.0)
    return plain


def expert_bytes(m: ModelShape, quantization: str) -> float:
    """Bytes per parameter of a routed expert's weight: MXFP4 quantizes only the experts."""
    if quantization == "mxfp4":
        return 0.5 + 1 / MXFP4_BLOCK
    return linear_bytes(m, quantization)


def checkpoint_weight_bytes(m: ModelShape, dtype: str = "auto") -> float:
    """Bytes of every weight vLLM loads, as the checkpoint stores them (all ranks together): the checkpoint's
    measured size less the layers vLLM skips when it is known, else the layer count."""
    quantization = _quantization(m, dtype)
    if m.checkpoint_gb and dtype == "auto":
        return m.checkpoint_gb * 1e9 - _stored_bytes(m, skipped_parts(m), quantization)
    return _stored_bytes(m, model_parts(m), quantization)


def _non_expert_linear_bytes(m: ModelShape, quantization: str) -> float:
    """Bytes per parameter of the linear weights that are not routed experts (MXFP4 leaves them in ``dtype``)."""
    return WEIGHT_BYTES[m.dtype] if quantization == "mxfp4" else linear_bytes(m, quantization)


def _stored_bytes(m: ModelShape, parts: Parts, quantization: str) -> float:
    linear, plain = _non_expert_linear_bytes(m, quantization), WEIGHT_BYTES[m.dtype]
    quantized = (parts.sharded + parts.replicated + parts.kv) * linear + parts.experts * expert_bytes(m, quantization)
    return quantized + (parts.kept + parts.kept_replicated) * plain


def _experts_per_gpu(m: ModelShape, tp: int, quantization: str, vllm_version: str, gpu: str) -> float:
    """Bytes of the routed experts on one rank; MXFP4 pads the shapes its kernels need."""
    if not m.experts:
        return 0.0
    hidden, inter = m.hidden, m.intermediate / tp
    if quantization == "mxfp4":
        triton = gpu_generation(gpu) >= 9 and release(vllm_version) >= TRITON_MXFP4_SINCE
        hidden, inter = _round_up(hidden, 256), _round_up(math.ceil(inter), 64 if triton else 128)
    return (m.layers - m.dense_layers) * m.experts * 3 * hidden * inter * expert_bytes(m, quantization)


def per_gpu_weight_bytes(
    m: ModelShape, tp: int, dtype: str = "auto", *, vllm_version: str = PINNED_VLLM_VERSION, gpu: str = ""
) -> float:
    """Bytes of weights one rank holds after vLLM has loaded and processed them ("Model loading took")."""
    quantization = _quantization(m, dtype)
    padded = _round_up(m.vocab_size or 0, VOCAB_PADDING) or None
    parts = model_parts(m, padded)
    linear, plain = _non_expert_linear_bytes(m, quantization), WEIGHT_BYTES[m.dtype]
    per_gpu = (
        (parts.sharded / tp + parts.replicated + parts.kv / min(tp, m.kv_heads)) * linear
        + _experts_per_gpu(m, tp, quantization, vllm_version, gpu)
        + parts.kept / tp * plain
        + parts.kept_replicated * plain
        + _mla_copies(m) / tp
    )
    if m.checkpoint_gb and dtype == "auto":
        # Scales, biases and towers the count leaves out are spread like the bulk of the weights.
        per_gpu += (checkpoint_weight_bytes(m) - _stored_bytes(m, model_parts(m), quantization)) / tp
    return per_gpu


def _mla_copies(m: ModelShape) -> float:
    """bf16 ``W_UV`` and ``W_UK_T`` vLLM's MLA backends derive from ``kv_b_proj`` (all ranks together)."""
    if m.attention != "mla":
        return 0.0
    heads, latent = m.attention_heads or 1, m.kv_lora_rank or 0
    per_layer = heads * latent * ((m.qk_nope_head_dim or m.head_dim) + (m.v_head_dim or m.head_dim))
    return m.layers * per_layer * 2


def parameters(m: ModelShape) -> tuple[float, float]:
    """(all, active per token) parameters of the layers vLLM loads, in billions."""
    parts = model_parts(m)
    active = parts.total
    if m.experts and m.experts_per_token:
        active -= parts.experts * (1 - m.experts_per_token / m.experts)
    return parts.total / 1e9, active / 1e9


def _round_up(value: float, multiple: int) -> int:
    return int(math.ceil(value / multiple) * multiple)
