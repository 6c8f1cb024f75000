"""Workloads on MIG pools request the pool's MIG slice, never whole GPUs.

Seed 002 gotcha 3: a MIG-partitioned node advertises ``nvidia.com/mig-<slice>`` instead of
``nvidia.com/gpu``; a pod that asks for ``nvidia.com/gpu`` there stays Pending forever. Joins a
pod's ``kubernetes.azure.com/agentpool`` node selector to the pool's ``gpuInstanceProfile``.
Unknown values are skipped (advisory).
"""

from __future__ import annotations

from aks_gpu_inference.components.core import catalog
from aks_gpu_inference.policies.manifests import StackIndex, Violation, gpu_resource_names, pod_templates
from aks_gpu_inference.policies.rules._rule import Rule

NAME = "mig-resource-request"


def _check(index: StackIndex, _config: dict):
    for r in index.resources:
        for template in pod_templates(r):
            pool = index.pool_of(template)
            profile = pool.props.get("gpuInstanceProfile") if pool else None
            if profile not in catalog.MIG_INSTANCE_PROFILES or not pool.sku or not pool.sku.mig_capable:
                continue
            expected = catalog.mig_resource_name(pool.sku.name, profile)
            for where, container in template.containers():
                for name in gpu_resource_names(container):
                    if name != expected:
                        yield Violation(
                            NAME,
                            r,
                            f"{template.where(where)} requests {name} on MIG pool {pool.name!r} ({profile}), which only "
                            f"advertises {expected}; request {expected} or the pod stays Pending",
                        )


RULE = Rule(
    name=NAME,
    description="Workloads on MIG pools request the pool's nvidia.com/mig-<slice> resource, not nvidia.com/gpu.",
    why="Pods on a MIG pool request that pool's `nvidia.com/mig-<slice>`, not `nvidia.com/gpu`, which such nodes never advertise (seed 002).",
    fix="request the slice",
    enforcement="advisory",
    scope="stack",
    unknowns="skips",
    config={},
    check=_check,
)
