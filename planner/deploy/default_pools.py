"""The node pool a stack gets without asking: AksCluster's CPU ``platform`` pool (``platform_pool``, default
Standard_D4ds_v5, 1-3 nodes), for the pods that may run on neither the system pool (``CriticalAddonsOnly``) nor a GPU
pool (tainted): controllers, operators, gateways, routers. The plan says what would run there and how to opt out, and
warns when nothing of the stack would: a node kept up for nothing."""

from __future__ import annotations

from dataclasses import dataclass

from aks_gpu_inference.planner.deploy.finding import Finding
from aks_gpu_inference.planner.deploy.model import DeployModel, NodePool
from aks_gpu_inference.planner.deploy.scheduling import fitting_pools

PLATFORM_LABEL = ("aks-gpu-inference/pool", "platform")
"""The node label AksCluster gives its platform pool (components/azure/aks_cluster.py)."""
OPT_OUT = "platform_pool: None in AksClusterArgs (cluster.platform_pool: null in a stack file)"


@dataclass(frozen=True)
class DefaultPool:
    pool: NodePool
    workloads: tuple[str, ...]
    """The objects whose pods would run on it (DaemonSets included), by label."""

    @property
    def statement(self) -> str:
        nodes = f"{self.pool.props.get('minCount', 1)}-{self.pool.max_nodes} x {self.pool.vm_size}"
        shown = ", ".join(self.workloads[:6]) + (f" and {len(self.workloads) - 6} more" if len(self.workloads) > 6 else "")
        runs = f"runs {shown}" if self.workloads else "runs nothing of this stack: its nodes cost money for nothing"
        return (
            f"pool {self.pool.name!r} ({nodes}) is the CPU pool AksCluster adds for pods that may run on neither the "
            f"system pool nor a GPU pool; it {runs}. Remove it with {OPT_OUT}, once the cluster has another untainted "
            "user pool for such pods"
        )


def platform_pool(model: DeployModel) -> DefaultPool | None:
    """The platform pool of the stack and what would run on it, or None when the stack has none."""
    key, value = PLATFORM_LABEL
    pool = next((p for p in model.pools if p.labels.get(key) == value), None)
    if pool is None:
        return None
    workloads = []
    for obj, template in model.pods():
        fits, _ = fitting_pools(model, obj, template.spec)
        if pool in fits and obj.label not in workloads:
            workloads.append(obj.label)
    return DefaultPool(pool, tuple(sorted(workloads)))  # the engine registers in no fixed order


def check(model: DeployModel) -> list[Finding]:
    """A warning when the platform pool would run nothing: a node kept up for nothing."""
    found = platform_pool(model)
    if found is None or found.workloads:
        return []
    return [Finding("platform-pool", "warning", f"pool {found.pool.name}", found.statement, f"set {OPT_OUT}")]
