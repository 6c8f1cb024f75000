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
        return "is unknown during preview (fails closed)"
    if not isinstance(vm_size, str) or not catalog.is_rdma_capable(vm_size):
        return f"is {vm_size!r}, which has no RDMA back end; use an ND size with 'r' in its capability letters such as Standard_ND96isr_H100_v5"
    return None


def _check(index: StackIndex, config: dict):
    for pool in pools(index.resources):
        label = get(pool.props, "nodeLabels", RDMA_LABEL)
        if label == "true" or is_unknown(label):
            problem = _size_problem(pool.vm_size)
            if problem:
                labelled = (
                    f"labelled {RDMA_LABEL}=true" if label == "true" else f"whose {RDMA_LABEL} label is unknown during preview"
                )
                yield Violation(NAME, pool.resource, f"{pool.where}: pool {labelled} has a vmSize that {problem}")
    for r in index.resources:
        for template in pod_templates(r):
            if template.unknown:
                yield Violation(
                    NAME,
                    r,
                    f"{r.label}: the pod spec is unknown during preview, so its RDMA claims and pool cannot be checked (fails closed)",
                )
                continue
            found = rdma_containers(index, template, possibly=True)
            if not found:
                continue
            claims = (
                "claims dranet.net RDMA NICs"
                if any(certain for _, _, certain in found)
                else "may claim RDMA NICs (claims unknown during preview; fails closed)"
            )
            selected = get(template.spec, "nodeSelector", AGENTPOOL_LABEL)
            if selected is None or is_unknown(selected):
                pin = (
                    "its pool selector is unknown during preview (fails closed)"
                    if is_unknown(selected)
                    else "does not pin an RDMA pool"
                )
                yield Violation(NAME, r, f"{template.label}: {claims} but {pin}; set nodeSelector {AGENTPOOL_LABEL}: <rdma pool>")
                continue
            pool = index.pools_by_name.get(selected)
            problem = pool and _size_problem(pool.vm_size)
            if problem:
                yield Violation(NAME, r, f"{template.label}: {claims} on pool {selected!r}, whose vmSize {problem}")


RULE = Rule(
    name=NAME,
    description="Pools that serve RDMA work (labelled for RDMA, or selected by pods claiming dranet.net NICs) are RDMA-capable ND sizes.",
    enforcement="mandatory",
    scope="stack",
    unknowns="fails closed",
    config={},
    check=_check,
)
