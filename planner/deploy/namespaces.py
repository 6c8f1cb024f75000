"""Every namespaced object and every chart lands in a namespace that exists, and waits for it.

Pulumi's Helm Chart never creates its namespace (pulumi-kubernetes ``helm/v4``: no
``CreateNamespace``), and an object created before its namespace fails with "namespaces not found".
"""

from __future__ import annotations

from . import Finding
from .model import BUILT_IN_NAMESPACES, DeployModel


def check(model: DeployModel) -> list[Finding]:
    findings = []
    namespaces = model.namespaces
    for chart in model.charts:
        ns = chart.namespace
        if ns in BUILT_IN_NAMESPACES:
            continue
        if ns not in namespaces:
            findings.append(
                Finding(
                    "namespaces",
                    "blocker",
                    chart.label,
                    f"installs into namespace {ns!r}, which nothing in the stack creates (a Pulumi Chart never creates it)",
                    f"create Namespace {ns!r} in the stack and pass it to the chart (namespace=ns.metadata['name'])",
                )
            )
        elif not model.waits_for(chart.resource, namespaces[ns].record.urn):
            findings.append(_no_wait(chart.label, ns))
    for obj in model.objects:
        ns = obj.namespace
        if ns is None or ns in BUILT_IN_NAMESPACES or obj.kind == "Namespace":
            continue
        if obj.chart is not None:
            continue  # judged once per chart above: its objects go where the release goes
        if ns not in namespaces:
            findings.append(
                Finding(
                    "namespaces",
                    "blocker",
                    obj.label,
                    f"namespace {ns!r} is created by nothing in the stack",
                    f"create Namespace {ns!r} in the stack, or move the object to one it creates",
                )
            )
        elif not model.waits_for(obj.record, namespaces[ns].record.urn):
            findings.append(_no_wait(obj.label, ns))
    return findings


def _no_wait(label: str, namespace: str) -> Finding:
    return Finding(
        "namespaces",
        "blocker",
        label,
        f"does not wait for Namespace {namespace!r}: Pulumi may create it first and the API server refuses it",
        "take the namespace from the Namespace resource (metadata.namespace=ns.metadata['name']) or add depends_on",
    )
