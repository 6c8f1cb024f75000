"""Model facts and the GPU memory fit: will a model load under vLLM on a catalog size, and how much
KV cache is left for requests?

Facts live in ``models.json`` beside this module, addressed by Hugging Face id, each row with its
``source``; ``ModelFactsArgs`` takes the same numbers for any other model. The fit models the vLLM
release the project pins (``PINNED_VLLM_VERSION``). Per GPU of a replica of tensor-parallel size tp::

    budget      = device GiB (gpu_memory.json) x gpu_memory_utilization   (a MIG slice: its own GB, tp 1)
    weights     = (weights_gb if pre-quantized and dtype auto, else params x bytes(dtype)
                   + embeddings kept in bf16 by fp8/int4) / tp
    overhead    = non-torch (cuBLAS; NCCL and custom all-reduce when tp > 1)
                  + activation peak of the profile run: max_num_batched_tokens x one layer's MLP
                    intermediates (fused-MoE caches for a mixture of experts) + the sampler's
                    min(max_num_seqs, max_num_batched_tokens) x vocab logits and their copies
                  + CUDA graphs (vLLM >= 0.21): the largest captured batch x layers x hidden
    kv_budget   = budget - weights - overhead
    kv_per_tok  = 2 x layers x max(1, kv_heads / tp) x head_dim x bytes(kv dtype)
    sequence    = full-attention layers x tokens + sliding layers x min(tokens, window)   (in KV bytes)
    kv_tokens   = kv_budget / full-attention bytes per token;  sequences = kv_budget / sequence

``FORMULA`` says the same in README-ready Markdown; ``bench/fit_accuracy.py`` compares it with
published vLLM logs (``bench/fit_reference_points.json``). This module imports nothing from Pulumi
so that ``aks-gpu fit`` stays fast. It fits catalog VM sizes and suggests changes, and re-exports the parts
it is built from: ``model_facts`` (the facts table), ``gpu_memory`` (what each GPU reports),
``vllm_overhead`` (vLLM's own memory), ``kv_cache`` and ``memory_fit`` (the fit on a bare memory figure).
"""

from __future__ import annotations

import textwrap
from dataclasses import replace
from typing import Unpack

from . import catalog
from .fit_result import FitResult, Suggestion
from .gpu_memory import device_memory_gib, gpu_memory_table, mig_slice_gb
from .kv_cache import longest_context, sequence_bytes
from .labels import mig_slice
from .memory_fit import (
    DEFAULT_GPU_MEMORY_UTILIZATION,
    DEFAULT_SETTINGS,
    WARN_BELOW_SEQUENCES,
    FitSettings,
    check,
    complete,
    fit_on_memory,
    resolve,
)
from .model_facts import (
    GB,
    GIB,
    KV_CACHE_DTYPES,
    WEIGHT_BYTES,
    WEIGHT_DTYPES,
    ModelFactsArgs,
    UnknownModelError,
    get_model,
    models,
)
from .vllm_overhead import (
    CUDA_GRAPH_BASE_GIB,
    CUDA_GRAPHS_IN_BUDGET_SINCE,
    DEFAULT_VOCAB_SIZE,
    MAX_CUDAGRAPH_CAPTURE_SIZE,
    NON_TORCH_GIB,
    NON_TORCH_TP_GIB,
    PINNED_VLLM_VERSION,
    VLLM_MAX_NUM_BATCHED_TOKENS,
    VLLM_MAX_NUM_BATCHED_TOKENS_LARGE_GPU,
    VLLM_MAX_NUM_SEQS,
    VLLM_MAX_NUM_SEQS_LARGE_GPU,
    Overhead,
    forward_bytes_per_token,
    release,
    runtime_overhead,
    sampler_bytes_per_logit,
    vllm_default_max_num_batched_tokens,
    vllm_default_max_num_seqs,
)

