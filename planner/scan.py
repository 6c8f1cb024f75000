"""``aks-gpu scan``: the guardrail rules over plain Kubernetes YAML (``helm template`` output,
kustomize builds, the seeds' manifests), with table, JSON and SARIF output.

A scan goes on past bad files and never passes in silence. Besides findings it reports *errors*, what
it could not scan (missing path, unreadable, not UTF-8, conflict markers, Helm template, invalid YAML
or metadata: such a file gives no objects), and *warnings*, what it scanned but could not judge (no
objects, a document that is not one, a kind unknown to the rules asking for GPUs, RDMA or DRA claims,
a claim not among the objects). Exit code (``planner.cli``): 1 on a mandatory finding, even beside
errors; else 2 on any error (bad input); else 0, whatever the warnings and advisory findings. JSON
and SARIF always print a whole document (``scan_report``); SARIF places each finding at the line of the
field it names (``place``), from the YAML nodes the file was parsed into. No Pulumi SDK import: it must stay
fast enough for every commit.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml

from aks_gpu_inference.components.core.errors import ConfigError
from aks_gpu_inference.planner.inputs import safe_yaml
from aks_gpu_inference.policies.manifests import Resource, get, items, kube_kind, pod_templates, token_for_manifest
from aks_gpu_inference.policies.rules import Finding, evaluate_all

CHECKS = {
    "no-such-path": "A path on the command line is neither a file nor a folder.",
    "unreadable": "The file cannot be read.",
    "not-utf8": "The file is not UTF-8 text.",
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
}

_CONFLICT = re.compile(r"^(<{7}(?: |$)|={7}[ \t\r]*$|>{7}(?: |$))", re.MULTILINE)
_HELM_ACTION = re.compile(r"\{\{-?\s*(\.Values|\.Release|\.Chart|\.Capabilities|\.Files|include\s|template\s|tpl\s)")
_DEVICE = re.compile(r"nvidia\.com/gpu|amd\.com/gpu|nvidia\.com/mig-.+|rdma/.+")
_AMOUNTS = {"requests", "limits", "resources"}  # a device name asks as a key of these; elsewhere it is a label or taint
_CLAIM_REFERENCE = re.compile(r".*[rR]esourceClaim(Template)?Name")  # resourceClaimName, gpuResourceClaimTemplateName
_NOT_REQUESTS = {"nodeSelector", "nodeLabels", "labels", "matchLabels", "annotations", "tolerations"}
_NOT_WORKLOADS = {"ResourceQuota", "LimitRange", "Node"}
_CLAIM_KEYS = (("resourceClaimTemplateName", "ResourceClaimTemplate"), ("resourceClaimName", "ResourceClaim"))
_EMPTY_LIST = object()  # stands for a List without items among a file's documents


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

    def place(self, finding: Finding) -> Place:
        """Where a finding of this report points (``place``)."""
        return place(self._by_resource[id(finding.violation.resource)], finding.violation.message)


def _line(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


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


def read_manifests(path: Path) -> tuple[list[Located], list[Problem]]:
    """Every Kubernetes object of a (multi-document) YAML file with the line it starts on, and the file's
    problems. A file with an error contributes no objects."""
    name = str(path)
    text = _read_text(path)
    if isinstance(text, Problem):
        return [], [text]
    try:
        documents = _documents(text, name)
    except safe_yaml.InputError as err:
        return [], [_yaml_problem(text, name, err)]
    return _located(documents, text, name)


def _read_text(path: Path) -> str | Problem:
    """The file's text, or the error that stops it being scanned: too large, unreadable, not UTF-8, conflict markers."""
    name = str(path)
    try:
        if path.stat().st_size > safe_yaml.MAX_BYTES:
            message = f"{path.stat().st_size:,} bytes, over the {safe_yaml.MAX_BYTES:,}-byte limit: split it"
            return Problem("error", "too-large", name, None, message)
        data = path.read_bytes()
    except OSError as err:
        return Problem("error", "unreadable", name, None, f"cannot read it: {err.strerror or err}")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        message = f"not UTF-8 text: byte 0x{data[err.start]:02x} on line {line}; save it as UTF-8"
        return Problem("error", "not-utf8", name, line, message)
    if marker := _CONFLICT.search(text):
        line = _line(text, marker.start())
        message = f"git conflict marker {marker[1].strip()!r} on line {line}: resolve the merge conflict first"
        return Problem("error", "conflict-markers", name, line, message)
    return text


