#!/usr/bin/env python3
"""Read, from vLLM's released Python source, the facts ``components/core/vllm_releases.py`` encodes, and check them.

For each release folder (the ``vllm/`` package of a wheel unpacked under ``<sources>/<version>/``, e.g. from
``pip download vllm==0.9.2 --no-deps`` and ``unzip 'vllm/*.py'``; nothing is copied into the repository) it
finds in the source: whether the V1 worker profiles relative to a snapshot (``memory_profiling``), whether it
starts NCCL before that snapshot, whether sliding-window layers have their own ``SlidingWindowSpec``, whether the
hybrid KV cache manager exists, how ``vllm serve`` picks its default batch (by GPU name, by memory, A100
excluded) and whether the MXFP4 MoE can pick the Triton kernels. It prints one row per release and exits 1 when
the thresholds of ``vllm_releases`` disagree with what the source says.
Example: python tools/vllm_release_facts.py /tmp/vllm-src   (folders 0.8.0 0.8.5 0.9.2 0.10.1.1 0.11.0 ...)
"""

from __future__ import annotations

import sys
from pathlib import Path

from aks_gpu_inference.components.core import vllm_releases as rules


def _read(root: Path, relative: str) -> str:
    path = root / relative
    return path.read_text() if path.is_file() else ""


def facts(root: Path) -> dict[str, bool]:
    """What the release's source does, by the markers each behaviour leaves in it."""
    worker = _read(root, "vllm/v1/worker/gpu_worker.py")
    # The first call (not the definition) that starts NCCL, and the init_device snapshot.
    snapshot, nccl = worker.find("self.init_snapshot = "), worker.find("init_worker_distributed_environment(")
    config = _read(root, "vllm/config.py") + _read(root, "vllm/config/__init__.py") + _read(root, "vllm/config/scheduler.py")
    defaults = _read(root, "vllm/engine/arg_utils.py")
    return {
        "relative_profiler": "memory_profiling(" in worker,
        "nccl_before_snapshot": 0 <= nccl < snapshot,
        "sliding_window_spec": "class SlidingWindowSpec" in _read(root, "vllm/v1/kv_cache_interface.py"),
        "hybrid_kv_manager": "disable_hybrid_kv_cache_manager:" in config,
        "defaults_by_name": '"h100" in device_name' in defaults,
        "defaults_by_memory": "70 * GiB_bytes" in defaults,
        "a100_excluded": '"a100" not in device_name' in defaults,
        "triton_mxfp4": "TRITON" in _read(root, "vllm/model_executor/layers/quantization/mxfp4.py"),
    }


def expected(version: str) -> dict[str, bool]:
    """What ``vllm_releases`` says the same release does."""
    at = rules.release(version)
    return {
        "relative_profiler": at >= rules.RELATIVE_PROFILER_SINCE,
        "nccl_before_snapshot": at >= rules.NCCL_BEFORE_SNAPSHOT_SINCE,
        "sliding_window_spec": at >= rules.SLIDING_WINDOW_SPEC_SINCE,
        "hybrid_kv_manager": at >= rules.HYBRID_KV_MANAGER_SINCE,
        "defaults_by_name": rules.V1_ENGINE_SINCE <= at < (0, 8, 5),
        "defaults_by_memory": at >= (0, 8, 5),
        "a100_excluded": at >= (0, 9, 0),
        "triton_mxfp4": at >= rules.TRITON_MXFP4_SINCE,
    }


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not Path(argv[0]).is_dir():
        print(__doc__.splitlines()[-1], file=sys.stderr)
        return 2
    disagreements = 0
    releases = sorted((p for p in Path(argv[0]).iterdir() if (p / "vllm").is_dir()), key=lambda p: rules.release(p.name))
    for folder in releases:
        found, said = facts(folder), expected(folder.name)
        wrong = [key for key in found if found[key] != said[key]]
        disagreements += bool(wrong)
        marks = " ".join(f"{key}={'yes' if value else 'no'}" for key, value in found.items())
        print(f"{folder.name:10} {marks}" + (f"  DISAGREES: {', '.join(wrong)}" if wrong else ""))
    return 1 if disagreements or not releases else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
