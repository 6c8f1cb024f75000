"""``aks-gpu scan``: the guardrail rules over plain Kubernetes YAML (``helm template`` output,
kustomize builds and kustomize sources, the seeds' manifests), with table, JSON and SARIF output.

A scan goes on past bad files and never passes in silence. Besides findings it reports *errors*, what
it could not scan (missing path, unreadable, not UTF-8, conflict markers, Helm template, invalid YAML
or metadata: such a file gives no objects; a name the API server refuses: the object is still checked),
and *warnings*, what it scanned but could not judge (no objects, a document that is not one, a kind
unknown to the rules asking for GPUs, RDMA or DRA claims, a claim or runtime not among the objects, a
kustomize patch that cannot be read). Kustomize patches become fragments of the objects they patch
(``kustomize``). Exit code (``planner.cli``): 1 on a mandatory finding, even beside errors; else 2 on any
error (bad input); else 0, whatever the warnings and advisory findings. JSON and SARIF always print a
whole document (``scan_report``); every format places each finding at the line of the field it names
(``placement``), from the YAML nodes the file was parsed into. No Pulumi SDK import: it must stay fast
enough for every commit.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from aks_gpu_inference.components.core.errors import ConfigError
from aks_gpu_inference.planner.scan import kustomize
from aks_gpu_inference.planner.scan.blind_spots import blind_spots, device_paths
from aks_gpu_inference.planner.scan.files import read_manifests, read_text
from aks_gpu_inference.planner.scan.model import CHECKS, Located, Place, Problem
from aks_gpu_inference.planner.scan.names import invalid_names
from aks_gpu_inference.planner.scan.placement import place
from aks_gpu_inference.policies.manifests import Exemption
from aks_gpu_inference.policies.rules import Finding, evaluate_all

__all__ = [
    "CHECKS",
    "Located",
    "Place",
    "Problem",
    "Report",
    "blind_spots",
    "collect",
    "device_paths",
    "load_manifests",
    "place",
    "read_manifests",
    "run",
    "scan_all",
    "yaml_files",
]


@dataclass
class Report:
    located: list[Located] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    exempted: list = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    files: int = 0

    errors = property(lambda self: [p for p in self.problems if p.level == "error"])
    warnings = property(lambda self: [p for p in self.problems if p.level == "warning"])

    @property
    def mandatory(self) -> int:
        return sum(f.level == "mandatory" for f in self.findings)

    @cached_property
    def _by_resource(self) -> dict[int, Located]:
        return {id(item.resource): item for item in self.located}

    def place(self, finding: Finding | Exemption) -> Place:
        """Where a finding (or an exemption) of this report points (``place``): the line of the field it names."""
        outcome = finding.violation if isinstance(finding, Finding) else finding
        return place(self._by_resource[id(outcome.resource)], outcome.message)


def collect(paths: Iterable[str]) -> tuple[list[Path], list[Problem]]:
    """The YAML files of the paths (folders searched for *.yaml and *.yml at any depth), and the paths' problems."""
    files, problems = [], []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())
            if not found:
                problems.append(Problem("warning", "no-yaml-files", raw, None, "no *.yaml or *.yml files in this folder"))
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            problems.append(Problem("error", "no-such-path", raw, None, "no such file or folder"))
    return files, problems


def _strict(problems: list[Problem]) -> None:
    """The API before ``run``: a ConfigError for any error."""
    if errors := [p for p in problems if p.level == "error"]:
        raise ConfigError("cannot scan", [f"{p.where}: {p.message}" for p in errors])


def yaml_files(paths: Iterable[str]) -> list[Path]:
    files, problems = collect(paths)
    _strict(problems)
    return files


def load_manifests(path: Path) -> list[Located]:
    found, problems = read_manifests(path)
    _strict(problems)
    return found


def run(paths: Iterable[str], config: dict | None = None) -> Report:
    """Scan every path, going on past bad files: the findings, exemptions, errors and warnings."""
    files, problems = collect(paths)
    report = Report(problems=problems, files=len(files))
    for path in files:
        found, file_problems = read_manifests(path)
        report.located.extend(found)
        report.problems.extend(file_problems)
    fragments, patch_problems, patch_files = kustomize.expand(report.located, files, read_text)
    report.located.extend(fragments)  # a JSON 6902 patch file is no object, and needs no warning:
    report.problems = [
        p
        for p in report.problems
        if not (p.check in ("not-an-object", "no-objects") and p.file and Path(p.file).resolve() in patch_files)
    ]
    report.problems.extend(patch_problems)
    report.findings, report.exempted = evaluate_all([item.resource for item in report.located], config)
    report.problems.extend(blind_spots(report.located))
    report.problems.extend(invalid_names(report.located))
    report.problems.sort(key=lambda p: (p.file or "", p.line or 0))
    return report


def scan_all(paths: Iterable[str], config: dict | None = None) -> tuple[list[Located], list[Finding], list]:
    """Objects, findings and exemptions of ``run``; a ConfigError for any error."""
    report = run(paths, config)
    _strict(report.problems)
    return report.located, report.findings, report.exempted
