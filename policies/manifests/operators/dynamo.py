"""NVIDIA Dynamo DynamoGraphDeployment pods, v1beta1 and v1alpha1.

From ai-dynamo/dynamo deploy/operator, at index commits with no release tag (no tagged copy can be had here,
see shared/upstream/DYNAMO.md): api/v1alpha1/common.go (commit 015d780b) has ExtraPodSpec inline a PodSpec
plus mainContainer, and ResourceItem cpu, memory, gpu, gpuType, custom; internal/controller_common/resource.go
(015d780b) GetResourcesConfig turns limits.gpu and requests.gpu into getGPUResourceName: gpuType, else
consts.KubeResourceGPUNvidia (nvidia.com/gpu). Another index copy of that file (9b67cf4f) drops requests.gpu;
reading both asks for the toleration whenever either version would schedule GPUs.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from aks_gpu_inference.policies.manifests.values import UNKNOWN, get, is_unknown
from aks_gpu_inference.policies.manifests.walk import Found, dotted, pod_template_specs, shorthand_resources, walk, with_container


def _main(container: Any, resources: Any) -> Any:
    """The main container with the service's ``resources`` applied (here they win over the container's own
    ``resources``; the operator's merge order is not checked)."""
    if is_unknown(container):
        return UNKNOWN
    main = dict(container) if isinstance(container, Mapping) else {}
    if resources is None:
        return main
    if is_unknown(resources):
        return {**main, "resources": UNKNOWN}
    own = get(main, "resources", default={})
    merged = dict(own) if isinstance(own, Mapping) else {}
    for section in ("requests", "limits"):
        item, before = get(resources, section), get(merged, section, default={})
        if isinstance(item, Mapping):
            merged[section] = {**(before if isinstance(before, Mapping) else {}), **shorthand_resources(item)}
    if isinstance(resources, Mapping) and "claims" in resources:
        merged["claims"] = resources["claims"]
    return {**main, "resources": merged}


# v1beta1 (the 1.6.1 operator's storage version): one pod per ``spec.components[]``, its ``podTemplate``
# (the ai-dynamo 1.6.1 wheel's DGD templates; the operator keeps the template's spec and labels).
V1BETA1 = pod_template_specs(("spec", "components", "[]", "podTemplate"))


def v1alpha1(props: Mapping[str, Any]) -> Iterator[Found]:
    """v1alpha1: one pod per ``spec.services.<name>``: ``extraPodSpec`` as the pod spec, plus its ``mainContainer``."""
    for where, service in walk(props, ("spec", "services", "*")):
        path = dotted((*where, "extraPodSpec"))
        extra = get(service, "extraPodSpec", default={}) or {}
        if is_unknown(extra):
            yield Found(path, {}, UNKNOWN)
        if not isinstance(service, Mapping) or not isinstance(extra, Mapping):
            continue
        pod = {key: value for key, value in extra.items() if key != "mainContainer"}
        main = _main(extra.get("mainContainer"), service.get("resources"))
        spec, moved = with_container(pod, [(f"{path}mainContainer", main)])
        labels = {}
        for holder in (service, get(service, "extraPodMetadata")):
            if isinstance(get(holder, "labels"), Mapping):
                labels.update(holder["labels"])
        yield Found(path, {"labels": labels} if labels else {}, spec, moved)
