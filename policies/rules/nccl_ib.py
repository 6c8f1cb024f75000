"""Containers that use RDMA keep NCCL on InfiniBand: ``NCCL_IB_DISABLE=0``, never ``1``, and no ``NCCL_NET`` other
than ``IB``.

Seed 002 gotcha 2: when NCCL misses the InfiniBand interfaces it falls back to the VNet Ethernet
and cross-node all-reduce runs ~80x slower or hangs. ``NCCL_IB_DISABLE=1`` forces exactly that, and so does
``NCCL_NET=Socket`` (NCCL's net plugin choice). Which containers use RDMA is ``_rdma``'s notion; a fragment (a
patch) is held to what it sets. A value from ``valueFrom`` is unknown here and skipped.
"""

from __future__ import annotations

from aks_gpu_inference.policies.manifests import StackIndex, Violation, env_value, is_unknown, items, pod_templates
from aks_gpu_inference.policies.rules._rdma import context, describe, rdma_uses
from aks_gpu_inference.policies.rules._rule import Rule

NAME = "nccl-infiniband-enabled"


def _check(index: StackIndex, _config: dict):
    ctx = context(index)
    for r in index.resources:
        for template in pod_templates(r):
            for use in rdma_uses(index, template, ctx=ctx):
                if not use.verbs:
                    continue
                where, container = use.where, use.container
                net = env_value(container, "NCCL_NET")
                if isinstance(net, str) and net.strip() and net.strip().upper() != "IB":
                    yield Violation(
                        NAME,
                        r,
                        f"{template.where(where)} {describe([use])} but sets NCCL_NET={net!r}, which keeps NCCL off InfiniBand; unset it or set IB",
                    )
                value = env_value(container, "NCCL_IB_DISABLE")
                if is_unknown(value) or value == "0" or (template.fragment and value is None):
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
                yield Violation(NAME, r, f"{template.where(where)} {describe([use])} but {problem}; set NCCL_IB_DISABLE=0")


RULE = Rule(
    name=NAME,
    description="Multi-node RDMA workloads set NCCL_IB_DISABLE=0 and never 1, so NCCL uses InfiniBand.",
    why="Containers that use RDMA set `NCCL_IB_DISABLE=0`, never `1`, and no `NCCL_NET` but `IB` (`Socket` keeps NCCL on TCP, ~80x slower, seed 002).",
    fix="set the variable",
    enforcement="advisory",
    scope="stack",
    unknowns="skips",
    config={},
    check=_check,
)
