"""``aks-gpu fit``: every catalog size and tensor-parallel size that serves a model, cheapest first; or, with
``--vm-size`` or ``--gpu``, one configuration with what vLLM would print for it and whether it would start.

Reads ``components.core.models`` and ``components.core.catalog`` only, so the command never imports the Pulumi
SDKs; parses and prints, the fit is ``components.core``'s. Exit codes: 0 when it fits (an option, or the one
configuration starts), 1 when not, 2 for bad input (one line on stderr).
"""

from __future__ import annotations

import argparse
import json
import sys

from aks_gpu_inference.components.core import catalog
from aks_gpu_inference.components.core.models import (
    WARN_BELOW_SEQUENCES,
    FitResult,
    ModelFactsArgs,
    fit,
    fit_on_memory,
    fit_options,
    gpu_memory_table,
    non_torch_gib,
)
from aks_gpu_inference.planner import fit_inputs
from aks_gpu_inference.planner.report.tables import table

EXIT_OK, EXIT_NONE_FITS, EXIT_USAGE = 0, 1, 2


def header(model: ModelFactsArgs, length: int, args: argparse.Namespace) -> str:
    """What was asked and what the numbers assume, in two lines."""
    prices = catalog.price_snapshot()
    weights = args.dtype
    if weights == "auto":
        stored = model.quantization if model.quantization != "none" else model.dtype
        weights = f"as published: {model.weights_gb} GB" if model.weights_gb else f"as published: {stored}"
    version = args.vllm_version
    return (
        f"Fit of {model.hf_id} at {length} tokens of context (weights {weights}, KV cache {args.kv_cache_dtype}, "
        f"gpu-memory-utilization {args.gpu_memory_utilization}, vLLM {version})\n"
        f"List-price estimate ({prices['date']}, {prices['region']}, Microsoft's Retail Prices snapshot); per GPU: "
        f"budget = the GiB the device reports (components/core/gpu_memory.json) x utilization, minus vLLM "
        f"{version}'s profiled overhead (non-torch {non_torch_gib(version, 1)} GiB, {non_torch_gib(version, 2)} with TP; "
        "the profile run's activation and sampler at the release's default batch sizes; CUDA graphs from 0.21); "
        "formula: components/core/models.py FORMULA"
    )


def _money(value: float | None, digits: int) -> str:
    return "n/a" if value is None else f"{value:,.{digits}f}"


def options_table(results: list[FitResult], length: int, show_problems: bool) -> str:
    """One row per option: size, GPU, tp, replicas, weights, vLLM's KV tokens, full-length sequences, prices."""
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
    return fit(model, best.vm_size, best.tp, mig_profile=best.mig_profile, **fit_inputs.settings(args))


def single(model: ModelFactsArgs, args: argparse.Namespace) -> FitResult:
    """The one configuration ``--vm-size`` or ``--gpu`` names."""
    tp = args.tp or 1
    if args.vm_size:
        return fit(model, args.vm_size, tp, nodes=args.nodes or 1, **fit_inputs.settings(args))
    device_gib = args.gpu_memory_gib if args.gpu_memory_gib is not None else gpu_memory_table()[args.gpu]["device_gib"]
    options = fit_inputs.settings(args)
    if (args.nodes or 1) > 1:
        options["custom_all_reduce"] = False
    return fit_on_memory(model, 0, tp, gpu=args.gpu, gpu_memory_gib=device_gib, **options)


