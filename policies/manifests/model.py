"""What every rule works on: resources as plain mappings with engine wire names, plus the helpers
that find pod templates, containers, GPU requests, RDMA claims and pools in them.

Nothing here imports Pulumi: the same rules serve the CrossGuard pack, the offline planner and
``aks-gpu scan`` on plain YAML.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from aks_gpu_inference.components.core import catalog
from aks_gpu_inference.components.core.labels import AGENTPOOL_LABEL, is_gpu_resource
from aks_gpu_inference.policies.manifests.bases import base_ref, find_base
from aks_gpu_inference.policies.manifests.templates import templates_of
from aks_gpu_inference.policies.manifests.values import UNKNOWN, get, is_unknown, items, looks_gpu

UNKNOWN_CLASS = "<device class unknown during preview>"
"""Stands for a claim whose device classes cannot be known yet; fail-closed rules treat it as a match."""


@dataclass
class Resource:
    """One resource: a Pulumi type token (``kubernetes:apps/v1:Deployment``) and its input properties."""

    type: str
    name: str
    props: Mapping[str, Any]
    urn: str = ""
    base: Mapping[str, Any] | None = field(default=None, compare=False)
    """The props of the runtime this resource's pods are built over (a TrainJob's), when at hand (``StackIndex``)."""
    fragment: bool = field(default=False, compare=False)
    """A patch to another object (a kustomize patch): its pods are fragments."""
    _templates: tuple[Any, Any, bool, list[PodTemplate]] | None = field(default=None, init=False, repr=False, compare=False)
    """``pod_templates`` of these props, base and fragment mark, computed once: every rule walks the same templates."""

    @property
    def label(self) -> str:
        """How a person finds the resource: ``Kind namespace/name``; ``Kind namespace/prefix-*`` for an object
        named by ``metadata.generateName`` (the API server appends a random suffix to the prefix)."""
        kind = self.type.rsplit(":", 1)[-1]
        metadata = self.props.get("metadata") if isinstance(self.props, Mapping) else None
        metadata = metadata if isinstance(metadata, Mapping) else {}
        namespace = metadata.get("namespace")
        where = f"{namespace}/" if isinstance(namespace, str) else ""
        if isinstance(metadata.get("name"), str):
            return f"{kind} {where}{metadata['name']}"
        if isinstance(metadata.get("generateName"), str):
            return f"{kind} {where}{metadata['generateName']}*"
        return f"{kind} {self.name}"


@dataclass(frozen=True)
class Exemption:
    """A finding the rule's configuration accepts on purpose (a documented node agent), reported as exempted."""

    rule: str
    resource: Resource
    message: str
    why: str

    @property
    def urn(self) -> str:
        return self.resource.urn


@dataclass(frozen=True)
class Violation:
    rule: str
    resource: Resource
    message: str

    @property
    def urn(self) -> str:
        return self.resource.urn


def type_matches(token: str, provider: str, module: str, kind: str) -> bool:
    """Match a type token, allowing an API-version segment (``containerservice/v20250901``)."""
    return re.fullmatch(rf"{re.escape(provider)}:{re.escape(module)}(/v[0-9a-z]+)?:{re.escape(kind)}", token) is not None


def kube_kind(resource: Resource) -> str | None:
    """The Kubernetes kind of a ``kubernetes:<group>/<version>:<Kind>`` resource, else None."""
    match = re.fullmatch(r"kubernetes:([\w.-]+/)?[\w.-]+:(\w+)", resource.type)
    return match[2] if match and not resource.type.startswith("kubernetes:helm.sh/") else None


def token_for_manifest(api_version: str, kind: str) -> str:
    """The Pulumi type token of a plain manifest (``apps/v1`` + ``Deployment``)."""
    return f"kubernetes:{api_version if '/' in api_version else 'core/' + api_version}:{kind}"


# ---- workloads -------------------------------------------------------------------------------

CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")


