"""Karpenter / AKS node auto-provisioning NodePools (karpenter.sh/v1): pools, not pods, whose requirements may
select GPU VM sizes and whose template carries the taints their nodes get.

Azure/karpenter-provider-azure@v1.14.2: pkg/apis/crds/karpenter.sh_nodepools.yaml (spec.template.spec.taints,
.requirements) and pkg/apis/v1beta1/labels.go (the karpenter.azure.com/sku-* labels; sku-family is N for GPU).
"""

from __future__ import annotations

from typing import Any

from aks_gpu_inference.policies.manifests.templates import api_of
from aks_gpu_inference.policies.manifests.values import UNKNOWN, get, is_unknown, items, looks_gpu

GPU_REQUIREMENT_KEYS = ("karpenter.azure.com/sku-gpu-name", "karpenter.azure.com/sku-gpu-manufacturer")
SIZE_KEYS = ("karpenter.azure.com/sku-name", "node.kubernetes.io/instance-type")


def is_nodepool(token: str) -> bool:
    api = api_of(token)
    return api is not None and api[0] == "karpenter.sh" and api[2] == "NodePool"


def nodepool_requirements(resource: Any) -> Any:
    """``spec.template.spec.requirements`` of a NodePool (UNKNOWN during preview); None for other resources."""
    return get(resource.props, "spec", "template", "spec", "requirements", default=[]) if is_nodepool(resource.type) else None


def nodepool_taints(resource: Any) -> Any:
    """A NodePool's ``spec.template.spec.taints`` as ``key=value:Effect`` strings, like an AKS pool's
    ``nodeTaints``; UNKNOWN (the list) or UNKNOWN entries during preview; None for other resources."""
    if not is_nodepool(resource.type):
        return None
    taints = get(resource.props, "spec", "template", "spec", "taints", default=[])
    if is_unknown(taints):
        return UNKNOWN
    shown = []
    for taint in items(taints):
        parts = [get(taint, name, default="") for name in ("key", "value", "effect")]
        if is_unknown(taint) or any(map(is_unknown, parts)):
            shown.append(UNKNOWN)
        else:
            key, value, effect = (str(p) for p in parts)
            shown.append(f"{key}={value}:{effect}" if value else f"{key}:{effect}")
    return shown


def nodepool_gpu_selection(resource: Any) -> str | None:
    """The requirement by which a NodePool selects GPU VM sizes (``karpenter.azure.com/sku-family In [N]``),
    or None: not a NodePool, no such requirement, or requirements unknown during preview (skipped)."""
    for requirement in items(nodepool_requirements(resource)):
        key, operator, values = (get(requirement, name) for name in ("key", "operator", "values"))
        values = [v for v in items(values) if isinstance(v, str)]
        gpu = (
            (key in GPU_REQUIREMENT_KEYS and operator in ("In", "Exists"))
            or (key == "karpenter.azure.com/sku-family" and operator == "In" and "N" in values)
            or (key in SIZE_KEYS and operator == "In" and any(looks_gpu(v) for v in values))
            or (key == "karpenter.azure.com/sku-gpu-count" and _counts_gpus(operator, values))
        )
        if gpu:
            return f"{key} {operator}" + (f" {values}" if values else "")
    return None


def _counts_gpus(operator: Any, values: list[str]) -> bool:
    numbers = [int(v) for v in values if v.isdigit()]
    return bool(numbers) and (
        (operator == "Gt") or (operator == "Gte" and min(numbers) >= 1) or (operator == "In" and all(n > 0 for n in numbers))
    )
