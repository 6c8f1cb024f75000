"""Builders and runners shared by the rule tests.

Builders make resources shaped like the engine sends them: Kubernetes objects as manifests with
camelCase wire names, azure-native pools and clusters with their API property names.

Each rule's test module keeps one table of ``Case`` rows and gets its tests from ``table_tests``: two
runners read the table, and ``check_table`` checks that it covers the rule:

* ``check_pure`` runs ``policies.rules.evaluate`` (the plain functions the planner and ``scan`` use);
* ``check_analyzer`` sends the same resources through pulumi_policy's real ``_PolicyAnalyzerServicer``
  in-process (Configure with the case's pack config, Analyze per resource, AnalyzeStack once), with
  ``UNKNOWN`` replaced by the engine's unknown sentinel, and checks the rule's verdicts and their
  enforcement level, that no rule fell back to the SDK's "can't run during preview", and that the
  whole pack reports exactly what ``evaluate`` reports (policy, level, message, URN).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from pulumi.runtime import rpc

from aks_gpu_inference.components.core.labels import AGENTPOOL_LABEL, GPU_TAINT, GPU_TOLERATION, RDMA_DEVICE_CLASS, RDMA_LABEL
from aks_gpu_inference.planner.analyzer import Verdict, analyze_request, configure_request, new_servicer, stack_request, verdicts
from aks_gpu_inference.planner.engine.program import Registered
from aks_gpu_inference.policies.manifests import UNKNOWN, Resource, StackIndex
from aks_gpu_inference.policies.rules import Rule, evaluate

NS = "llm"
ENGINE_UNKNOWN = rpc.UNKNOWN
"""How the engine marshals a value unknown during preview: ``04da6b54-80e4-46f7-96ec-b56ff0331ba9``."""

# ---- Kubernetes workloads ---------------------------------------------------------------------

KINDS: dict[str, tuple[str, str]] = {
    # kind: (type token, apiVersion)
    "Pod": ("kubernetes:core/v1:Pod", "v1"),
    "Deployment": ("kubernetes:apps/v1:Deployment", "apps/v1"),
    "StatefulSet": ("kubernetes:apps/v1:StatefulSet", "apps/v1"),
    "DaemonSet": ("kubernetes:apps/v1:DaemonSet", "apps/v1"),
    "ReplicaSet": ("kubernetes:apps/v1:ReplicaSet", "apps/v1"),
    "Job": ("kubernetes:batch/v1:Job", "batch/v1"),
    "CronJob": ("kubernetes:batch/v1:CronJob", "batch/v1"),
    "LeaderWorkerSet": ("kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet", "leaderworkerset.x-k8s.io/v1"),
}
WORKLOAD_KINDS = tuple(KINDS)

# Where the rules say a pod template's containers are, per kind (``PodTemplate.path``).
TEMPLATE_PATHS: dict[str, tuple[str, ...]] = {
    "Pod": ("spec.",),
    "CronJob": ("spec.jobTemplate.spec.template.spec.",),
    "LeaderWorkerSet": ("spec.leaderWorkerTemplate.leaderTemplate.spec.", "spec.leaderWorkerTemplate.workerTemplate.spec."),
}
DEFAULT_TEMPLATE_PATH = ("spec.template.spec.",)

WORKLOAD = "engine"


def clone(value: Any) -> Any:
    """A deep copy that keeps ``UNKNOWN`` itself (rules test it by identity; deepcopy would make a new object)."""
    return copy.deepcopy(value, {id(UNKNOWN): UNKNOWN})


def urn(type_: str, name: str) -> str:
    return f"urn:pulumi:test::proj::{type_}::{name}"


def resource(type_: str, name: str, props: Mapping[str, Any]) -> Resource:
    return Resource(type_, name, props, urn(type_, name))


def template_paths(kind: str) -> tuple[str, ...]:
    return TEMPLATE_PATHS.get(kind, DEFAULT_TEMPLATE_PATH)


def label(kind: str, name: str = WORKLOAD) -> str:
    """How violations name a workload: ``Deployment llm/engine``."""
    return f"{kind} {NS}/{name}"


def container(name: str = "vllm", image: str = "vllm/vllm-openai:v0.10.1", **fields: Any) -> dict[str, Any]:
    return {"name": name, "image": image, **fields}


def workload(kind: str, spec: Mapping[str, Any], *, labels: Mapping[str, Any] | None = None, name: str = WORKLOAD) -> Resource:
    """A pod spec wrapped into a workload of ``kind``, as a manifest."""
    type_, api_version = KINDS[kind]
    labels = labels if labels is not None else {"app": name}
    metadata = {"name": name, "namespace": NS}

    def template() -> dict[str, Any]:
        return {"metadata": {"labels": clone(labels)}, "spec": clone(spec)}

    if kind == "Pod":
        props: dict[str, Any] = {"metadata": {**metadata, "labels": clone(labels)}, "spec": clone(spec)}
    elif kind in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet"):
        props = {"metadata": metadata, "spec": {"selector": {"matchLabels": {"app": name}}, "template": template()}}
        if kind == "StatefulSet":
            props["spec"]["serviceName"] = name
    elif kind == "Job":
        props = {"metadata": metadata, "spec": {"backoffLimit": 0, "template": template()}}
    elif kind == "CronJob":
        props = {"metadata": metadata, "spec": {"schedule": "0 3 * * *", "jobTemplate": {"spec": {"template": template()}}}}
    elif kind == "LeaderWorkerSet":
        props = {
            "metadata": metadata,
            "spec": {
                "replicas": 1,
                "leaderWorkerTemplate": {"size": 2, "leaderTemplate": template(), "workerTemplate": template()},
            },
        }
    else:
        raise ValueError(kind)
    return resource(type_, name, {"apiVersion": api_version, "kind": kind, **props})


# ---- AKS pools and clusters -------------------------------------------------------------------

CLUSTER = "aks"
SYSTEM_POOL = {"name": "system", "vmSize": "Standard_D4s_v5", "count": 2, "mode": "System"}

POOL_STYLES = ("AgentPool", "AgentPool/v20250901", "agentPoolProfiles", "agentPoolProfiles/v20250901", "Resource/agentPools")
"""How a stack declares a pool: the typed AgentPool, inline in the cluster, or the generic ARM resource at a
preview API version (AKS-managed GPU pools)."""
"""A pool standalone (with and without an API-version segment) or inline in a ManagedCluster."""


def _token(kind: str, api_version: str | None) -> str:
    return f"azure-native:containerservice{'/' + api_version if api_version else ''}:{kind}"


def pool_props(
    vm_size: Any,
    *,
    taints: Any = None,
    labels: Any = None,
    mode: Any = "User",
    profile: Any = None,
) -> dict[str, Any]:
    """The properties an agent pool shares between ``AgentPool`` and ``agentPoolProfiles`` (None: not set)."""
    props = {
        "vmSize": vm_size,
        "count": 2,
        "mode": mode,
        "nodeTaints": taints,
        "nodeLabels": labels,
        "gpuInstanceProfile": profile,
    }
    return {k: v for k, v in props.items() if v is not None}


def agent_pool(name: str, vm_size: Any, *, api_version: str | None = None, **fields: Any) -> Resource:
    props = {"agentPoolName": name, "resourceGroupName": "rg", "resourceName": CLUSTER, **pool_props(vm_size, **fields)}
    return resource(_token("AgentPool", api_version), name, props)


def managed_cluster(
    *, channel: Any = "NodeImage", profiles: Sequence[Mapping[str, Any]] = (SYSTEM_POOL,), api_version: str | None = None
) -> Resource:
    """A ManagedCluster; ``channel`` None leaves ``nodeOSUpgradeChannel`` out."""
    upgrade = {"upgradeChannel": "patch", **({"nodeOSUpgradeChannel": channel} if channel is not None else {})}
    props = {
        "resourceGroupName": "rg",
        "resourceName": CLUSTER,
        "dnsPrefix": CLUSTER,
        "kubernetesVersion": "1.33",
        "autoUpgradeProfile": upgrade,
        "agentPoolProfiles": [dict(p) for p in profiles],
    }
    return resource(_token("ManagedCluster", api_version), CLUSTER, props)


def generic_pool(name: str, vm_size: Any, **fields: Any) -> Resource:
    """An agent pool through ``resources.Resource`` at the managed-GPU preview API version, as GpuNodePool makes it."""
    properties = {**pool_props(vm_size, **fields), "gpuProfile": {"driver": "Install", "nvidia": {"managementMode": "Managed"}}}
    props = {
        "resourceName": name,
        "resourceGroupName": "rg",
        "resourceProviderNamespace": "Microsoft.ContainerService",
        "parentResourcePath": f"managedClusters/{CLUSTER}",
        "resourceType": "agentPools",
        "apiVersion": "2026-01-02-preview",
        "properties": properties,
    }
    return resource("azure-native:resources:Resource", name, props)


def pool_stack(style: str, name: str, vm_size: Any, **fields: Any) -> list[Resource]:
    """A cluster with one pool under test, in ``style`` (see ``POOL_STYLES``)."""
    kind, _, api_version = style.partition("/")
    if kind == "Resource":
        return [managed_cluster(), generic_pool(name, vm_size, **fields)]
    if kind == "AgentPool":
        return [managed_cluster(), agent_pool(name, vm_size, api_version=api_version or None, **fields)]
    return [
        managed_cluster(profiles=[SYSTEM_POOL, {"name": name, **pool_props(vm_size, **fields)}], api_version=api_version or None)
    ]


def pool_where(style: str, name: str) -> str:
    """How violations name the pool under test of ``pool_stack``."""
    if style.startswith("Resource"):
        return f"Resource {name} (agentPools)"
    return f"AgentPool {name}" if style.startswith("AgentPool") else f"ManagedCluster {CLUSTER} agentPoolProfiles[1]"


# ---- other Kubernetes objects -----------------------------------------------------------------


def claim_template(name: str, device_class: str, *, namespace: str = NS) -> Resource:
    return resource(
        "kubernetes:resource.k8s.io/v1:ResourceClaimTemplate",
        name,
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"spec": {"devices": {"requests": [{"name": "req", "exactly": {"deviceClassName": device_class}}]}}},
        },
    )


def resource_claim(name: str, device_class: str, *, namespace: str = NS) -> Resource:
    return resource(
        "kubernetes:resource.k8s.io/v1:ResourceClaim",
        name,
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"devices": {"requests": [{"name": "req", "exactly": {"deviceClassName": device_class}}]}},
        },
    )


def device_class(name: str, driver: str) -> Resource:
    from ._device_class_fixtures import dra_class

    return dra_class(name, f'device.driver == "{driver}"')


def storage_class(
    name: str = "managed-premium-nocache",
    *,
    provisioner: Any = "disk.csi.azure.com",
    parameters: Any = None,
    api_version: str = "v1",
) -> Resource:
    props = {
        "apiVersion": f"storage.k8s.io/{api_version}",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
    }
    if parameters is not None:
        props["parameters"] = parameters
    return resource(f"kubernetes:storage.k8s.io/{api_version}:StorageClass", name, props)


HELM_TYPES = {
    "Chart": "kubernetes:helm.sh/v4:Chart",
    "Chart/v3": "kubernetes:helm.sh/v3:Chart",
    "Release": "kubernetes:helm.sh/v3:Release",
}


def helm(kind: str, name: str = "gpu-operator", *, chart: str = "nvidia/gpu-operator", version: Any = "v25.3.0") -> Resource:
    """A Helm chart or release; ``version`` None leaves it out."""
    props = {"chart": chart, "namespace": "gpu-operator", **({"version": version} if version is not None else {})}
    return resource(HELM_TYPES[kind], name, props)


# ---- RDMA ---------------------------------------------------------------------------------------

RDMA_POOL = "ndh100"
RDMA_SKU = "Standard_ND96isr_H100_v5"
RDMA_TEMPLATE = "rdma-nics"
HARDENED = {"capabilities": {"add": ["IPC_LOCK"], "drop": ["ALL"]}, "allowPrivilegeEscalation": False}


def rdma_container(name: str = "vllm", *, security: Any = HARDENED, nccl: Any = "0", **fields: Any) -> dict[str, Any]:
    """A container that claims the pod's RDMA NICs, compliant by default (``security``/``nccl`` None: not set)."""
    result = container(
        name,
        resources={"limits": {"nvidia.com/gpu": 8}, "claims": [{"name": "rdma"}]},
        **({"env": [{"name": "NCCL_IB_DISABLE", "value": nccl}]} if nccl is not None else {}),
        **({"securityContext": clone(security)} if security is not None else {}),
    )
    return {**result, **fields}


