"""GPU pools carry the GPU taint, and every workload that asks for GPUs tolerates it.

Seeds 002 and 004 taint GPU pools ``sku=gpu:NoSchedule`` so that general pods never land on (and
pin) expensive GPU nodes; a GPU workload without the toleration stays Pending. GPU requests are
device-plugin resources (``nvidia.com/gpu``, ``amd.com/gpu``, ``nvidia.com/mig-*``) or DRA claims
on GPU device classes (``gpu.nvidia.com``, ``mig.nvidia.com`` and DeviceClasses in the stack that
select the NVIDIA driver). Unknown taints or tolerations fail closed; an unknown vmSize is skipped.
"""

from __future__ import annotations

from collections.abc import Mapping

from aks_gpu_inference.components.core.labels import GPU_TAINT
from aks_gpu_inference.policies.manifests import (
    GPU_DEVICE_CLASSES,
    StackIndex,
    Violation,
    gpu_resource_names,
    is_unknown,
    items,
    parse_taint,
    pod_templates,
    pools,
    tolerates,
)
from aks_gpu_inference.policies.rules._rule import Rule

NAME = "gpu-taints-and-tolerations"


def gpu_device_classes(index: StackIndex) -> set[str]:
    """Names of the device classes that select GPUs.

    A DeviceClass in the stack is judged by its selectors (``_device_classes.classify``: the NVIDIA,
    MIG or AMD GPU drivers' devices), whatever its name; ``gpu.nvidia.com`` and ``mig.nvidia.com``
    count by name when their DeviceClass is absent or its selectors are unknown during preview.
    """
    from aks_gpu_inference.policies.rules._device_classes import class_kinds

    kinds = class_kinds(index)
    selecting = {name for name, selected in kinds.items() if selected is not None and "gpu" in selected}
    return selecting | {name for name in GPU_DEVICE_CLASSES if kinds.get(name) is None}


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
            claims = index.pod_claim_classes(template)
            gpu_claims = sorted(name for name, classes in claims.items() if classes & gpu_classes)
            requests = sorted({name for _, c in template.containers() for name in gpu_resource_names(c)})
            if not gpu_claims and not requests:
                continue
            tolerations = template.spec.get("tolerations")
            if is_unknown(tolerations) or any(
                is_unknown(t) or (isinstance(t, Mapping) and any(map(is_unknown, t.values()))) for t in items(tolerations)
            ):
                yield Violation(NAME, r, f"{template.label}: tolerations are unknown during preview (fails closed)")
            elif not tolerates(tolerations, taint):
                asked = ", ".join(requests + [f"claim {c}" for c in gpu_claims])
                key, value, effect = parse_taint(taint)
                yield Violation(
                    NAME,
                    r,
                    f"{template.label}: requests GPUs ({asked}) but does not tolerate {taint!r}; add tolerations: "
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
    why="Every GPU pool carries the GPU taint; every workload that requests GPUs (`nvidia.com/gpu`, `amd.com/gpu`, `nvidia.com/mig-*`, DRA claims on GPU device classes) tolerates it. Keeps general pods off GPU nodes; an untolerating GPU pod stays Pending (seeds 002, 004).",
    fix="add the taint / the toleration",
    enforcement="mandatory",
    scope="stack",
    unknowns="fails closed for taints and tolerations; skips pools whose vmSize is unknown",
    config={
        "taint": {"type": "string", "default": GPU_TAINT, "description": "The taint every GPU pool carries, as key=value:Effect."}
    },
    check=_check,
)