def _yaml_problem(text: str, name: str, err: safe_yaml.InputError) -> Problem:
    """The error for a file the bounded YAML loader refused: an unrendered Helm template, or invalid YAML."""
    if "{{" in text:
        hint = f"looks like a Helm template ('{{{{' on line {_line(text, text.index('{{'))})"
        return Problem("error", "helm-template", name, err.line, f"{hint}: render it with `helm template` first")
    # "<file> is not valid YAML" / "<file> has a recursive alias": the file is named by the problem already.
    what = err.context.removeprefix(name).strip().removeprefix("is ").removeprefix("has ")
    details = "; ".join(_where_in(name, p) for p in err.problems)
    return Problem("error", "invalid-yaml", name, err.line, f"{what}: {details}")


def _located(documents: list[tuple[object, yaml.Node | None]], text: str, name: str) -> tuple[list[Located], list[Problem]]:
    """The objects of a parsed file, and its warnings; one object with invalid metadata fails the whole file."""
    found, problems = [], []
    for obj, node in documents:
        line = node.start_mark.line + 1 if node is not None else None
        if not (isinstance(obj, dict) and isinstance(obj.get("apiVersion"), str) and isinstance(obj.get("kind"), str)):
            if obj is not None and obj is not _EMPTY_LIST:
                message = "not a Kubernetes object (a mapping with string apiVersion and kind): skipped"
                problems.append(Problem("warning", "not-an-object", name, line, message))
            continue
        metadata = obj.get("metadata") or {}
        if not isinstance(metadata, dict) or not all(isinstance(metadata.get(k, ""), str) for k in ("name", "namespace")):
            message = f"{obj['kind']}: metadata must be a mapping whose name and namespace are strings"
            return [], [Problem("error", "invalid-object", name, line, message)]
        token = token_for_manifest(obj["apiVersion"], obj["kind"])
        found.append(Located(Resource(token, str(metadata.get("name", "?")), obj, f"{name}:{line}"), name, line, node))
    if not found:
        return [], [Problem("warning", "no-objects", name, None, _why_empty(documents))]
    if action := _HELM_ACTION.search(text):
        line = _line(text, action.start())
        message = f"Helm template action {action[0]!r} on line {line}: render it with `helm template` first; scanned as written"
        problems.append(Problem("warning", "helm-template", name, line, message))
    return found, problems


def _where_in(name: str, problem: str) -> str:
    """``<file>:5:2: what`` as ``line 5, column 2: what`` (the file is named already)."""
    found = re.match(rf"{re.escape(name)}:(\d+)(?::(\d+))?:\s*(.*)", problem, re.S)
    if not found:
        return problem
    line, column, what = found.groups()
    return f"line {line}{f', column {column}' if column else ''}: {what}"


def _documents(text: str, name: str) -> list[tuple[object, yaml.Node | None]]:
    """Each document (List items in its place) with its composed node; an empty document is (None, None).
    Read with the bounded loader: alias bombs, self-references, deep nesting, huge integers, values
    their tag cannot convert and duplicate keys are refused before anything is built."""
    result = []
    for doc in safe_yaml.iter_documents(text, source=name, keep_nodes=True):
        result.extend(_objects(doc.value, doc.node) if doc.value is not None else [(None, None)])
    return result


def _objects(document: object, node: yaml.Node) -> list[tuple[object, yaml.Node]]:
    """The objects of one YAML document; ``kind: List`` and typed lists (``PodList``) give their items."""
    if not (isinstance(document, dict) and _is_list(document) and isinstance(node, yaml.MappingNode)):
        return [(document, node)]
    item_nodes = next((v.value for k, v in node.value if k.value == "items" and isinstance(v, yaml.SequenceNode)), [])
    kind, result = document["kind"], []
    for item, item_node in zip(items(document.get("items")), item_nodes, strict=False):
        if kind != "List" and isinstance(item, dict):  # a typed list's items may leave out kind and apiVersion
            item = {"apiVersion": document.get("apiVersion"), "kind": kind.removesuffix("List"), **item}
        result.append((item, item_node))
    return result or [(_EMPTY_LIST, node)]


