"""Model facts from a Hugging Face ``config.json`` (and the checkpoint size from ``model.safetensors.index.json``),
read the way vLLM reads them: the architectures the fit can model, their attention (grouped-query or
multi-head latent), mixture-of-experts layout, sliding-window layers and quantization. Anything else is
refused by name, never guessed.

The maximum context follows vLLM's ``_get_and_verify_max_len`` (vllm@v0.9.2:vllm/config.py): the smallest of
the length keys, times the RoPE scaling factor unless the type is su/longrope/llama3 (yarn scales
``original_max_position_embeddings``; Gemma 3's length is already scaled).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from .errors import ConfigError, validation_problems
from .model_facts import ModelFactsArgs
from .weights import parameters

DENSE = {
    "LlamaForCausalLM": "Llama",
    "MistralForCausalLM": "Mistral",
    "Qwen2ForCausalLM": "Qwen2/2.5",
    "Qwen3ForCausalLM": "Qwen3",
    "Phi3ForCausalLM": "Phi-3/4",
    "GraniteForCausalLM": "Granite",
    "Gemma2ForCausalLM": "Gemma 2",
    "Gemma3ForCausalLM": "Gemma 3 (text)",
}
MULTIMODAL = {"Gemma3ForConditionalGeneration": ("Gemma3ForCausalLM", "Gemma 3 (with its vision tower)")}
"""Vision-language architectures read as their text model plus the vision tower's weights: the profile run's
image batch (budget / 256 tokens per image through SigLIP) peaks below the text forward and sampler at vLLM's
defaults, so only the tower's weights change the budget."""
MOE = {
    "MixtralForCausalLM": "Mixtral",
    "Qwen2MoeForCausalLM": "Qwen2-MoE",
    "Qwen3MoeForCausalLM": "Qwen3-MoE",
    "DeepseekV2ForCausalLM": "DeepSeek V2 (MLA)",
    "DeepseekV3ForCausalLM": "DeepSeek V3/R1, Kimi K2 (MLA)",
    "GptOssForCausalLM": "gpt-oss",
}
SUPPORTED = {**DENSE, **MOE, **{name: family for name, (_, family) in MULTIMODAL.items()}}
"""Architectures (``architectures[0]``) the fit models, with the families they cover."""

LENGTH_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length",
               "max_target_positions", "max_sequence_length", "max_seq_length", "seq_len")  # fmt: skip
"""The keys vLLM reads a model's maximum length from; it takes the smallest present."""

DTYPES = {"bfloat16": "bfloat16", "float16": "float16", "float32": "bfloat16"}
"""Checkpoint dtypes and what vLLM serves them in (float32 checkpoints are cast to 16 bits)."""


class UnsupportedArchitecture(ValueError):
    """A config.json whose architecture or quantization the fit cannot model."""


def _require(config: Mapping[str, Any], key: str, kind: type = int) -> Any:
    value = config.get(key)
    if not isinstance(value, kind) or isinstance(value, bool) or value <= 0:
        accepted = "a positive integer" if kind is int else "a positive number"
        raise ConfigError("config.json cannot be fitted", [f"{key}={value!r}: {accepted} is required"])
    return value


def max_context(config: Mapping[str, Any]) -> int:
    """The model's maximum length as vLLM derives it."""
    lengths = [config[key] for key in LENGTH_KEYS if isinstance(config.get(key), int) and config[key] > 0]
    if not lengths:
        raise ConfigError("config.json cannot be fitted", ["max_position_embeddings: required key is missing"])
    length = float(min(lengths))
    scaling = config.get("rope_scaling")
    if isinstance(scaling, Mapping) and "gemma3" not in str(config.get("model_type", "")):
        kind = scaling.get("rope_type", scaling.get("type"))
        if kind not in ("su", "longrope", "llama3", "default", None):
            if kind == "yarn" and isinstance(scaling.get("original_max_position_embeddings"), int):
                length = scaling["original_max_position_embeddings"]
            length *= float(scaling.get("factor", 1.0))
    return int(length)


