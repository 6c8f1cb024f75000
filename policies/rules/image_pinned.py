"""Container images are pinned: a version tag, or a digest; not ``latest`` nor another floating tag.

An unpinned inference image changes under a running fleet at the next node restart (seed 002's
``vllm/vllm-openai:v0.4.0`` is pinned; ``:latest``, ``:stable`` and ``:nightly`` are not:
``images.floating_tag``). Unknown images are skipped.
"""

from __future__ import annotations

from aks_gpu_inference.components.core.images import pin_problem
from aks_gpu_inference.policies.manifests import StackIndex, Violation, pod_templates
from aks_gpu_inference.policies.rules._rule import Rule

NAME = "image-pinned"


def _check(index: StackIndex, _config: dict):
    for r in index.resources:
        for template in pod_templates(r):
            for where, container in template.containers():
                image = container.get("image")
                problem = isinstance(image, str) and pin_problem(image)
                if problem:
                    yield Violation(NAME, r, f"{template.where(where)}: image {image!r} {problem}; pin a version tag or a digest")


RULE = Rule(
    name=NAME,
    description="Container images are pinned to a version tag or digest (no latest or other floating tag, no missing tag).",
    why="Images have a version tag or a digest: no tag, `latest` and other floating tags (`stable`, `nightly`, `main`, `edge`, `dev`, `latest-gpu`...) move under a running fleet.",
    fix="pin the image",
    enforcement="advisory",
    scope="resource",
    unknowns="skips",
    config={},
    check=_check,
)
