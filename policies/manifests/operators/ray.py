"""KubeRay pods (ray.io, kuberay v1.7.0: ray-operator/config/crd/bases/ray.io_{rayclusters,rayjobs,rayservices}.yaml
in shared/upstream), with the GPUs a group gives Ray outside its containers' resources.

ray-project/kuberay@v1.7.0: ray-operator/apis/ray/v1/raycluster_types.go gives each head and worker group
``rayStartParams`` and a ``resources`` map; controllers/ray/common/pod.go updateRayStartParamsResources turns a
``resources`` key that utils.IsGPUResourceKey accepts (ending in "gpu", or a MIG name) into ``num-gpus``, and
``ray start --num-gpus`` makes Ray place GPU work on the group's pods whatever their container requests. A group
whose ``num-gpus`` is above zero runs GPU work, so its pods are GPU pods.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from aks_gpu_inference.policies.manifests.values import get
from aks_gpu_inference.policies.manifests.walk import Found, dotted, pod_template_specs, walk

_GROUPS = (("headGroupSpec",), ("workerGroupSpecs", "[]"))
_MIG = re.compile(r"nvidia\.com/mig-\d+g\.\d+gb")


def _positive(value: Any) -> bool:
    try:
        return float(str(value).strip().strip("'\"")) > 0
    except ValueError:
        return False


def group_gpus(group: Any) -> tuple[str, ...]:
    """The fields of a Ray group that give Ray GPUs: ``rayStartParams.num-gpus`` and GPU keys of ``resources``."""
    found = []
    gpus = get(group, "rayStartParams", "num-gpus")
    if _positive(gpus):
        found.append(f"rayStartParams.num-gpus: {gpus}")
    resources = get(group, "resources")
    for key, value in resources.items() if isinstance(resources, Mapping) else ():
        if isinstance(key, str) and (key.endswith("gpu") or _MIG.fullmatch(key)) and _positive(value):
            found.append(f"resources.{key}: {value}")
    return tuple(found)


def cluster(*prefix: str) -> Any:
    """The finder of a Ray cluster spec under ``prefix`` (``spec``, ``spec.rayClusterSpec``...)."""

    def find(props: Mapping[str, Any]) -> Iterator[Found]:
        for group_steps in _GROUPS:
            for where, group in walk(props, (*prefix, *group_steps)):
                gpus = group_gpus(group)
                for found in pod_template_specs(("template",))(group):
                    yield found._replace(path=dotted(where) + found.path, gpu_fields=gpus)

    return find


def ray_job(props: Mapping[str, Any]) -> Iterator[Found]:
    yield from cluster("spec", "rayClusterSpec")(props)
    yield from pod_template_specs(("spec", "submitterPodTemplate"))(props)
