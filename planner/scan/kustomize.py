"""Kustomize patches as fragments of the objects they patch: the strategic-merge and JSON 6902 patches of a
Kustomization or Component (``patches``, ``patchesStrategicMerge``, ``patchesJson6902``), inline or in files next
to it, each turned into an object of its target's kind marked ``fragment``, so the rules check what a patch sets
(a privileged container, SYS_ADMIN, ``NCCL_IB_DISABLE=1``, a floating image tag) and not what it leaves to the
object it patches. Field lines point into the file the patch is written in.

kubernetes-sigs/kustomize api/types/kustomization.go (Patches, PatchesStrategicMerge, PatchesJson6902; a patch has
``path`` or ``patch`` and an optional ``target``); a JSON 6902 patch is a list of ``{op, path, value}`` (RFC 6902),
of which ``add`` and ``replace`` set values.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from aks_gpu_inference.components.core import pins
from aks_gpu_inference.planner.inputs import safe_yaml
from aks_gpu_inference.planner.scan.model import Located, Problem
from aks_gpu_inference.policies.manifests import Resource, get, items, token_for_manifest

GROUP = "kustomize.config.k8s.io"
KINDS = ("Kustomization", "Component")
_MAP, _SEQ, _STR = "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq", "tag:yaml.org,2002:str"
_VERSIONS = {
    "Pod": "v1",
    **dict.fromkeys(("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet"), "apps/v1"),
    **dict.fromkeys(("Job", "CronJob"), "batch/v1"),
    "LeaderWorkerSet": pins.api_version("LeaderWorkerSet"),
}
"""The API version of a built-in target named by kind alone (kustomize matches any version then)."""


class Patch(NamedTuple):
    target: Mapping[str, Any]
    text: str | None
    """The inline patch, or None for a patch in the file at ``path``."""
    path: str | None
    line: int
    """The 0-based line of the file the inline text starts on."""


def is_kustomization(resource: Resource) -> bool:
    return any(resource.type == f"kubernetes:{GROUP}/{v}:{k}" for v in ("v1beta1", "v1alpha1") for k in KINDS)


def patches(item: Located) -> list[Patch]:
    """The patches a Kustomization or Component lists, in order."""
    props, found = item.resource.props, []
    for field in ("patches", "patchesJson6902"):
        for index, entry in enumerate(items(get(props, field))):
            target = get(entry, "target", default={}) or {}
            if isinstance(get(entry, "patch"), str):
                found.append(Patch(target, entry["patch"], None, _text_line(item.node, (field, index, "patch"))))
            elif isinstance(get(entry, "path"), str):
                found.append(Patch(target, None, entry["path"], 0))
    for index, entry in enumerate(items(get(props, "patchesStrategicMerge"))):
        if isinstance(entry, str):
            inline = "\n" in entry.strip() or entry.lstrip().startswith(("apiVersion", "kind", "{"))
            line = _text_line(item.node, ("patchesStrategicMerge", index)) if inline else 0
            found.append(Patch({}, entry if inline else None, None if inline else entry, line))
    return found


def _text_line(node: yaml.Node | None, steps: tuple[str | int, ...]) -> int:
    """The 0-based line where the string at ``steps`` below ``node`` begins its text (after ``|`` or ``>``)."""
    for step in steps:
        if isinstance(node, yaml.MappingNode):
            node = next((v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == step), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(step, int) and step < len(node.value):
            node = node.value[step]
        else:
            return 0
    if not isinstance(node, yaml.ScalarNode):
        return 0
    return node.start_mark.line + (1 if node.style in ("|", ">") else 0)


def fragments(item: Located, patch: Patch, text: str, source: str) -> tuple[list[Located], list[Problem]]:
    """The fragments one patch makes (one per document of a strategic-merge patch, one for a JSON 6902 patch)."""
    try:
        documents = list(safe_yaml.iter_documents("\n" * patch.line + text, source=source, keep_nodes=True))
    except safe_yaml.InputError as err:
        message = f"kustomize patch of {item.resource.label}: {err.context}: {'; '.join(err.problems)}"
        return [], [Problem("warning", "patch-not-read", source, err.line, message)]
    found = []
    for document in documents:
        value, node = document.value, document.node
        if isinstance(value, list) and isinstance(node, yaml.SequenceNode):
            obj, node = _json6902(value, node, patch.target)
        elif isinstance(value, dict):
            obj = _strategic(value, patch.target)
        else:
            continue
        if obj is None:
            continue
        line = node.start_mark.line + 1
        token = token_for_manifest(obj["apiVersion"], obj["kind"])
        resource = Resource(token, str(get(obj, "metadata", "name", default="patch")), obj, f"{source}:{line}", fragment=True)
        found.append(Located(resource, source, line, node))
    return found, []


def _api_version(target: Mapping[str, Any], props: Mapping[str, Any]) -> str | None:
    """The patch's own apiVersion, else the target's group and version; a target without a version gets the built-in
    kind's, or for a Dynamo graph the version whose layout the patch has (``spec.services`` is v1alpha1)."""
    if isinstance(props.get("apiVersion"), str):
        return props["apiVersion"]
    kind, group, version = (get(target, k) for k in ("kind", "group", "version"))
    if not isinstance(kind, str):
        return None
    if isinstance(version, str) and version:
        return f"{group}/{version}" if isinstance(group, str) and group else version
    if isinstance(group, str) and group:
        if kind == "DynamoGraphDeployment":
            return f"{group}/{'v1beta1' if get(props, 'spec', 'components') is not None else 'v1alpha1'}"
        return f"{group}/v1"
    return _VERSIONS.get(kind, "v1")