def rdma_spec(*containers: Mapping[str, Any], pool: Any = RDMA_POOL, **fields: Any) -> dict[str, Any]:
    """A pod spec that claims RDMA NICs through a ResourceClaimTemplate, pins ``pool`` and tolerates the GPU taint."""
    spec: dict[str, Any] = {
        "nodeSelector": {AGENTPOOL_LABEL: pool} if pool is not None else {},
        "tolerations": [dict(GPU_TOLERATION)],
        "resourceClaims": [{"name": "rdma", "resourceClaimTemplateName": RDMA_TEMPLATE}],
        "containers": [dict(c) for c in containers] or [rdma_container()],
    }
    return {**spec, **fields}


def rdma_stack(
    kind: str, spec: Mapping[str, Any] | None = None, *, vm_size: Any = RDMA_SKU, **pool_fields: Any
) -> list[Resource]:
    """A compliant RDMA stack: cluster, labelled ND pool, NIC claim template, and a workload of ``kind``."""
    pool_fields = {"taints": [GPU_TAINT], "labels": {RDMA_LABEL: "true"}, **pool_fields}
    return [
        managed_cluster(),
        agent_pool(RDMA_POOL, vm_size, **pool_fields),
        claim_template(RDMA_TEMPLATE, RDMA_DEVICE_CLASS),
        workload(kind, spec if spec is not None else rdma_spec()),
    ]


