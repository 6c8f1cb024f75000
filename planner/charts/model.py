"""What rendering one Helm chart gives: its objects (namespaced as Pulumi's Chart namespaces them), hooks
and CRDs, with where the render came from (``helm template`` or helm-python-sdk, and which archive)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aks_gpu_inference.planner.engine.program import Registered

HOOK_ANNOTATION = "helm.sh/hook"

# Kinds Kubernetes itself serves without a namespace; custom kinds are looked up in their CRDs.
CLUSTER_SCOPED = frozenset(
    {
        "APIService",
        "CSIDriver",
        "ClusterRole",
        "ClusterRoleBinding",
        "CustomResourceDefinition",
        "DeviceClass",
        "IngressClass",
        "MutatingWebhookConfiguration",
        "Namespace",
        "Node",
        "PersistentVolume",
        "PriorityClass",
        "RuntimeClass",
        "StorageClass",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "ValidatingWebhookConfiguration",
        "GatewayClass",
        "ResourceSlice",
        "VolumeAttachment",
    }
)


CONFIG_FILE = "kubernetes:yaml/v2:ConfigFile"
"""A manifest file whose objects Pulumi registers as children, rendered here beside the charts."""


@dataclass(frozen=True)
class Crd:
    group: str
    kind: str
    versions: tuple[str, ...] = ()
    scope: str = "Namespaced"

    @classmethod
    def of(cls, obj: dict[str, Any]) -> Crd:
        """The group, kind, versions and scope a CustomResourceDefinition object declares."""
        spec = obj.get("spec") or {}
        versions = tuple(str(v.get("name")) for v in spec.get("versions") or [])
        kind = str((spec.get("names") or {}).get("kind", ""))
        return cls(str(spec.get("group", "")), kind, versions, str(spec.get("scope", "Namespaced")))


@dataclass(frozen=True)
class Hook:
    kind: str
    name: str
    template: str
    hook: str
    required: str = ""
    """What needs the hook's output; empty when nothing the stack uses does (``hook_needs``)."""


@dataclass
class ChartRender:
    """One chart (or release) of the stack and what it creates."""

    resource: Registered
    chart: str
    version: str
    release: str
    namespace: str
    values: dict[str, Any]
    source: str
    """``helm template`` or ``helm-python-sdk``; ``unknown`` when the chart could not be found or rendered."""
    archive: str = ""
    """The archive rendered (a path), empty when none was found."""
    objects: list[dict[str, Any]] = field(default_factory=list)
    """What the chart creates: for a v4 Chart its children (CRDs included, hooks never); for a v3 Release
    everything an install applies, the install hooks included."""
    hooks: list[Hook] = field(default_factory=list)
    crds: list[Crd] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    caveat: str = ""
    """What the archive itself cannot vouch for (a snapshot standing in for a release); listed under "not checked"."""
    problems: list[str] = field(default_factory=list)
    """Why the chart could not be rendered, or Helm's refusal of these values."""
    helm4: list[str] = field(default_factory=list)
    """How Helm 4 would render this chart differently (multi-document ``values.yaml``)."""
    values_problems: list[str] | None = None
    """Values Helm ignores or refuses (None: not checked, no archive)."""

    @property
    def rendered(self) -> bool:
        return self.source != "unknown"

    @property
    def values_checked(self) -> bool | None:
        return None if self.values_problems is None else True

    @property
    def runs_hooks(self) -> bool:
        """``helm.sh/v3`` Release runs hooks like the helm CLI; the v4 Chart skips them."""
        return self.resource.type == "kubernetes:helm.sh/v3:Release"

    @property
    def label(self) -> str:
        what = "manifest" if self.resource.type == CONFIG_FILE else "chart"
        return f"{what} {self.chart} {self.version} ({self.resource.name})".replace("  ", " ")


def with_namespace(obj: dict[str, Any], namespace: str, cluster_kinds: set[str] | frozenset[str] = frozenset()) -> dict[str, Any]:
    """Pulumi's Chart puts namespaced objects that name no namespace into the release namespace.

    ``cluster_kinds``: custom kinds the chart's CRDs declare cluster-scoped. ``obj`` is left as it is (Helm's
    renders are shared); an object that gains its namespace is a copy."""
    metadata = obj.get("metadata") or {}
    kind = obj.get("kind")
    if kind not in CLUSTER_SCOPED and kind not in cluster_kinds and not metadata.get("namespace") and kind != "List":
        return {**obj, "metadata": {**metadata, "namespace": namespace}}
    return obj
