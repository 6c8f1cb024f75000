"""Every namespaced object and every chart lands in a namespace that exists, and waits for it.

Pulumi's Helm Chart never creates its namespace (pulumi-kubernetes ``helm/v4``: no
``CreateNamespace``), and an object created before its namespace fails with "namespaces not found".
"""

from __future__ import annotations

from aks_gpu_inference.planner.deploy.finding import Finding
from aks_gpu_inference.planner.deploy.model import BUILT_IN_NAMESPACES, DeployModel


def check(model: DeployModel) -> list[Finding]:
    # Where things land: each chart once (its objects go where the release goes), and every namespaced
    # object of the stack's own.
    placements = [
        (
            chart.label,
            chart.namespace,
            chart.resource,
            "installs into namespace {ns!r}, which nothing in the stack creates (a Pulumi Chart never creates it)",
            "create Namespace {ns!r} in the stack and pass it to the chart (namespace=ns.metadata['name'])",
        )
        for chart in model.charts
    ]
    placements += [
        (
            obj.label,
            obj.namespace,
            obj.record,
            "namespace {ns!r} is created by nothing in the stack",
            "create Namespace {ns!r} in the stack, or move the object to one it creates",
        )
        for obj in model.objects
        if obj.chart is None and obj.namespace is not None and obj.kind != "Namespace"
    ]
    findings = []
    for label, ns, record, missing, fix in placements:
        if ns in BUILT_IN_NAMESPACES:
            continue
        namespace = model.namespaces.get(ns)
        if namespace is None:
            findings.append(Finding("namespaces", "blocker", label, missing.format(ns=ns), fix.format(ns=ns)))
        elif not model.waits_for(record, namespace.record.urn):
            findings.append(
                Finding(
                    "namespaces",
                    "blocker",
                    label,
                    f"does not wait for Namespace {ns!r}: Pulumi may create it first and the API server refuses it",
                    "take the namespace from the Namespace resource (metadata.namespace=ns.metadata['name']) or add depends_on",
                )
            )
    return findings