def _strategic(value: dict[str, Any], target: Mapping[str, Any]) -> dict[str, Any] | None:
    """A strategic-merge patch as an object: its own apiVersion, kind and name, else the target's."""
    kind = value.get("kind") if isinstance(value.get("kind"), str) else get(target, "kind")
    api_version = _api_version({**target, "kind": kind}, value)
    if not isinstance(kind, str) or api_version is None:
        return None
    metadata = value.get("metadata") if isinstance(value.get("metadata"), dict) else {}
    name = metadata.get("name", get(target, "name"))
    return {**value, "apiVersion": api_version, "kind": kind, "metadata": {**metadata, **({"name": name} if name else {})}}


def _json6902(ops: list[Any], node: yaml.SequenceNode, target: Mapping[str, Any]) -> tuple[dict[str, Any] | None, yaml.Node]:
    """A JSON 6902 patch applied to an empty object of its target: what its ``add`` and ``replace`` operations set,
    with a YAML node tree whose fields sit on the lines of the operations' values."""
    kind, name = get(target, "kind"), get(target, "name")
    if not isinstance(kind, str):
        return None, node
    obj: dict[str, Any] = {"kind": kind, "metadata": {"name": name} if isinstance(name, str) else {}}
    root = yaml.MappingNode(_MAP, [], start_mark=node.start_mark, end_mark=node.end_mark)
    for op, op_node in zip(ops, node.value, strict=False):
        if not isinstance(op, dict) or op.get("op") not in ("add", "replace") or not isinstance(op.get("path"), str):
            continue
        tokens = [t.replace("~1", "/").replace("~0", "~") for t in op["path"].split("/")[1:]]
        value_node = (
            next((v for k, v in op_node.value if k.value == "value"), op_node)
            if isinstance(op_node, yaml.MappingNode)
            else op_node
        )
        if tokens:
            _set(obj, root, tokens, op.get("value"), value_node, op_node.start_mark)
    api_version = _api_version(target, obj)
    return ({**obj, "apiVersion": api_version} if api_version else None), root


def _set(data: Any, node: yaml.Node, tokens: list[str], value: Any, value_node: yaml.Node, mark: yaml.Mark) -> None:
    """Set ``value`` at the JSON pointer ``tokens`` below ``data`` (and ``value_node`` below ``node``), making the
    maps and lists on the way."""
    token, rest = tokens[0], tokens[1:]
    if not rest:
        fresh: tuple[Any, yaml.Node] = (value, value_node)
    elif rest[0] == "-" or rest[0].isdigit():
        fresh = ([], yaml.SequenceNode(_SEQ, [], start_mark=mark))
    else:
        fresh = ({}, yaml.MappingNode(_MAP, [], start_mark=mark))
    if isinstance(data, dict) and isinstance(node, yaml.MappingNode):
        child = _in_map(data, node, token, fresh, bool(rest), mark)
    elif isinstance(data, list) and isinstance(node, yaml.SequenceNode):
        child = _in_list(data, node, token, fresh, bool(rest), mark)
    else:
        return
    if rest and child is not None:
        _set(child[0], child[1], rest, value, value_node, mark)


