"""What each long-running GPU workload asks of its node pool: how many pods, how many GPUs each (device-plugin
requests or DRA claims), whether each takes a whole node (a full-node NIC claim, all of a node's GPUs) or may not share
one with its siblings (required anti-affinity on the hostname), and what its update strategy adds during a rollout.

Pods come from the workload's own counts, read as its controller reads them: ``replicas`` of a Deployment or
StatefulSet (KEDA's ``minReplicaCount``/``maxReplicaCount`` when a ScaledObject scales it), a LeaderWorkerSet's
``replicas`` x ``size``, a Ray worker group's or a Dynamo service's ``replicas``. Jobs are left out: they run to
completion (the qualification gates finish before the engines start).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aks_gpu_inference.components.core.labels import is_mig_resource
from aks_gpu_inference.planner.deploy.model import DeployModel, KubeObject
from aks_gpu_inference.policies.manifests import get, items, resources_of

LONG_RUNNING = frozenset({"Deployment", "StatefulSet", "ReplicaSet", "LeaderWorkerSet", "RayJob", "RayCluster", "RayService"})
LONG_RUNNING |= {"DynamoGraphDeployment"}
GPU_CLASSES = ("gpu.nvidia.com", "mig.nvidia.com")


@dataclass(frozen=True)
class Demand:
    obj: KubeObject
    spec: Mapping[str, Any]
    label: str
    pods: int
    """Pods at steady state (a scaled workload's floor)."""
    peak: int
    """Pods at the autoscaler's ceiling (``pods`` when nothing scales it)."""
    gpus: int
    """GPUs each pod takes."""
    whole_node: bool
    """Each pod takes a whole node (a full-node NIC claim, or every GPU of the node)."""
    apart: bool
    """Required anti-affinity on the hostname among the workload's pods: one per node."""
    surge: int = 0
    """Extra pods a rolling update creates before it removes old ones (``maxSurge``)."""
    unavailable: int = 0
    """Pods a rolling update takes down at once (``maxUnavailable``)."""
    startup_seconds: int = 0
    """How long a new pod may take to become ready (its startup probe's budget)."""


def _count(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default


def _at(manifest: Mapping, path: str) -> Any:
    node: Any = manifest
    for part in path.rstrip(".").split("."):
        if not part:
            continue
        name, _, index = part.partition("[")
        node = node.get(name) if isinstance(node, Mapping) else None
        if index:
            node = items(node)[int(index.rstrip("]"))] if len(items(node)) > int(index.rstrip("]")) else None
    return node


def _replicas(obj: KubeObject, path: str) -> int:
    """Pods of the template at ``path``: the nearest ``replicas`` above it (x ``size`` for a LeaderWorkerSet)."""
    parts = path.rstrip(".").split(".")
    for depth in range(len(parts) - 1, 0, -1):
        holder = _at(obj.manifest, ".".join(parts[:depth]))
        if isinstance(holder, Mapping) and "replicas" in holder:
            count = _count(holder.get("replicas"), 1)
            size = _count(get(obj.manifest, "spec", "leaderWorkerTemplate", "size"), 1)
            if obj.kind == "LeaderWorkerSet":
                count *= 1 if "leaderTemplate" in path else max(size - 1, 0) if "workerTemplate" in path else size
            return count
    return 1


def _gpus(model: DeployModel, obj: KubeObject, spec: Mapping) -> tuple[int, bool]:
    """GPUs a pod takes, and whether a claim makes it take the whole node."""
    gpus, whole = 0.0, False
    for container in items(spec.get("containers")):
        for name, amount in resources_of(container).items():
            if str(name) == "nvidia.com/gpu" or is_mig_resource(str(name)):
                try:
                    gpus += float(amount)
                except (TypeError, ValueError):
                    continue
    namespace = obj.namespace or "default"
    for claim in items(spec.get("resourceClaims")):
        template = get(claim, "resourceClaimTemplateName")
        for verdict in (v for v in model.claims if v.template == template and v.namespace == namespace):
            if verdict.device_class in GPU_CLASSES and isinstance(verdict.needed, int):
                gpus += verdict.needed
            whole = whole or str(template).endswith("-full-node")
    return math.ceil(gpus), whole


def _apart(spec: Mapping) -> bool:
    terms = items(get(spec, "affinity", "podAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution"))
    return any(get(term, "topologyKey") == "kubernetes.io/hostname" for term in terms)


def _scaled(model: DeployModel, obj: KubeObject) -> tuple[int, int] | None:
    """KEDA's floor and ceiling for a Deployment a ScaledObject scales (``minReplicaCount`` defaults to 0, the
    ceiling to 100: keda.sh/v1alpha1 ScaledObject)."""
    for scaled in (o for o in model.objects if o.kind == "ScaledObject" and o.namespace == obj.namespace):
        target = get(scaled.manifest, "spec", "scaleTargetRef") or {}
        if target.get("name") == obj.name and target.get("kind", "Deployment") == obj.kind:
            spec = scaled.manifest.get("spec") or {}
            return _count(spec.get("minReplicaCount"), 0), _count(spec.get("maxReplicaCount"), 100)
    return None


def _strategy(obj: KubeObject, replicas: int) -> tuple[int, int]:
    """``maxSurge`` and ``maxUnavailable`` of a Deployment's rolling update, as pods (a percentage of the replicas:
    surge rounded up, unavailable rounded down; the defaults 25% each: apps/v1 DeploymentStrategy)."""
    if obj.kind != "Deployment":
        return 0, 1
    strategy = get(obj.manifest, "spec", "strategy") or {}
    if strategy.get("type") == "Recreate":
        return 0, replicas
    rolling = strategy.get("rollingUpdate") or {}

    def pods(value: Any, round_up: bool) -> int:
        if isinstance(value, str) and value.endswith("%"):
            share = replicas * float(value[:-1]) / 100
            return math.ceil(share) if round_up else math.floor(share)
        return _count(value, 0)

    return pods(rolling.get("maxSurge", "25%"), True), pods(rolling.get("maxUnavailable", "25%"), False)


def _startup(spec: Mapping) -> int:
    for container in items(spec.get("containers")):
        probe = container.get("startupProbe") if isinstance(container, Mapping) else None
        if isinstance(probe, Mapping):
            return _count(probe.get("initialDelaySeconds"), 0) + _count(probe.get("periodSeconds"), 10) * _count(
                probe.get("failureThreshold"), 3
            )
    return 0


def demands(model: DeployModel) -> list[Demand]:
    """Every long-running pod template that takes GPUs, with its counts."""
    found = []
    for obj, template in model.pods():
        if obj.kind not in LONG_RUNNING:
            continue
        gpus, whole = _gpus(model, obj, template.spec)
        if not gpus and not whole:
            continue
        pods = _replicas(obj, template.path)
        floor_ceiling = _scaled(model, obj)
        floor, ceiling = floor_ceiling if floor_ceiling else (pods, pods)
        surge, unavailable = _strategy(obj, max(floor, 1))
        label = template.label
        spec = template.spec
        found.append(
            Demand(obj, spec, label, floor, max(ceiling, floor), gpus, whole, _apart(spec), surge, unavailable, _startup(spec))
        )
    return found