__all__ = [
    "CUDA_GRAPHS_IN_BUDGET_SINCE",
    "CUDA_GRAPH_BASE_GIB",
    "DEFAULT_GPU_MEMORY_UTILIZATION",
    "DEFAULT_SETTINGS",
    "DEFAULT_VOCAB_SIZE",
    "FORMULA",
    "GB",
    "GIB",
    "KV_CACHE_DTYPES",
    "MAX_CUDAGRAPH_CAPTURE_SIZE",
    "NON_TORCH_GIB",
    "NON_TORCH_TP_GIB",
    "PINNED_VLLM_VERSION",
    "TP_SIZES",
    "VLLM_MAX_NUM_BATCHED_TOKENS",
    "VLLM_MAX_NUM_BATCHED_TOKENS_LARGE_GPU",
    "VLLM_MAX_NUM_SEQS",
    "VLLM_MAX_NUM_SEQS_LARGE_GPU",
    "WARN_BELOW_SEQUENCES",
    "WEIGHT_BYTES",
    "WEIGHT_DTYPES",
    "FitResult",
    "FitSettings",
    "ModelFactsArgs",
    "Overhead",
    "Suggestion",
    "UnknownModelError",
    "device_memory_gib",
    "fit",
    "fit_on_memory",
    "fit_options",
    "forward_bytes_per_token",
    "get_model",
    "gpu_memory_table",
    "mig_slice_gb",
    "models",
    "release",
    "runtime_overhead",
    "sampler_bytes_per_logit",
    "sequence_bytes",
    "vllm_default_max_num_batched_tokens",
    "vllm_default_max_num_seqs",
]

TP_SIZES = (1, 2, 4, 8)
"""Tensor-parallel sizes ``fit_options`` tries (within one VM)."""


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
        f"Overhead = what vLLM's profiler measures, with no per-GPU constant: non-torch memory ({NON_TORCH_GIB} GiB "
        f"at tp 1: cuBLAS workspaces; {NON_TORCH_TP_GIB} GiB with tp > 1: NCCL and custom all-reduce) + the torch "
        "peak of the profile run: max_num_batched_tokens x 2 bytes x (3 x intermediate / tp + 2 x hidden) for one "
        "layer's MLP (a mixture of experts: experts per token x (max(2 x intermediate / tp, hidden) + "
        "intermediate / tp), the fused-MoE caches), plus min(max_num_seqs, max_num_batched_tokens) x vocab x "
        f"the release's sampler bytes per logit ({sampler_bytes_per_logit(PINNED_VLLM_VERSION):g} in vLLM "
        f"{PINNED_VLLM_VERSION}: logits and their fp32, softmax and sort copies) + CUDA graphs since vLLM 0.21, "
        f"{CUDA_GRAPH_BASE_GIB} GiB + the largest captured batch (min(2 x max_num_seqs, "
        f"{MAX_CUDAGRAPH_CAPTURE_SIZE})) x layers x hidden x 2 bytes. vLLM's defaults size the profile run: "
        f"max_num_seqs {VLLM_MAX_NUM_SEQS_LARGE_GPU} and max_num_batched_tokens {VLLM_MAX_NUM_BATCHED_TOKENS_LARGE_GPU} "
        f"on GPUs of 70 GiB or more other than the A100, else {VLLM_MAX_NUM_SEQS} and {VLLM_MAX_NUM_BATCHED_TOKENS}.",
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


