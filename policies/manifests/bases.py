"""The runtime an object's pods are built over, found among the other objects of the stack or scanned set: a
Kubeflow TrainJob's (Cluster)TrainingRuntime and an OME InferenceService's ServingRuntime or ClusterServingRuntime.

kubeflow/trainer@v2.3.0 pkg/apis/trainer/v1alpha1/trainjob_types.go RuntimeRef (kind ClusterTrainingRuntime by
default, a TrainingRuntime in the TrainJob's namespace); sgl-project/ome@v0.1.5 pkg/runtimeselector/fetcher.go
GetRuntime (the namespace's ServingRuntime of that name first, then the ClusterServingRuntime). An OME service that
names no runtime gets one chosen by its model when it is deployed, which no scan can know.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from aks_gpu_inference.policies.manifests.templates import api_of
from aks_gpu_inference.policies.manifests.values import get


class Ref(NamedTuple):
    kinds: tuple[str, ...]
    """The kinds that may hold the runtime, in the order the operator looks (all in ``group``)."""
    group: str
    namespace: str
    name: str


def _namespace(props: Mapping[str, Any]) -> str:
    namespace = get(props, "metadata", "namespace")
    return namespace if isinstance(namespace, str) else "default"


def base_ref(token: str, props: Mapping[str, Any]) -> Ref | None:
    """The runtime an object of ``token`` names, or None: another kind, or no runtime named."""
    api = api_of(token)
    if api is None:
        return None
    group, _, kind = api
    if (group, kind) == ("trainer.kubeflow.org", "TrainJob"):
        ref = get(props, "spec", "runtimeRef")
        ref_kind, name = get(ref, "kind"), get(ref, "name")
        kinds = (ref_kind,) if isinstance(ref_kind, str) else ("ClusterTrainingRuntime",)
        return Ref(kinds, group, _namespace(props), name) if isinstance(name, str) else None
    if (group, kind) == ("ome.io", "InferenceService"):
        name = get(props, "spec", "runtime", "name")
        return (
            Ref(("ServingRuntime", "ClusterServingRuntime"), group, _namespace(props), name)
            if isinstance(name, str) and name
            else None
        )
    return None


_NAMESPACED = {"TrainingRuntime", "ServingRuntime"}


def find_base(ref: Ref, objects: list[tuple[str, Mapping[str, Any]]]) -> Mapping[str, Any] | None:
    """The props of the runtime ``ref`` names among ``objects`` (type token, props), or None."""
    for kind in ref.kinds:
        for token, props in objects:
            api = api_of(token)
            if api is None or (api[0], api[2]) != (ref.group, kind) or get(props, "metadata", "name") != ref.name:
                continue
            if kind not in _NAMESPACED or _namespace(props) == ref.namespace:
                return props
    return None
