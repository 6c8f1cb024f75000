"""What a scan produces, shared by its steps: an object located in its file, where a finding points, and a problem
(an error: something not scanned; a warning: scanned, not judged) with the checks that raise them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from aks_gpu_inference.policies.manifests import Resource

CHECKS = {
    "no-such-path": "A path on the command line is neither a file nor a folder.",
    "unreadable": "The file cannot be read.",
    "not-utf8": "The file is not UTF-8 text.",
    "archive": "The file is an archive (a packaged Helm chart?): render it with `helm template` first.",
    "conflict-markers": "The file holds git merge conflict markers.",
    "helm-template": "The file is an unrendered Helm template: render it with `helm template` first.",
    "invalid-yaml": "The file is not valid YAML.",
    "invalid-object": "An object has apiVersion and kind but metadata the API server would refuse.",
    "policy-config": "The --policy-config file cannot be read or is invalid.",
    "internal-error": "The scan failed on a bug; rerun with --debug for the traceback.",
    "no-yaml-files": "A folder holds no *.yaml or *.yml files.",
    "no-objects": "A file holds no Kubernetes objects (a Helm values file?).",
    "not-an-object": "A document is not a Kubernetes object (no apiVersion and kind) and was skipped.",
    "unknown-kind-devices": "An object of a kind the rules find no pod template in asks for GPUs, RDMA NICs or DRA claims.",
    "claim-not-scanned": "A pod names a ResourceClaimTemplate or ResourceClaim that is not among the scanned objects.",
    "runtime-not-scanned": "An object built over a runtime (a TrainJob, an OME InferenceService) names one that is not among the scanned objects.",
    "patch-not-read": "A kustomize patch a Kustomization or Component names cannot be read or parsed.",
    "invalid-name": "An object's metadata.name is one the API server refuses for its kind.",
}


@dataclass
class Located:
    resource: Resource
    path: str
    line: int
    node: yaml.Node | None = None
    """The object's composed YAML node: the lines of the fields in it (``place``)."""


@dataclass(frozen=True)
class Place:
    """Where in its file a finding points: the line of the field it names, and the pod template it is about."""

    file: str
    line: int
    template: str | None = None
    """The path of the pod template (``spec.leaderWorkerTemplate.workerTemplate.spec``), when the finding names one."""


@dataclass(frozen=True)
class Problem:
    """An error (something not scanned) or a warning (scanned, not judged), and where it is."""

    level: str
    check: str
    file: str | None
    line: int | None
    message: str
    resource: str | None = None

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.file and self.line else self.file or "aks-gpu scan"

    def as_dict(self) -> dict[str, Any]:
        return {"check": self.check, "file": self.file, "line": self.line, "resource": self.resource, "message": self.message}
