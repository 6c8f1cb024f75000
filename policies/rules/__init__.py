"""The guardrail rules: pure functions over plain mappings with engine wire names.

``RULES`` lists them in report order. Each rule module exposes ``RULE``; the CrossGuard pack
(``policies.pack``), the offline planner and ``aks-gpu scan`` all run these same objects.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aks_gpu_inference.policies.manifests import Exemption, Resource, StackIndex, Violation
from aks_gpu_inference.policies.rules import (
    disk_caching_none,
    gpu_taints,
    helm_pinned,
    image_pinned,
    ipc_lock_without_privileged,
    mig_resource_request,
    nccl_ib,
    no_memlock_override,
    node_os_upgrade_channel,
    prefill_decode_anti_affinity,
    rack_subgroup_placement,
    rdma_capable_sku,
    retired_gpu_sizes,
)
from aks_gpu_inference.policies.rules._rule import Rule

RULES: list[Rule] = [
    m.RULE
    for m in (
        rdma_capable_sku,
        gpu_taints,
        ipc_lock_without_privileged,
        node_os_upgrade_channel,
        mig_resource_request,
        disk_caching_none,
        nccl_ib,
        no_memlock_override,
        prefill_decode_anti_affinity,
        rack_subgroup_placement,
        image_pinned,
        retired_gpu_sizes,
        helm_pinned,
    )
]
BY_NAME: dict[str, Rule] = {rule.name: rule for rule in RULES}


LEVELS = ("advisory", "mandatory", "disabled")


@dataclass(frozen=True)
class Finding:
    rule: Rule
    level: str
    violation: Violation


def check_pack_config(config: Any) -> list[str]:
    """Problems in a ``--policy-pack-config`` mapping (rule -> {enforcementLevel, knobs}); empty when valid."""
    if not isinstance(config, dict):
        return [f"expected a JSON object of rule names to settings, got {type(config).__name__}"]
    problems = []
    for name, settings in config.items():
        if name not in BY_NAME:
            problems.append(f"{name}: unknown rule; rules: {', '.join(BY_NAME)}")
        elif isinstance(settings, str):
            problems += _settings_problems(BY_NAME[name], {"enforcementLevel": settings})
        elif not isinstance(settings, dict):
            problems.append(f"{name}={settings!r}: expected an enforcement level or an object of settings")
        else:
            problems += _settings_problems(BY_NAME[name], settings)
    return problems


def _settings_problems(rule: Rule, settings: dict[str, Any]) -> list[str]:
    """Problems in one rule's settings: its enforcement level and its knobs."""
    problems = []
    for key, value in settings.items():
        if key == "enforcementLevel":
            if value not in LEVELS:
                problems.append(f"{rule.name}.enforcementLevel={value!r}: accepted: {', '.join(LEVELS)}")
        elif key not in rule.config:
            knobs = ", ".join(rule.config) or "none"
            problems.append(f"{rule.name}.{key}: unknown setting; settings of this rule: enforcementLevel, {knobs}")
        elif not _matches_schema(value, rule.config[key]):
            problems.append(f"{rule.name}.{key}={value!r}: expected {_describe(rule.config[key])}")
    return problems


_JSON_TYPES = {"string": str, "boolean": bool, "array": list, "number": (int, float), "integer": int, "object": dict}


def _matches_schema(value: Any, schema: dict[str, Any]) -> bool:
    if not isinstance(value, _JSON_TYPES[schema["type"]]):
        return False
    if schema["type"] == "array":
        return all(_matches_schema(v, schema["items"]) for v in value)
    if schema["type"] == "object":
        properties = schema.get("properties", {})
        return (
            set(schema.get("required", ())) <= set(value)
            and set(value) <= set(properties)
            and all(_matches_schema(v, properties[k]) for k, v in value.items())
        )
    return True


def _describe(schema: dict[str, Any]) -> str:
    if schema["type"] == "object":
        return (
            f"an object with keys {', '.join(schema.get('properties', {}))} (required: {', '.join(schema.get('required', ()))})"
        )
    return (
        f"an array of {_describe(schema['items']).removeprefix('a ').removeprefix('an ')}s"
        if schema["type"] == "array"
        else f"a {schema['type']}"
    )


def evaluate_all(resources: list[Resource], config: dict[str, Any] | None = None) -> tuple[list[Finding], list[Exemption]]:
    """Run every enabled rule over a whole stack; ``config`` is the pack config (rule -> settings).

    Returns the findings and the exemptions (cases the rules' config accepts on purpose)."""
    index = StackIndex.build(resources)
    findings, exemptions = [], []
    for rule in RULES:
        settings = (config or {}).get(rule.name) or {}
        if isinstance(settings, str):
            settings = {"enforcementLevel": settings}
        knobs = {k: v for k, v in settings.items() if k != "enforcementLevel"}
        level = settings.get("enforcementLevel", rule.enforcement)
        if level == "disabled":
            continue
        for outcome in rule.outcomes(index, knobs):
            if isinstance(outcome, Exemption):
                exemptions.append(outcome)
            else:
                findings.append(Finding(rule, level, outcome))
    return findings, exemptions


def evaluate(resources: list[Resource], config: dict[str, Any] | None = None) -> list[Finding]:
    """The findings of ``evaluate_all``."""
    return evaluate_all(resources, config)[0]
