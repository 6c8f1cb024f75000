"""``aks-gpu scan``'s JSON and SARIF documents of a scan ``Report``."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from planner.scan import CHECKS, Problem, Report
from policies.rules import RULES, Finding


def _where(finding: Finding) -> tuple[str, int]:
    path, _, line = finding.violation.urn.rpartition(":")
    return path, int(line)


def _uri(path: str) -> str:
    """SARIF wants locations relative to the repository root: relative to the working folder when inside it."""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else Path(relative).as_posix()


def _finding(f: Finding) -> dict[str, Any]:
    file, line = _where(f)
    label, message = f.violation.resource.label, f.violation.message
    return {"rule": f.rule.name, "level": f.level, "file": file, "line": line, "resource": label, "message": message}


def as_json(report: Report, exit_code: int) -> str:
    exempted = [dict(rule=e.rule, resource=e.resource.label, where=e.urn, message=e.message, why=e.why) for e in report.exempted]
    document = {
        "objects": len(report.located),
        "files": report.files,
        "exit_code": exit_code,
        "errors": [p.as_dict() for p in report.errors],
        "warnings": [p.as_dict() for p in report.warnings],
        "exempted": exempted,
        "mandatory": report.mandatory,
        "advisory": sum(f.level == "advisory" for f in report.findings),
        "findings": [_finding(f) for f in report.findings],
    }
    return json.dumps(document, indent=2)


def _location(file: str, line: int | None) -> dict:
    region = {"region": {"startLine": line}} if line else {}
    return {"physicalLocation": {"artifactLocation": {"uri": _uri(file)}, **region}}


def _notification(problem: Problem) -> dict:
    notification = {"level": problem.level, "message": {"text": problem.message}, "descriptor": {"id": problem.check}}
    return {**notification, "locations": [_location(problem.file, problem.line)]} if problem.file else notification


_LEVEL = {"mandatory": "error", "advisory": "warning"}


def as_sarif(report: Report, exit_code: int) -> str:
    """SARIF 2.1.0 for code-scanning upload: mandatory findings are errors, advisory ones warnings. The
    scan's own errors and warnings are the invocation's tool execution notifications (a bad policy
    config a tool configuration notification)."""
    rules = [
        {
            "id": rule.name,
            "shortDescription": {"text": rule.description},
            "fullDescription": {"text": rule.description},
            "defaultConfiguration": {"level": _LEVEL[rule.enforcement]},
        }
        for rule in RULES
    ]
    results = [
        {
            "ruleId": f.rule.name,
            "level": _LEVEL[f.level],
            "message": {"text": f.violation.message},
            "locations": [_location(*_where(f))],
        }
        for f in report.findings
    ]
    invocation = {
        "executionSuccessful": not report.errors,
        "exitCode": exit_code,
        "toolExecutionNotifications": [_notification(p) for p in report.problems if p.check != "policy-config"],
        "toolConfigurationNotifications": [_notification(p) for p in report.problems if p.check == "policy-config"],
    }
    notifications = [{"id": check, "shortDescription": {"text": text}} for check, text in CHECKS.items()]
    run_ = {"tool": {"driver": {"name": "aks-gpu scan", "rules": rules, "notifications": notifications}}}
    run_ |= {"invocations": [invocation], "results": results}
    sarif = {"$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0", "runs": [run_]}
    return json.dumps(sarif, indent=2)
