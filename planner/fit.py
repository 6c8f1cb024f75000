"""``aks-gpu fit``: every catalog size and tensor-parallel size that serves a model, cheapest first.

Reads ``components.core.models`` and ``components.core.catalog`` only, so the command never imports the Pulumi
SDKs. Exit codes: 0 when at least one option fits, 1 when none does, 2 for an unknown model.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pydantic import ValidationError

from aks_gpu_inference.components.core import catalog
from aks_gpu_inference.components.core.errors import ConfigError, validation_problems
from aks_gpu_inference.components.core.models import (
    NON_TORCH_GIB,
    NON_TORCH_TP_GIB,
    PINNED_VLLM_VERSION,
    WARN_BELOW_SEQUENCES,
    FitResult,
    ModelFactsArgs,
    UnknownModelError,
    fit,
    fit_options,
    get_model,
)
from aks_gpu_inference.planner.inputs import safe_json
from aks_gpu_inference.planner.report.tables import table

EXIT_OK, EXIT_NONE_FITS, EXIT_USAGE = 0, 1, 2


def load_model(spec: str) -> ModelFactsArgs:
    """A catalog model by Hugging Face id or KAITO preset, or a JSON file of ``ModelFactsArgs`` keys."""
    path = Path(spec)
    if spec.endswith(".json") and path.is_file():
        # Bounded: UTF-8, at most 1 MiB, 20 levels, 30-digit integers, finite numbers, unique keys.
        facts = safe_json.load_json(path, source=spec, max_bytes=2**20, max_depth=20)
        if not isinstance(facts, dict):
            raise ConfigError(f"{spec} holds invalid model facts", [f"expected a JSON object, got a {type(facts).__name__}"])
        try:
            return ModelFactsArgs.model_validate(facts)
        except ValidationError as err:
            raise ConfigError(f"{spec} holds invalid model facts", validation_problems(err)) from None
    return get_model(spec)


def header(model: ModelFactsArgs, length: int, args: argparse.Namespace) -> str:
    """What was asked and what the numbers assume, in two lines."""
    prices = catalog.price_snapshot()
    weights = args.dtype
    if weights == "auto":
        weights = f"as published: {model.weights_gb} GB" if model.weights_gb else f"as published: {model.dtype}"
    return (
        f"Fit of {model.hf_id} at {length} tokens of context (weights {weights}, KV cache {args.kv_cache_dtype}, "
        f"gpu-memory-utilization {args.gpu_memory_utilization})\n"
        f"List-price estimate ({prices['date']}, {prices['region']}, Microsoft's Retail Prices snapshot); per GPU: "
        f"budget = the GiB the device reports (components/core/gpu_memory.json) x utilization, minus vLLM "
        f"{PINNED_VLLM_VERSION}'s profiled overhead (non-torch {NON_TORCH_GIB} GiB, {NON_TORCH_TP_GIB} with TP; the profile "
        "run's activation and sampler at vLLM's default batch sizes; CUDA graphs); formula: components/core/models.py FORMULA"
    )


def _money(value: float | None, digits: int) -> str:
    return "n/a" if value is None else f"{value:,.{digits}f}"


def options_table(results: list[FitResult], length: int, show_problems: bool) -> str:
    """One row per option: size, GPU, tp, replicas, weights, KV tokens, full-length sequences, prices."""
    headers = ["vm size", "gpu", "tp", "replicas/VM", "weights/GPU GiB", "KV tokens", f"seqs @{length}", "$/hour", "$/month"]
    if show_problems:
        headers += ["fits", "problem"]
    rows = []
    for r in results:
        row = [
            r.vm_size,
            r.gpu,
            r.tp,
            r.replicas_per_vm,
            f"{r.weights_gib_per_gpu:.2f}",
            f"{r.kv_tokens:,}",
            r.full_length_sequences,
            _money(r.price_usd_per_hour, 2),
            _money(r.price_usd_per_month, 0),
        ]
        if show_problems:
            row += ["yes" if r.fits else "no", r.problem or r.warning or ""]
        rows.append(row)
    return table(headers, rows)


def closest_miss(results: list[FitResult], args: argparse.Namespace, model: ModelFactsArgs) -> FitResult:
    """The option with the most GPU memory per replica, refitted with suggestions: why nothing fits."""
    best = max(results, key=lambda r: (r.tp * r.gpu_memory_gib, -(r.price_usd_per_hour or 0)))
    assert best.vm_size is not None
    return fit(model, best.vm_size, best.tp, mig_profile=best.mig_profile, **_fit_options(args))


def _fit_options(args: argparse.Namespace) -> dict:
    return dict(
        max_model_len=args.context,
        gpu_memory_utilization=args.gpu_memory_utilization,
        dtype=args.dtype,
        kv_cache_dtype=args.kv_cache_dtype,
    )


def run(args: argparse.Namespace) -> int:
    """``aks-gpu fit``: print the options and return the exit code."""
    longest = next(m.le for m in ModelFactsArgs.model_fields["max_context"].metadata if getattr(m, "le", None))
    if args.context is not None and not 1 <= args.context <= longest:
        shown = args.context if len(str(args.context)) < 20 else f"{str(args.context)[:12]}..."
        print(f"error: --context {shown}: must be a positive number of tokens, at most {longest:,}", file=sys.stderr)
        return EXIT_USAGE
    if not 0 < args.gpu_memory_utilization <= 1:
        print(f"error: --gpu-memory-utilization {args.gpu_memory_utilization}: must be in (0, 1]", file=sys.stderr)
        return EXIT_USAGE
    try:
        model = load_model(args.model)
    except UnknownModelError as err:
        print(f"error: {err}. aks-gpu fit also takes a JSON file of those keys as MODEL.", file=sys.stderr)
        return EXIT_USAGE
    every = fit_options(model, fitting_only=False, **_fit_options(args))
    fitting = [r for r in every if r.fits]
    length = every[0].max_model_len
    miss = None if fitting else closest_miss(every, args, model)
    if args.format == "json":
        print(json.dumps(_report(model, length, args, every if args.all else fitting, miss), indent=2))
        return EXIT_OK if fitting else EXIT_NONE_FITS
    print(header(model, length, args), end="\n\n")
    shown = every if args.all else fitting
    if shown:
        print(options_table(shown, length, show_problems=args.all))
    if fitting:
        few = sum(r.warning is not None for r in fitting)
        print(f"\n{len(fitting)} options fit; $/hour is the whole VM, shared by its replicas.", end="")
        print(f" {few} serve fewer than {WARN_BELOW_SEQUENCES} full-length sequences at once." if few else "")
        return EXIT_OK
    assert miss is not None
    print(
        f"\nNo catalog size serves {model.hf_id} at {length} tokens. Closest: {miss.vm_size} ({miss.gpu}, tp {miss.tp}): {miss.problem}"
    )
    for suggestion in miss.suggestions:
        print(f"  - {suggestion.text}")
    return EXIT_NONE_FITS


def _report(model: ModelFactsArgs, length: int, args, results: list[FitResult], miss: FitResult | None) -> dict:
    return {
        "model": model.model_dump(),
        "max_model_len": length,
        "gpu_memory_utilization": args.gpu_memory_utilization,
        "dtype": args.dtype,
        "kv_cache_dtype": args.kv_cache_dtype,
        "assumptions": {
            "budget": "device-reported GiB (components/core/gpu_memory.json) x gpu_memory_utilization",
            "vllm_version": PINNED_VLLM_VERSION,
            "non_torch_gib": NON_TORCH_GIB,
            "non_torch_tp_gib": NON_TORCH_TP_GIB,
            "overhead": "per option: non_torch_gib + activation_gib + cuda_graph_gib (components/core/models.py FORMULA)",
            "prices": catalog.price_snapshot(),
            "estimate": "list price of the whole VM; not a quote",
        },
        "fits": miss is None,
        "problem": None if miss is None else f"{miss.vm_size} (tp {miss.tp}): {miss.problem}",
        "suggestions": [] if miss is None else [s.__dict__ for s in miss.suggestions],
        "options": [r.as_dict() for r in results],
    }
