"""Kubeflow Trainer v2 pods (trainer.kubeflow.org/v1alpha1): a (Cluster)TrainingRuntime's JobSet template, and a
TrainJob's pods as the controller builds them from its runtime.

From kubeflow/trainer@v2.3.0:
- manifests/base/crds/trainer.kubeflow.org_{,cluster}trainingruntimes.yaml: spec.template.spec.replicatedJobs[],
  each a Job template whose spec.template is a PodTemplateSpec.
- pkg/apis/trainer/v1alpha1/trainjob_types.go: a TrainJob names its runtime (runtimeRef: name, kind
  ClusterTrainingRuntime unless TrainingRuntime) and carries trainer (image, command, args, env, resourcesPerNode)
  and runtimePatches (trainingRuntimeSpec.template.spec.replicatedJobs[]: pod metadata, tolerations,
  nodeSelector, affinity, volumes, containers' env, volumeMounts and securityContext).
- pkg/runtime/core/trainingruntime.go: the patches are strategic-merged over the runtime's JobSet spec in order
  (mergeRuntimePatches), then resourcesPerNode is merged into the resources of the container named ``node`` of the
  trainer's replicated jobs (labelled trainer.kubeflow.org/trainjob-ancestor-step: trainer); and
  pkg/runtime/framework/plugins/jobset/builder.go Trainer gives that container the trainer's image, command and
  args and upserts its env.

A TrainJob whose runtime is not at hand is judged on what it says itself, as a fragment of a pod.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from aks_gpu_inference.policies.manifests.merge import merge
from aks_gpu_inference.policies.manifests.values import get, is_unknown, items
from aks_gpu_inference.policies.manifests.walk import Found, pod_template_specs

RUNTIME = pod_template_specs(("spec", "template", "spec", "replicatedJobs", "[]", "template", "spec", "template"))
ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"
NODE = "node"


def runtime_ref(props: Mapping[str, Any]) -> tuple[str, Any]:
    """(kind, name) of the runtime a TrainJob names; the kind defaults to ClusterTrainingRuntime."""
    ref = get(props, "spec", "runtimeRef")
    kind = get(ref, "kind")
    return (kind if isinstance(kind, str) else "ClusterTrainingRuntime"), get(ref, "name")


def _node(container: Mapping[str, Any], trainer: Any) -> dict[str, Any]:
    """The ``node`` container with the trainer's fields applied."""
    node = dict(container)
    for key in ("image", "command", "args"):
        if get(trainer, key) is not None:
            node[key] = trainer[key]
    if items(get(trainer, "env")):
        node["env"] = merge(items(node.get("env")), items(trainer["env"]), "env")
    per_node = get(trainer, "resourcesPerNode")
    if isinstance(per_node, Mapping):
        node["resources"] = merge(get(node, "resources", default={}) or {}, per_node)
    return node


def _patched(runtime: Mapping[str, Any], props: Mapping[str, Any]) -> dict[str, Any]:
    """The runtime's JobSet spec with the TrainJob's runtimePatches merged in, in order."""
    jobset = get(runtime, "spec", "template", "spec", default={})
    jobset = dict(jobset) if isinstance(jobset, Mapping) else {}
    for patch in items(get(props, "spec", "runtimePatches")):
        spec = get(patch, "trainingRuntimeSpec", "template", "spec")
        if isinstance(spec, Mapping):
            jobset = merge(jobset, spec)
    return jobset


def train_job(props: Mapping[str, Any], runtime: Mapping[str, Any] | None) -> Iterator[Found]:
    """The pods of a TrainJob: each replicated job of its runtime, patched, at ``spec.runtimeRef.<job>.``."""
    trainer = get(props, "spec", "trainer")
    if runtime is None:
        yield from _alone(props, trainer)
        return
    for job in items(_patched(runtime, props).get("replicatedJobs")):
        template = get(job, "template", "spec", "template")
        spec = get(template, "spec")
        if not isinstance(spec, Mapping) or is_unknown(spec):
            continue
        trains = get(job, "template", "metadata", "labels", ANCESTOR) == "trainer"
        containers = [
            _node(c, trainer) if trains and isinstance(c, Mapping) and c.get("name") == NODE else c
            for c in items(spec.get("containers"))
        ]
        where = f"spec.runtimeRef.{get(job, 'name', default='job')}."
        yield Found(where, get(template, "metadata", default={}) or {}, {**spec, "containers": containers})


def _alone(props: Mapping[str, Any], trainer: Any) -> Iterator[Found]:
    """Without the runtime: the trainer's ``node`` container and the pod fields the patches set, as fragments."""
    pods: dict[str, dict[str, Any]] = {}
    for patch in items(get(props, "spec", "runtimePatches")):
        for job in items(get(patch, "trainingRuntimeSpec", "template", "spec", "replicatedJobs")):
            spec = get(job, "template", "spec", "template", "spec")
            if isinstance(spec, Mapping) and isinstance(get(job, "name"), str):
                pods[job["name"]] = merge(pods.get(job["name"], {}), spec)
    if isinstance(trainer, Mapping):
        node = pods.setdefault(NODE, {})
        containers = list(items(node.get("containers")))
        at = next((i for i, c in enumerate(containers) if get(c, "name") == NODE), None)
        if at is None:
            containers.append({"name": NODE})
            at = len(containers) - 1
        containers[at] = _node(containers[at], trainer)
        node["containers"] = containers
    for name, spec in pods.items():
        moved = {i: "spec.trainer" for i, c in enumerate(items(spec.get("containers"))) if get(c, "name") == NODE}
        yield Found(f"spec.runtimeRef.{name}.", {}, spec, moved if name == NODE else {}, fragment=True)
