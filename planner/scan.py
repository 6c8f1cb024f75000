"""``aks-gpu scan``: the guardrail rules over plain Kubernetes YAML (``helm template`` output,
kustomize builds, the seeds' manifests), with table, JSON and SARIF output.

Imports no Pulumi SDK: it must stay fast enough to run on every commit.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import yaml

from components.errors import ConfigError
from policies.rules import RULES, Finding, evaluate_all
from policies.rules._model import Resource, token_for_manifest

# libyaml's parser is several times faster than the pure-Python one; PyYAML wheels ship it.
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass
class Located:
    resource: Resource
    path: str
    line: int


def yaml_files(paths: Iterable[str]) -> list[Path]:
    files = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file()))
        elif path.is_file():
            files.append(path)
        else:
            raise ConfigError("cannot scan", [f"{raw}: no such file or folder"])
    return files


def load_manifests(path: Path) -> list[Located]:
    """Every Kubernetes object in a (multi-document) YAML file, with the line it starts on."""
    try:
        loader = _Loader(path.read_text())
    except UnicodeDecodeError as err:
        raise ConfigError(f"{path} is not UTF-8 text", [str(err)]) from None
    found = []
    try:
        while loader.check_node():
            node = loader.get_node()
            for obj, line in _objects(loader.construct_document(node), node):
                if isinstance(obj, dict) and isinstance(obj.get("apiVersion"), str) and isinstance(obj.get("kind"), str):
                    metadata = obj.get("metadata") or {}
                    if not isinstance(metadata, dict) or not all(
                        isinstance(metadata.get(k, ""), str) for k in ("name", "namespace")
                    ):
                        raise ConfigError(
                            f"{path}:{line} is not a valid Kubernetes object",
                            ["metadata must be a mapping whose name and namespace are strings"],
                        )
                    name = metadata.get("name", "?")
                    resource = Resource(token_for_manifest(obj["apiVersion"], obj["kind"]), str(name), obj, f"{path}:{line}")
                    found.append(Located(resource, str(path), line))
    except yaml.YAMLError as err:
        raise ConfigError(
            f"{path} is not valid YAML", [str(err).replace("\n", " ").replace('"<unicode string>"', str(path))]
        ) from None
    finally:
        loader.dispose()
    return found


def _objects(document: object, node: yaml.Node) -> list[tuple[object, int]]:
    """The objects of one YAML document with their first lines; a ``kind: List`` gives its items."""
    if isinstance(document, dict) and document.get("kind") == "List" and isinstance(node, yaml.MappingNode):
        item_nodes = next(
            (value.value for key, value in node.value if key.value == "items" and isinstance(value, yaml.SequenceNode)), []
        )
        return [(obj, item.start_mark.line + 1) for obj, item in zip(document.get("items") or [], item_nodes, strict=False)]
    return [(document, node.start_mark.line + 1)]


def scan(paths: Iterable[str], config: dict | None = None) -> tuple[list[Located], list[Finding]]:
    located, findings, _exempted = scan_all(paths, config)
    return located, findings


def scan_all(paths: Iterable[str], config: dict | None = None) -> tuple[list[Located], list[Finding], list]:
    """Objects found, findings, and exemptions (node agents the rules' config accepts on purpose)."""
    located = [item for path in yaml_files(paths) for item in load_manifests(path)]
    findings, exempted = evaluate_all([item.resource for item in located], config)
    return located, findings, exempted


def _where(finding: Finding) -> tuple[str, int]:
    path, _, line = finding.violation.urn.rpartition(":")
    return path, int(line)


def _uri(path: str) -> str:
    """SARIF wants locations relative to the repository root: relative to the working folder when inside it."""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else Path(relative).as_posix()


def as_json(located: list[Located], findings: list[Finding], exempted: list | None = None) -> str:
    return json.dumps(
        {
            "objects": len(located),
            "exempted": [
                {"rule": e.rule, "resource": e.resource.label, "where": e.urn, "message": e.message, "why": e.why}
                for e in exempted or []
            ],
            "mandatory": sum(f.level == "mandatory" for f in findings),
            "advisory": sum(f.level == "advisory" for f in findings),
            "findings": [
                {
                    "rule": f.rule.name,
                    "level": f.level,
                    "file": _where(f)[0],
                    "line": _where(f)[1],
                    "resource": f.violation.resource.label,
                    "message": f.violation.message,
                }
                for f in findings
            ],
        },
        indent=2,
    )


def as_sarif(findings: list[Finding]) -> str:
    """SARIF 2.1.0 for code-scanning upload: mandatory findings are errors, advisory ones warnings."""
    rules = [
        {
            "id": rule.name,
            "shortDescription": {"text": rule.description},
            "fullDescription": {"text": rule.description},
            "defaultConfiguration": {"level": "error" if rule.enforcement == "mandatory" else "warning"},
        }
        for rule in RULES
    ]
    results = [
        {
            "ruleId": f.rule.name,
            "level": "error" if f.level == "mandatory" else "warning",
            "message": {"text": f.violation.message},
            "locations": [
                {"physicalLocation": {"artifactLocation": {"uri": _uri(_where(f)[0])}, "region": {"startLine": _where(f)[1]}}}
            ],
        }
        for f in findings
    ]
    return json.dumps(
        {
            "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
            "version": "2.1.0",
            "runs": [{"tool": {"driver": {"name": "aks-gpu scan", "rules": rules}}, "results": results}],
        },
        indent=2,
    )
