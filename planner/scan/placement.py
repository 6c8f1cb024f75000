"""Where a finding points in its file: the line of the field its message names, found in the object's composed
YAML nodes, and the pod template it is about."""

from __future__ import annotations

import re

import yaml

from aks_gpu_inference.planner.scan.model import Located, Place
from aks_gpu_inference.policies.manifests import pod_templates

# A rule names the place of a finding after the resource's label: ``<label> <path>[ <container>]: <field> ...``
# (``Deployment ml/chat spec.template.spec.containers[0] vllm: image 'vllm/vllm-openai' is not pinned``) or
# ``<label>: <field> ...`` (``StorageClass disk: parameters.cachingMode is not set``).
_KEY_PATH = r"[A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*|\[\d+\])*"
_WHERE = re.compile(rf"(?: (?P<path>{_KEY_PATH})(?: [^\s:]+)?)?(?:: (?P<field>{_KEY_PATH}))?")
_STEP = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def place(item: Located, message: str) -> Place:
    """Where a finding on ``item`` points, read from its message: the line of the field named after the label
    (``spec.template.spec.containers[0] vllm: securityContext.privileged``), else of its nearest ancestor in the
    file (a field left out is reported on its parent), else of the object; and the pod template it is under. A
    finding about the pod of a resource that has one (``Deployment ml/chat: requests GPUs ...``) is in that pod's
    spec."""
    label = item.resource.label
    found = _WHERE.match(message, len(label)) if message.startswith(label) else None
    path, key = (found["path"], found["field"]) if found else (None, None)
    templates = pod_templates(item.resource)
    if path is None and len(templates) == 1 and templates[0].path:
        path = templates[0].path.rstrip(".")  # a finding about the resource's one pod: its pod spec, or a field in it
    line = item.line
    if item.node is not None:
        node, line, complete = _descend(item.node, _steps(path), line)
        if complete and key:
            _, line, _ = _descend(node, _steps(key), line)
    template = next((t.path.rstrip(".") for t in templates if path and t.path and f"{path}.".startswith(t.path)), None)
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


def line_of(item: Located, path: str) -> int:
    """The line of the field at ``path`` (``metadata.name``) in ``item``, else of its nearest ancestor."""
    return _descend(item.node, _steps(path), item.line)[1] if item.node is not None else item.line