# ---- the case table and its two runners -------------------------------------------------------


Expected = str | tuple[str, ...]
"""A substring of a violation message, or several that must all be in the same message."""


def _fill(expected: Expected, context: Mapping[str, Any]) -> Expected:
    return expected.format(**context) if isinstance(expected, str) else tuple(part.format(**context) for part in expected)


@dataclass(frozen=True)
class Case:
    """One row of a rule's table: a stack and the violations the rule must report on it.

    ``build`` takes each variant in ``over`` (a workload kind, a pool style, or whatever the module
    varies). Expected messages are substrings, with placeholders ``{label}`` (``Deployment llm/engine``),
    ``{tpl}`` (``spec.template.spec.``), ``{spec}`` (``spec.template.spec``), ``{pod}`` (how a rule names the
    pod template: ``{label}``, followed by ``{spec}`` for a kind with several) for workload kinds and
    ``{pool}`` (``AgentPool gpu``) for pool styles. ``once`` messages appear once, ``per_template``
    ones once per pod template (twice for a LeaderWorkerSet); nothing else may be reported.
    ``config`` holds the rule's knobs, ``level`` an enforcementLevel override. ``bug`` marks a
    known rule bug as a strict xfail, with the exception it raises if any.
    """

    id: str
    build: Callable[[Any], list[Resource]]
    once: tuple[Expected, ...] = ()
    per_template: tuple[Expected, ...] = ()
    over: tuple[Any, ...] = (None,)
    config: Mapping[str, Any] = field(default_factory=dict)
    level: str | None = None
    bug: str | None = None
    raises: type[BaseException] | None = None

    def expected(self, variant: Any) -> tuple[list[Expected], list[Expected]]:
        """The substrings expected of the rule for ``variant``: (once, per template)."""
        if self.level == "disabled":
            return [], []
        context: dict[str, Any] = {}
        paths: tuple[str, ...] = ("",)
        if variant in KINDS:
            context["label"] = label(variant)
            paths = template_paths(variant)
        elif variant in POOL_STYLES:
            context["pool"] = pool_where(variant, "gpu")
        return [_fill(s, context) for s in self.once], [
            _fill(s, {**context, "tpl": p, "spec": p.rstrip("."), "pod": _pod(context, paths, p)})
            for s in self.per_template
            for p in paths
        ]

    def pack_config(self, rule: Rule) -> dict[str, dict[str, Any]]:
        """The pack config (``--policy-pack-config``) of this case: the rule's knobs and level."""
        settings = {**self.config, **({"enforcementLevel": self.level} if self.level else {})}
        return {rule.name: settings} if settings else {}


