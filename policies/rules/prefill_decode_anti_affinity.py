"""Prefill and decode pods carry required pod anti-affinity, one engine per node.

Seed 004: "use one full GPU node for prefill and one full GPU node for decode ... add required
pod anti-affinity so the two engines run on different nodes". A pod is a prefill or decode engine
when one of the role labels says so. Unknown affinity is skipped.
"""

from __future__ import annotations

from collections.abc import Mapping

from aks_gpu_inference.components.core.labels import ROLE_LABEL
from aks_gpu_inference.policies.manifests import StackIndex, Violation, get, is_unknown, items, pod_templates
from aks_gpu_inference.policies.rules._rule import Rule

NAME = "prefill-decode-anti-affinity"


def _check(index: StackIndex, config: dict):
    for r in index.resources:
        for template in pod_templates(r):
            labels = get(template.metadata, "labels")
            if not isinstance(labels, Mapping) or template.fragment:  # a patch leaves the affinity to what it patches
                continue
            role = next((labels.get(key) for key in config["role_labels"] if labels.get(key) in ("prefill", "decode")), None)
            if role is None:
                continue
            terms = get(template.spec, "affinity", "podAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
            if is_unknown(terms) or any(is_unknown(t) or is_unknown(get(t, "topologyKey")) for t in items(terms)):
                continue
            if not any(get(term, "topologyKey") == "kubernetes.io/hostname" for term in items(terms)):
                yield Violation(
                    NAME,
                    r,
                    f"{template.label}: {role} pods need podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution with "
                    "topologyKey kubernetes.io/hostname, so prefill and decode engines never share a node",
                )


RULE = Rule(
    name=NAME,
    description="Prefill and decode pods of a disaggregated model carry required pod anti-affinity on kubernetes.io/hostname.",
    why="Pods labelled prefill/decode carry required pod anti-affinity on `kubernetes.io/hostname` (seed 004).",
    fix="add the affinity",
    enforcement="advisory",
    scope="resource",
    unknowns="skips",
    config={
        "role_labels": {
            "type": "array",
            "items": {"type": "string"},
            "default": ["aks-gpu-inference/role", ROLE_LABEL],
            "description": "Pod labels whose value prefill or decode marks a disaggregated engine.",
        }
    },
    check=_check,
)
