"""Containers that claim RDMA NICs keep NCCL on InfiniBand: ``NCCL_IB_DISABLE=0``, never ``1``.

Seed 002 gotcha 2: when NCCL misses the InfiniBand interfaces it falls back to the VNet Ethernet
and cross-node all-reduce runs ~80x slower or hangs. ``NCCL_IB_DISABLE=1`` forces exactly that.
A value from ``valueFrom`` is unknown here and skipped.
"""

from __future__ import annotations

from aks_gpu_inference.policies.manifests import StackIndex, Violation, env_value, is_unknown, items, pod_templates
from aks_gpu_inference.policies.rules._device_classes import by_name_note, class_kinds, rdma_containers
from aks_gpu_inference.policies.rules._rule import Rule

NAME = "nccl-infiniband-enabled"


def _check(index: StackIndex, _config: dict):
    kinds = class_kinds(index)
    for r in index.resources:
        for template in pod_templates(r):
            for use in rdma_containers(index, template, kinds=kinds):
                where, container = use.where, use.container
                value = env_value(container, "NCCL_IB_DISABLE")
                if is_unknown(value) or value == "0":
                    continue
                if value is None and (
                    is_unknown(container.get("env")) or any(is_unknown(e) for e in items(container.get("env")))
                ):
                    continue
                problem = (
                    "sets NCCL_IB_DISABLE=1, which forces TCP"
                    if value == "1"
                    else f"sets NCCL_IB_DISABLE={value!r}"
                    if value
                    else "does not set NCCL_IB_DISABLE=0"
                )
                claims = "claims RDMA NICs" + by_name_note([use])
                yield Violation(NAME, r, f"{template.where(where)} {claims} but {problem}; set NCCL_IB_DISABLE=0")


RULE = Rule(
    name=NAME,
    description="Multi-node RDMA workloads set NCCL_IB_DISABLE=0 and never 1, so NCCL uses InfiniBand.",
    why="Containers that claim RDMA NICs set `NCCL_IB_DISABLE=0`, never `1` (NCCL otherwise falls back to TCP, ~80x slower, seed 002).",
    fix="set the variable",
    enforcement="advisory",
    scope="stack",
    unknowns="skips",
    config={},
    check=_check,
)
