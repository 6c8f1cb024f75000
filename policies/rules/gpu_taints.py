"""GPU pools carry the GPU taint, and every workload that asks for GPUs tolerates it.

Seeds 002 and 004 taint GPU pools ``sku=gpu:NoSchedule`` so that general pods never land on (and
pin) expensive GPU nodes; a GPU workload without the toleration stays Pending. What asks for GPUs is
``_gpus``: device-plugin resources, DRA claims on GPU device classes, operator fields. A fragment (a patch)
is not held to the toleration: the object it patches may carry it. Unknown taints or tolerations fail
closed; an unknown vmSize is skipped.
"""

from __future__ import annotations

from collections.abc import Mapping

from aks_gpu_inference.components.core.labels import GPU_TAINT
from aks_gpu_inference.policies.manifests import (
    StackIndex,
    Violation,
    is_unknown,
    items,
    parse_taint,
    pod_templates,
    pools,
    tolerates,
)
from aks_gpu_inference.policies.rules._gpus import gpu_device_classes, gpu_requests
from aks_gpu_inference.policies.rules._rule import Rule

NAME = "gpu-taints-and-tolerations"


def _check(index: StackIndex, config: dict):
    taint = config["taint"]
    for pool in pools(index.resources):
        if not pool.is_gpu or pool.props.get("mode") == "System":
            continue
        taints = pool.props.get("nodeTaints")
        if is_unknown(taints) or taint not in (items(taints)):
            shown = "unknown during preview (fails closed)" if is_unknown(taints) else (list(items(taints)) or "none")
            yield Violation(
                NAME,
                pool.resource,
                f"{pool.where}: GPU pool {pool.name!r} ({pool.vm_size}) lacks the taint {taint!r}; nodeTaints: {shown}",
            )
    yield from _nodepools(index, taint)
    gpu_classes = gpu_device_classes(index)
    for r in index.resources:
        for template in pod_templates(r):
            asked = gpu_requests(index, template, gpu_classes)
            if not asked or template.fragment:
                continue
            tolerations = template.spec.get("tolerations")
            if is_unknown(tolerations) or any(
                is_unknown(t) or (isinstance(t, Mapping) and any(map(is_unknown, t.values()))) for t in items(tolerations)
            ):
                yield Violation(NAME, r, f"{template.label}: tolerations are unknown during preview (fails closed)")
            elif not tolerates(tolerations, taint):
                key, value, effect = parse_taint(taint)
                yield Violation(
                    NAME,
                    r,
                    f"{template.label}: requests GPUs ({', '.join(asked)}) but does not tolerate {taint!r}; add tolerations: "
                    f"[{{key: {key}, operator: Equal, value: {value}, effect: {effect}}}]",
                )


def _nodepools(index: StackIndex, taint: str):
    """Karpenter NodePools (AKS node auto-provisioning) whose requirements select GPU VM sizes are GPU pools too:
    their ``spec.template.spec.taints`` carry the taint. Unknown requirements are skipped; unknown taints fail closed."""
    from aks_gpu_inference.policies.manifests import nodepool_gpu_selection, nodepool_taints

    for r in index.resources:
        selection = nodepool_gpu_selection(r)
        taints = nodepool_taints(r) if selection else None
        if selection and (is_unknown(taints) or taint not in items(taints)):
            shown = "unknown during preview (fails closed)" if is_unknown(taints) else (list(items(taints)) or "none")
            yield Violation(
                NAME,
                r,
                f"{r.label} spec.template.spec.taints: NodePool selecting GPU sizes ({selection}) lacks the taint "
                f"{taint!r}; taints: {shown}",
            )


RULE = Rule(
    name=NAME,
    description="GPU pools carry the GPU taint and every workload that requests GPUs tolerates it.",
    why="Every GPU pool carries the GPU taint; every workload that requests GPUs tolerates it: `nvidia.com/gpu`, `amd.com/gpu`, `nvidia.com/mig-*` and their `.shared` names, Kata passthrough `nvidia.com/pgpu`, names KServe's `serving.kserve.io/gpu-resource-types` adds, DRA claims on GPU device classes (passthrough `vfio.gpu.nvidia.com` and MIG included), and operator fields such as a Ray group's `rayStartParams.num-gpus` or a multi-node NIMService's tensor parallelism. Keeps general pods off GPU nodes; an untolerating GPU pod stays Pending (seeds 002, 004).",
    fix="add the taint / the toleration",
    enforcement="mandatory",
    scope="stack",
    unknowns="fails closed for taints and tolerations; skips pools whose vmSize is unknown",
    config={
        "taint": {"type": "string", "default": GPU_TAINT, "description": "The taint every GPU pool carries, as key=value:Effect."}
    },
    check=_check,
)
