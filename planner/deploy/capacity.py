"""Whether the node pools can hold what the stack runs on them, now and during a rollout.

- A pool created with ``count: 0`` and no autoscaler stays empty: pods that only fit there stay Pending until someone
  scales it by hand (a warning: AKS accepts an empty user pool, and a plan may mean "scale it up later").
- Every long-running GPU workload's pods (``demand``) are packed onto the nodes of the pools they fit, at each pool's
  maximum node count, as the scheduler would place them: a whole-node pod on an empty node, pods with hostname
  anti-affinity on distinct nodes, the rest where enough GPUs are free. Pods left over stay Pending: a blocker naming
  the workload, the pool and the numbers. An autoscaler ceiling that cannot be reached is a warning.
- A rolling update adds ``maxSurge`` pods before it removes old ones: a surge that finds no node stalls the rollout;
  ``maxUnavailable`` covering every replica takes the model down for its load time. Both are warnings, with the
  numbers and the ways out.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from aks_gpu_inference.components.core import quota
from aks_gpu_inference.planner.deploy.demand import Demand, demands
from aks_gpu_inference.planner.deploy.finding import Finding
from aks_gpu_inference.planner.deploy.inference_pool import ROLE_LABEL
from aks_gpu_inference.planner.deploy.model import DeployModel, NodePool
from aks_gpu_inference.planner.deploy.scheduling import fitting_pools
from aks_gpu_inference.policies.manifests import get

WORKLOAD_KINDS = frozenset({"Deployment", "StatefulSet", "Job", "CronJob", "Pod", "ReplicaSet", "LeaderWorkerSet"})
"""Kinds whose pods must run somewhere; a DaemonSet runs on whatever nodes exist."""
WAYS_OUT = "a spare node (max_count one above what the replicas take), a second replica, or a fallback model (models[].fallback)"
WAYS_OUT_POOL = (
    "a spare node (max_count one above what the engines take) or a second replica; not a fallback: a prefill/decode "
    "model is routed to its InferencePool, which AI Gateway cannot put beside another backend in one rule"
)


@dataclass
class _Node:
    pool: str
    gpus: int
    free: int
    groups: set[str] = field(default_factory=set)

    def takes(self, demand: Demand) -> bool:
        if demand.whole_node:
            return self.free == self.gpus
        if demand.apart and demand.label in self.groups:
            return False
        return self.free >= demand.gpus

    def place(self, demand: Demand) -> None:
        self.free -= self.gpus if demand.whole_node else demand.gpus
        self.groups.add(demand.label)


def node_gpus(pool: NodePool) -> int:
    """GPUs (or MIG slices) one node of the pool offers: what its device plugin advertises, else the size's GPUs (DRA)."""
    advertised = [count for name, count in pool.extended.items() if name.startswith("nvidia.com/")]
    return max(advertised) if advertised else (pool.sku.gpus if pool.sku else 0)


def _nodes(pools: Iterable[NodePool]) -> list[_Node]:
    return [_Node(p.name, node_gpus(p), node_gpus(p)) for p in pools if node_gpus(p) for _ in range(p.max_nodes)]


def pack(nodes: list[_Node], wanted: list[tuple[Demand, int, set[str]]]) -> dict[str, int]:
    """Place ``count`` pods of each demand on nodes of its pools, the largest first; pods left over, by demand label."""
    left: dict[str, int] = {}
    for demand, count, pools in sorted(wanted, key=lambda w: (not w[0].whole_node, -w[0].gpus)):
        for _ in range(count):
            node = next((n for n in nodes if n.pool in pools and n.takes(demand)), None)
            if node is None:
                left[demand.label] = left.get(demand.label, 0) + 1
            else:
                node.place(demand)
    return left


def _describe(demand: Demand, count: int, pools: list[NodePool]) -> str:
    each = "a whole node" if demand.whole_node else f"{demand.gpus} GPU(s)" + (", one per node" if demand.apart else "")
    sizes = ", ".join(f"{p.name} ({p.max_nodes} x {node_gpus(p)} GPUs)" for p in pools)
    return f"{count} pod(s) of {each} on pool {sizes}"


