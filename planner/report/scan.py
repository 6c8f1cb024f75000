"""``aks-gpu scan``'s JSON and SARIF documents of a scan ``Report``."""

from __future__ import annotations

import json
import os
import re
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import quote

from aks_gpu_inference.components.core import pins
from aks_gpu_inference.planner.scan import CHECKS, Place, Problem, Report
from aks_gpu_inference.policies.rules import RULES, Finding

SRCROOT = "SRCROOT"
"""The SARIF base of relative file URIs: the working folder, which CI runs the scan from (the repository root)."""
_LEVEL = {"mandatory": "error", "advisory": "warning"}
_SEMVER = re.compile(r"\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?")


def _finding(f: Finding, where: Place) -> dict[str, Any]:
    """A finding at the line of the field it names (``Report.place``), with its pod template when it names one."""
    label, message = f.violation.resource.label, f.violation.message
    found = {"rule": f.rule.name, "level": f.level, "file": where.file, "line": where.line, "resource": label}
    return {**found, "template": where.template, "message": message}


def as_json(report: Report, exit_code: int) -> str:
    exempted = []
    for e in report.exempted:
        where = report.place(e)
        exempted.append(
            dict(rule=e.rule, resource=e.resource.label, where=f"{where.file}:{where.line}", message=e.message, why=e.why)
        )
    document = {
        "objects": len(report.located),
        "files": report.files,
        "exit_code": exit_code,
        "errors": [p.as_dict() for p in report.errors],
        "warnings": [p.as_dict() for p in report.warnings],
        "exempted": exempted,
        "mandatory": report.mandatory,
        "advisory": sum(f.level == "advisory" for f in report.findings),
        "findings": [_finding(f, report.place(f)) for f in report.findings],
    }
    return json.dumps(document, indent=2)


@cache  # one per file: its findings share it
def _artifact(file: str, base: Path) -> dict[str, str]:
    """A file as SARIF wants it for code scanning: a URI relative to ``SRCROOT`` when inside it, else an absolute
    ``file:`` URI (which takes no base)."""
    path = Path(os.path.abspath(file))
    if path.is_relative_to(base):
        return {"uri": quote(path.relative_to(base).as_posix()), "uriBaseId": SRCROOT}
    return {"uri": path.as_uri()}


def _location(file: str, line: int | None, base: Path) -> dict:
    region = {"region": {"startLine": line}} if line else {}
    return {"physicalLocation": {"artifactLocation": _artifact(file, base), **region}}


def _result(finding: Finding, where: Place, base: Path) -> dict:
    """A finding at the line of the field it names, logically in its pod template when it names one, else its object."""
    label = finding.violation.resource.label
    logical = (
        {"name": where.template, "fullyQualifiedName": f"{label} {where.template}", "kind": "member"}
        if where.template
        else {"name": label, "fullyQualifiedName": label, "kind": "resource"}
    )
    return {
        "ruleId": finding.rule.name,
        "level": _LEVEL[finding.level],
        "message": {"text": finding.violation.message},
        "locations": [{**_location(where.file, where.line, base), "logicalLocations": [logical]}],
    }


def _notification(problem: Problem, base: Path) -> dict:
    notification = {"level": problem.level, "message": {"text": problem.message}, "descriptor": {"id": problem.check}}
    return {**notification, "locations": [_location(problem.file, problem.line, base)]} if problem.file else notification


def _driver() -> dict[str, str]:
    """The tool's name and version. The project publishes no web page, so there is no ``informationUri``."""
    from aks_gpu_inference.planner import __version__

    return {"name": "aks-gpu scan", "version": __version__} | (
        {"semanticVersion": __version__} if _SEMVER.fullmatch(__version__) else {}
    )


def as_sarif(report: Report, exit_code: int) -> str:
    """SARIF 2.1.0 for code-scanning upload: mandatory findings are errors, advisory ones warnings, each at
    the line of the field it names (``Report.place``) in a file relative to ``SRCROOT``. The scan's own
    errors and warnings are the invocation's tool execution notifications (a bad policy config a tool
    configuration notification)."""
    rules = [
        {
            "id": rule.name,
            "shortDescription": {"text": rule.description},
            "fullDescription": {"text": rule.description},
            "defaultConfiguration": {"level": _LEVEL[rule.enforcement]},
        }
        for rule in RULES
    ]
    base = Path.cwd()
    results = [_result(f, report.place(f), base) for f in report.findings]
    invocation = {
        "executionSuccessful": not report.errors,
        "exitCode": exit_code,
        "toolExecutionNotifications": [_notification(p, base) for p in report.problems if p.check != "policy-config"],
        "toolConfigurationNotifications": [_notification(p, base) for p in report.problems if p.check == "policy-config"],
    }
    notifications = [{"id": check, "shortDescription": {"text": text}} for check, text in CHECKS.items()]
    run_ = {"tool": {"driver": {**_driver(), "rules": rules, "notifications": notifications}}}
    root = base.as_uri()
    run_ |= {"originalUriBaseIds": {SRCROOT: {"uri": root if root.endswith("/") else root + "/"}}}
    run_ |= {"invocations": [invocation], "results": results}
    sarif = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": pins.table()["formats"]["sarif"]["value"],
        "runs": [run_],
    }
    return json.dumps(sarif, indent=2)
