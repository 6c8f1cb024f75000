"""KServe's pods: an InferenceService's components (v1beta1), an LLMInferenceService's workloads (v1alpha1, v1alpha2)
and a ServingRuntime's or ClusterServingRuntime's pod (v1alpha1), with the GPU resource names the service's
``serving.kserve.io/gpu-resource-types`` annotation adds.

Paths from kserve/kserve@v0.20.0: config/crd/full/serving.kserve.io_inferenceservices.yaml (in shared/upstream),
config/crd/full/llmisvc/serving.kserve.io_llminferenceservices.yaml, pkg/apis/serving/v1alpha2/llm_inference_service_types.go
and pkg/apis/serving/v1alpha1/servingruntime_types.go.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from aks_gpu_inference.policies.manifests.values import UNKNOWN, get, is_unknown
from aks_gpu_inference.policies.manifests.walk import Found, dotted, metadata_of, walk, with_container

# Keys of a component that hold one container spec each (serving.kserve.io_inferenceservices, kserve v0.20.0).
_CONTAINERS = {
    "predictor": (
        "model",
        "huggingface",
        "lightgbm",
        "onnx",
        "paddle",
        "pmml",
        "pytorch",
        "sklearn",
        "tensorflow",
        "triton",
        "xgboost",
    ),
    "transformer": (),
    "explainer": ("art",),
}
KSERVE_CONTAINER = "kserve-container"
"""The name KServe gives a framework container (``constants.InferenceServiceContainerName``)."""
GPU_TYPES_ANNOTATION = "serving.kserve.io/gpu-resource-types"
"""pkg/constants/constants.go CustomGPUResourceTypesAnnotationKey: a JSON array of resource names the service's
containers request as GPUs (pkg/utils/utils.go UpdateGPUResourceTypeListByAnnotation adds them to nvidia.com/gpu,
amd.com/gpu, intel.com/gpu and habana.ai/gaudi)."""


def gpu_types(props: Mapping[str, Any]) -> frozenset[str]:
    """The GPU resource names a service's annotation adds; none when it is absent or not a JSON array of names
    (the webhook refuses those)."""
    text = get(props, "metadata", "annotations", GPU_TYPES_ANNOTATION)
    try:
        names = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return frozenset()
    return frozenset(n for n in names if isinstance(n, str) and n) if isinstance(names, list) else frozenset()


MULTI_NODE = "workerSpec (multi-node: KServe adds the GPUs of tensorParallelSize x pipelineParallelSize to the head and workers)"
"""pkg/controller/v1beta1/inferenceservice/components/predictor.go multiNodeProcess and
reconcilers/deployment/deployment_reconciler.go addGPUResourceToDeployment: a multi-node predictor's head
(kserve-container) and workers (worker-container) get nvidia.com/gpu, or the annotated GPU type, at least one each."""


def inference_service(props: Mapping[str, Any]) -> Iterator[Found]:
    """Each component (``spec.predictor``, ``spec.transformer``, ``spec.explainer``, ``spec.canary[i].predictor``)
    is itself a pod spec; ``spec.predictor.workerSpec`` is the pod spec of multi-node workers, and makes both GPU pods."""
    gpus = gpu_types(props)
    components = [(("spec", name), name) for name in _CONTAINERS]
    components.append((("spec", "canary", "[]", "predictor"), "predictor"))
    for steps, role in components:
        for where, component in walk(props, steps):
            path = dotted(where)
            if is_unknown(component):
                yield Found(path, {}, UNKNOWN)
            if not isinstance(component, Mapping):
                continue
            extra = [
                (f"{path}{key}", {"name": KSERVE_CONTAINER, **c} if isinstance(c, Mapping) else c)
                for key in _CONTAINERS[role]
                if (c := component.get(key)) is not None
            ]
            spec, moved = with_container(component, extra)
            multi = (MULTI_NODE,) if role == "predictor" and component.get("workerSpec") is not None else ()
            yield Found(path, metadata_of(component), spec, moved, gpu_names=gpus, gpu_fields=multi)
            if multi:
                yield Found(f"{path}workerSpec.", {}, component["workerSpec"], gpu_names=gpus, gpu_fields=multi)


# LLMInferenceService: ``template`` (the main, head or decode pod) and ``worker`` (multi-node workers) are PodSpecs,
# ``labels``/``annotations`` go on the workload's pods; the spec inlines one WorkloadSpec and ``prefill`` is another.
# Fields merged in from ``baseRefs`` (LLMInferenceServiceConfig objects) are not seen: a toleration kept only there
# reads as missing.
_WORKLOADS = (("spec",), ("spec", "prefill"))


def llm_inference_service(props: Mapping[str, Any]) -> Iterator[Found]:
    for steps in _WORKLOADS:
        workload = get(props, *steps)
        for key in ("template", "worker"):
            spec = get(workload, key)
            if spec is not None:
                yield Found(dotted((*steps, key)), metadata_of(workload), spec)


def serving_runtime(props: Mapping[str, Any]) -> Iterator[Found]:
    """A (Cluster)ServingRuntime's pod: its spec inlines ServingRuntimePodSpec (containers, tolerations, labels,
    annotations...); ``spec.workerSpec`` is the multi-node workers' pod."""
    multi = (MULTI_NODE,) if get(props, "spec", "workerSpec") is not None else ()
    for steps in (("spec",), ("spec", "workerSpec")):
        spec = get(props, *steps)
        if is_unknown(spec) or (isinstance(spec, Mapping) and "containers" in spec):
            yield Found(dotted(steps), metadata_of(spec), spec, gpu_names=gpu_types(props), gpu_fields=multi)
