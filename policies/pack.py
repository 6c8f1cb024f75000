"""CrossGuard adapters around ``policies.rules``: one Pulumi policy per rule, with its config schema
and default enforcement level. ``__main__.py`` serves them; the planner and tests load them into
pulumi_policy's analyzer in-process.

The engine hands rules read-only proxies that raise ``UnknownValueError`` on values unknown during
preview. ``thaw`` turns them into plain data with ``UNKNOWN`` in those places, so each rule decides
for itself whether to fail closed or skip, instead of the SDK downgrading the whole rule to an
advisory "can't run during preview".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import UnknownValueError

from aks_gpu_inference.policies.manifests import UNKNOWN, Resource, StackIndex
from aks_gpu_inference.policies.rules import RULES, Rule

PACK_NAME = "aks-gpu-guardrails"
DESCRIPTION = (
    "Guardrails for GPU inference on AKS: RDMA-capable sizes, GPU taints, IPC_LOCK without privileged, NodeImage upgrades."
)
_LEVELS = {"mandatory": EnforcementLevel.MANDATORY, "advisory": EnforcementLevel.ADVISORY}


def thaw(value: Any) -> Any:
    """Copy an engine proxy into plain dicts and lists, with ``UNKNOWN`` for unknown values."""
    if isinstance(value, Mapping):
        result = {}
        for key in value:
            try:
                result[key] = thaw(value[key])
            except UnknownValueError:
                result[key] = UNKNOWN
        return result
    if isinstance(value, Sequence) and not isinstance(value, str):
        result_list = []
        for i in range(len(value)):
            try:
                result_list.append(thaw(value[i]))
            except UnknownValueError:
                result_list.append(UNKNOWN)
        return result_list
    return value


def _report(rule: Rule, index: StackIndex, config: Mapping[str, Any], report_violation: ReportViolation) -> None:
    for violation in rule.run(index, dict(config or {})):
        report_violation(violation.message, violation.urn or None)


def _resource_policy(rule: Rule) -> Policy:
    def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
        resource = Resource(args.resource_type, args.name, thaw(args.props), args.urn)
        _report(rule, StackIndex.build([resource]), args.get_config(), report_violation)

    return ResourceValidationPolicy(
        name=rule.name,
        description=rule.description,
        validate=validate,
        enforcement_level=_LEVELS[rule.enforcement],
        config_schema=PolicyConfigSchema(properties=rule.config) if rule.config else None,
    )


def _stack_policy(rule: Rule) -> Policy:
    def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
        resources = [Resource(r.resource_type, r.name, thaw(r.props), r.urn) for r in args.resources]
        _report(rule, StackIndex.build(resources), args.get_config(), report_violation)

    return StackValidationPolicy(
        name=rule.name,
        description=rule.description,
        validate=validate,
        enforcement_level=_LEVELS[rule.enforcement],
        config_schema=PolicyConfigSchema(properties=rule.config) if rule.config else None,
    )


POLICIES: list[Policy] = [_resource_policy(r) if r.scope == "resource" else _stack_policy(r) for r in RULES]
