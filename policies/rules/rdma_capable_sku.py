"""Pools that serve RDMA work are RDMA-capable ND sizes.

Seed 004: only sizes with a lower-case ``r`` among the capability letters (``ND96isr``) have the
InfiniBand back end; "do not select a general-purpose GPU SKU only because it has NVIDIA GPUs".
A pool serves RDMA work when it is labelled ``aks-gpu-inference/rdma=true``, or when a pod that
claims ``dranet.net`` NICs selects it through ``kubernetes.azure.com/agentpool``. Such a pod must
select a pool; a pool outside the stack cannot be checked and is skipped. Unknown sizes, labels or
selectors fail closed.
"""

from __future__ import annotations

from components import catalog

from . import Rule
from ._model import AGENTPOOL_LABEL, RDMA_LABEL, StackIndex, Violation, get, is_unknown, pod_templates, pools, rdma_containers

NAME = "rdma-capable-sku"


def _size_problem(vm_size) -> str | None:
    if is_unknown(vm_size):
        return "has a vmSize unknown during preview (fails closed)"
    if not isinstance(vm_size, str) or not catalog.is_rdma_capable(vm_size):
        return f"is {vm_size!r}, which has no RDMA back end; use an ND size with 'r' in its capability letters such as Standard_ND96isr_H100_v5"
    return None


def _check(index: StackIndex, config: dict):
    for pool in pools(index.resources):
        label = get(pool.props, "nodeLabels", RDMA_LABEL)
        if label == "true" or is_unknown(label):
            problem = _size_problem(pool.vm_size)
            if problem:
                yield Violation(NAME, pool.resource, f"{pool.where}: pool labelled {RDMA_LABEL}=true {problem}")
    for r in index.resources:
        for template in pod_templates(r):
            if not rdma_containers(index, template):
                continue
            selected = get(template.spec, "nodeSelector", AGENTPOOL_LABEL)
            if selected is None or is_unknown(selected):
                yield Violation(
                    NAME,
                    r,
                    f"{r.label}: claims dranet.net RDMA NICs but does not pin an RDMA pool; set nodeSelector {AGENTPOOL_LABEL}: <rdma pool>",
                )
                continue
            pool = index.pools_by_name.get(selected)
            problem = pool and _size_problem(pool.vm_size)
            if problem:
                yield Violation(NAME, r, f"{r.label}: claims dranet.net RDMA NICs on pool {selected!r}, whose vmSize {problem}")


RULE = Rule(
    name=NAME,
    description="Pools that serve RDMA work (labelled for RDMA, or selected by pods claiming dranet.net NICs) are RDMA-capable ND sizes.",
    enforcement="mandatory",
    scope="stack",
    unknowns="fails closed",
    config={},
    check=_check,
)
