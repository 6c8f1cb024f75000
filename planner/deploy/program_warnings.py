"""What the stack program and its components said with ``pulumi.log.warn`` (a memory fit that leaves little KV cache,
a hub model planned without a token that may be gated): ``pulumi up`` prints these, so the plan reports each as a
warning, naming the component that said it."""

from __future__ import annotations

import re

from aks_gpu_inference.planner.deploy.finding import Finding
from aks_gpu_inference.planner.deploy.model import DeployModel

_SAID_BY = re.compile(r"(?P<component>[A-Z]\w+) '(?P<name>[^']+)'(?: (?P<part>[\w-]+))?: (?P<message>.+)", re.S)
"""How components word their warnings: ``VllmService 'llama-8b': ...``, ``DynamoInference 'llama' prefill: ...``."""


def check(model: DeployModel) -> list[Finding]:
    findings = []
    for warning in model.run.warnings:
        said = _SAID_BY.fullmatch(warning)
        where = " ".join(filter(None, [said["component"], said["name"], said["part"]])) if said else "the stack program"
        message = said["message"] if said else warning
        findings.append(Finding("program", "warning", where, message, "as the warning says (pulumi up prints it too)"))
    return findings
