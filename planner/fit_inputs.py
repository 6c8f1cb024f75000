"""What ``aks-gpu fit`` is asked: MODEL read as a catalog id or KAITO preset, a JSON file of ``ModelFactsArgs``
keys, or a Hugging Face ``config.json`` (the file or its folder, with ``model.safetensors.index.json`` beside
it for the checkpoint's size); the GPU of a single fit; and the vLLM settings. Every refusal is one line
that names what was given and what is accepted (exit code 2)."""

from __future__ import annotations

import argparse
from pathlib import Path

from pydantic import ValidationError

from aks_gpu_inference.components.core import catalog
from aks_gpu_inference.components.core.errors import ConfigError, validation_problems
from aks_gpu_inference.components.core.hf_config import UnsupportedArchitecture, facts_from_config
from aks_gpu_inference.components.core.models import (
    ModelFactsArgs,
    UnknownModelError,
    get_model,
    gpu_memory_table,
    release,
    utilization_problem,
)
from aks_gpu_inference.planner.inputs import safe_json

INDEX_FILE = "model.safetensors.index.json"
"""The safetensors index beside a config.json; its ``metadata.total_size`` is the checkpoint's size."""

MAX_JSON_BYTES = 2**20
"""Largest facts or config.json file read (1 MiB); an index with a full weight map may be 20 MiB."""


class UsageError(ValueError):
    """Input ``aks-gpu fit`` refuses: its message is the one line printed after ``error:``."""


def _one_line(err: ConfigError) -> str:
    return f"{err.context}: {'; '.join(err.problems)}"


def _read(path: Path, max_bytes: int = MAX_JSON_BYTES) -> dict:
    try:
        value = safe_json.load_json(path, source=str(path), max_bytes=max_bytes, max_depth=20)
    except ConfigError as err:
        raise UsageError(_one_line(err)) from None
    except OSError as err:
        raise UsageError(f"{path}: cannot be read ({err.strerror or err})") from None
    if not isinstance(value, dict):
        raise UsageError(f"{path}: expected a JSON object, got a {type(value).__name__}")
    return value


def _hf_model(config_path: Path, config: dict) -> ModelFactsArgs:
    index_path = config_path.with_name(INDEX_FILE)
    index = _read(index_path, max_bytes=20 * 2**20) if index_path.is_file() else None
    name = config.get("_name_or_path") if isinstance(config.get("_name_or_path"), str) else None
    try:
        return facts_from_config(config, index, hf_id=name or config_path.parent.name or "local/model")
    except UnsupportedArchitecture as err:
        raise UsageError(f"{config_path}: {err}") from None
    except ConfigError as err:
        raise UsageError(f"{config_path}: {'; '.join(err.problems)}") from None


def load_model(spec: str) -> ModelFactsArgs:
    """The model MODEL names: a Hugging Face config.json (or a folder holding one), a JSON file of
    ``ModelFactsArgs`` keys, else a catalog id or KAITO preset."""
    path = Path(spec)
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise UsageError(f"MODEL {spec!r}: the folder has no config.json; give a Hugging Face model folder")
        path = path / "config.json"
    if path.is_file():
        data = _read(path)
        if "architectures" in data or "model_type" in data:
            return _hf_model(path, data)
        try:
            return ModelFactsArgs.model_validate(data)
        except ValidationError as err:
            raise UsageError(f"{spec} holds invalid model facts: {'; '.join(validation_problems(err))}") from None
    if path.suffix == ".json" or spec.startswith(("/", "./", "../", "~")):
        raise UsageError(
            f"MODEL {spec!r}: no such file or folder; accepted: a catalog model id, a ModelFactsArgs JSON file, or a "
            "Hugging Face config.json or its folder"
        )
    try:
        return get_model(spec)
    except UnknownModelError as err:
        raise UsageError(f"{err}. aks-gpu fit also takes a JSON file of those keys, or a Hugging Face config.json "
                         "or its folder, as MODEL.") from None  # fmt: skip


def check_args(args: argparse.Namespace, longest: int) -> None:
    """Refuse numbers out of range before anything is fitted."""
    if args.context is not None and not 1 <= args.context <= longest:
        shown = args.context if len(str(args.context)) < 20 else f"{str(args.context)[:12]}..."
        raise UsageError(f"--context {shown}: must be a positive number of tokens, at most {longest:,}")
    if problem := utilization_problem(args.gpu_memory_utilization):
        raise UsageError(f"--gpu-memory-utilization {args.gpu_memory_utilization}: {problem}")
    for flag in ("tp", "nodes", "max_num_seqs", "max_num_batched_tokens"):
        value = getattr(args, flag)
        if value is not None and value < 1:
            raise UsageError(f"--{flag.replace('_', '-')} {value}: must be at least 1")
    try:
        release(args.vllm_version)
    except ValueError:
        raise UsageError(f"--vllm-version {args.vllm_version!r}: a release such as 0.9.2 or 0.11.0") from None
    _check_target(args)


def _check_target(args: argparse.Namespace) -> None:
    """The one configuration: a catalog size, or a GPU of the table (or any GPU with its GiB)."""
    if args.vm_size and args.gpu:
        raise UsageError("--vm-size and --gpu: give one (a catalog size, or a GPU of components/core/gpu_memory.json)")
    if args.gpu_memory_gib is not None and not 1 <= args.gpu_memory_gib <= 10_000:
        raise UsageError(f"--gpu-memory-gib {args.gpu_memory_gib}: the GiB the device reports, from 1 to 10,000")
    if args.vm_size:
        try:
            catalog.get_sku(args.vm_size)
        except ValueError as err:
            raise UsageError(f"--vm-size: {err}") from None
    if args.gpu and args.gpu not in gpu_memory_table() and args.gpu_memory_gib is None:
        accepted = ", ".join(gpu_memory_table())
        raise UsageError(f"--gpu {args.gpu!r}: accepted: {accepted}; for another GPU also give --gpu-memory-gib")
    if (args.tp or args.nodes) and not (args.vm_size or args.gpu):
        raise UsageError("--tp and --nodes fit one configuration: give --vm-size or --gpu with them")


def settings(args: argparse.Namespace) -> dict:
    """The ``FitSettings`` the arguments ask for."""
    return dict(
        max_model_len=args.context,
        gpu_memory_utilization=args.gpu_memory_utilization,
        dtype=args.dtype,
        kv_cache_dtype=args.kv_cache_dtype,
        max_num_seqs=args.max_num_seqs,
        max_num_batched_tokens=args.max_num_batched_tokens,
        cuda_graphs=not args.enforce_eager,
        custom_all_reduce=not args.disable_custom_all_reduce,
        vllm_version=args.vllm_version,
    )