def _is_list(obj: dict) -> bool:
    kind = obj.get("kind")
    typed = isinstance(kind, str) and kind.endswith("List") and len(kind) > 4 and "items" in obj and "spec" not in obj
    return kind == "List" or typed


def _why_empty(documents: list[tuple[object, yaml.Node | None]]) -> str:
    if any(obj is _EMPTY_LIST for obj, _ in documents):
        return "no Kubernetes objects: its List has no items"
    if all(obj is None for obj, _ in documents):
        return "no Kubernetes objects: the file is empty"
    return "no Kubernetes objects: a Helm values file? (no document has apiVersion and kind)"


def device_paths(obj: object, path: str = "", seen: set[int] | None = None, parent: object = None) -> list[str]:
    """JSON paths in an object that ask for GPUs, RDMA NICs or DRA claims (top-level metadata and status
    aside): a device resource as a key of a ``requests``, ``limits`` or shorthand ``resources`` map (``parent``
    is the key holding ``obj``; elsewhere, as in a Kueue ResourceFlavor's ``nodeLabels``, it names a label or
    taint), a pod's ``resourceClaims``, a container's ``resources.claims``, and an operator's own claim fields
    (NIM Operator's ``draResources``, any key ending in ``resourceClaimTemplateName`` or ``resourceClaimName``).
    Each mapping and list is walked once, so YAML aliases and cycles cost nothing."""
    seen = set() if seen is None else seen
    if not isinstance(obj, Mapping | list) or id(obj) in seen:
        return []
    seen.add(id(obj))
    if isinstance(obj, list):
        return [found for index, value in enumerate(obj) for found in device_paths(value, f"{path}[{index}]", seen)]
    found: list[str] = []
    for key, value in obj.items():
        if (not path and key in ("metadata", "status")) or key in _NOT_REQUESTS:
            continue
        claims = key in ("resourceClaims", "draResources") or (key == "claims" and path.endswith("resources"))
        device = isinstance(key, str) and _DEVICE.fullmatch(key) and parent in _AMOUNTS
        reference = isinstance(key, str) and _CLAIM_REFERENCE.fullmatch(key) and isinstance(value, str) and value
        if device or reference or (claims and items(value)):
            found.append(_step(path, key))
        else:
            found.extend(device_paths(value, _step(path, key), seen, key))
    return found


def _step(path: str, key: object) -> str:
    if isinstance(key, str) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key) if isinstance(key, str) else key}]"


def blind_spots(located: list[Located]) -> list[Problem]:
    """Warnings for what the rules pass over: unknown kinds that ask for devices, claims not scanned."""
    known: dict[str, set[tuple[str, object]]] = {"ResourceClaimTemplate": set(), "ResourceClaim": set()}
    for item in located:
        if (kind := kube_kind(item.resource)) in known:
            known[kind].add((_namespace(item.resource), get(item.resource.props, "metadata", "name")))
    problems = []
    for item in located:
        resource, kind = item.resource, kube_kind(item.resource)
        templates = pod_templates(resource)  # [] for a kind the rules do not know
        if not templates and kind not in _NOT_WORKLOADS and (paths := device_paths(resource.props)):
            shown = ", ".join(paths[:4]) + (f" and {len(paths) - 4} more" if len(paths) > 4 else "")
            message = (
                f"{resource.label}: kind {kind} ({resource.props['apiVersion']}) is unknown to the guardrail rules, which find "
                f"no pod template in it, yet it asks for GPUs, RDMA NICs or DRA claims at {shown}: its pods are not checked"
            )
            problems.append(Problem("warning", "unknown-kind-devices", item.path, item.line, message, resource.label))
        for template in templates:
            for index, claim in enumerate(items(template.spec.get("resourceClaims"))):
                for key, target in _CLAIM_KEYS:
                    name = claim.get(key) if isinstance(claim, Mapping) else None
                    if isinstance(name, str) and (_namespace(resource), name) not in known[target]:
                        message = (
                            f"{resource.label}: {template.path}resourceClaims[{index}] names {target} "
                            f"{_namespace(resource)}/{name}, which is not among the scanned objects: the GPU and RDMA "
                            "rules cannot tell what it claims; scan it together with the workload"
                        )
                        problems.append(Problem("warning", "claim-not-scanned", item.path, item.line, message, resource.label))
    return problems


