"""What the rules pass over, as scan warnings: objects of kinds whose pods the rules do not know that ask for GPUs,
RDMA NICs or DRA claims, and claims a pod names that are not among the scanned objects."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from aks_gpu_inference.components.core.labels import is_gpu_resource, is_rdma_resource
from aks_gpu_inference.planner.scan.model import Located, Problem
from aks_gpu_inference.policies.manifests import Resource, get, items, kube_kind, pod_templates
from aks_gpu_inference.policies.manifests.bases import base_ref

_AMOUNTS = {"requests", "limits", "resources"}  # a device name asks as a key of these; elsewhere it is a label or taint
_CLAIM_REFERENCE = re.compile(r".*[rR]esourceClaim(Template)?Name")  # resourceClaimName, gpuResourceClaimTemplateName
_NOT_REQUESTS = {"nodeSelector", "nodeLabels", "labels", "matchLabels", "annotations", "tolerations"}
_NOT_WORKLOADS = {"ResourceQuota", "LimitRange", "Node"}
_CLAIM_KEYS = (("resourceClaimTemplateName", "ResourceClaimTemplate"), ("resourceClaimName", "ResourceClaim"))


def device_paths(obj: object, path: str = "", seen: set[int] | None = None, parent: object = None) -> list[str]:
    """JSON paths in an object that ask for GPUs, RDMA NICs or DRA claims (top-level metadata and status
    aside): a device resource as a key of a ``requests``, ``limits`` or shorthand ``resources`` map (``parent``
    is the key holding ``obj``; elsewhere, as in a Kueue ResourceFlavor's ``nodeLabels``, it names a label or
    taint), a pod's ``resourceClaims``, a container's ``resources.claims``, and an operator's own claim fields
    (NIM Operator's ``draResources``, any key ending in ``resourceClaimTemplateName`` or ``resourceClaimName``).
    Each mapping and list is walked once, so YAML aliases and cycles cost nothing."""
    seen = set() if seen is None else seen
    if not isinstance(obj, Mapping | list) or id(obj) in seen:
        return []
    seen.add(id(obj))
    if isinstance(obj, list):
        return [found for index, value in enumerate(obj) for found in device_paths(value, f"{path}[{index}]", seen)]
    found: list[str] = []
    for key, value in obj.items():
        if (not path and key in ("metadata", "status")) or key in _NOT_REQUESTS:
            continue
        claims = key in ("resourceClaims", "draResources") or (key == "claims" and path.endswith("resources"))
        device = (is_gpu_resource(key) or is_rdma_resource(key)) and parent in _AMOUNTS
        reference = isinstance(key, str) and _CLAIM_REFERENCE.fullmatch(key) and isinstance(value, str) and value
        if device or reference or (claims and items(value)):
            found.append(_step(path, key))
        else:
            found.extend(device_paths(value, _step(path, key), seen, key))
    return found


def _step(path: str, key: object) -> str:
    if isinstance(key, str) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key) if isinstance(key, str) else key}]"


def blind_spots(located: list[Located]) -> list[Problem]:
    """Warnings for what the rules pass over: unknown kinds that ask for devices, claims and runtimes not scanned."""
    known: dict[str, set[tuple[str, object]]] = {"ResourceClaimTemplate": set(), "ResourceClaim": set()}
    for item in located:
        if (kind := kube_kind(item.resource)) in known:
            known[kind].add((_namespace(item.resource), get(item.resource.props, "metadata", "name")))
    problems = []
    for item in located:
        resource, kind = item.resource, kube_kind(item.resource)
        templates = pod_templates(resource)  # [] for a kind the rules do not know
        if (ref := base_ref(resource.type, resource.props)) is not None and resource.base is None:
            message = (
                f"{resource.label}: its pods are built over {' or '.join(ref.kinds)} {ref.name}, which is not among the "
                "scanned objects: they are judged on what this object says alone (tolerations, pools and security the "
                "runtime sets are not seen); scan it together with its runtime"
            )
            problems.append(Problem("warning", "runtime-not-scanned", item.path, item.line, message, resource.label))
        if not templates and kind not in _NOT_WORKLOADS and (paths := device_paths(resource.props)):
            shown = ", ".join(paths[:4]) + (f" and {len(paths) - 4} more" if len(paths) > 4 else "")
            message = (
                f"{resource.label}: kind {kind} ({resource.props['apiVersion']}) is unknown to the guardrail rules, which find "
                f"no pod template in it, yet it asks for GPUs, RDMA NICs or DRA claims at {shown}: its pods are not checked"
            )
            problems.append(Problem("warning", "unknown-kind-devices", item.path, item.line, message, resource.label))
        for template in templates:
            for index, claim in enumerate(items(template.spec.get("resourceClaims"))):
                for key, target in _CLAIM_KEYS:
                    name = claim.get(key) if isinstance(claim, Mapping) else None
                    if isinstance(name, str) and (_namespace(resource), name) not in known[target]:
                        message = (
                            f"{resource.label}: {template.path}resourceClaims[{index}] names {target} "
                            f"{_namespace(resource)}/{name}, which is not among the scanned objects: the GPU and RDMA "
                            "rules cannot tell what it claims; scan it together with the workload"
                        )
                        problems.append(Problem("warning", "claim-not-scanned", item.path, item.line, message, resource.label))
    return problems


def _namespace(resource: Resource) -> str:
    namespace = get(resource.props, "metadata", "namespace")
    return namespace if isinstance(namespace, str) else "default"
