"""Workloads whose only node pools can have no nodes.

A pool created with ``count: 0`` and no autoscaler (no ``min_count``/``max_count``) stays empty: the
pods that only fit there stay Pending until someone scales the pool by hand. That deploys (AKS accepts
an empty user pool, and a plan may mean "scale it up later"), so it is a warning, not a blocker.
An autoscaled pool with ``min_count: 0`` is fine: a Pending pod makes the autoscaler add a node.
"""

from __future__ import annotations

from aks_gpu_inference.planner.deploy.finding import Finding
from aks_gpu_inference.planner.deploy.model import DeployModel
from aks_gpu_inference.planner.deploy.scheduling import fitting_pools
from aks_gpu_inference.policies.manifests import get

WORKLOAD_KINDS = frozenset({"Deployment", "StatefulSet", "Job", "CronJob", "Pod", "ReplicaSet", "LeaderWorkerSet"})
"""Kinds whose pods must run somewhere; a DaemonSet runs on whatever nodes exist."""


def _wants_pods(manifest: dict) -> bool:
    replicas = get(manifest, "spec", "replicas")
    return not (isinstance(replicas, int) and replicas == 0)


def check(model: DeployModel) -> list[Finding]:
    findings = []
    for obj, template in model.pods():
        if obj.kind not in WORKLOAD_KINDS or not _wants_pods(obj.manifest):
            continue
        fits, _ = fitting_pools(model, obj, template.spec)
        if not fits or any(pool.max_nodes > 0 for pool in fits):
            continue  # no pool at all is the scheduling check's blocker
        names = sorted({pool.name for pool in fits})
        pools = f"pool {names[0]!r}, which has" if len(names) == 1 else f"pools {', '.join(map(repr, names))}, which have"
        findings.append(
            Finding(
                "capacity",
                "warning",
                obj.label,
                f"fits only {pools} 0 nodes and no autoscaling (count 0): its pods stay Pending until the pool is scaled by hand",
                "set the pool's count to at least 1, or min_count/max_count to let the autoscaler add nodes "
                "(min_count 0 still scales to zero when idle)",
            )
        )
    return findings
