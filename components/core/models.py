"""Model facts and the GPU memory fit: will a model load under vLLM on a catalog size, how much KV cache is
left for requests, what vLLM will print for it, and will it start?

Facts live in ``models.json`` beside this module, addressed by Hugging Face id, each row with its
``source``; ``ModelFactsArgs`` takes the same numbers for any other model, and ``hf_config`` reads them from a
Hugging Face ``config.json``. The fit models one vLLM release (default ``PINNED_VLLM_VERSION``, the image
VllmService runs; ``vllm_releases`` says what changed from 0.8 on). Per GPU of a replica of size tp::

    budget      = device GiB (gpu_memory.json) x gpu_memory_utilization   (a MIG slice: its own GB, tp 1)
    weights     = layer by layer for an architecture (``weights``), else parameters x bytes(dtype) / tp
    overhead    = non-torch (the release's profiler; NCCL and custom all-reduce when tp > 1)
                  + the profile run's activation peak (forward of max_num_batched_tokens, sampler of
                    max_num_seqs rows x vocab) + CUDA graphs (vLLM >= 0.21, not with --enforce-eager)
    kv_budget   = budget - weights - overhead                  ("Available KV cache memory")
    blocks, "GPU KV cache size", "Maximum concurrency", the start-up check: ``vllm_kv``

``FORMULA`` says the same in README-ready Markdown; ``bench/fit_accuracy.py`` compares it with
published vLLM logs (``bench/fit_reference_points.json``). This module imports nothing from Pulumi
so that ``aks-gpu fit`` stays fast. It fits catalog VM sizes and suggests changes, and re-exports the parts
it is built from.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Unpack

from . import catalog
from .fit_formula import FORMULA
from .fit_result import FitResult, Suggestion
from .gpu_memory import device_memory_gib, gpu_memory_table, mig_slice_gb
from .gpu_utilization import (
    DEFAULT_GPU_MEMORY_UTILIZATION,
    GPU_MEMORY_UTILIZATION_ABOVE,
    GPU_MEMORY_UTILIZATION_AT_MOST,
    UTILIZATION_ACCEPTED,
    utilization_problem,
)
from .kv_cache import kv_layout, longest_context, sequence_bytes
from .labels import mig_slice
from .memory_fit import (
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
    DEFAULT_VOCAB_SIZE,
    MAX_CUDAGRAPH_CAPTURE_SIZE,
    NON_TORCH_GIB,
    NON_TORCH_TP_GIB,
    VLLM_MAX_NUM_BATCHED_TOKENS,
    VLLM_MAX_NUM_BATCHED_TOKENS_LARGE_GPU,
    VLLM_MAX_NUM_SEQS,
    VLLM_MAX_NUM_SEQS_LARGE_GPU,
    Overhead,
    forward_bytes_per_token,
    non_torch_gib,
    runtime_overhead,
    sampler_bytes_per_logit,
    vllm_default_max_num_batched_tokens,
    vllm_default_max_num_seqs,
)
from .vllm_releases import CUDA_GRAPHS_IN_BUDGET_SINCE, PINNED_VLLM_VERSION, VLLM_IMAGE, image_version, release

__all__ = [
    "CUDA_GRAPHS_IN_BUDGET_SINCE",
    "CUDA_GRAPH_BASE_GIB",
    "DEFAULT_GPU_MEMORY_UTILIZATION",
    "DEFAULT_SETTINGS",
    "DEFAULT_VOCAB_SIZE",
    "FORMULA",
    "GB",
    "GIB",
    "GPU_MEMORY_UTILIZATION_ABOVE",
    "GPU_MEMORY_UTILIZATION_AT_MOST",
    "KV_CACHE_DTYPES",
    "MAX_CUDAGRAPH_CAPTURE_SIZE",
    "NON_TORCH_GIB",
    "NON_TORCH_TP_GIB",
    "PINNED_VLLM_VERSION",
    "TP_SIZES",
    "UTILIZATION_ACCEPTED",
    "VLLM_IMAGE",
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
    "image_version",
    "kv_layout",
    "mig_slice_gb",
    "models",
    "non_torch_gib",
    "release",
    "runtime_overhead",
    "sampler_bytes_per_logit",
    "sequence_bytes",
    "utilization_problem",
    "vllm_default_max_num_batched_tokens",
    "vllm_default_max_num_seqs",
]

TP_SIZES = (1, 2, 4, 8)
"""Tensor-parallel sizes ``fit_options`` tries (within one VM)."""


def fit(
    model: ModelFactsArgs | str,
    vm_size: str,
    tp: int = 1,
    *,
    mig_profile: str | None = None,
    nodes: int = 1,
    suggest: bool = True,
    **settings: Unpack[FitSettings],
) -> FitResult:
    """Fit a model on one VM of a catalog size with tensor-parallel size ``tp`` (or on one MIG slice), or on
    ``nodes`` VMs of it that one replica spans.

    The budget is the memory the VM's GPU reports (``gpu_memory.json``). When it does not fit and
    ``suggest`` is set, ``suggestions`` lists single changes that fit: more GPUs of the same VM, fp8 KV
    cache, fp8 weights, a shorter context, the cheapest other size.

    :param model: the model's facts, or its Hugging Face id or KAITO preset in the catalog.
    :param vm_size: a catalog VM size (``catalog.get_sku``).
    :param tp: tensor-parallel size: GPUs of the VM one replica uses.
    :param mig_profile: AKS ``gpuInstanceProfile`` (``MIG3g``) to fit one MIG slice instead. Default None.
    :param nodes: VMs (pods) one replica's tensor-parallel ranks span, ``tp / nodes`` GPUs on each; vLLM then
        runs without its custom all-reduce. Default 1.
    :param suggest: list single changes that fit when it does not. Default True.
    :param settings: the vLLM settings (``FitSettings``).
    """
    s = complete(settings, "fit")
    model = resolve(model)
    check(tp, s)
    if nodes < 1:
        raise ValueError(f"nodes={nodes!r}: must be at least 1")
    sku = catalog.get_sku(vm_size)
    # Across nodes vLLM turns its custom all-reduce off; a PCIe size has no NVLink fabric to spend on.
    on_vm = {**s, "custom_all_reduce": s["custom_all_reduce"] and nodes == 1 and bool(sku.nvlink)}
    if mig_profile is None:
        memory_gb, gpu, replicas = sku.gpu_memory_gb, sku.gpu_model, max(1, sku.gpus * nodes // tp) if nodes == 1 else 1
        memory_gib = _device_gib(sku)
    else:
        slice_name = mig_slice(catalog.mig_resource_name(vm_size, mig_profile))
        memory_gb, gpu = mig_slice_gb(slice_name), f"{sku.gpu_model} MIG {slice_name}"
        memory_gib = memory_gb * GB / GIB
        replicas = sku.gpus * catalog.mig_slices_per_gpu(mig_profile)
    result = replace(
        fit_on_memory(model, memory_gb, tp, gpu=gpu, gpu_memory_gib=memory_gib, **on_vm),
        vm_size=vm_size,
        mig_profile=mig_profile,
        replicas_per_vm=replicas,
        nodes=nodes,
        price_usd_per_hour=sku.price_usd_per_hour,
        price_usd_per_month=sku.monthly_price_usd(),
    )
    if vm_problem := _vm_problem(vm_size, tp, mig_profile, nodes):
        result = replace(result, problem=vm_problem, problem_kind="vm", warning=None)
    if suggest and not result.fits:
        result = replace(result, suggestions=_suggestions(model, result, s))
    return result


def _vm_problem(vm_size: str, tp: int, mig_profile: str | None, nodes: int = 1) -> str | None:
    """Why the VMs cannot serve the replica at all (retired, tp on a MIG slice, more GPUs than they have), or None."""
    sku = catalog.get_sku(vm_size)
    if sku.retired:
        return f"{vm_size} is retired ({sku.retired})"
    if mig_profile is not None and tp != 1:
        return f"a MIG slice serves tp 1 only, not tp {tp}"
    if mig_profile is not None and nodes != 1:
        return f"a MIG slice serves one node, not {nodes}"
    if tp % nodes:
        return f"tp {tp} does not split evenly over {nodes} nodes"
    if tp // nodes > sku.gpus:
        where = "on one node" if nodes == 1 else f"per node over {nodes} nodes"
        return f"tp {tp} needs {tp // nodes} GPUs {where}; {vm_size} has {sku.gpus}"
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
            model,
            vm_size,
            result.tp,
            mig_profile=result.mig_profile,
            nodes=result.nodes,
            suggest=False,
            **{**options, "max_model_len": None},
        )
        verdict = "fits" if fixed.fits else "still does not fit"
        return (
            Suggestion(
                "max_model_len", model.max_context, f"--max-model-len {model.max_context} (the model's maximum; {verdict})"
            ),
        )

    found: list[Suggestion] = []
    # Across nodes the replica already takes whole VMs: only the settings below change what fits.
    for tp, profile in _same_vm_changes(result) if result.nodes == 1 else ():
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
    again = dict(tp=result.tp, mig_profile=result.mig_profile, nodes=result.nodes, suggest=False)
    if options["kv_cache_dtype"] == "auto" and model.kv_dtype_bytes() > 1:
        tried = fit(model, result.vm_size, **again, **{**options, "kv_cache_dtype": "fp8"})
        if tried.fits:
            found.append(Suggestion("kv_cache_dtype", "fp8", f"--kv-cache-dtype fp8: {_gives(tried)}"))
    if model.weight_bytes(options["dtype"]) > model.weight_bytes("fp8"):
        tried = fit(model, result.vm_size, **again, **{**options, "dtype": "fp8"})
        if tried.fits:
            found.append(Suggestion("dtype", "fp8", f"fp8 weights (--quantization fp8): {_gives(tried)}"))
    if result.problem_kind == "kv":
        length = longest_context(model, result.longest_request_tokens)
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
