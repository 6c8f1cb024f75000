"""Pools that serve RDMA work are RDMA-capable ND sizes.

Seed 004: only sizes with a lower-case ``r`` among the capability letters (``ND96isr``) have the
InfiniBand back end; "do not select a general-purpose GPU SKU only because it has NVIDIA GPUs".
A pool serves RDMA work when it is labelled ``aks-gpu-inference/rdma=true``, or when a pod that
uses RDMA or an InfiniBand network (``_rdma``: DRA NIC claims, RDMA device-plugin resources, the host's
/dev/infiniband, Multus RDMA or IPoIB networks, NCCL/UCX variables that select InfiniBand) is pinned to it.
Such a pod must be pinned: ``nodeSelector`` ``kubernetes.azure.com/agentpool: <pool>``, or a required node
affinity every term of which has ``kubernetes.azure.com/agentpool In [<pools>]``; a fragment (a patch) need
not be, the object it patches may pin it. A pool outside the stack cannot be checked and is skipped.
Unknown sizes, labels or selectors fail closed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aks_gpu_inference.components.core import catalog
from aks_gpu_inference.components.core.labels import AGENTPOOL_LABEL, RDMA_LABEL
from aks_gpu_inference.policies.manifests import (
    UNKNOWN,
    PodTemplate,
    Resource,
    StackIndex,
    Violation,
    get,
    is_unknown,
    items,
    pod_templates,
    pools,
)
from aks_gpu_inference.policies.rules._rdma import RdmaUse, context, describe, rdma_uses
from aks_gpu_inference.policies.rules._rule import Rule

NAME = "rdma-capable-sku"
PIN_HINT = f"set nodeSelector {AGENTPOOL_LABEL}: <rdma pool> (or a required node affinity {AGENTPOOL_LABEL} In [<rdma pools>])"


def _size_problem(vm_size) -> str | None:
    if is_unknown(vm_size):
        return "is unknown during preview (fails closed)"
    if not isinstance(vm_size, str) or not catalog.is_rdma_capable(vm_size):
        return f"is {vm_size!r}, which has no RDMA back end; use an ND size with 'r' in its capability letters such as Standard_ND96isr_H100_v5"
    return None


def pinned_pools(spec: Mapping[str, Any]) -> set[str] | Any | None:
    """The agent pools a pod spec can only run on; None if it is not pinned, ``UNKNOWN`` if that is unknown.

    ``nodeSelector`` on ``kubernetes.azure.com/agentpool`` pins one pool. A required node affinity
    pins when every ``nodeSelectorTerms`` entry (terms are ORed) has an ``In`` expression on that key
    (expressions within a term are ANDed, so several narrow each other): the union over the terms.
    """
    selected = get(spec, "nodeSelector", AGENTPOOL_LABEL)
    if isinstance(selected, str):
        return {selected}
    affinity = _affinity_pools(spec)
    if isinstance(affinity, set):
        return affinity
    return UNKNOWN if is_unknown(selected) or is_unknown(affinity) else None


def _affinity_pools(spec: Mapping[str, Any]) -> set[str] | Any | None:
    path = ("affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
    terms = get(spec, *path)
    if is_unknown(terms):
        return UNKNOWN
    if not items(terms):
        return None
    pools: set[str] = set()
    for term in items(terms):
        term_pools: set[str] | None = None
        unknown = is_unknown(term) or is_unknown(get(term, "matchExpressions"))
        for expression in items(get(term, "matchExpressions")):
            key, operator, values = (get(expression, field) for field in ("key", "operator", "values"))
            if is_unknown(key) or (key == AGENTPOOL_LABEL and (is_unknown(operator) or is_unknown(values))):
                unknown = True
            elif key == AGENTPOOL_LABEL and operator == "In":
                if any(is_unknown(v) for v in items(values)):
                    return UNKNOWN
                named = {v for v in items(values) if isinstance(v, str)}
                term_pools = named if term_pools is None else term_pools & named
        if term_pools is None:
            return UNKNOWN if unknown else None  # this term admits nodes of any pool
        pools |= term_pools
    return pools


def _check(index: StackIndex, _config: dict):
    yield from _labelled_pools(index)
    ctx = context(index)
    for r in index.resources:
        for template in pod_templates(r):
            if template.unknown:
                yield Violation(
                    NAME,
                    r,
                    f"{r.label}: the pod spec is unknown during preview, so its RDMA claims and pool cannot be checked (fails closed)",
                )
            elif found := rdma_uses(index, template, possibly=True, ctx=ctx):
                yield from _pinned_pools(index, r, template, found)


def _labelled_pools(index: StackIndex):
    """Pools labelled for RDMA (or whose label is unknown) whose size is not RDMA-capable."""
    for pool in pools(index.resources):
        label = get(pool.props, "nodeLabels", RDMA_LABEL)
        if label == "true" or is_unknown(label):
            problem = _size_problem(pool.vm_size)
            if problem:
                labelled = (
                    f"labelled {RDMA_LABEL}=true" if label == "true" else f"whose {RDMA_LABEL} label is unknown during preview"
                )
                yield Violation(NAME, pool.resource, f"{pool.where}: pool {labelled} has a vmSize that {problem}")


def _pinned_pools(index: StackIndex, r: Resource, template: PodTemplate, found: list[RdmaUse]):
    """A pod that uses RDMA pins RDMA-capable pools only."""
    claims = describe(found)
    pinned = pinned_pools(template.spec)
    if template.fragment and (pinned is None or is_unknown(pinned)):
        return  # the object a patch applies to may pin the pool
    if pinned is None or is_unknown(pinned):
        pin = "its pool selector is unknown during preview (fails closed)" if is_unknown(pinned) else "does not pin an RDMA pool"
        yield Violation(NAME, r, f"{template.label}: {claims} but {pin}; {PIN_HINT}")
        return
    for selected in sorted(pinned):
        pool = index.pools_by_name.get(selected)
        problem = pool and _size_problem(pool.vm_size)
        if problem:
            yield Violation(NAME, r, f"{template.label}: {claims} on pool {selected!r}, whose vmSize {problem}")


RULE = Rule(
    name=NAME,
    description="Pools that serve RDMA work (labelled for RDMA, or pinned by pods that use RDMA) are RDMA-capable ND sizes.",
    why="A pool labelled `aks-gpu-inference/rdma=true`, or pinned (below) by a pod that uses RDMA however it asks for it (DRA NIC claims at pod or container level, RDMA device-plugin resources such as `rdma/ib`, the host's `/dev/infiniband`, Multus RDMA or IPoIB networks, NCCL/UCX variables that select InfiniBand), is an RDMA size (`r` among the capability letters, catalog-backed); such a pod must pin one. An NC size has no InfiniBand: NCCL silently falls back to Ethernet (seeds 002, 004).",
    fix="use an ND `…r…` size, or pin the pod to one",
    enforcement="mandatory",
    scope="stack",
    unknowns="fails closed",
    config={},
    check=_check,
)