def _pod(context: Mapping[str, Any], paths: tuple[str, ...], path: str) -> str:
    """``PodTemplate.label``: the workload's label, and the template's path when the kind has several."""
    return f"{context['label']} {path.rstrip('.')}" if len(paths) > 1 else context.get("label", "")


def params(cases: Sequence[Case]) -> list[Any]:
    """One pytest param per (case, variant), a known bug as a strict xfail."""
    result = []
    for case in cases:
        for variant in case.over:
            case_id = case.id if variant is None else f"{case.id}-{variant}"
            result.append(pytest.param(case, variant, id=case_id, marks=_marks(case)))
    return result


def analyzer_params(cases: Sequence[Case]) -> list[Any]:
    """One pytest param per case: the analyzer runner takes all of a case's variants at once."""
    return [pytest.param(case, id=case.id, marks=_marks(case)) for case in cases]


def _marks(case: Case) -> list[Any]:
    return [pytest.mark.xfail(strict=True, reason=case.bug, raises=case.raises)] if case.bug else []


def assert_messages(found: Sequence[str], expected: Sequence[Expected]) -> None:
    """Each expected substring (or group of substrings) matches its own message, and no message is left over."""
    remaining = list(found)
    for substrings in expected:
        parts = (substrings,) if isinstance(substrings, str) else substrings
        match = next((m for m in remaining if all(part in m for part in parts)), None)
        assert match is not None, f"no violation containing {substrings!r}; got {remaining!r} (all: {list(found)!r})"
        remaining.remove(match)
    assert not remaining, f"unexpected violations {remaining!r}"


