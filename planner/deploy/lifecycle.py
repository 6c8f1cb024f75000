"""Versions, models and VM sizes against the dated lifecycle table (``components/core/lifecycle.json``).

Retired on the plan date is a blocker (AKS refuses a Kubernetes version past support, Azure OpenAI
refuses deployments of a retired model version, a retired size cannot be allocated); retiring
within the warning window is a warning, so the change can be planned and re-qualified in time.
"""

from __future__ import annotations

from datetime import date

from aks_gpu_inference.components.core import lifecycle
from aks_gpu_inference.planner.deploy.finding import Finding
from aks_gpu_inference.planner.deploy.model import DeployModel


def subjects(model: DeployModel) -> list[tuple[str, str, str]]:
    """(lifecycle kind, name, object) for everything in the plan that has a lifecycle."""
    found = []
    version = model.cluster.get("kubernetesVersion")
    if isinstance(version, str):
        found.append(("aks_kubernetes", version, "ManagedCluster kubernetesVersion"))
    for record in model.run.resources:
        inputs = record.inputs
        if record.type.endswith("cognitiveservices:Deployment"):
            model_spec = (inputs.get("properties") or {}).get("model") or {}
            if model_spec.get("name") and model_spec.get("version"):
                found.append(
                    (
                        "azure_openai_model",
                        f"{model_spec['name']}@{model_spec['version']}",
                        f"Azure OpenAI deployment {record.name}",
                    )
                )
        elif record.type.endswith("dashboard:Grafana"):
            major = (inputs.get("properties") or {}).get("grafanaMajorVersion")
            if major is not None:
                found.append(("managed_grafana", str(major), f"Managed Grafana {record.name}"))
    for pool in model.pools:
        found.append(("vm_size", pool.vm_size, pool.where))
    return found


def check(model: DeployModel, as_of: date) -> list[Finding]:
    findings = []
    if not isinstance(model.cluster.get("kubernetesVersion"), str) and model.cluster:
        findings.append(
            Finding(
                "lifecycle",
                "warning",
                "ManagedCluster kubernetesVersion",
                "not pinned: AKS picks its default version, which the qualification gates have not seen",
                "pin cluster.kubernetes_version to a supported minor version",
            )
        )
    for kind, name, where in subjects(model):
        entry = lifecycle.status(kind, name, as_of)
        if entry is None:
            if kind == "aks_kubernetes":
                findings.append(
                    Finding(
                        "lifecycle",
                        "blocker",
                        where,
                        f"Kubernetes {name} is not in the AKS lifecycle table",
                        _replacement(kind, as_of),
                    )
                )
            continue
        if entry.state == "retired":
            findings.append(
                Finding(
                    "lifecycle",
                    "blocker",
                    where,
                    f"{_what(kind)} {name} retired on {entry.retires} ({entry.source})",
                    _replacement(kind, as_of),
                )
            )
        elif entry.state == "retiring":
            findings.append(
                Finding(
                    "lifecycle",
                    "warning",
                    where,
                    f"{_what(kind)} {name} retires on {entry.retires}, in {entry.days_left} days ({entry.source})",
                    _replacement(kind, as_of),
                )
            )
    return findings


_WHAT = {
    "aks_kubernetes": "AKS Kubernetes",
    "azure_openai_model": "Azure OpenAI model",
    "managed_grafana": "Managed Grafana",
    "vm_size": "VM size",
}


def _what(kind: str) -> str:
    return _WHAT.get(kind, kind)


def _replacement(kind: str, as_of: date) -> str:
    current = [e for e in lifecycle.supported(kind, as_of) if e.state == "supported"]
    if not current:
        return "move to a supported version"
    names = ", ".join(e.name for e in current[:6])
    advice = "; then re-run the qualification gates" if kind in ("aks_kubernetes", "vm_size") else ""
    return f"move to one supported on {as_of}: {names}{advice}"
