"""The planned cluster as the deployability checks see it: objects, namespaces, node pools, charts.

Built once per plan from the run (with chart children added) and the chart renders. Node labels
and taints are the ones AKS itself puts on a pool's nodes, plus the pool's own.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from aks_gpu_inference.components.core import catalog
from aks_gpu_inference.components.core.labels import AGENTPOOL_LABEL, SPOT_LABEL, SPOT_TAINT
from aks_gpu_inference.planner.azure.pools import agent_pool, aks_managed_gpus
from aks_gpu_inference.planner.charts import CLUSTER_SCOPED, ChartRender, child_records
from aks_gpu_inference.planner.engine.program import ProgramRun, Registered
from aks_gpu_inference.policies.manifests import Resource, pod_templates

BUILT_IN_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})


@dataclass
class KubeObject:
    record: Registered
    manifest: dict[str, Any]
    """The record's own inputs, not a copy: checks read it and never change it."""
    chart: ChartRender | None = None

    @property
    def kind(self) -> str:
        return str(self.manifest.get("kind", self.record.type.rsplit(":", 1)[-1]))

    @property
    def api_version(self) -> str:
        return str(self.manifest.get("apiVersion", ""))

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0] if "/" in self.api_version else ""

    @property
    def name(self) -> str:
        return str((self.manifest.get("metadata") or {}).get("name", self.record.name))

    @property
    def namespace(self) -> str | None:
        if self.kind in CLUSTER_SCOPED:
            return None
        return (self.manifest.get("metadata") or {}).get("namespace") or "default"

    @property
    def label(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        origin = f" (chart {self.chart.chart} {self.chart.version})" if self.chart else ""
        return f"{self.kind} {where}{self.name}{origin}"

    def as_resource(self) -> Resource:
        return Resource(self.record.type, self.record.name, self.manifest, self.record.urn)


@dataclass
class NodePool:
    name: str
    mode: str
    vm_size: str
    taints: list[str]
    labels: dict[str, str]
    max_nodes: int
    mig_profile: str | None
    record: Registered
    where: str
    props: dict[str, Any]
    """The pool's properties as ARM receives them (an AgentPool's inputs, or one agentPoolProfiles entry)."""
    extended: dict[str, int] = field(default_factory=dict)
    """Extended resources a node advertises (``nvidia.com/gpu``: 8), filled in by the device plugins that run there."""

    @property
    def sku(self) -> catalog.GpuSku | None:
        return catalog.skus().get(self.vm_size)

    @property
    def aks_managed_gpus(self) -> bool:
        """AKS's managed GPU experience: AKS itself runs the device plugin (and DCGM) on these nodes."""
        return aks_managed_gpus(self.props)


def _pool(record: Registered, profile: dict[str, Any], location: str, where: str) -> NodePool:
    name = str(profile.get("name") or profile.get("agentPoolName") or record.name)
    vm_size = str(profile.get("vmSize", ""))
    spot = profile.get("scaleSetPriority") == "Spot"
    mode = str(profile.get("mode", "User"))
    labels = {
        AGENTPOOL_LABEL: name,
        "agentpool": name,
        "kubernetes.azure.com/mode": mode.lower(),
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": catalog.node_arch(vm_size),
        "node.kubernetes.io/instance-type": vm_size,
        "beta.kubernetes.io/instance-type": vm_size,
        "kubernetes.azure.com/os-sku": str(profile.get("osSKU", "Ubuntu")),
        "topology.kubernetes.io/region": location,
    }
    sku = catalog.skus().get(vm_size)
    if sku and sku.gpu_vendor == "nvidia":
        labels["kubernetes.azure.com/accelerator"] = "nvidia"
    taints = [str(t) for t in profile.get("nodeTaints") or []]
    if spot:
        labels[SPOT_LABEL[0]] = SPOT_LABEL[1]
        taints.append(SPOT_TAINT)
    labels.update({str(k): str(v) for k, v in (profile.get("nodeLabels") or {}).items()})
    count = profile.get("count", 1)
    high = profile.get("maxCount", count) if profile.get("enableAutoScaling") else count
    return NodePool(
        name, mode, vm_size, taints, labels, int(high or 0), profile.get("gpuInstanceProfile"), record, where, profile
    )


@dataclass
class DeployModel:
    run: ProgramRun
    charts: list[ChartRender]
    objects: list[KubeObject]
    pools: list[NodePool]
    cluster: dict[str, Any]
    claims: list[Any] = field(default_factory=list)
    _closure: dict[str, frozenset[str]] = field(default_factory=dict, repr=False)
    crd_lookups: dict[Any, Any] = field(default_factory=dict, repr=False)
    """``deploy.crds.at_hand``'s lookup per upstream folder, built on first use."""

    @cached_property
    def by_urn(self) -> dict[str, Registered]:
        return {r.urn: r for r in self.run.resources}

    @cached_property
    def namespaces(self) -> dict[str, KubeObject]:
        return {o.name: o for o in self.objects if o.kind == "Namespace"}

    def ancestors(self, urn: str) -> list[str]:
        chain, record = [], self.by_urn.get(urn)
        while record is not None and record.parent:
            chain.append(record.parent)
            record = self.by_urn.get(record.parent)
        return chain

    @cached_property
    def _children(self) -> dict[str, list[str]]:
        children: dict[str, list[str]] = {}
        for r in self.run.resources:
            if r.parent:
                children.setdefault(r.parent, []).append(r.urn)
        return children

    def descendants(self, urn: str) -> set[str]:
        found, stack = set(), list(self._children.get(urn, []))
        while stack:
            child = stack.pop()
            if child not in found:
                found.add(child)
                stack.extend(self._children.get(child, []))
        return found

    def waits_for(self, record: Registered, target: str) -> bool:
        """Whether ``record`` is created only after ``target`` (its dependencies, transitively; a
        dependency on a component waits for all the component's children)."""
        return target in self.dependencies(record.urn) or any(a in self.dependencies(record.urn) for a in self.ancestors(target))

    def dependencies(self, urn: str) -> frozenset[str]:
        cached = self._closure.get(urn)
        if cached is not None:
            return cached
        self._closure[urn] = frozenset()  # cycles cannot occur in Pulumi, but never recurse forever
        record = self.by_urn.get(urn)
        direct = set(record.options.get("dependsOn", [])) if record else set()
        found = set(direct)
        for dep in direct:
            found |= self.dependencies(dep)
            # Waiting for a component means waiting for all its descendants.
            found |= self.descendants(dep)
        self._closure[urn] = frozenset(found)
        return self._closure[urn]

    def pods(self) -> Iterable[tuple[KubeObject, Any]]:
        for obj in self.objects:
            for template in pod_templates(obj.as_resource()):
                if not template.unknown:
                    yield obj, template


def assemble(run: ProgramRun, charts: list[ChartRender], claims: list[Any] | None = None) -> DeployModel:
    """The model of an expanded run (chart children already in ``run``; v3 Releases added here)."""
    by_chart = {c.resource.urn: c for c in charts}
    objects = []
    for record in run.resources:
        if record.is_kubernetes:
            parent_chart = by_chart.get(record.parent or "")
            objects.append(KubeObject(record, record.inputs, parent_chart))
    for chart in charts:
        if chart.resource.type == "kubernetes:helm.sh/v3:Release":
            objects += [KubeObject(r, r.inputs, chart) for r in child_records(chart)]
    cluster = next((r.inputs for r in run.resources if r.type.endswith("containerservice:ManagedCluster")), {})
    location = str(cluster.get("location", ""))
    pools = []
    for record in run.resources:
        if record.type.endswith("containerservice:ManagedCluster"):
            for index, profile in enumerate(record.inputs.get("agentPoolProfiles") or []):
                pools.append(_pool(record, profile, location, f"ManagedCluster {record.name} agentPoolProfiles[{index}]"))
        elif (found := agent_pool(record)) is not None:
            name, props = found
            pools.append(_pool(record, {"name": name, **props}, location, f"{record.type.rsplit(':', 1)[-1]} {record.name}"))
    return DeployModel(run, charts, objects, pools, cluster, claims or [])
