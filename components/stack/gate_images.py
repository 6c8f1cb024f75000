"""Which images the qualification gates run: the ones the gated pool's own workloads run, so a passing gate says
something about the software that serves or trains there (seed 004 step 7), not about a tools image.

- Gate 5 (NIXL over UCX) runs the image of the pool's disaggregated engines: vLLM's (llm-d prefill/decode) or
  Dynamo's runtime, whose NIXL/UCX build moves the KV cache. Without one it runs the pinned vLLM image.
- Gates 4 and 6 (NCCL over InfiniBand) run the training image when the pool trains: that is the NCCL and
  libibverbs the job will use. Otherwise they run the tools image, like gates 1-3 (perftest). The gate pods then join
  the group the training workers join (``ray_manifests.RAY_GID``), so that root with no capabilities reaches the
  image's ``torchrun`` under ``/home/ray`` as the workers reach ``ray``.

A stack that sets ``rdma.gates.nixl_image`` or ``nccl_image`` itself keeps its choice; the plan warns when it is not
what the pool runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..training.ray_manifests import RAY_GID

if TYPE_CHECKING:
    from .config import StackConfig


def engine_images(config: StackConfig, pool: str) -> list[str]:
    """The images of the disaggregated engines (KV caches moved over NIXL) placed on ``pool``."""
    images = [m.image for m in config.models if m.pool == pool and m.disaggregation]
    if config.dynamo is not None and config.dynamo.pool == pool:
        images.append(config.dynamo.runtime_image)
    return list(dict.fromkeys(images))


def training_image(config: StackConfig, pool: str) -> str | None:
    return config.training.image if config.training is not None and config.training.pool == pool else None


def workload_gate_images(config: StackConfig) -> dict[str, Any]:
    """``{"nixl_image": ..., "nccl_image": ..., "supplemental_groups": ...}`` from the gated pool's workloads, leaving
    out what the stack set itself and what the pool does not run (the gates' own defaults apply there)."""
    gates = config.rdma.gates if config.rdma else None
    if gates is None:
        return {}
    chosen: dict[str, Any] = {}
    engines = engine_images(config, gates.pool)
    if engines and "nixl_image" not in gates.model_fields_set:
        chosen["nixl_image"] = engines[0]
    trainer = training_image(config, gates.pool)
    if trainer and "nccl_image" not in gates.model_fields_set:
        chosen["nccl_image"] = trainer
        if "supplemental_groups" not in gates.model_fields_set:
            chosen["supplemental_groups"] = [RAY_GID]
    return chosen
