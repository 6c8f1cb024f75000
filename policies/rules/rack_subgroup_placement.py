"""RDMA work on a rack-scale pool stays inside one interconnect subgroup.

ND GB200/GB300 v6 VMs sit in Azure interconnect groups made of subgroups, one InterconnectBlock (one NVL72 rack and
its InfiniBand fabric) each; VMs of different blocks or placement groups do not share a fabric, and RDMA between them
fails with transport errors (kubernetes-sigs/dranet@v1.4.0:examples/azure_aks_examples/README.md;
gb300/README.md: "transport retry counter exceeded"). DRANET v1.4.0 publishes each NIC's
``azure.dra.net/interconnectSubgroupId``, so a NIC claim whose request selects one subgroup keeps every pod of the
workload in that rack (seed 004, "Placement guidance": use the interconnect model where an llm-d workload needs
rack-aware placement). A pod that uses RDMA (``_rdma``; InfiniBand NICs exist to reach other nodes) pinned to a
rack-scale pool (the catalog's ``rack_size``) is reported when one of its RDMA claims selects no subgroup, or when it
reaches InfiniBand without a DRA claim that could. A selector unknown during preview is skipped.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aks_gpu_inference.components.core import catalog
from aks_gpu_inference.components.core.labels import INTERCONNECT_SUBGROUP_ATTRIBUTE
from aks_gpu_inference.policies.manifests import StackIndex, Violation, get, is_unknown, items, kube_kind, pod_templates
from aks_gpu_inference.policies.rules._device_classes import class_kinds
from aks_gpu_inference.policies.rules._rdma import _rdma_claims, context, describe, rdma_uses
from aks_gpu_inference.policies.rules._rule import Rule
from aks_gpu_inference.policies.rules.rdma_capable_sku import pinned_pools

NAME = "rack-subgroup-placement"
SUBGROUP_ATTRIBUTE = INTERCONNECT_SUBGROUP_ATTRIBUTE
HINT = (
    f'select one subgroup in the NIC claim: device.attributes["azure.dra.net"]["{SUBGROUP_ATTRIBUTE}"] == "<subgroup>" '
    "(gpu_pools[].interconnect does it for the pool's NIC claims)"
)


def _claim_specs(index: StackIndex) -> dict[tuple[str, str, str], Any]:
    """(key, namespace, name) -> the claim spec of every ResourceClaimTemplate and ResourceClaim in the stack."""
    found = {}
    for r in index.resources:
        kind = kube_kind(r)
        if kind in ("ResourceClaimTemplate", "ResourceClaim"):
            key = "resourceClaimTemplateName" if kind == "ResourceClaimTemplate" else "resourceClaimName"
            namespace = get(r.props, "metadata", "namespace", default="default")
            name = get(r.props, "metadata", "name", default=r.name)
            found[(key, namespace, name)] = (
                get(r.props, "spec", "spec") if kind == "ResourceClaimTemplate" else get(r.props, "spec")
            )
    return found


def _selects_subgroup(spec: Any) -> bool | None:
    """Whether some request of a claim spec selects an interconnect subgroup; None when unknown during preview."""
    requests = get(spec, "devices", "requests")
    if is_unknown(requests):
        return None
    for request in items(requests):
        for holder in (get(request, "exactly"), request, *items(get(request, "firstAvailable"))):
            for selector in items(get(holder, "selectors")):
                expression = get(selector, "cel", "expression")
                if is_unknown(expression):
                    return None
                if isinstance(expression, str) and SUBGROUP_ATTRIBUTE in expression:
                    return True
    return False


def _check(index: StackIndex, _config: dict):
    ctx, kinds, specs = context(index), class_kinds(index), None
    for r in index.resources:
        for template in pod_templates(r):
            if template.unknown:
                continue
            uses = [u for u in rdma_uses(index, template, ctx=ctx) if u.verbs and u.certain]
            pinned = pinned_pools(template.spec) if uses else None
            if not isinstance(pinned, set):
                continue
            racks = [p for p in sorted(pinned) if _rack_size(index, p)]
            if not racks:
                continue
            specs = _claim_specs(index) if specs is None else specs
            where = f"{template.label}: {describe(uses)} on rack-scale pool {', '.join(racks)}"
            claims, _ = _rdma_claims(index, template, kinds)
            if not claims:
                yield Violation(NAME, r, f"{where} without a DRA NIC claim, so nothing keeps it in one subgroup; {HINT}")
                continue
            for claim in sorted(claims):
                spec = _pod_claim_spec(template, claim, specs)
                if spec is not None and _selects_subgroup(spec) is False:
                    yield Violation(NAME, r, f"{where}, but its claim {claim!r} selects no interconnect subgroup; {HINT}")


def _rack_size(index: StackIndex, pool: str) -> int | None:
    found = index.pools_by_name.get(pool)
    vm_size = found.vm_size if found is not None else None
    sku = catalog.skus().get(vm_size) if isinstance(vm_size, str) else None
    return sku.rack_size if sku is not None else None


def _pod_claim_spec(template, claim: str, specs: Mapping[tuple[str, str, str], Any]) -> Any:
    """The claim spec behind a pod's claim entry, or None for a claim not in the stack (nothing to judge)."""
    namespace = get(template.resource.props, "metadata", "namespace", default="default")
    for entry in items(template.spec.get("resourceClaims")):
        if isinstance(entry, Mapping) and entry.get("name") == claim:
            for key in ("resourceClaimTemplateName", "resourceClaimName"):
                if isinstance(entry.get(key), str) and (key, namespace, entry[key]) in specs:
                    return specs[(key, namespace, entry[key])]
    return None


RULE = Rule(
    name=NAME,
    description="RDMA work on a rack-scale pool (ND GB200/GB300 v6) claims NICs of one interconnect subgroup.",
    why=(
        "A pod that uses RDMA on a pool whose size is rack-scale (18 VMs per NVL72 rack) selects one "
        "`azure.dra.net/interconnectSubgroupId` (DRANET v1.4.0) in each RDMA claim, so a multi-node job never spans "
        "two InterconnectBlocks, whose fabrics do not connect (DRANET's GB300 example; seed 004, placement guidance)."
    ),
    fix="add the subgroup selector to the NIC claim (`gpu_pools[].interconnect`)",
    enforcement="advisory",
    scope="stack",
    unknowns="skips",
    config={},
    check=_check,
)
