"""vLLM production-stack VLLMRuntime pods, as its operator builds them.

vllm-project/production-stack@vllm-stack-0.1.12: operator/api/v1alpha1/{vllmruntime_types.go,common.go}
(DeploymentConfig toleration, nodeSelectorTerms, runtimeClass, resources {cpu, memory, gpu, gpuType}, image,
podAnnotations, sidecarConfig) and operator/internal/controller/vllmruntime_controller.go, whose
deploymentForVLLMRuntime builds the one pod: a "vllm" container whose requests and limits get gpuType (default
nvidia.com/gpu) = gpu (lines 640-649), tolerations = toleration (802), a required node affinity on
nodeSelectorTerms (743-750), pod labels app=<name> (392) and podAnnotations, the sidecar when enabled
(buildSidecarContainer, GPUs likewise at 891-898; the 0 GPUs it sets when gpu is empty ask for none and are left
out here).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from aks_gpu_inference.policies.manifests.values import UNKNOWN, get, is_unknown
from aks_gpu_inference.policies.manifests.walk import Found, shorthand_resources, with_container


def _container(name: Any, config: Any) -> Any:
    """A container as the operator builds it from ``image`` and ``resources``; UNKNOWN when ``config`` is."""
    if is_unknown(config):
        return UNKNOWN
    image = get(config, "image", default={})
    parts = [get(image, "registry", default=""), get(image, "name", default="")]
    resources = get(config, "resources", default={})
    container: dict[str, Any] = {"name": name}
    if any(map(is_unknown, parts)):
        container["image"] = UNKNOWN
    elif all(isinstance(part, str) for part in parts) and any(parts):
        container["image"] = "/".join(parts)
    if is_unknown(resources):
        container["resources"] = UNKNOWN
    elif isinstance(resources, Mapping) and (found := shorthand_resources(resources)):
        container["resources"] = {"requests": found, "limits": dict(found)}
    return container


def vllm_runtime(props: Mapping[str, Any]) -> Iterator[Found]:
    path = "spec.deploymentConfig."
    config = get(props, "spec", "deploymentConfig")
    if is_unknown(config):
        yield Found(path, {}, UNKNOWN)
    if not isinstance(config, Mapping):
        return
    spec: dict[str, Any] = {}
    if (tolerations := config.get("toleration")) is not None:
        spec["tolerations"] = tolerations
    if (terms := config.get("nodeSelectorTerms")) is not None:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}
    if config.get("runtimeClass"):
        spec["runtimeClassName"] = config["runtimeClass"]
    extra = [(path.rstrip("."), _container("vllm", config))]
    sidecar = config.get("sidecarConfig")
    if is_unknown(sidecar) or get(sidecar, "enabled") is True or is_unknown(get(sidecar, "enabled")):
        extra.append((f"{path}sidecarConfig", _container(get(sidecar, "name", default="sidecar"), sidecar)))
    spec, moved = with_container({**spec, "containers": []}, extra)
    name, annotations = get(props, "metadata", "name"), config.get("podAnnotations")
    metadata = {"labels": {"app": name}} if isinstance(name, str) else {}
    if annotations is not None:
        metadata["annotations"] = annotations
    yield Found(path, metadata, spec, moved)
