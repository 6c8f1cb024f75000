"""Every custom resource has a CRD that the stack installs first.

A custom resource's kind must come from somewhere in the stack: a chart that ships the CRD, a
CustomResourceDefinition object, or an AKS add-on that the cluster switches on. The object must
wait for that source, or the API server answers "no matches for kind".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from aks_gpu_inference.planner.deploy.finding import Finding
from aks_gpu_inference.planner.deploy.model import DeployModel, KubeObject

if TYPE_CHECKING:
    from aks_gpu_inference.planner.kube.crd_files import CRD

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


# Charts whose operator applies the CRDs of a group itself when it starts, instead of shipping them in the chart.
# A v4 Chart waits for its Deployments to be ready, so objects that depend on the chart find the CRDs.
OPERATOR_APPLIED = {
    # deploy/helm/charts/platform/components/operator/templates/manager-rbac.yaml and the Deployment's init
    # container `crd-apply --crds-dir=/opt/dynamo-operator/crds/` (shared/upstream/DYNAMO.md, "Render").
    "dynamo-platform": "nvidia.com",
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
        if chart.chart in OPERATOR_APPLIED:
            found.setdefault((OPERATOR_APPLIED[chart.chart], "*"), []).append(
                Source(f"{chart.label}, whose operator applies them", chart.resource.urn)
            )
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
    unrendered = [c.label for c in model.charts if not c.rendered]
    maybe: list[KubeObject] = []
    for obj in model.objects:
        if obj.group in BUILT_IN_GROUPS or obj.kind == "CustomResourceDefinition":
            continue
        if _add_on(model, obj.group):
            continue
        candidates = known.get((obj.group, obj.kind)) or known.get((obj.group, "*"), [])
        if not candidates and unrendered:
            maybe.append(obj)
            continue
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
    if maybe:
        findings.append(
            Finding(
                "crds",
                "warning",
                f"{len(maybe)} custom resources",
                f"no CRD at hand for {', '.join(sorted({f'{o.kind}.{o.group}' for o in maybe}))}; they may come from "
                f"{', '.join(unrendered)}, which could not be rendered: not checked",
                "make the charts' archives available (--charts DIR or --pull) so their CRDs are known",
            )
        )
    return findings


def at_hand(model: DeployModel, upstream: Path | None) -> Callable[[KubeObject], CRD | None]:
    """The CRD of a custom resource: the one a chart or object of the stack installs (what the cluster will
    really serve), else the pinned copy in ``upstream/crds``; None when neither has it."""
    by_kind = kind_at_hand(model, upstream)
    return lambda obj: by_kind(obj.group, obj.kind)


def kind_at_hand(model: DeployModel, upstream: Path | None) -> Callable[[str, str], CRD | None]:
    """``at_hand`` by (group, kind), for objects a controller makes from the stack's own. Built once per model and
    upstream folder (the schema check, the unchecked kinds and the snapshot notes all ask)."""
    cached = model.crd_lookups.get(upstream)
    if cached is None:
        cached = model.crd_lookups[upstream] = _lookup(model, upstream)
    return cached


def _lookup(model: DeployModel, upstream: Path | None) -> Callable[[str, str], CRD | None]:
    from aks_gpu_inference.planner.kube.crd_files import crd_index, parse_crd

    installed = {}
    for obj in model.objects:
        if obj.kind == "CustomResourceDefinition":
            crd = parse_crd(obj.manifest)
            installed[(crd.group, crd.kind)] = crd
    folder = upstream / "crds" if upstream else None
    index = crd_index(folder) if folder is not None and folder.is_dir() else None

    def lookup(group: str, kind: str) -> CRD | None:
        return installed.get((group, kind)) or (index.get(group, kind) if index is not None else None)

    return lookup


def schemas(model: DeployModel, upstream: Path | None) -> list[Finding]:
    """Each custom resource (the stack's own and what its charts render) against its CRD's schema and CEL
    rules: what the API server would reject, or prune without a word."""
    from aks_gpu_inference.planner.kube.crd_schema import validate

    lookup = at_hand(model, upstream)
    findings = []
    for obj in custom_resources(model):
        crd = lookup(obj)
        for error in validate(obj.manifest, crd).errors if crd is not None else []:
            findings.append(Finding("crds", "blocker", obj.label, error, "write the fields this CRD version defines"))
    return findings


def custom_resources(model: DeployModel) -> list[KubeObject]:
    return [o for o in model.objects if o.group not in BUILT_IN_GROUPS and o.kind != "CustomResourceDefinition"]


def unchecked(model: DeployModel, upstream: Path | None) -> list[str]:
    """The custom resource kinds of the stack whose CRD neither the stack's charts nor the upstream copy has,
    so their schema was not checked: ``Kind.group`` each, sorted."""
    lookup = at_hand(model, upstream)
    return sorted({f"{o.kind}.{o.group}" for o in custom_resources(model) if lookup(o) is None})


def snapshots(model: DeployModel, upstream: Path | None) -> list[str]:
    """Notes on the CRDs taken from the upstream copy that stand in for a release they are not."""
    from aks_gpu_inference.planner.inputs.upstream import snapshot_note

    lookup = at_hand(model, upstream)
    return sorted(
        {note for o in custom_resources(model) if (crd := lookup(o)) and crd.source and (note := snapshot_note(crd.source))}
    )


def _waits(model: DeployModel, obj: KubeObject, source: Source) -> bool:
    if source.urn is None:
        return True
    # A chart orders its own CRDs before the objects that use them.
    if obj.chart is not None and obj.chart.resource.urn == source.urn:
        return True
    record = obj.chart.resource if obj.chart else obj.record
    return source.urn == record.urn or model.waits_for(record, source.urn)