def quantization(config: Mapping[str, Any]) -> tuple[str, int | None]:
    """(``ModelFactsArgs.quantization``, group size) from ``quantization_config``; refuses what it cannot model."""
    quant = config.get("quantization_config")
    if not quant:
        return "none", None
    method = str(quant.get("quant_method", "")).lower()
    if method == "fp8":
        return ("fp8_block" if quant.get("weight_block_size") else "fp8"), None
    if method == "fbgemm_fp8" or (method == "modelopt" and str(quant.get("quant_algo", "")).upper() == "FP8"):
        return "fp8", None
    if method == "mxfp4":
        return "mxfp4", None
    if method in ("gptq", "awq") and quant.get("bits", quant.get("w_bit")) == 4:
        group = quant.get("group_size", quant.get("q_group_size"))
        return "int4", group if isinstance(group, int) and group > 0 else None
    if method == "compressed-tensors":
        return _compressed_tensors(quant)
    raise UnsupportedArchitecture(
        f"quantization_config.quant_method={method!r} (bits {quant.get('bits', quant.get('w_bit'))}) is not a format "
        "aks-gpu fit models; accepted: fp8 (per tensor, channel or 128x128 block), mxfp4, GPTQ/AWQ and "
        "compressed-tensors int4, compressed-tensors fp8"
    )


def _compressed_tensors(quant: Mapping[str, Any]) -> tuple[str, int | None]:
    groups = quant.get("config_groups") or {}
    weights = next(iter(groups.values()), {}).get("weights") or {}
    bits, kind, strategy = weights.get("num_bits"), weights.get("type"), weights.get("strategy")
    if bits == 8 and kind == "float":
        return ("fp8_block" if strategy == "block" else "fp8"), None
    if bits == 4 and kind == "int":
        group = weights.get("group_size")
        return "int4", group if isinstance(group, int) and group > 0 else None
    raise UnsupportedArchitecture(
        f"quantization_config (compressed-tensors, {bits}-bit {kind}) is not a format aks-gpu fit models; accepted: "
        "8-bit float (fp8) and 4-bit int (W4A16) weights"
    )


def _sliding(config: Mapping[str, Any], arch: str, layers: int) -> tuple[int | None, int]:
    """(window, sliding layers) as vLLM builds them: ``layer_types``, Gemma 2's every other layer, Gemma 3's
    pattern, or every layer of a Mistral-style model with a window."""
    window = config.get("sliding_window")
    if not isinstance(window, int) or window <= 0:
        return None, 0
    types = config.get("layer_types")
    if isinstance(types, list) and types:
        return window, sum(1 for kind in types[:layers] if kind == "sliding_attention")
    if arch == "Gemma2ForCausalLM":
        return window, math.ceil(layers / 2)
    if arch == "Gemma3ForCausalLM":
        pattern = config.get("sliding_window_pattern") or 6
        return window, sum(1 for i in range(layers) if (i + 1) % pattern)
    if arch.startswith("Qwen") and not config.get("use_sliding_window"):
        return None, 0
    return window, layers


def _moe(config: Mapping[str, Any], arch: str, layers: int) -> dict[str, Any]:
    """MoE facts: routed experts, per-expert and shared widths, and the layers with a dense MLP."""
    if arch not in MOE:
        return {}
    experts = config.get("num_local_experts") or config.get("num_experts") or config.get("n_routed_experts")
    per_token = config.get("num_experts_per_tok") or config.get("experts_per_token")
    facts: dict[str, Any] = {"experts": experts, "experts_per_token": per_token}
    facts["intermediate_size"] = config.get("moe_intermediate_size") or _require(config, "intermediate_size")
    if arch.startswith("Deepseek"):
        shared = config.get("n_shared_experts") or 0
        facts["shared_expert_intermediate_size"] = shared * facts["intermediate_size"] or None
        facts["dense_layers"] = config.get("first_k_dense_replace") or 0
    elif arch.startswith("Qwen"):
        facts["shared_expert_intermediate_size"] = config.get("shared_expert_intermediate_size") or None
        step, dense_only = config.get("decoder_sparse_step") or 1, set(config.get("mlp_only_layers") or [])
        facts["dense_layers"] = sum(1 for i in range(layers) if i in dense_only or (i + 1) % step)
    if facts.get("dense_layers"):
        facts["dense_intermediate_size"] = _require(config, "intermediate_size")
    if not isinstance(experts, int) or not isinstance(per_token, int):
        raise ConfigError("config.json cannot be fitted", [f"num_experts_per_tok / experts: integers required for {arch}"])
    return facts


def _mla(config: Mapping[str, Any]) -> dict[str, Any]:
    names = ("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")
    facts = {name: _require(config, name) for name in names}
    facts["q_lora_rank"] = config.get("q_lora_rank") or None
    facts["head_dim"] = facts["qk_nope_head_dim"] + facts["qk_rope_head_dim"]
    return {"attention": "mla", **facts}


