"""Runs the policy pack over a planned stack through pulumi_policy's real analyzer, in-process.

The requests are the ones the Pulumi engine sends a pack (Configure, Analyze per resource,
AnalyzeStack once), so enforcement levels and config reach the rules exactly as in
``pulumi preview --policy-pack policies``. The analyzer servicer is private to pulumi-policy,
which is why ``requirements.txt`` pins it exactly.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from google.protobuf import json_format, struct_pb2
from pulumi.runtime.proto import analyzer_pb2
from pulumi_policy import EnforcementLevel
from pulumi_policy.policy import _PolicyAnalyzerServicer

from aks_gpu_inference.planner import __version__
from aks_gpu_inference.planner.engine.program import ProgramRun, Registered
from aks_gpu_inference.policies.pack import DESCRIPTION, PACK_NAME, POLICIES
from aks_gpu_inference.policies.rules import RULES

_WIRE_LEVELS = {
    "advisory": analyzer_pb2.ADVISORY,
    "mandatory": analyzer_pb2.MANDATORY,
    "disabled": analyzer_pb2.DISABLED,
    "remediate": analyzer_pb2.REMEDIATE,
}
_LEVEL_NAMES = {value: name for name, value in _WIRE_LEVELS.items()}


@dataclass(frozen=True)
class Verdict:
    policy: str
    enforcement: str
    message: str
    urn: str

    @property
    def mandatory(self) -> bool:
        return self.enforcement == "mandatory"


def new_servicer() -> _PolicyAnalyzerServicer:
    return _PolicyAnalyzerServicer(PACK_NAME, __version__, POLICIES, EnforcementLevel.ADVISORY, None, DESCRIPTION)


def struct(value: Mapping[str, Any]) -> struct_pb2.Struct:
    message = struct_pb2.Struct()
    json_format.ParseDict(dict(value), message)
    return message


def configure_request(config: Mapping[str, Mapping[str, Any]]) -> analyzer_pb2.ConfigureAnalyzerRequest:
    """The engine's Configure call for ``--policy-pack-config``: rule -> {enforcementLevel, knobs...}.

    Like the engine, it sends every rule, each with its level (the rule's default unless the
    config overrides it) and its knobs over their defaults.
    """
    policy_config = {}
    for rule in RULES:
        values = {**rule.defaults(), **dict(config.get(rule.name) or {})}
        level = values.pop("enforcementLevel", rule.enforcement)
        policy_config[rule.name] = analyzer_pb2.PolicyConfig(enforcementLevel=_WIRE_LEVELS[level], properties=struct(values))
    return analyzer_pb2.ConfigureAnalyzerRequest(policyConfig=policy_config)


CRD_TYPE = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"


def pack_properties(resource: Registered) -> dict[str, Any]:
    """The properties the pack is sent: the inputs, but a CRD without its OpenAPI schemas. No rule reads a CRD
    (``tests/policies`` checks that every rule passes one whatever its spec), and the Ray CRDs alone carry 3 MB of
    schema that would take seconds to pass through the analyzer's protobuf for nothing."""
    if resource.type != CRD_TYPE:
        return resource.inputs
    spec = dict(resource.inputs.get("spec") or {})
    spec["versions"] = [{k: v for k, v in version.items() if k != "schema"} for version in spec.get("versions") or []]
    return {**resource.inputs, "spec": spec}


def analyze_request(resource: Registered) -> analyzer_pb2.AnalyzeRequest:
    return analyzer_pb2.AnalyzeRequest(
        type=resource.type, properties=struct(pack_properties(resource)), urn=resource.urn, name=resource.name
    )


def stack_request(resources: Iterable[Registered]) -> analyzer_pb2.AnalyzeStackRequest:
    return analyzer_pb2.AnalyzeStackRequest(
        resources=[
            analyzer_pb2.AnalyzerResource(
                type=r.type,
                properties=struct(pack_properties(r)),
                urn=r.urn,
                name=r.name,
                parent=r.parent or "",
                dependencies=r.options.get("dependsOn", []),
            )
            for r in resources
        ]
    )


def verdicts(responses: Iterable[analyzer_pb2.AnalyzeResponse]) -> list[Verdict]:
    """Violations from analyzer responses; the pack prefixes each message with the policy's description."""
    found = []
    for response in responses:
        for d in response.diagnostics:
            message = d.message.split("\n", 1)[1] if "\n" in d.message else d.message
            found.append(Verdict(d.policyName, _LEVEL_NAMES.get(d.enforcementLevel, "advisory"), message, d.urn))
    return found


def analyze(run: ProgramRun, config: Mapping[str, Mapping[str, Any]] | None = None) -> list[Verdict]:
    """Every verdict of the pack on a planned stack (custom resources only, as the engine sends them)."""
    servicer = new_servicer()
    if config:
        servicer.Configure(configure_request(config), None)
    resources = [r for r in run.resources if r.custom]
    responses = [servicer.Analyze(analyze_request(r), None) for r in resources]
    responses.append(servicer.AnalyzeStack(stack_request(resources), None))
    return verdicts(responses)


def exemptions(run: ProgramRun, config: Mapping[str, Mapping[str, Any]] | None = None) -> list:
    """What the rules accept on purpose (documented node agents), with the same config as ``analyze``.

    CrossGuard has no channel for "accepted" (a pack can only report violations), so the plan asks
    the same pure rules directly.
    """
    from aks_gpu_inference.policies.manifests import Resource
    from aks_gpu_inference.policies.rules import evaluate_all

    resources = [Resource(r.type, r.name, r.inputs, r.urn) for r in run.resources if r.custom]
    return evaluate_all(resources, dict(config or {}))[1]
