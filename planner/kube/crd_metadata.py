"""ObjectMeta of a custom resource, checked as the API server checks it whatever the CRD's schema says:
string fields, name and namespace by the CRD's scope, label and annotation keys and values, finalizers.
Each check is a pure function returning ``(json path, message, blocking)`` problems."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aks_gpu_inference.components.core.names import DNS_LABEL, DNS_SUBDOMAIN, LABEL_NAME, LABEL_VALUE
from aks_gpu_inference.planner.kube.crd_files import CRD
from aks_gpu_inference.planner.kube.json_values import Problem, child, json_type, show

OBJECT_META_FIELDS = frozenset(
    {
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "managedFields",
    }
)
"""The fields of ObjectMeta; the API server drops any other."""

ANNOTATIONS_LIMIT = 256 * 1024
"""Total bytes of an object's annotation keys and values the API server accepts."""


def qualified_name_problem(key: str) -> str | None:
    """Why ``key`` is not a label or annotation key (``[prefix/]name``), or None."""
    prefix, _, name = key.rpartition("/")
    if "/" in key and not DNS_SUBDOMAIN.fullmatch(prefix):
        return f"prefix {prefix!r} must be a lowercase DNS subdomain"
    if not LABEL_NAME.fullmatch(name):
        return "name part must be 1-63 characters of [A-Za-z0-9-_.], starting and ending with a letter or digit"
    return None


def string_field_problems(meta: Mapping[str, Any], path: str) -> list[Problem]:
    """name, generateName and namespace that are not strings."""
    return [
        (child(path, key), f"must be of type string, got {json_type(meta[key])}", True)
        for key in ("name", "generateName", "namespace")
        if key in meta and not isinstance(meta[key], str)
    ]


def identity_problems(meta: Mapping[str, Any], path: str, crd: CRD) -> list[Problem]:
    """The top-level object's name (or generateName) and its namespace, by the CRD's scope."""
    problems: list[Problem] = []
    name, generate = meta.get("name"), meta.get("generateName")
    if not name and not generate:
        problems.append((child(path, "name"), "required field is missing (or set metadata.generateName)", True))
    elif isinstance(name, str) and not DNS_SUBDOMAIN.fullmatch(name):
        message = f"{name!r} is not a lowercase DNS-1123 subdomain (a-z, 0-9, '-', '.'; at most 253 characters)"
        problems.append((child(path, "name"), message, False))
    namespace = meta.get("namespace")
    where = child(path, "namespace")
    if not crd.namespaced:
        if namespace:
            problems.append((where, f"{crd.kind} is cluster-scoped: the API server ignores the namespace {namespace!r}", False))
    elif not namespace:
        problems.append((where, f"required: {crd.kind} is namespaced", True))
    elif isinstance(namespace, str) and not DNS_LABEL.fullmatch(namespace):
        problems.append((where, f"{namespace!r} is not a DNS-1123 label", False))
    return problems


def map_problems(meta: Mapping[str, Any], key: str, path: str) -> list[Problem]:
    """``labels`` or ``annotations``: a map of valid keys to strings (label values valid too, annotations
    within ``ANNOTATIONS_LIMIT``)."""
    mapping = meta.get(key)
    if mapping is None:
        return []
    where = child(path, key)
    if not isinstance(mapping, dict):
        return [(where, f"must be a map of strings, got {json_type(mapping)}", True)]
    problems: list[Problem] = []
    for k, v in mapping.items():
        if problem := qualified_name_problem(k):
            problems.append((f"{where}[{k}]", f"invalid key: {problem}", False))
        if not isinstance(v, str):
            problems.append((f"{where}[{k}]", f"must be of type string, got {json_type(v)}", True))
        elif key == "labels" and not LABEL_VALUE.fullmatch(v):
            problems.append((f"{where}[{k}]", f"invalid label value {show(v)}: at most 63 characters of [A-Za-z0-9-_.]", False))
    if key == "annotations":
        size = sum(len(k) + len(v) for k, v in mapping.items() if isinstance(v, str))
        if size > ANNOTATIONS_LIMIT:
            problems.append((where, f"annotations total {size} bytes, over the 262144-byte limit", True))
    return problems


def finalizer_problems(meta: Mapping[str, Any], path: str) -> list[Problem]:
    """finalizers that are not a list of strings."""
    finalizers = meta.get("finalizers")
    if finalizers is None or (isinstance(finalizers, list) and all(isinstance(f, str) for f in finalizers)):
        return []
    return [(child(path, "finalizers"), "must be a list of strings", True)]


def meta_problems(meta: Mapping[str, Any], path: str, crd: CRD, top: bool) -> list[Problem]:
    """Every problem of a metadata mapping (unknown fields aside), in the order the API server reports them."""
    problems = string_field_problems(meta, path)
    if top:
        problems += identity_problems(meta, path, crd)
    problems += map_problems(meta, "labels", path) + map_problems(meta, "annotations", path)
    return problems + finalizer_problems(meta, path)