def check(model: DeployModel) -> list[Finding]:
    return [*_empty_pools(model), *_packing(model)]


def placed_demands(model: DeployModel) -> list[tuple[Demand, list[NodePool]]]:
    """Each GPU workload with the pools of GPU nodes it may run on (pools of 0 nodes left out: the empty-pool warning)."""
    wanted = []
    for demand in demands(model):
        fits, _ = fitting_pools(model, demand.obj, demand.spec)
        pools = [p for p in fits if node_gpus(p) and p.max_nodes]
        if pools:
            wanted.append((demand, pools))
    return wanted


def kept_up(model: DeployModel) -> dict[str, tuple[int, list[str]]]:
    """Nodes per pool that the GPU workloads keep running at their floor (``Demand.pods``: replicas, KEDA's
    ``minReplicaCount``, Ray's and Dynamo's workers), packed as the scheduler places them, with the workloads on them:
    what an autoscaled pool cannot scale below while they run."""
    nodes = _nodes(model.pools)
    pack(nodes, [(d, d.pods, {p.name for p in pools}) for d, pools in placed_demands(model)])
    kept: dict[str, tuple[int, list[str]]] = {}
    for node in nodes:
        if node.free < node.gpus:
            count, labels = kept.get(node.pool, (0, []))
            kept[node.pool] = (count + 1, sorted(set(labels) | node.groups))
    return kept


def _packing(model: DeployModel) -> list[Finding]:
    found: list[Finding] = []
    wanted = placed_demands(model)
    steady = [(d, d.pods, {p.name for p in pools}) for d, pools in wanted]
    placed = _nodes(model.pools)
    left = pack(placed, steady)
    for demand, pools in wanted:
        if left.get(demand.label):
            placed = demand.pods - left[demand.label]
            message = f"{_describe(demand, demand.pods, pools)}: only {placed} fit at the pools' maximum size; {left[demand.label]} stay Pending"
            found.append(
                Finding("capacity", "blocker", demand.label, message, "raise the pool's count or max_count, or lower replicas")
            )
    for demand, pools in wanted:
        found += _peak(model, demand, pools, steady) + _rollout(model, demand, pools, steady, placed)
    return found


def _others(steady: list, demand: Demand, count: int) -> list:
    return [(d, count if d is demand else n, pools) for d, n, pools in steady]


def _ways_out(demand: Demand) -> str:
    labels = get(demand.obj.manifest, "spec", "template", "metadata", "labels") or {}
    return WAYS_OUT_POOL if ROLE_LABEL in labels else WAYS_OUT


def _in_use(nodes: list[_Node]) -> dict[str, int]:
    """Nodes per pool that run a GPU pod."""
    used: dict[str, int] = {}
    for node in nodes:
        if node.free < node.gpus:
            used[node.pool] = used.get(node.pool, 0) + 1
    return used


def _with_surge(placed: list[_Node], demand: Demand, steady: list) -> tuple[int, dict[str, int]]:
    """A rollout's surge pods placed beside the running ones (the scheduler moves no running pod): how many find no
    node, and the nodes each pool then runs. Placing only the surge keeps a rollout of every model linear in them."""
    pools = next(names for d, _, names in steady if d is demand)
    nodes = [replace(n, groups=set(n.groups)) for n in placed]
    left = pack(nodes, [(demand, demand.surge, pools)]).get(demand.label, 0)
    return left, _in_use(nodes)


def _surge_nodes(model: DeployModel, placed: list[_Node], during: dict[str, int]) -> str:
    """What the autoscaler adds for a rollout's surge pods, and the quota each new node draws on; empty when the surge
    lands on nodes that run anyway."""
    before = _in_use(placed)
    added = []
    for pool in model.pools:
        extra = during.get(pool.name, 0) - before.get(pool.name, 0)
        if extra <= 0 or not pool.props.get("enableAutoScaling"):
            continue
        spot = pool.props.get("scaleSetPriority") == "Spot"
        row = quota.SPOT if spot else quota.family_of(pool.vm_size) or f"the family of {pool.vm_size}"
        vcpus = f"{extra * pool.sku.vcpus} vCPUs" if pool.sku else "vCPUs"
        region = pool.labels.get("topology.kubernetes.io/region") or "the stack's region"
        added.append(f"{extra} {pool.vm_size} node(s) in pool {pool.name}: {vcpus} of {row} quota in {region}")
    if not added:
        return ""
    return (
        f"; the autoscaler adds {'; '.join(added)} for the new pod (within max_count, which the Quota section counts: "
        "without that quota the new pod stays Pending and the rollout stalls)"
    )


