"""The memory fit on a bare GPU memory figure: budget, weights, overhead and KV cache per GPU for one
replica of tensor-parallel size tp, what vLLM would print for it and whether it would start.
``models.fit`` applies it to a catalog VM size."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, TypedDict, Unpack

from . import catalog, kv_cache, vllm_kv
from .fit_result import FitResult
from .gpu_utilization import DEFAULT_GPU_MEMORY_UTILIZATION, utilization_problem
from .model_facts import GB, GIB, KV_CACHE_DTYPES, WEIGHT_DTYPES, ModelFactsArgs, check_choice, get_model
from .vllm_overhead import runtime_overhead
from .vllm_releases import HYBRID_KV_MANAGER_SINCE, PINNED_VLLM_VERSION, release, scheduler_defaults
from .weights import per_gpu_weight_bytes

WARN_BELOW_SEQUENCES = 4
"""Warn when fewer full-length sequences than this fit at once: requests would queue."""


class FitSettings(TypedDict, total=False):
    """The vLLM settings a fit assumes, passed as keywords to ``fit``, ``fit_on_memory`` and ``fit_options``;
    each may be left out for the default named here (``DEFAULT_SETTINGS``)."""

    max_model_len: int | None
    """Context length checked, in tokens. Default None: the model's ``max_context``, as vLLM's default is."""
    gpu_memory_utilization: float
    """Fraction of GPU memory vLLM may use, ``gpu_utilization.UTILIZATION_ACCEPTED``. Default ``DEFAULT_GPU_MEMORY_UTILIZATION``
    (0.9), what VllmService passes."""
    dtype: str
    """Weight dtype: ``auto`` (the checkpoint as published) or a ``WEIGHT_BYTES`` dtype. Default auto."""
    kv_cache_dtype: str
    """KV cache dtype: ``auto`` (the model's dtype) or ``fp8``. Default auto."""
    warn_below_sequences: int
    """Warn when fewer full-length sequences than this fit. Default ``WARN_BELOW_SEQUENCES`` (4)."""
    max_num_seqs: int | None
    """Sequences vLLM schedules at once (rows of the profile run's sampler). Default None: the release's
    default for the GPU."""
    max_num_batched_tokens: int | None
    """Tokens per scheduler step (the profile run's forward pass). Default None: ``vllm serve``'s default for
    the GPU in the release."""
    cuda_graphs: bool
    """Whether vLLM captures CUDA graphs; False is ``--enforce-eager``. Default True."""
    custom_all_reduce: bool
    """Whether tensor-parallel ranks use vLLM's custom all-reduce; False with ``--disable-custom-all-reduce``
    and whenever a replica spans nodes or pods (vLLM then disables it). Default True."""
    vllm_version: str
    """vLLM release whose profiler and KV arithmetic are modelled. Default ``PINNED_VLLM_VERSION``, the
    release VllmService runs."""


DEFAULT_SETTINGS: FitSettings = {
    "max_model_len": None,
    "gpu_memory_utilization": DEFAULT_GPU_MEMORY_UTILIZATION,
    "dtype": "auto",
    "kv_cache_dtype": "auto",
    "warn_below_sequences": WARN_BELOW_SEQUENCES,
    "max_num_seqs": None,
    "max_num_batched_tokens": None,
    "cuda_graphs": True,
    "custom_all_reduce": True,
    "vllm_version": PINNED_VLLM_VERSION,
}


def complete(settings: Mapping[str, Any], caller: str) -> FitSettings:
    """``settings`` over ``DEFAULT_SETTINGS``; a TypeError for a key that is not a setting, as Python raises
    for an unknown keyword."""
    if unknown := sorted(set(settings) - FitSettings.__optional_keys__):
        raise TypeError(f"{caller}() got an unexpected keyword argument {unknown[0]!r}")
    return {**DEFAULT_SETTINGS, **settings}  # type: ignore[typeddict-item]


def check(tp: int, settings: FitSettings) -> None:
    """A ValueError naming the first of ``tp`` and the settings that is out of range."""
    if tp < 1:
        raise ValueError(f"tp={tp!r}: must be at least 1")
    if settings["max_model_len"] is not None and settings["max_model_len"] < 1:
        raise ValueError(f"max_model_len={settings['max_model_len']!r}: must be at least 1")
    if problem := utilization_problem(settings["gpu_memory_utilization"]):
        raise ValueError(f"gpu_memory_utilization={settings['gpu_memory_utilization']!r}: {problem}")
    check_choice("dtype", settings["dtype"], WEIGHT_DTYPES)
    check_choice("kv_cache_dtype", settings["kv_cache_dtype"], KV_CACHE_DTYPES)
    for name in ("max_num_seqs", "max_num_batched_tokens"):
        if settings[name] is not None and settings[name] < 1:
            raise ValueError(f"{name}={settings[name]!r}: must be at least 1")
    release(settings["vllm_version"])


def scheduler(settings: FitSettings, gpu: str, device_gib: float) -> tuple[int, int]:
    """(max_num_seqs, max_num_batched_tokens) of the profile run: as given, else the release's defaults;
    from 0.10.1 a default max_num_seqs is at most max_num_batched_tokens (``_set_default_args_v1``)."""
    version = settings["vllm_version"]
    default_seqs, default_tokens = scheduler_defaults(version, gpu, device_gib)
    tokens = settings["max_num_batched_tokens"] or default_tokens
    seqs = settings["max_num_seqs"] or default_seqs
    if not settings["max_num_seqs"] and release(version) >= (0, 10, 1):
        seqs = min(seqs, tokens)
    return seqs, tokens


PCIE_ONLY_GPUS = re.compile(r"RTX|GEFORCE|L40|A40|A6000|(?<!\d)L4(?!\d)|A10(?!\d)|A10G|(?<!\d)T4(?!\d)")
"""Names of GPUs sold without NVLink between the GPUs of a server, for a GPU the catalog does not know."""


def nvlink_node(gpu: str) -> bool:
    """Whether ranks of one node talk over NVLink: what the catalog says of the GPU model, else False only for a
    GPU named like the PCIe-only families. The large non-torch figure with tp (NCCL's NVLink/NVSwitch channels
    and vLLM's custom all-reduce) was measured on NVLink nodes; PCIe nodes spend what a network transport does."""
    known = catalog.gpu_has_nvlink(gpu.split(" MIG ")[0])
    if known is not None:
        return known
    return not PCIE_ONLY_GPUS.search(gpu.upper())


def resolve(model: ModelFactsArgs | str) -> ModelFactsArgs:
    """The facts of ``model``: given, or looked up in the catalog by id or KAITO preset."""
    return model if isinstance(model, ModelFactsArgs) else get_model(model)


def fit_on_memory(
    model: ModelFactsArgs | str,
    gpu_memory_gb: float,
    tp: int = 1,
    *,
    gpu: str = "",
    gpu_memory_gib: float | None = None,
    **settings: Unpack[FitSettings],
) -> FitResult:
    """Fit a model on ``tp`` GPUs of ``gpu_memory_gb`` each, outside the catalog (no price, no suggestions).

    :param model: the model's facts, or its Hugging Face id or KAITO preset in the catalog.
    :param gpu_memory_gb: memory per GPU in GB (1e9 bytes), as a size page prints it.
    :param tp: tensor-parallel size: GPUs one replica uses.
    :param gpu: the GPU's name, which decides the release's default ``max_num_seqs`` and
        ``max_num_batched_tokens`` and the kernels vLLM picks for its generation (MLA block size, MXFP4
        padding), nothing else. Default none.
    :param gpu_memory_gib: the memory the device reports, when known; it replaces ``gpu_memory_gb`` read as
        1e9 bytes. Default None.
    :param settings: the vLLM settings (``FitSettings``).
    """
    s = complete(settings, "fit_on_memory")
    model = resolve(model)
    check(tp, s)
    version = s["vllm_version"]
    length = s["max_model_len"] or model.max_context
    device_gib = gpu_memory_gib if gpu_memory_gib is not None else gpu_memory_gb * GB / GIB
    seqs, batched = scheduler(s, gpu, device_gib)
    budget = device_gib * GIB * s["gpu_memory_utilization"]
    if model.architecture is not None:
        weights = per_gpu_weight_bytes(model, tp, s["dtype"], vllm_version=version, gpu=gpu)
    else:
        weights = model.weight_bytes(s["dtype"]) / tp
    fabric = s["custom_all_reduce"] and nvlink_node(gpu)
    terms = runtime_overhead(
        model, tp, seqs, batched, cuda_graphs=s["cuda_graphs"], vllm_version=version, custom_all_reduce=fabric
    )
    kv_budget = budget - weights - terms.total
    layout = kv_cache.kv_layout(model, tp, s["kv_cache_dtype"], max_num_batched_tokens=batched, vllm_version=version, gpu=gpu)
    kv = vllm_kv.report(layout, kv_budget, length)
    full, sliding = kv_cache.per_token_bytes(model, tp, s["kv_cache_dtype"])
    result = FitResult(
        model=model.hf_id,
        vm_size=None,
        gpu=gpu,
        tp=tp,
        mig_profile=None,
        replicas_per_vm=1,
        max_model_len=length,
        dtype=s["dtype"],
        kv_cache_dtype=s["kv_cache_dtype"],
        gpu_memory_utilization=s["gpu_memory_utilization"],
        vllm_version=version,
        gpu_memory_gib=device_gib,
        budget_gib_per_gpu=budget / GIB,
        weights_gib_per_gpu=weights / GIB,
        overhead_gib=terms.total / GIB,
        non_torch_gib=terms.non_torch / GIB,
        activation_gib=terms.activation / GIB,
        cuda_graph_gib=terms.cuda_graphs / GIB,
        max_num_seqs=seqs,
        max_num_batched_tokens=batched,
        cuda_graphs=s["cuda_graphs"],
        custom_all_reduce=fabric or tp == 1,
        kv_budget_gib_per_gpu=kv_budget / GIB,
        kv_bytes_per_token=model.kv_bytes_per_token(s["kv_cache_dtype"]),
        kv_bytes_per_token_per_gpu=full + sliding,
        kv_block_size=layout.block_size,
        kv_cache_groups=kv.groups,
        kv_tokens=kv.tokens,
        max_concurrency=kv.max_concurrency,
        full_length_sequences=int(kv.max_concurrency) if kv.starts else 0,
        kv_needed_gib=kv.needed_bytes / GIB,
        longest_request_tokens=kv.longest_request,
        hybrid=bool(layout.sliding_layers and layout.full_layers and release(version) >= HYBRID_KV_MANAGER_SINCE),
        price_usd_per_hour=None,
        price_usd_per_month=None,
    )
    return _judged(result, model, s["warn_below_sequences"])


def _judged(result: FitResult, model: ModelFactsArgs, warn_below_sequences: int) -> FitResult:
    """``result`` with the first check it fails (tp, context, weights, KV cache), worded as vLLM refuses, or the
    warning when few full-length sequences fit."""
    problem, kind = model.tp_problem(result.tp), "tp"
    length, kv_budget = result.max_model_len, result.kv_budget_gib_per_gpu
    if problem is None and length > model.max_context:
        problem, kind = f"max_model_len {length} exceeds the model's maximum context of {model.max_context} tokens", "context"
    if problem is None and kv_budget <= 0:
        problem, kind = (
            f"weights ({result.weights_gib_per_gpu:.1f} GiB) + overhead ({result.overhead_gib:.1f} GiB) exceed the "
            f"{result.budget_gib_per_gpu:.1f} GiB budget per GPU: vLLM stops with 'No available memory for the cache blocks'",
            "weights",
        )
    if problem is None and result.kv_needed_gib > kv_budget:
        longest = f"; the longest it holds is {result.longest_request_tokens} tokens" if result.longest_request_tokens else ""
        problem, kind = (
            f"one {length}-token request needs {result.kv_needed_gib:.2f} GiB of KV cache per GPU, more than the "
            f"{kv_budget:.2f} GiB available: vLLM refuses to start{longest}",
            "kv",
        )
    if problem is not None:
        return replace(result, problem=problem, problem_kind=kind)
    if result.full_length_sequences < warn_below_sequences:
        warning = (
            f"only {result.full_length_sequences} sequence(s) of {length} tokens fit at once (fewer than {warn_below_sequences})"
        )
        return replace(result, warning=warning)
    return result