@dataclass
class PodTemplate:
    resource: Resource
    path: str
    metadata: Mapping[str, Any]
    spec: Mapping[str, Any]
    unknown: bool = False
    """The whole pod spec is unknown during preview: nothing in it can be checked."""
    moved: Mapping[int, str] = field(default_factory=dict)
    """Containers the resource keeps outside ``spec.containers`` (an InferenceService's ``predictor.model``),
    appended to ``spec["containers"]``: their indexes there and their real locations."""
    named: bool = False
    """The resource has several pod templates (a LeaderWorkerSet's leader and workers), so ``label`` names this one."""
    fragment: bool = False
    """Only part of a pod (a patch, a TrainJob without its runtime): rules check what it sets, not what it leaves out."""
    gpu_names: frozenset[str] = frozenset()
    """Resource names its operator counts as GPUs besides the device plugins' (``walk.Found.gpu_names``)."""
    gpu_fields: tuple[str, ...] = ()
    """Operator fields outside the containers that give the pod GPUs (``walk.Found.gpu_fields``)."""

    def containers(self) -> Iterator[tuple[str, Mapping[str, Any]]]:
        """Every container of every list, with a readable location (``containers[0] vllm``)."""
        for list_name in CONTAINER_LISTS:
            for index, container in enumerate(items(self.spec.get(list_name))):
                if isinstance(container, Mapping):
                    moved = self.moved.get(index) if list_name == "containers" else None
                    yield f"{moved or f'{self.path}{list_name}[{index}]'} {container.get('name', '?')}", container

    @property
    def label(self) -> str:
        """The resource's label, and this template's path when the resource has several:
        ``LeaderWorkerSet ml/llama spec.leaderWorkerTemplate.workerTemplate.spec``."""
        return f"{self.resource.label} {self.path.rstrip('.')}" if self.named and self.path else self.resource.label

    def where(self, container_location: str) -> str:
        return f"{self.resource.label} {container_location}"

    def unknown_parts(self) -> list[str]:
        """Parts of the pod spec a fail-closed rule cannot see during preview."""
        if self.unknown:
            return [f"{self.path.rstrip('.')}"]
        moved = [where for index, where in self.moved.items() if is_unknown(get(self.spec, "containers", index))]
        return [f"{self.path}{name}" for name in CONTAINER_LISTS if is_unknown(self.spec.get(name))] + moved


def pod_templates(resource: Resource) -> list[PodTemplate]:
    """The pod templates of a resource of any kind (``templates.TEMPLATE_KINDS``); empty for other kinds.

    Computed once per resource, props object, base and fragment mark (rules only read them); a resource given new
    props, another base or marked a fragment gets its templates anew."""
    cached = resource._templates
    if cached is not None and cached[0] is resource.props and cached[1] is resource.base and cached[2] == resource.fragment:
        return cached[3]
    result = _pod_templates(resource)
    resource._templates = (resource.props, resource.base, resource.fragment, result)
    return result


def _pod_templates(resource: Resource) -> list[PodTemplate]:
    result = []
    templates = templates_of(resource.type, resource.props, resource.base)
    named = len(templates) > 1
    for found in templates:
        extra = {"fragment": found.fragment or resource.fragment, "gpu_names": found.gpu_names, "gpu_fields": found.gpu_fields}
        if isinstance(found.spec, Mapping):
            result.append(PodTemplate(resource, found.path, found.metadata, found.spec, moved=found.moved, named=named, **extra))
        elif is_unknown(found.spec):
            result.append(PodTemplate(resource, found.path, {}, {}, unknown=True, named=named, **extra))
    return result


def resources_of(container: Mapping[str, Any]) -> dict[str, Any]:
    """Requested and limited extended resources of a container, merged."""
    merged: dict[str, Any] = {}
    for section in ("requests", "limits"):
        values = get(container, "resources", section)
        if isinstance(values, Mapping):
            merged.update(values)
    return merged


def gpu_resource_names(container: Mapping[str, Any], also: frozenset[str] = frozenset()) -> list[str]:
    """The device-plugin GPU resources (whole, MIG or shared) a container requests or limits, and those of ``also``
    (names its operator counts as GPUs, ``PodTemplate.gpu_names``)."""
    return [name for name in resources_of(container) if is_gpu_resource(name) or name in also]


def parse_taint(taint: str) -> tuple[str, str, str]:
    """``key=value:Effect`` (or ``key:Effect``) as (key, value, effect)."""
    head, _, effect = taint.rpartition(":")
    key, _, value = head.partition("=")
    return key, value, effect


def tolerates(tolerations: Any, taint: str) -> bool:
    """Kubernetes toleration semantics for one taint."""
    key, value, effect = parse_taint(taint)
    for toleration in items(tolerations):
        if not isinstance(toleration, Mapping) or toleration.get("effect", "") not in ("", effect):
            continue
        operator, t_key = toleration.get("operator", "Equal"), toleration.get("key", "")
        if operator == "Exists" and t_key in ("", key):
            return True
        if operator == "Equal" and t_key == key and toleration.get("value", "") == value:
            return True
    return False


# ---- pools -----------------------------------------------------------------------------------


@dataclass
class Pool:
    """An AKS agent pool, standalone (``AgentPool``) or inline in ``agentPoolProfiles``."""

    resource: Resource
    name: Any
    props: Mapping[str, Any]
    where: str

    @property
    def vm_size(self) -> Any:
        return self.props.get("vmSize")

    @property
    def sku(self) -> catalog.GpuSku | None:
        return catalog.skus().get(self.vm_size) if isinstance(self.vm_size, str) else None

    @property
    def is_gpu(self) -> bool:
        return self.sku is not None or (isinstance(self.vm_size, str) and looks_gpu(self.vm_size))


