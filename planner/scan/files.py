"""Reading YAML files into located Kubernetes objects: each file's text checked (size, UTF-8, conflict markers),
parsed with the bounded loader, its documents and List items turned into resources with the line they start on
and their composed YAML nodes (the lines of their fields). A file with an error contributes no objects."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from aks_gpu_inference.planner.inputs import safe_yaml
from aks_gpu_inference.planner.scan.model import Located, Problem
from aks_gpu_inference.policies.manifests import Resource, items, token_for_manifest

_CONFLICT = re.compile(r"^(<{7}(?: |$)|={7}[ \t\r]*$|>{7}(?: |$))", re.MULTILINE)
_HELM_ACTION = re.compile(r"\{\{-?\s*(\.Values|\.Release|\.Chart|\.Capabilities|\.Files|include\s|template\s|tpl\s)")
_EMPTY_LIST = object()  # stands for a List without items among a file's documents


def _line(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def read_manifests(path: Path) -> tuple[list[Located], list[Problem]]:
    """Every Kubernetes object of a (multi-document) YAML file with the line it starts on, and the file's
    problems. A file with an error contributes no objects."""
    name = str(path)
    text = read_text(path)
    if isinstance(text, Problem):
        return [], [text]
    try:
        documents = _documents(text, name)
    except safe_yaml.InputError as err:
        return [], [_yaml_problem(text, name, err)]
    return _located(documents, text, name)


def read_text(path: Path) -> str | Problem:
    """The file's text, or the error that stops it being scanned: too large, unreadable, not UTF-8, conflict markers."""
    name = str(path)
    try:
        if path.stat().st_size > safe_yaml.MAX_BYTES:
            message = f"{path.stat().st_size:,} bytes, over the {safe_yaml.MAX_BYTES:,}-byte limit: split it"
            return Problem("error", "too-large", name, None, message)
        data = path.read_bytes()
    except OSError as err:
        return Problem("error", "unreadable", name, None, f"cannot read it: {err.strerror or err}")
    if archive := _archive_kind(data):
        message = (
            f"{archive}, not YAML: a packaged Helm chart is scanned as the objects it renders: "
            f"`helm template <release> {name} > rendered.yaml`, then scan rendered.yaml"
        )
        return Problem("error", "archive", name, None, message)
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


_ARCHIVES = {
    b"\x1f\x8b": "a gzip-compressed archive (a .tgz chart?)",
    b"PK\x03\x04": "a zip archive",
    b"BZh": "a bzip2-compressed archive",
    b"\xfd7zXZ\x00": "an xz-compressed archive",
    b"\x28\xb5\x2f\xfd": "a zstd-compressed archive",
}


def _archive_kind(data: bytes) -> str | None:
    """What kind of archive the bytes are, by their magic number (a tar's is at offset 257), or None."""
    for magic, kind in _ARCHIVES.items():
        if data.startswith(magic):
            return kind
    return "a tar archive" if data[257:262] == b"ustar" else None


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