def _namespace(resource: Resource) -> str:
    namespace = get(resource.props, "metadata", "namespace")
    return namespace if isinstance(namespace, str) else "default"


# A rule names the place of a finding after the resource's label: ``<label> <path>[ <container>]: <field> ...``
# (``Deployment ml/chat spec.template.spec.containers[0] vllm: image 'vllm/vllm-openai' is not pinned``) or
# ``<label>: <field> ...`` (``StorageClass disk: parameters.cachingMode is not set``).
_KEY_PATH = r"[A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*|\[\d+\])*"
_WHERE = re.compile(rf"(?: (?P<path>{_KEY_PATH})(?: [^\s:]+)?)?(?:: (?P<field>{_KEY_PATH}))?")
_STEP = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def place(item: Located, message: str) -> Place:
    """Where a finding on ``item`` points, read from its message: the line of the field named after the label
    (``spec.template.spec.containers[0] vllm: securityContext.privileged``), else of its nearest ancestor in the
    file (a field left out is reported on its parent), else of the object; and the pod template it is under."""
    label = item.resource.label
    found = _WHERE.match(message, len(label)) if message.startswith(label) else None
    path, key = (found["path"], found["field"]) if found else (None, None)
    line = item.line
    if item.node is not None:
        node, line, complete = _descend(item.node, _steps(path), line)
        if complete and key:
            _, line, _ = _descend(node, _steps(key), line)
    templates = pod_templates(item.resource) if path else []
    template = next((t.path.rstrip(".") for t in templates if t.path and f"{path}.".startswith(t.path)), None)
    return Place(item.path, line, template)


def _steps(path: str | None) -> list[str | int]:
    """``spec.containers[0].image`` as ``["spec", "containers", 0, "image"]``."""
    return [int(index) if index else key for key, index in _STEP.findall(path or "")]


def _descend(node: yaml.Node, steps: list[str | int], line: int) -> tuple[yaml.Node, int, bool]:
    """The node at ``steps`` below ``node`` and the 1-based line of its key (or list item), from ``line`` for
    ``node`` itself; where a step is missing, the nearest ancestor and False. Aliased nodes are shared, so a
    field reached through an alias is reported where its anchor is written."""
    for step in steps:
        if isinstance(node, yaml.MappingNode) and isinstance(step, str):
            pair = next(((k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == step), None)
            if pair is None:
                return node, line, False
            line, node = pair[0].start_mark.line + 1, pair[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(step, int) and step < len(node.value):
            node = node.value[step]
            line = node.start_mark.line + 1
        else:
            return node, line, False
    return node, line, True


def run(paths: Iterable[str], config: dict | None = None) -> Report:
    """Scan every path, going on past bad files: the findings, exemptions, errors and warnings."""
    files, problems = collect(paths)
    report = Report(problems=problems, files=len(files))
    for path in files:
        found, file_problems = read_manifests(path)
        report.located.extend(found)
        report.problems.extend(file_problems)
    report.findings, report.exempted = evaluate_all([item.resource for item in report.located], config)
    report.problems.extend(blind_spots(report.located))
    report.problems.sort(key=lambda p: (p.file or "", p.line or 0))
    return report


def scan_all(paths: Iterable[str], config: dict | None = None) -> tuple[list[Located], list[Finding], list]:
    """Objects, findings and exemptions of ``run``; a ConfigError for any error."""
    report = run(paths, config)
    _strict(report.problems)
    return report.located, report.findings, report.exempted