def _in_map(data: dict, node: yaml.MappingNode, key: str, fresh: tuple[Any, yaml.Node], keep: bool, mark: yaml.Mark):
    """The (value, node) at ``key``: the one there when ``keep`` and it is a container, else ``fresh`` put there."""
    pair = next(((k, v) for k, v in node.value if k.value == key), None)
    if keep and isinstance(data.get(key), (dict, list)) and pair is not None:
        return data[key], pair[1]
    data[key] = fresh[0]
    node.value = [p for p in node.value if p[0].value != key] + [(yaml.ScalarNode(_STR, key, start_mark=mark), fresh[1])]
    return fresh


def _in_list(data: list, node: yaml.SequenceNode, token: str, fresh: tuple[Any, yaml.Node], keep: bool, mark: yaml.Mark):
    """The (value, node) at index ``token`` (``-``: a new last item), as ``_in_map``; None for a token that is no index."""
    index = len(data) if token == "-" else int(token) if token.isdigit() else None
    if index is None:
        return None
    if keep and index < len(data) and isinstance(data[index], (dict, list)):
        return data[index], node.value[index]
    while len(data) < index:  # an index past the end: keep the list dense, as the pointer needs
        data.append({})
        node.value.append(yaml.MappingNode(_MAP, [], start_mark=mark))
    if index < len(data):
        data[index], node.value[index] = fresh
    else:
        data.append(fresh[0])
        node.value.append(fresh[1])
    return fresh


NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
"""The file names kustomize reads a kustomization from (api/konfig/general.go RecognizedKustomizationFileNames)."""


def expand(located: list[Located], files: list[Path], read) -> tuple[list[Located], list[Problem], set[Path]]:
    """Kustomize patches as fragments. Every patch of a scanned Kustomization or Component becomes fragments; a scanned
    file that a kustomization beside it (scanned or not) names as a patch is one too: its objects are marked in place,
    a JSON 6902 patch is built. ``read(path)`` gives a file's text (or a Problem). Returns the new fragments, the
    problems, and the patch files built here (their own not-an-object warnings are moot)."""
    by_file: dict[Path, list[Located]] = {}
    for item in located:
        by_file.setdefault(Path(item.path).resolve(), []).append(item)
    scanned_files = {f.resolve() for f in files}
    roots = [(i, True) for i in located if is_kustomization(i.resource)]
    roots += [(i, False) for i in _beside(scanned_files, read)]
    new: list[Located] = []
    problems: list[Problem] = []
    built: set[Path] = set()
    for item, scanned in roots:
        for patch in patches(item):
            file = None if patch.text is not None else (Path(item.path).parent / str(patch.path)).resolve()
            if not scanned and (file is None or file not in scanned_files):
                continue  # only the scan's own files are judged
            if file is not None and by_file.get(file):
                for other in by_file[file]:  # a strategic-merge patch the scan read as objects
                    other.resource.fragment = True
                continue
            if file is not None and file in built:
                continue
            text = patch.text if file is None else read(file)
            if isinstance(text, Problem):
                message = f"{item.resource.label}: patch {patch.path} cannot be read ({text.message}); it is not checked"
                problems.append(Problem("warning", "patch-not-read", item.path, item.line, message, item.resource.label))
                continue
            found, trouble = fragments(item, patch, text, item.path if file is None else str(file))
            new += found
            problems += trouble
            if file is not None:
                built.add(file)
    return new, problems, built


def _beside(scanned: set[Path], read) -> list[Located]:
    """The kustomizations in the folders of the scanned files that the scan was not given itself."""
    found = []
    for folder in sorted({f.parent for f in scanned}):
        for name in NAMES:
            file = folder / name
            if file in scanned or not file.is_file():
                continue
            text = read(file)
            try:
                documents = (
                    [] if isinstance(text, Problem) else list(safe_yaml.iter_documents(text, source=str(file), keep_nodes=True))
                )
            except safe_yaml.InputError:
                continue  # not this scan's file: its own scan reports it
            for document in documents[:1]:
                obj = document.value
                if isinstance(obj, dict) and isinstance(obj.get("apiVersion"), str) and obj.get("kind") in KINDS:
                    resource = Resource(token_for_manifest(obj["apiVersion"], obj["kind"]), str(file), obj)
                    found.append(Located(resource, str(file), document.node.start_mark.line + 1, document.node))
    return found