def fit(
    model: ModelFactsArgs | str,
    vm_size: str,
    tp: int = 1,
    *,
    mig_profile: str | None = None,
    suggest: bool = True,
    **settings: Unpack[FitSettings],
) -> FitResult:
    """Fit a model on one VM of a catalog size with tensor-parallel size ``tp`` (or on one MIG slice).

    The budget is the memory the VM's GPU reports (``gpu_memory.json``). When it does not fit and
    ``suggest`` is set, ``suggestions`` lists single changes that fit: more GPUs of the same VM, fp8 KV
    cache, fp8 weights, a shorter context, the cheapest other size.

    :param model: the model's facts, or its Hugging Face id or KAITO preset in the catalog.
    :param vm_size: a catalog VM size (``catalog.get_sku``).
    :param tp: tensor-parallel size: GPUs of the VM one replica uses.
    :param mig_profile: AKS ``gpuInstanceProfile`` (``MIG3g``) to fit one MIG slice instead. Default None.
    :param suggest: list single changes that fit when it does not. Default True.
    :param settings: the vLLM settings (``FitSettings``).
    """
    s = complete(settings, "fit")
    model = resolve(model)
    check(tp, s)
    sku = catalog.get_sku(vm_size)
    if mig_profile is None:
        memory_gb, gpu, replicas = sku.gpu_memory_gb, sku.gpu_model, max(1, sku.gpus // tp)
        memory_gib = _device_gib(sku)
    else:
        slice_name = mig_slice(catalog.mig_resource_name(vm_size, mig_profile))
        memory_gb, gpu = mig_slice_gb(slice_name), f"{sku.gpu_model} MIG {slice_name}"
        memory_gib = memory_gb * GB / GIB
        replicas = sku.gpus * catalog.mig_slices_per_gpu(mig_profile)
    result = replace(
        fit_on_memory(model, memory_gb, tp, gpu=gpu, gpu_memory_gib=memory_gib, **s),
        vm_size=vm_size,
        mig_profile=mig_profile,
        replicas_per_vm=replicas,
        price_usd_per_hour=sku.price_usd_per_hour,
        price_usd_per_month=sku.monthly_price_usd(),
    )
    if vm_problem := _vm_problem(vm_size, tp, mig_profile):
        result = replace(result, problem=vm_problem, problem_kind="vm", warning=None)
    if suggest and not result.fits:
        result = replace(result, suggestions=_suggestions(model, result, s))
    return result


def _vm_problem(vm_size: str, tp: int, mig_profile: str | None) -> str | None:
    """Why the VM cannot serve the replica at all (retired, tp on a MIG slice, more GPUs than it has), or None."""
    sku = catalog.get_sku(vm_size)
    if sku.retired:
        return f"{vm_size} is retired ({sku.retired})"
    if mig_profile is not None and tp != 1:
        return f"a MIG slice serves tp 1 only, not tp {tp}"
    if tp > sku.gpus:
        return f"tp {tp} needs {tp} GPUs on one node; {vm_size} has {sku.gpus}"
    return None


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


def _suggestions(model: ModelFactsArgs, result: FitResult, options: FitSettings) -> tuple[Suggestion, ...]:
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


def _cheaper_memory(model: ModelFactsArgs, result: FitResult, options: FitSettings) -> list[Suggestion]:
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
        length = longest_context(model, result.kv_budget_gib_per_gpu * GIB, result.tp, result.kv_cache_dtype)
        if length:
            tried = fit(model, result.vm_size, **again, **{**options, "max_model_len": length})
            if tried.fits:
                found.append(Suggestion("max_model_len", length, f"--max-model-len {length}: {_gives(tried)}"))
    return found


def _gives(result: FitResult) -> str:
    return f"{result.full_length_sequences} sequence(s) of {result.max_model_len} tokens"


def _price(result: FitResult) -> str:
    return f"${result.price_usd_per_hour:.2f}/h" if result.price_usd_per_hour is not None else "no list price"


def fit_options(
    model: ModelFactsArgs | str,
    max_model_len: int | None = None,
    *,
    fitting_only: bool = True,
    **settings: Unpack[FitSettings],
) -> list[FitResult]:
    """Every current catalog size, tp in ``TP_SIZES`` up to the VM's GPUs, and each MIG slice size (tp 1).

    Sorted cheapest first by the VM's hourly list price (unpriced last), then by fewer GPUs per
    replica. With ``fitting_only`` (default) only the configurations that fit.

    :param model: the model's facts, or its Hugging Face id or KAITO preset in the catalog.
    :param max_model_len: context length checked. Default None: the model's ``max_context``.
    :param fitting_only: leave out the configurations that do not fit. Default True.
    :param settings: the other vLLM settings (``FitSettings``).
    """
    s = complete({**settings, "max_model_len": max_model_len}, "fit_options")
    model = resolve(model)
    results = [
        fit(model, name, tp, mig_profile=profile, suggest=False, **s)
        for name in catalog.current_sizes()
        for tp, profile, _ in _same_vm_candidates(catalog.skus()[name])
    ]
    results = [r for r in results if r.fits or not fitting_only]
    return sorted(results, key=_cost_order)


def _cost_order(result: FitResult) -> tuple:
    price = result.price_usd_per_hour
    return (price is None, price or 0.0, result.gpu_share, result.vm_size)