def _peak(model: DeployModel, demand: Demand, pools: list[NodePool], steady: list) -> list[Finding]:
    if demand.peak <= demand.pods:
        return []
    left = pack(_nodes(model.pools), _others(steady, demand, demand.peak)).get(demand.label, 0)
    if not left:
        return []
    message = f"the autoscaler's ceiling ({_describe(demand, demand.peak, pools)}) cannot be reached: {left} would stay Pending"
    return [Finding("capacity", "warning", demand.label, message, "raise the pool's max_count or lower max_replicas")]


def _rollout(model: DeployModel, demand: Demand, pools: list[NodePool], steady: list, placed: list[_Node]) -> list[Finding]:
    return [f for f in [rollout(model, demand, pools, steady, placed)[1]] if f is not None]


def rollout(
    model: DeployModel, demand: Demand, pools: list[NodePool], steady: list, placed: list[_Node]
) -> tuple[str, Finding | None]:
    """What a rolling update of the workload does on its pools (``placed``: the nodes with every workload's pods at
    steady state), and the warning when it stalls or takes it down."""
    minutes = f"up to {demand.startup_seconds / 60:.0f} minutes" if demand.startup_seconds else "its load time"
    if not demand.pods or demand.obj.kind != "Deployment":
        return "no rolling update (no pods, or not a Deployment)", None
    if demand.surge:
        left, during = _with_surge(placed, demand, steady)
        if left:
            stalls = "never progresses" if not demand.unavailable else "waits for old pods to go first"
            message = (
                f"a rollout adds {demand.surge} pod(s) (maxSurge) before removing old ones, and {left} find no node "
                f"({_describe(demand, demand.pods + demand.surge, pools)}): the rollout {stalls}"
            )
            return message, Finding("capacity", "warning", demand.label, message, _ways_out(demand))
        if not demand.unavailable:
            return (
                f"a rollout starts {demand.surge} new pod(s) beside the {demand.pods} running, which the pools have room for: "
                f"no downtime (a new pod takes {minutes} to load){_surge_nodes(model, placed, during)}"
            ), None
    if demand.unavailable >= demand.pods:
        message = (
            f"a rollout takes all {demand.pods} replica(s) down at once (maxUnavailable {demand.unavailable}, "
            f"maxSurge {demand.surge}): the model does not answer while the new pod loads, {minutes} (its startup budget)"
        )
        return message, Finding("capacity", "warning", demand.label, message, _ways_out(demand))
    return (
        f"a rollout replaces {demand.unavailable} of {demand.pods} replica(s) at a time: the others keep answering "
        f"(each new pod takes {minutes} to load)"
    ), None


def rollouts(model: DeployModel) -> list[tuple[str, str]]:
    """Each GPU workload and what a rollout of it does (the plan's Rollouts section)."""
    wanted = [(d, [p for p in fitting_pools(model, d.obj, d.spec)[0] if node_gpus(p) and p.max_nodes]) for d in demands(model)]
    wanted = [(d, pools) for d, pools in wanted if pools]
    steady = [(d, d.pods, {p.name for p in pools}) for d, pools in wanted]
    placed = _nodes(model.pools)
    pack(placed, steady)
    return [(d.label, rollout(model, d, pools, steady, placed)[0]) for d, pools in wanted if d.obj.kind == "Deployment"]


def _wants_pods(manifest: dict) -> bool:
    replicas = get(manifest, "spec", "replicas")
    return not (isinstance(replicas, int) and replicas == 0)


def _empty_pools(model: DeployModel) -> list[Finding]:
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