def check_pure(rule: Rule, case: Case, variant: Any) -> None:
    resources = case.build(variant)
    findings = [f for f in evaluate(resources, case.pack_config(rule)) if f.rule.name == rule.name]
    once, per_template = case.expected(variant)
    assert_messages([f.violation.message for f in findings], once + per_template)
    assert {f.level for f in findings} <= {case.level or rule.enforcement}


def rule_messages(rule: Rule, resources: Sequence[Resource]) -> list[str]:
    """The messages of one rule's violations over a stack, with the rule's default knobs."""
    return [v.message for v in rule.run(StackIndex.build(list(resources)))]


def to_engine(value: Any) -> Any:
    """Props as the engine marshals them: ``UNKNOWN`` becomes the engine's unknown sentinel."""
    if value is UNKNOWN:
        return ENGINE_UNKNOWN
    if isinstance(value, Mapping):
        return {k: to_engine(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_engine(v) for v in value]
    return value


def registered(r: Resource) -> Registered:
    return Registered(urn=r.urn, type=r.type, name=r.name, parent=None, custom=True, inputs=to_engine(r.props), options={})


def analyze(resources: Sequence[Resource], config: Mapping[str, Mapping[str, Any]] | None = None) -> list[Verdict]:
    """Verdicts of pulumi_policy's analyzer over a stack, asked for as a preview asks: Configure (when
    ``config`` is given), Analyze per resource, AnalyzeStack once."""
    servicer = new_servicer()
    if config is not None:
        servicer.Configure(configure_request(config), None)
    stack = [registered(r) for r in resources]
    responses = [servicer.Analyze(analyze_request(r), None) for r in stack]
    responses.append(servicer.AnalyzeStack(stack_request(stack), None))
    return verdicts(responses)


def _batches(case: Case) -> list[tuple[list[Resource], list[Expected]]]:
    """The case's variants as few stacks as possible, each with the messages expected of the rule.

    The workload-kind variants of a case share their other resources (cluster, pools, claims), so
    they go into one stack: each kind's workload is its own resource (its type is in the URN), and
    a ``once`` message of a shared resource is expected once.
    """
    if not all(v in KINDS for v in case.over):
        batches = []
        for variant in case.over:
            once, per_template = case.expected(variant)
            batches.append((case.build(variant), once + per_template))
        return batches
    merged: dict[str, Resource] = {}
    once: list[Expected] = []
    per_template: list[Expected] = []
    for variant in case.over:
        for r in case.build(variant):
            assert merged.setdefault(r.urn, r).props == r.props, f"variants of {case.id} disagree on {r.urn}"
        variant_once, variant_per_template = case.expected(variant)
        once += [m for m in variant_once if m not in once]
        per_template += variant_per_template
    return [(list(merged.values()), once + per_template)]


def check_analyzer(rule: Rule, case: Case) -> None:
    """The case through pulumi_policy's analyzer: the rule's verdicts and level, and parity of the whole pack with
    ``evaluate`` (same policies, levels, messages, URNs)."""
    pack_config = case.pack_config(rule)
    for resources, expected in _batches(case):
        found = analyze(resources, pack_config)

        assert not [v.message for v in found if "can't run policy" in v.message], "a rule fell back to the SDK's unknown handling"
        mine = [v for v in found if v.policy == rule.name]
        assert_messages([v.message for v in mine], expected)
        assert {v.enforcement for v in mine} <= {case.level or rule.enforcement}
        pure = sorted((f.rule.name, f.level, f.violation.message, f.violation.urn) for f in evaluate(resources, pack_config))
        assert sorted((v.policy, v.enforcement, v.message, v.urn) for v in found) == pure


def check_table(rule: Rule, cases: Sequence[Case]) -> None:
    """A rule's table has a compliant case, a failing case, a disabled and another level override, and sets
    each of the rule's knobs."""
    cases = [c for c in cases if not c.bug]
    assert any(not c.once and not c.per_template and not c.level for c in cases), "no compliant case"
    assert any(c.once or c.per_template for c in cases), "no failing case"
    assert any(c.level == "disabled" for c in cases) and any(c.level not in (None, "disabled") for c in cases), (
        "no level override"
    )
    for knob in rule.config:
        assert any(knob in c.config for c in cases), f"knob {knob} never set"


def table_tests(rule: Rule, cases: Sequence[Case]) -> tuple[Callable[..., None], ...]:
    """The tests of a rule's table, for its test module to bind as ``test_rule, test_through_analyzer,
    test_table_covers_the_rule``: each case and variant through ``check_pure``, each case through
    ``check_analyzer``, and ``check_table``."""

    @pytest.mark.parametrize(("case", "variant"), params(cases))
    def test_rule(case: Case, variant: Any) -> None:
        check_pure(rule, case, variant)

    @pytest.mark.parametrize("case", analyzer_params(cases))
    def test_through_analyzer(case: Case) -> None:
        check_analyzer(rule, case)

    def test_table_covers_the_rule() -> None:
        check_table(rule, cases)

    return test_rule, test_through_analyzer, test_table_covers_the_rule
