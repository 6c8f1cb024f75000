"""The one notion of "this pod uses GPUs" every GPU rule shares.

A pod uses GPUs when a container requests a device plugin's GPU resource (``nvidia.com/gpu``, ``amd.com/gpu``,
``nvidia.com/mig-*``, their ``.shared`` names, or a name its operator counts as a GPU, such as KServe's
``serving.kserve.io/gpu-resource-types``), when the pod holds a DRA claim on a GPU class (judged by the class's
selectors, or by name without its DeviceClass: ``gpu.nvidia.com``, ``mig.nvidia.com``, ``vfio.gpu.nvidia.com``),
or when an operator field gives it GPUs outside its containers (a Ray group's ``rayStartParams.num-gpus``, a
multi-node NIMService's tensor parallelism): ``PodTemplate.gpu_fields``.
"""

from __future__ import annotations

from aks_gpu_inference.policies.manifests import GPU_DEVICE_CLASSES, PodTemplate, StackIndex, gpu_resource_names
from aks_gpu_inference.policies.rules._device_classes import class_kinds


def gpu_device_classes(index: StackIndex) -> set[str]:
    """Names of the device classes that select GPUs.

    A DeviceClass in the stack is judged by its selectors (``_device_classes.classify``: the NVIDIA,
    MIG or AMD GPU drivers' devices), whatever its name; the NVIDIA driver's classes count by name when their
    DeviceClass is absent or its selectors are unknown during preview.
    """
    kinds = class_kinds(index)
    selecting = {name for name, selected in kinds.items() if selected is not None and "gpu" in selected}
    return selecting | {name for name in GPU_DEVICE_CLASSES if kinds.get(name) is None}


def gpu_requests(index: StackIndex, template: PodTemplate, gpu_classes: set[str]) -> list[str]:
    """How a pod asks for GPUs, as a finding names it: resource names, ``claim <name>``, operator fields; empty when it
    does not."""
    requests = sorted({name for _, c in template.containers() for name in gpu_resource_names(c, template.gpu_names)})
    claims = sorted(name for name, classes in index.pod_claim_classes(template).items() if classes & gpu_classes)
    return requests + [f"claim {c}" for c in claims] + list(template.gpu_fields)
