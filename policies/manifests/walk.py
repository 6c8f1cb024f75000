"""The steps every pod-template finder takes: what a finder yields (``Found``), the wildcard walk through an
object (``walk``), readable locations (``dotted``), PodTemplateSpecs at fixed paths, containers kept outside
``spec.containers`` and the operators' shorthand resources. Pure functions over plain mappings."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple

from aks_gpu_inference.components.core.labels import NVIDIA_GPU
from aks_gpu_inference.policies.manifests.values import UNKNOWN, get, is_unknown, items


class Found(NamedTuple):
    path: str
    """Where the pod spec is, ending in a dot: ``spec.mpiReplicaSpecs.Worker.template.spec.``."""
    metadata: Any
    spec: Any
    """The pod spec (a mapping), or ``UNKNOWN`` during preview."""
    moved: Mapping[int, str] = {}
    """Indexes of ``spec["containers"]`` that the resource keeps elsewhere, with their real locations."""
    fragment: bool = False
    """Part of a pod only (a kustomize patch, a TrainJob whose runtime was not seen): what it sets is checked,
    what it leaves out is not, since the rest of the pod may hold it."""
    gpu_names: frozenset[str] = frozenset()
    """Resource names the operator counts as GPUs besides the device plugins' (KServe's gpu-resource-types)."""
    gpu_fields: tuple[str, ...] = ()
    """Operator fields outside the containers' resources that give the pod GPUs (``rayStartParams.num-gpus: 8``)."""


Finder = Callable[[Mapping[str, Any]], Iterator[Found]]


def walk(obj: Any, steps: tuple[str, ...], where: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """(location parts, value) of every match of ``steps``: ``*`` is every value of a map, ``[]`` every item of a list."""
    if not steps:
        yield where, obj
        return
    step, rest = steps[0], steps[1:]
    if step in ("*", "[]") and is_unknown(obj):
        yield from walk(UNKNOWN, rest, (*where, "*" if step == "*" else "[*]"))
    elif step == "[]":
        for index, item in enumerate(items(obj)):
            yield from walk(item, rest, (*where, f"[{index}]"))
    elif step == "*":
        for key, value in obj.items() if isinstance(obj, Mapping) else ():
            yield from walk(value, rest, (*where, str(key)))
    else:
        yield from walk(get(obj, step), rest, (*where, step))


def dotted(parts: tuple[str, ...]) -> str:
    """``("spec", "workerGroupSpecs", "[0]", "template", "spec")`` as ``spec.workerGroupSpecs[0].template.spec.``."""
    text = ""
    for part in parts:
        text += part if part.startswith("[") or not text else "." + part
    return text + "." if text else ""


def pod_template_specs(*paths: tuple[str, ...]) -> Finder:
    """Pods from PodTemplateSpecs (``metadata`` + ``spec``) at ``paths``."""

    def find(props: Mapping[str, Any]) -> Iterator[Found]:
        for steps in paths:
            for where, template in walk(props, steps):
                yield Found(dotted((*where, "spec")), get(template, "metadata", default={}) or {}, get(template, "spec"))

    return find


def with_container(spec: Mapping[str, Any], extra: list[tuple[str, Any]]) -> tuple[dict[str, Any], dict[int, str]]:
    """``spec`` with containers kept elsewhere (location, container) appended to ``containers``."""
    own = spec.get("containers")
    if not extra or is_unknown(own):
        return dict(spec), {}
    return {**spec, "containers": [*items(own), *(c for _, c in extra)]}, {
        len(items(own)) + i: where for i, (where, _) in enumerate(extra)
    }


def metadata_of(holder: Any) -> dict[str, Any]:
    """The ``labels`` and ``annotations`` an operator object keeps for its pods, as pod metadata."""
    return {key: holder[key] for key in ("labels", "annotations") if key in holder} if isinstance(holder, Mapping) else {}


def shorthand_resources(item: Mapping[str, Any]) -> dict[str, Any]:
    """A resource list from an operator's shorthand: ``gpu`` becomes ``gpuType`` (``nvidia.com/gpu`` when
    unset or unknown) as both operators that use it do (Dynamo's ``getGPUResourceName``, production-stack's
    ``deploymentForVLLMRuntime``); an empty ``gpu`` asks for none. Dynamo's ``custom`` entries are added as they are."""
    found = {name: item[name] for name in ("cpu", "memory") if item.get(name) not in (None, "")}
    if item.get("gpu") not in (None, ""):
        gpu_type = item.get("gpuType")
        found[gpu_type if isinstance(gpu_type, str) and gpu_type else NVIDIA_GPU] = item["gpu"]
    custom = item.get("custom")
    return {**found, **(custom if isinstance(custom, Mapping) else {})}
