"""Pod and container security contexts and namespace Pod Security labels: the restricted profile the
project's own workloads run under, built one way."""

from __future__ import annotations

from typing import Any

RESTRICTED = {"pod-security.kubernetes.io/enforce": "restricted"}
"""Namespace labels that make the API server refuse any pod the restricted Pod Security profile refuses."""

NODE_AGENT_LABELS = {"pod-security.kubernetes.io/enforce": "privileged", "pod-security.kubernetes.io/warn": "baseline"}
"""Namespace labels for node agents that need host access (device plugins, DRA drivers, DRANET)."""


def restricted_namespace(namespace: str) -> dict[str, Any]:
    """Namespace metadata enforcing the restricted Pod Security profile."""
    return {"name": namespace, "labels": dict(RESTRICTED)}


def restricted_container(read_only_root: bool = True) -> dict[str, Any]:
    """Container securityContext of the restricted Pod Security profile (a fresh dict per call, so
    callers may extend it); a read-only root filesystem unless ``read_only_root`` is False."""
    context: dict[str, Any] = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
    if read_only_root:
        context["readOnlyRootFilesystem"] = True
    return context


def restricted_pod(uid: int, *, group: bool = True, fs_group: bool = True) -> dict[str, Any]:
    """Pod securityContext of the restricted profile: non-root ``uid`` and the runtime's default seccomp
    profile; the same ``gid`` and ``fsGroup`` unless switched off (fsGroup makes volumes writable to it)."""
    context: dict[str, Any] = {"runAsNonRoot": True, "runAsUser": uid}
    if group:
        context["runAsGroup"] = uid
    if fs_group:
        context["fsGroup"] = uid
    context["seccompProfile"] = {"type": "RuntimeDefault"}
    return context


ENFORCE_LABEL = "pod-security.kubernetes.io/enforce"
"""The namespace label naming the Pod Security level the API server enforces there (``RESTRICTED`` sets it)."""