def vllm_lines(r: FitResult) -> list[str]:
    """The figures as vLLM prints them at start-up, and the verdict."""
    per_request = f"Maximum concurrency for {r.max_model_len:,} tokens per request: {r.max_concurrency:.2f}x"
    lines = [
        f'  weights             {r.weights_gib_per_gpu:8.2f} GiB per GPU   ("Model loading took")',
        f"  overhead            {r.overhead_gib:8.2f} GiB per GPU   (non-torch {r.non_torch_gib:.2f}, profile-run activation "
        f"{r.activation_gib:.2f}, CUDA graphs {r.cuda_graph_gib:.2f}; max_num_seqs {r.max_num_seqs}, "
        f"max_num_batched_tokens {r.max_num_batched_tokens})",
        f'  KV cache            {r.kv_budget_gib_per_gpu:8.2f} GiB per GPU   ("Available KV cache memory")',
        f"  GPU KV cache size: {r.kv_tokens:,} tokens   (blocks of {r.kv_block_size}, {r.kv_cache_groups} group(s))",
        f"  {per_request}",
    ]
    if r.hybrid:
        lines.append(
            f"  effective capacity (hybrid: sliding layers keep only the window): {r.effective_tokens:,} tokens of "
            f"{r.max_model_len:,}-token requests at once; one request alone up to {r.longest_request_tokens:,} tokens"
        )
    if r.fits:
        verdict = "vLLM starts" + (f"; warning: {r.warning}" if r.warning else "")
    else:
        verdict = f"vLLM does not serve it: {r.problem}"
    lines.append(f"verdict: {verdict}")
    lines += [f"  - {s.text}" for s in r.suggestions]
    return lines


def run(args: argparse.Namespace) -> int:
    """``aks-gpu fit``: print the options (or the one configuration) and return the exit code."""
    longest = next(m.le for m in ModelFactsArgs.model_fields["max_context"].metadata if getattr(m, "le", None))
    try:
        fit_inputs.check_args(args, longest)
        model = fit_inputs.load_model(args.model)
    except fit_inputs.UsageError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_USAGE
    if args.vm_size or args.gpu:
        return _run_single(model, args)
    every = fit_options(model, fitting_only=False, **fit_inputs.settings(args))
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


def _run_single(model: ModelFactsArgs, args: argparse.Namespace) -> int:
    result = single(model, args)
    if args.format == "json":
        print(json.dumps(_report(model, result.max_model_len, args, [result], None if result.fits else result), indent=2))
    else:
        where = f"{result.vm_size} ({result.gpu})" if result.vm_size else result.gpu
        nodes = f" over {result.nodes} nodes" if result.nodes > 1 else ""
        print(header(model, result.max_model_len, args), end="\n\n")
        print(f"{where}, tp {result.tp}{nodes}, {result.gpu_memory_gib:.2f} GiB per GPU:")
        print("\n".join(vllm_lines(result)))
    return EXIT_OK if result.fits else EXIT_NONE_FITS


def _report(model: ModelFactsArgs, length: int, args, results: list[FitResult], miss: FitResult | None) -> dict:
    version = args.vllm_version
    return {
        "model": model.model_dump(),
        "max_model_len": length,
        "gpu_memory_utilization": args.gpu_memory_utilization,
        "dtype": args.dtype,
        "kv_cache_dtype": args.kv_cache_dtype,
        "vllm_version": version,
        "assumptions": {
            "budget": "device-reported GiB (components/core/gpu_memory.json) x gpu_memory_utilization",
            "vllm_version": version,
            "non_torch_gib": non_torch_gib(version, 1),
            "non_torch_tp_gib": non_torch_gib(version, 2, not args.disable_custom_all_reduce),
            "overhead": "per option: non_torch_gib + activation_gib + cuda_graph_gib (components/core/models.py FORMULA)",
            "kv_tokens": "vLLM's 'GPU KV cache size'; max_concurrency its 'Maximum concurrency'; effective_tokens = "
            "max_concurrency x max_model_len (above kv_tokens for a hybrid model)",
            "prices": catalog.price_snapshot(),
            "estimate": "list price of the whole VM; not a quote",
        },
        "fits": miss is None,
        "problem": None if miss is None else f"{miss.vm_size or miss.gpu} (tp {miss.tp}): {miss.problem}",
        "suggestions": [] if miss is None else [s.__dict__ for s in miss.suggestions],
        "options": [r.as_dict() for r in results],
    }
