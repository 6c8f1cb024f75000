"""What Dynamic Resource Allocation's ``resource.k8s.io/v1`` API (DeviceClass, ResourceClaimTemplate)
asks of the cluster: Kubernetes 1.34 or later, where the API went GA."""

from __future__ import annotations

from ..core.errors import FieldProblem

MIN_KUBERNETES = (1, 34)
"""The first Kubernetes minor that serves ``resource.k8s.io/v1``."""


def kubernetes_version_problems(version: str | None) -> list[FieldProblem]:
    """The problem with a cluster version too old for ``resource.k8s.io/v1``; none when unknown (None)."""
    if version is None:
        return []
    major, minor = (int(part) for part in version.split(".")[:2])
    if (major, minor) >= MIN_KUBERNETES:
        return []
    problem = "DRA with resource.k8s.io/v1 needs Kubernetes 1.34 or later; set cluster.kubernetes_version to 1.34"
    return [FieldProblem("kubernetes_version", version, problem)]
