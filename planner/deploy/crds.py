"""Every custom resource has a CRD that the stack installs first.

A custom resource's kind must come from somewhere in the stack: a chart that ships the CRD, a
CustomResourceDefinition object, or an AKS add-on that the cluster switches on. The object must
wait for that source, or the API server answers "no matches for kind".
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from . import Finding
from .model import DeployModel, KubeObject

BUILT_IN_GROUPS = frozenset(
    {
        "",
        "admissionregistration.k8s.io",
        "apiextensions.k8s.io",
        "apiregistration.k8s.io",
        "apps",
        "autoscaling",
        "batch",
        "certificates.k8s.io",
        "coordination.k8s.io",
        "discovery.k8s.io",
        "events.k8s.io",
        "flowcontrol.apiserver.k8s.io",
        "networking.k8s.io",
        "node.k8s.io",
        "policy",
        "rbac.authorization.k8s.io",
        "resource.k8s.io",
        "scheduling.k8s.io",
        "storage.k8s.io",
    }
)

# AKS add-ons and the API groups they install, keyed by the ManagedCluster property that switches them on.
ADD_ONS = {
    "keda.sh": ("KEDA add-on", ("workloadAutoScalerProfile", "keda", "enabled")),
    "kaito.sh": ("KAITO add-on (AI toolchain operator)", ("aiToolchainOperatorProfile", "enabled")),
    "azmonitoring.coreos.com": ("Azure Monitor managed Prometheus", ("azureMonitorProfile", "metrics", "enabled")),
}


@dataclass(frozen=True)
class Source:
    what: str
    urn: str | None
    """What the custom resource must wait for; None for a cluster add-on (the provider waits for the cluster)."""


def sources(model: DeployModel) -> dict[tuple[str, str], list[Source]]:
    """(group, kind) -> where the stack gets that CRD from."""
    found: dict[tuple[str, str], list[Source]] = {}
    for chart in model.charts:
        for crd in chart.crds:
            found.setdefault((crd.group, crd.kind), []).append(Source(chart.label, chart.resource.urn))
    for obj in model.objects:
        if obj.kind == "CustomResourceDefinition":
            spec = obj.manifest.get("spec") or {}
            key = (spec.get("group", ""), (spec.get("names") or {}).get("kind", ""))
            origin = obj.chart.resource.urn if obj.chart else obj.record.urn
            found.setdefault(key, []).append(Source(obj.label, origin))
    return found


def _add_on(model: DeployModel, group: str) -> str | None:
    entry = ADD_ONS.get(group)
    if not entry:
        return None
    name, path = entry
    node = model.cluster
    for step in path:
        node = node.get(step) if isinstance(node, dict) else None
    return name if node is True else None


def check(model: DeployModel) -> list[Finding]:
    findings = []
    known = sources(model)
    for obj in model.objects:
        if obj.group in BUILT_IN_GROUPS or obj.kind == "CustomResourceDefinition":
            continue
        if _add_on(model, obj.group):
            continue
        candidates = known.get((obj.group, obj.kind), [])
        if not candidates:
            hint = ADD_ONS.get(obj.group)
            fix = (
                f"switch on the {hint[0]}"
                if hint
                else "install the chart or CRDs that define it, and make the object depend on them"
            )
            findings.append(
                Finding(
                    "crds", "blocker", obj.label, f"no CRD for {obj.kind}.{obj.group} in the stack: 'no matches for kind'", fix
                )
            )
            continue
        if not any(_waits(model, obj, source) for source in candidates):
            findings.append(
                Finding(
                    "crds",
                    "blocker",
                    obj.label,
                    f"does not wait for its CRD ({candidates[0].what}); Pulumi may create it first",
                    f"add depends_on the source of {obj.kind}.{obj.group}",
                )
            )
    return findings


def schemas(model: DeployModel, upstream: Path | None) -> list[Finding]:
    """Each custom resource against its CRD's schema and CEL rules, where the upstream copy has the CRD
    (``../shared/upstream/crds``): what the API server would reject, or prune without a word."""
    folder = upstream / "crds" if upstream else None
    if folder is None or not folder.is_dir():
        return []
    from ..crd_files import crd_index

    index = crd_index(folder)
    findings = []
    for obj in model.objects:
        if obj.group in BUILT_IN_GROUPS or obj.chart is not None:
            continue
        result = index.validate(obj.manifest)
        for error in result.errors if result else []:
            findings.append(Finding("crds", "blocker", obj.label, error, "write the fields this CRD version defines"))
    return findings


def unpinned(model: DeployModel, upstream: Path | None) -> list[str]:
    """The custom resources of the stack (outside charts) whose CRD the upstream copy lacks, so their schema
    was not checked: ``Kind.group`` each, sorted. Empty without an upstream copy (the report says that)."""
    folder = upstream / "crds" if upstream else None
    if folder is None or not folder.is_dir():
        return []
    from ..crd_files import crd_index

    index = crd_index(folder)
    return sorted(
        {
            f"{obj.kind}.{obj.group}"
            for obj in model.objects
            if obj.group not in BUILT_IN_GROUPS and obj.chart is None and index.for_object(obj.manifest) is None
        }
    )


def _waits(model: DeployModel, obj: KubeObject, source: Source) -> bool:
    if source.urn is None:
        return True
    # A chart orders its own CRDs before the objects that use them.
    if obj.chart is not None and obj.chart.resource.urn == source.urn:
        return True
    record = obj.chart.resource if obj.chart else obj.record
    return source.urn == record.urn or model.waits_for(record, source.urn)
