"""What runs where: one ``Workload`` per pod template of a planned cluster, with the pools whose nodes would run it
(``deploy.scheduling``'s own fit), its accelerators and replicas. ``topology`` adds the request paths."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from aks_gpu_inference.planner.azure.quota import kaito_nodes
from aks_gpu_inference.planner.deploy.model import DeployModel
from aks_gpu_inference.planner.deploy.scheduling import fitting_pools
from aks_gpu_inference.policies.manifests import items, resources_of


@dataclass
class Workload:
    """One pod template of the plan and the pools whose nodes would run it."""

    kind: str
    namespace: str | None
    name: str
    part: str | None
    """Which pod template of an object with several (a Dynamo component, a Ray group); None for one."""
    pools: list[str]
    """Every pool the scheduler could place it on (empty: it fits none, a scheduling blocker); a KAITO Workspace's
    is the nodes KAITO provisions for it (``kaito <name>``, as the cost table names them)."""
    accelerators: str
    """GPUs or DRA claims a pod asks for (``8 nvidia.com/gpu``, ``claims 8 gpu-h100-80gb``); empty for none."""
    replicas: int | None
    every_node: bool
    """A DaemonSet: one pod on every node of its pools."""
    chart: str | None
    labels: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def id(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind} {where}{self.name}" + (f" ({self.part})" if self.part else "")

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
            "part": self.part,
            "pools": self.pools,
            "accelerators": self.accelerators,
            "replicas": self.replicas,
            "every_node": self.every_node,
            "chart": self.chart,
        }


_SEGMENT = re.compile(r"(\w+)(?:\[(\d+)\])?")


def _short(key: str) -> str:
    """``headGroupSpec`` -> ``head``, ``submitterPodTemplate`` -> ``submitter``."""
    return re.sub(r"(Group)?(Specs?|PodTemplate|Template)$", "", key) or key


def _template_owner(manifest: dict, path: str) -> tuple[dict, str | None]:
    """The mapping that holds a pod template at ``path`` (``spec.components[1].podTemplate.spec.``), where its
    ``replicas`` live, and the name of the part of the object it is (``prefill``, ``head``, ``submitter``)."""
    segments = [s for s in path.rstrip(".").split(".") if s]
    node: Any = manifest
    owner, part = manifest, None
    for segment in segments[:-2]:
        match = _SEGMENT.fullmatch(segment)
        if match is None:
            break
        key, index = match.group(1), match.group(2)
        node = node.get(key) if isinstance(node, dict) else None
        if index is not None:
            listed = items(node)
            node = listed[int(index)] if int(index) < len(listed) else None
            if isinstance(node, dict):
                part = str(node.get("name") or node.get("groupName") or f"{key}[{index}]")
        elif key != "spec":
            part = _short(key)
        if isinstance(node, dict):
            owner = node
    if len(segments) >= 2 and segments[-2] not in ("template", "podTemplate"):
        part = _short(segments[-2])
    return owner, part


def _accelerators(spec: dict, claims: list[Any], namespace: str | None) -> str:
    """The extended resources (GPUs, MIG slices) one pod asks for and the devices its DRA claims need."""
    wanted: dict[str, float] = {}
    for list_name in ("containers", "initContainers"):
        for container in items(spec.get(list_name)):
            for name, amount in resources_of(container).items():
                try:
                    number = float(amount)
                except (TypeError, ValueError):
                    continue
                if "/" in str(name):  # init containers run one at a time, the others side by side
                    wanted[name] = (
                        max(wanted.get(name, 0), number) if list_name == "initContainers" else wanted.get(name, 0) + number
                    )
    parts = [f"{n:g} {name}" for name, n in sorted(wanted.items())]
    claimed = []
    for claim in items(spec.get("resourceClaims")):
        template = claim.get("resourceClaimTemplateName") if isinstance(claim, dict) else None
        for verdict in claims:
            if verdict.template == template and verdict.namespace == (namespace or "default"):
                claimed.append(f"{verdict.needed} {verdict.device_class}")
    if claimed:
        parts.append("claims " + ", ".join(claimed))
    return "; ".join(parts)


def workloads(model: DeployModel) -> list[Workload]:
    pods = list(model.pods())
    templates_per_object = Counter(id(obj) for obj, _ in pods)
    found = []
    for obj, template in pods:
        fits, _ = fitting_pools(model, obj, template.spec)
        owner, part = _template_owner(obj.manifest, template.path)
        replicas = owner.get("replicas")
        found.append(
            Workload(
                obj.kind,
                obj.namespace,
                obj.name,
                part if templates_per_object[id(obj)] > 1 else None,
                [p.name for p in fits],
                _accelerators(dict(template.spec), model.claims, obj.namespace),
                replicas if isinstance(replicas, int) else None,
                obj.kind == "DaemonSet",
                obj.chart.chart if obj.chart else None,
                labels={str(k): str(v) for k, v in ((template.metadata or {}).get("labels") or {}).items()},
            )
        )
    for obj in model.objects:
        if (nodes := kaito_nodes(obj.record)) is not None:
            preset = ((obj.manifest.get("inference") or {}).get("preset") or {}).get("name")
            found.append(
                Workload(
                    obj.kind,
                    obj.namespace,
                    obj.name,
                    None,
                    [nodes[0]],
                    f"preset {preset}" if preset else "",
                    None,
                    False,
                    None,
                )
            )
    # The engine registers in no fixed order: by namespace, kind and name (an object's parts stay in their order).
    return sorted(found, key=lambda w: (w.namespace or "", w.kind, w.name))
