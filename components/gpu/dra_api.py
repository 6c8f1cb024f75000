"""What Dynamic Resource Allocation's ``resource.k8s.io/v1`` API (DeviceClass, ResourceClaimTemplate)
asks of the cluster: the pins table's minimum Kubernetes minor, where the API went GA."""

from __future__ import annotations

from datetime import date

from ..core import lifecycle, pins
from ..core.errors import FieldProblem


def too_old(version: str | None) -> bool:
    """Whether ``version`` (``1.33`` or ``1.33.4``) predates ``resource.k8s.io/v1``; False when unknown (None)."""
    if version is None:
        return False
    major, minor = (int(part) for part in version.split(".")[:2])
    return (major, minor) < pins.minimum_kubernetes_minor()


def version_advice(as_of: date | None = None) -> str:
    """Why DRA refuses an older cluster and which version to set: one AKS supports on ``as_of`` (default today)."""
    minimum = ".".join(map(str, pins.minimum_kubernetes_minor()))
    advised = lifecycle.advised_minor(pins.minimum_kubernetes_minor(), as_of or date.today())
    if advised is None:
        checked = lifecycle.checked_on().isoformat()
        advised = f"a minor AKS supports today (`az aks get-versions --location <region>`; the lifecycle table, checked on {checked}, lists none still in support)"
    return f"resource.k8s.io/v1 needs Kubernetes {minimum} or later; set cluster.kubernetes_version to {advised}"


def kubernetes_version_problems(version: str | None) -> list[FieldProblem]:
    """The problem with a cluster version too old for ``resource.k8s.io/v1``; none when unknown (None)."""
    if not too_old(version):
        return []
    return [FieldProblem("kubernetes_version", version, f"DRA with {version_advice()}")]