def pools(resources: list[Resource]) -> list[Pool]:
    found = []
    for r in resources:
        if type_matches(r.type, "azure-native", "containerservice", "AgentPool"):
            found.append(Pool(r, r.props.get("agentPoolName", r.name), r.props, f"AgentPool {r.name}"))
        elif type_matches(r.type, "azure-native", "containerservice", "ManagedCluster"):
            for index, profile in enumerate(items(r.props.get("agentPoolProfiles"))):
                if isinstance(profile, Mapping):
                    found.append(Pool(r, profile.get("name"), profile, f"ManagedCluster {r.name} agentPoolProfiles[{index}]"))
        elif type_matches(r.type, "azure-native", "resources", "Resource") and r.props.get("resourceType") == "agentPools":
            # An agent pool at an API version the typed resource lacks (AKS-managed GPU pools): its ARM properties.
            properties = r.props.get("properties")
            if isinstance(properties, Mapping):
                found.append(Pool(r, r.props.get("resourceName", r.name), properties, f"Resource {r.name} (agentPools)"))
    return found


# ---- DRA claims ------------------------------------------------------------------------------


@dataclass
class StackIndex:
    """Lookups across a whole stack: pools by name and the device classes each claim asks for."""

    resources: list[Resource]
    pools_by_name: dict[str, Pool] = field(default_factory=dict)
    claim_classes: dict[tuple[str, str], set[str]] = field(default_factory=dict)
    template_classes: dict[tuple[str, str], set[str]] = field(default_factory=dict)

    @classmethod
    def build(cls, resources: list[Resource]) -> StackIndex:
        """The index of ``resources``; each resource built over a runtime gets that runtime's props as its ``base``
        when the runtime is among them."""
        index = cls(resources)
        objects = [(r.type, r.props) for r in resources]
        for r in resources:
            ref = base_ref(r.type, r.props) if isinstance(r.props, Mapping) else None
            if ref is not None:
                r.base = find_base(ref, objects)
        for pool in pools(resources):
            if isinstance(pool.name, str):
                index.pools_by_name[pool.name] = pool
        for r in resources:
            kind = kube_kind(r)
            namespace = get(r.props, "metadata", "namespace", default="default")
            name = get(r.props, "metadata", "name", default=r.name)
            if kind == "ResourceClaimTemplate":
                index.template_classes[(namespace, name)] = _device_classes(get(r.props, "spec", "spec"))
            elif kind == "ResourceClaim":
                index.claim_classes[(namespace, name)] = _device_classes(get(r.props, "spec"))
        return index

    def pod_claim_classes(self, template: PodTemplate) -> dict[str, set[str]]:
        """Device classes behind each of a pod's ``resourceClaims`` entries, by claim name.

        A template or claim that is not in the stack gives an empty set (nothing to check); one
        that cannot be resolved during preview gives ``UNKNOWN_CLASS``, and an unknown claim list
        the pseudo-claim ``"*"``, which every container is taken to consume.
        """
        claims = template.spec.get("resourceClaims")
        if is_unknown(claims) or template.unknown:
            return {"*": {UNKNOWN_CLASS}}
        namespace = get(template.resource.props, "metadata", "namespace", default="default")
        result = {}
        for claim in items(claims):
            if not isinstance(claim, Mapping):
                continue
            for key, table in (("resourceClaimTemplateName", self.template_classes), ("resourceClaimName", self.claim_classes)):
                name = claim.get(key)
                if name is None:
                    continue
                if is_unknown(name):
                    classes = {UNKNOWN_CLASS}
                elif not isinstance(name, str):
                    classes = set()  # not a name the API server accepts; schema validation reports it
                elif is_unknown(namespace):
                    classes = {UNKNOWN_CLASS}.union(*(c for (_, n), c in table.items() if n == name))
                else:
                    classes = table.get((namespace, name), set())
                result[str(claim.get("name"))] = classes
                break
        return result

    def pool_of(self, template: PodTemplate) -> Pool | None:
        name = get(template.spec, "nodeSelector", AGENTPOOL_LABEL)
        return self.pools_by_name.get(name) if isinstance(name, str) else None


def _device_classes(claim_spec: Any) -> set[str]:
    requests = get(claim_spec, "devices", "requests")
    if is_unknown(requests):
        return {UNKNOWN_CLASS}
    classes = set()
    for request in items(requests):
        holders = [get(request, "exactly"), request, *items(get(request, "firstAvailable"))]
        for holder in holders:
            device_class = get(holder, "deviceClassName")
            if is_unknown(device_class):
                classes.add(UNKNOWN_CLASS)
            elif isinstance(device_class, str):
                classes.add(device_class)
    return classes


def container_claims(container: Mapping[str, Any]) -> set[str] | None:
    """Names of the pod claims a container consumes; None when unknown during preview."""
    claims = get(container, "resources", "claims")
    if is_unknown(claims) or any(is_unknown(get(c, "name")) for c in items(claims)):
        return None
    return {str(get(c, "name")) for c in items(claims)}


def env_value(container: Mapping[str, Any], name: str) -> Any:
    """The value a container sees for an env var: the last entry of that name wins, as in Kubernetes."""
    value = None
    for entry in items(container.get("env")):
        if isinstance(entry, Mapping) and entry.get("name") == name:
            value = entry.get("value", UNKNOWN if "valueFrom" in entry else None)
    return value
