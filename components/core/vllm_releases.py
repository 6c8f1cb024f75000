"""The vLLM image the project pins and what changed, release by release, in how vLLM sizes its KV cache.

``VLLM_IMAGE`` is the pins table's vLLM image (``core/pins.json``, the one home of every version): the fit models
``PINNED_VLLM_VERSION``, read from its tag. Every other constant names the first release whose
source behaves that way; each was read in the released wheel (``pip download vllm==X --no-deps``), cited as
``vllm@vX:path``. The fit applies the rules of the latest threshold at or below the version asked for.
"""

from __future__ import annotations

import re

from . import pins

VLLM_IMAGE = pins.image("vllm")
"""The vLLM image VllmService runs by default (the pins table's ``vllm``); the fit's default release is its tag."""

PINNED_VLLM_VERSION = pins.vllm_version()
"""The release ``VLLM_IMAGE`` ships, e.g. ``0.32.0``."""

Release = tuple[int, ...]

V1_ENGINE_SINCE: Release = (0, 8, 0)
"""First release whose default engine is V1 (``VLLM_USE_V1`` defaults on; vllm@v0.8.0:vllm/envs.py). Earlier
versions are fitted with the V0 rules the reference points of 0.6 were calibrated on."""

SLIDING_WINDOW_SPEC_SINCE: Release = (0, 8, 3)
"""First release that gives sliding-window layers their own ``SlidingWindowSpec`` (vllm@v0.8.3:
vllm/v1/kv_cache_interface.py), so the start-up check charges them at most the window; before, every layer
is charged the full context."""

HYBRID_KV_MANAGER_SINCE: Release = (0, 9, 1)
"""First release with the hybrid KV cache manager on by default (``SchedulerConfig.
disable_hybrid_kv_cache_manager = False``, vllm@v0.9.1:vllm/config.py) and block-based concurrency
(``get_max_concurrency_for_kv_cache_config``, vllm@v0.9.1:vllm/v1/core/kv_cache_utils.py). Before it a
hybrid model's sliding layers are converted to full attention (``unify_hybrid_kv_cache_specs``) and vLLM
prints concurrency as tokens / max_model_len."""

RELATIVE_PROFILER_SINCE: Release = (0, 9, 1)
"""First V1 release whose profiler counts only the memory its own start-up adds (``memory_profiling`` from
the ``MemorySnapshot`` taken in ``init_device``, vllm@v0.9.1:vllm/v1/worker/gpu_worker.py). 0.8.0-0.9.0
subtract everything the device has in use outside PyTorch (``mem_get_info`` total - free - torch's
allocation), which includes the CUDA context."""

NCCL_BEFORE_SNAPSHOT_SINCE: Release = (0, 11, 0)
"""First release that initialises the distributed environment before the memory snapshot ("Initialize the
distributed environment BEFORE taking memory snapshot", vllm@v0.11.0:vllm/v1/worker/gpu_worker.py), so
NCCL's communicators are no longer charged to the KV budget."""

TRITON_MXFP4_SINCE: Release = (0, 10, 2)
"""First release whose MXFP4 MoE runs on the Triton kernels on Hopper and newer (they need torch >= 2.8,
which vllm 0.10.2 pins; ``get_mxfp4_backend``, vllm@v0.10.2:vllm/model_executor/layers/quantization/
mxfp4.py); earlier releases and older GPUs repack the experts for Marlin."""

CUDA_GRAPHS_IN_BUDGET_SINCE: Release = (0, 21)
"""First vLLM release whose profiler estimates the CUDA-graph pool and reserves it inside
``gpu_memory_utilization`` ("CUDA graph memory profiling is enabled (default since v0.21.0)")."""

LARGE_GPU_GIB = 70
"""vLLM's threshold for its larger scheduler defaults: ``device_memory >= 70 * GiB_bytes``."""

_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?(?:[.+-].*)?$")


def release(version: str) -> Release:
    """(major, minor, patch) of a vLLM version such as ``0.6.5.dev``, ``0.10.1.1`` or ``0.32.0``; a
    ValueError for anything else."""
    match = _VERSION.match(version.strip())
    if not match:
        raise ValueError(f"vllm_version={version!r}: a release such as {PINNED_VLLM_VERSION!r}")
    return int(match[1]), int(match[2]), int(match[3] or 0)


def image_version(image: str) -> str | None:
    """The vLLM release an image's tag names (``vllm/vllm-openai:v0.10.1`` -> ``0.10.1``), or None for a
    digest or a tag that names no release."""
    tail = image.rsplit("/", 1)[-1]
    if "@" in tail or ":" not in tail:
        return None
    tag = tail.rsplit(":", 1)[1]
    match = _VERSION.match(tag)
    return f"{match[1]}.{match[2]}.{match[3] or 0}" if match and tag.startswith("v") else None


def gpu_generation(gpu: str) -> int:
    """The CUDA compute-capability major of a GPU by its name: 10 Blackwell, 9 Hopper, 8 Ampere/Ada, 7
    older; 0 for AMD and names the fit does not recognise (Ampere's kernels are assumed)."""
    name = gpu.upper()
    if any(tag in name for tag in ("GB200", "GB300", "B200", "B300")):
        return 10
    if any(tag in name for tag in ("H100", "H200", "H800", "H20", "GH200")):
        return 9
    if any(tag in name for tag in ("A100", "A10", "A800", "A40", "A6000", "L4", "L40", "4090", "3090")):
        return 8
    if any(tag in name for tag in ("T4", "V100")):
        return 7
    return 0


def scheduler_defaults(version: str, gpu: str, device_gib: float) -> tuple[int, int]:
    """(max_num_seqs, max_num_batched_tokens) ``vllm serve`` picks when neither is given
    (``EngineArgs._set_default_args_v1``, OPENAI_API_SERVER usage context):

    - 0.8.0-0.8.3: 8192 tokens on a GPU named H100/H200, else 2048; 1024 sequences everywhere;
    - 0.8.4: 8192 and 1024 on H100/H200, else 2048 and 256;
    - 0.8.5: the same by memory (at least 70 GiB);
    - 0.9.0 and later: at least 70 GiB and not an A100 (also V0 before 0.8, as the calibrated points do).
    """
    at, name = release(version), gpu.upper()
    hopper_name = "H100" in name or "H200" in name
    if at < V1_ENGINE_SINCE or at >= (0, 9, 0):
        large = device_gib >= LARGE_GPU_GIB and "A100" not in name
    elif at >= (0, 8, 5):
        large = device_gib >= LARGE_GPU_GIB
    else:
        large = hopper_name
    seqs = 1024 if large or (V1_ENGINE_SINCE <= at < (0, 8, 4)) else 256
    return seqs, 8192 if large else 2048


def kv_block_size(version: str, gpu: str, mla: bool) -> int:
    """Tokens per KV block: 16 (``CudaPlatform.check_and_update_config``), 64 for multi-head latent attention on
    Hopper (FlashMLA, forced since 0.8.0) and 128 on Blackwell from 0.10 (CUTLASS MLA)."""
    generation = gpu_generation(gpu)
    if mla and generation == 9:
        return 64
    if mla and generation >= 10 and release(version) >= (0, 10, 0):
        return 128
    return 16