def facts_from_config(
    config: Mapping[str, Any], index: Mapping[str, Any] | None = None, *, hf_id: str = "local/model"
) -> ModelFactsArgs:
    """``ModelFactsArgs`` for a Hugging Face ``config.json`` (and its safetensors index, for the checkpoint size).

    :raises UnsupportedArchitecture: an architecture or quantization the fit does not model, named.
    :raises ConfigError: a required key missing or out of range, named.
    """
    archs = config.get("architectures") or []
    arch = archs[0] if isinstance(archs, list) and archs else None
    encoder = 0.0
    if arch in MULTIMODAL and isinstance(config.get("text_config"), Mapping):
        encoder = _vision_params(config.get("vision_config") or {}, config["text_config"])
        inherited = {key: config[key] for key in ("torch_dtype", "quantization_config") if key in config}
        config, arch = {**inherited, **config["text_config"], "architectures": [MULTIMODAL[arch][0]]}, MULTIMODAL[arch][0]
    if arch not in SUPPORTED:
        families = "; ".join(f"{name} ({family})" for name, family in SUPPORTED.items())
        raise UnsupportedArchitecture(
            f"architecture {arch!r} (model_type {config.get('model_type')!r}) is not one aks-gpu fit can model, so it "
            f"is not guessed; supported: {families}"
        )
    layers, hidden = _require(config, "num_hidden_layers"), _require(config, "hidden_size")
    heads = _require(config, "num_attention_heads")
    kv_heads = config.get("num_key_value_heads") or heads
    method, group = quantization(config)
    window, sliding = _sliding(config, arch, layers)
    facts: dict[str, Any] = {
        "hf_id": hf_id,
        "params_b": 1.0,
        "layers": layers,
        "kv_heads": kv_heads,
        "attention_heads": heads,
        "head_dim": config.get("head_dim") or hidden // heads,
        "hidden_size": hidden,
        "intermediate_size": config.get("intermediate_size"),
        "vocab_size": _require(config, "vocab_size"),
        "max_context": max_context(config),
        "dtype": DTYPES.get(str(config.get("torch_dtype", config.get("dtype", "bfloat16"))), "bfloat16"),
        "sliding_window": window,
        "sliding_layers": sliding,
        "quantization": method,
        "quant_group_size": group,
        # transformers' Gemma 2/3 configs tie the embeddings unless they say otherwise; the others do not.
        "tie_word_embeddings": bool(config.get("tie_word_embeddings", arch.startswith("Gemma"))),
        "attention_bias": bool(config.get("attention_bias", arch == "Qwen2ForCausalLM")),
        "architecture": arch,
        "skipped_layers": config.get("num_nextn_predict_layers") or 0,
        "source": f"Hugging Face config.json ({arch}, model_type {config.get('model_type')})",
        **_moe(config, arch, layers),
    }
    if arch.startswith("Deepseek") and config.get("kv_lora_rank"):
        facts.update(_mla(config))
    if method == "mxfp4" and arch not in MOE:
        raise UnsupportedArchitecture(f"mxfp4 quantizes experts; {arch} has none")
    facts["checkpoint_gb"] = _checkpoint_gb(index)
    if facts["checkpoint_gb"] is None:  # the layers vLLM skips only correct the checkpoint's measured size
        facts["skipped_layers"] = 0
    facts["encoder_params_b"] = round(encoder / 1e9, 4)
    try:
        draft = ModelFactsArgs.model_validate(facts)
    except ValidationError as err:
        raise ConfigError("config.json cannot be fitted", validation_problems(err)) from None
    total, active = parameters(draft)
    moe = {"active_params_b": round(active, 3)} if draft.experts else {}
    return draft.model_copy(update={"params_b": round(total, 3), **moe})


def _vision_params(vision: Mapping[str, Any], text: Mapping[str, Any]) -> float:
    """A SigLIP tower's parameters (attention 4 x width^2, MLP 2 x width x intermediate per layer) and the projector
    into the text model's width."""
    width, inter, layers = vision.get("hidden_size", 0), vision.get("intermediate_size", 0), vision.get("num_hidden_layers", 0)
    if not all(isinstance(v, int) and v > 0 for v in (width, inter, layers)):
        raise ConfigError(
            "config.json cannot be fitted", ["vision_config: hidden_size, intermediate_size and num_hidden_layers required"]
        )
    return layers * (4 * width * width + 2 * width * inter) + width * (text.get("hidden_size") or 0)


def _checkpoint_gb(index: Mapping[str, Any] | None) -> float | None:
    if index is None:
        return None
    total = (index.get("metadata") or {}).get("total_size")
    if not isinstance(total, int) or isinstance(total, bool) or total <= 0:
        raise ConfigError("model.safetensors.index.json cannot be read", [f"metadata.total_size={total!r}: a positive integer"])
    return total / 1e9
