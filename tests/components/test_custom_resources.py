"""The custom resources the stacks render, checked against their pinned CRDs (``../shared/upstream/crds``) by the
planner's own validator: every rendered object passes, references between objects resolve, and a misspelled field
or a wrongly typed value is refused with its JSON path."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from aks_gpu_inference.components.serving.kaito_workspace import KaitoWorkspaceArgs
from aks_gpu_inference.planner.engine.values import kubernetes_object
from tests.conftest import CUSTOM_RESOURCE_GROUPS, STACKS, is_custom_resource, planned_stack, run_stack, stack_config
from tests.crd_check import check_gateway_references, crd_errors, custom_resources, pinned_crds

# ---- the stacks ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def stack_objects() -> dict[str, list[dict]]:
    """Every Kubernetes object each repo stack renders, as the API server would receive it."""
    rendered = {}
    for stack in STACKS:
        run = planned_stack(stack)
        rendered[stack] = [
            kubernetes_object(r) for r in run.resources if r.is_kubernetes and not r.type.startswith("kubernetes:helm.sh/")
        ]
    return rendered


ACTIVE_HOURS = {"start": "0 8 * * 1-5", "end": "0 20 * * 1-5", "timezone": "Europe/Amsterdam"}


@pytest.fixture(scope="module")
def scale_to_zero_objects() -> list[dict]:
    """The dev stack with its model scaling to zero inside active hours: the only render with a cron trigger."""
    config = stack_config("dev")
    config["aks-gpu-inference:models"][0]["autoscaling"] = {
        "min_replicas": 0,
        "max_replicas": 2,
        "scale_to_zero": True,
        "active_hours": ACTIVE_HOURS,
    }
    run = run_stack(config, "dev")
    return [kubernetes_object(r) for r in run.resources if r.is_kubernetes and not r.type.startswith("kubernetes:helm.sh/")]


def find(objects: list[dict], kind: str, name: str | None = None) -> dict:
    found = [o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    assert found, f"no {kind} {name or ''} rendered"
    return found[0]


def test_every_custom_resource_the_stacks_render_has_a_pinned_crd(stack_objects):
    crds = pinned_crds()
    rendered = [o for objects in stack_objects.values() for o in objects]
    assert [(o["apiVersion"], o["kind"]) for o in custom_resources(rendered) if crds.for_object(o) is None] == []
    # The tests find custom resources by conftest's list of groups: it must miss none that has a CRD.
    assert {o["apiVersion"] for o in rendered if crds.for_object(o) and not is_custom_resource(o)} == set()
    # Every listed group has its CRDs pinned, also one only a chart renders (InferencePool, by the inferencepool chart).
    assert {group for group, _ in crds} >= CUSTOM_RESOURCE_GROUPS


@pytest.mark.parametrize("stack", STACKS)
def test_every_rendered_custom_resource_matches_its_pinned_crd(stack_objects, stack):
    found = custom_resources(stack_objects[stack])
    assert found, f"{stack} renders no custom resources"
    assert refused(found) == {}


def refused(objects: list[dict]) -> dict[str, list[str]]:
    """The pinned CRDs' errors per object that has any."""
    problems = {f"{o['kind']} {o['metadata']['name']}": crd_errors(o) for o in objects}
    return {name: errors for name, errors in problems.items() if errors}


GATEWAY_KINDS = {
    "Gateway",
    "GatewayClass",
    "BackendTLSPolicy",
    "EnvoyProxy",
    "ClientTrafficPolicy",
    "SecurityPolicy",
    "BackendTrafficPolicy",
    "Backend",
    "EnvoyExtensionPolicy",
    "ReferenceGrant",
    "AIGatewayRoute",
    "AIServiceBackend",
    "BackendSecurityPolicy",
}
"""What the dev stack's gateway section (SemanticRouterGateway) renders besides its two PodMonitors."""


def test_the_stacks_render_the_expected_custom_resources(stack_objects):
    kinds = {stack: sorted(o["kind"] for o in custom_resources(objects)) for stack, objects in stack_objects.items()}
    model_kinds = {
        stack: sorted(o["kind"] for o in custom_resources(objects) if o["kind"] not in GATEWAY_KINDS and not gateway_monitor(o))
        for stack, objects in stack_objects.items()
    }
    # The model's own objects, unchanged by the gateway.
    assert model_kinds["dev"] == ["PodMonitor", "ScaledObject", "TriggerAuthentication"]
    assert model_kinds["prod"] == ["PodMonitor", "Workspace"]
    # The gateway path: every kind once per gateway, backend kinds once per backend (llama-8b and gpt-5.5),
    # and a TLS policy only for the 443 (Azure OpenAI) backend.
    per_backend = {"Backend": 2, "AIServiceBackend": 2, "BackendSecurityPolicy": 2}
    gateway = {k: kinds["dev"].count(k) for k in GATEWAY_KINDS}
    assert gateway == {k: per_backend.get(k, 1) for k in GATEWAY_KINDS}
    assert sorted(o["metadata"]["name"] for o in custom_resources(stack_objects["dev"]) if gateway_monitor(o)) == [
        "gateway-gateway",
        "gateway-router",
    ]
    assert not set(kinds["prod"]) & GATEWAY_KINDS, "prod has no gateway section"


CHART_OWNED_PODS = {
    # Envoy Gateway labels each proxy pod it creates with its Gateway (gateway-helm / the infra translator).
    "envoy-gateway-system": "gateway.envoyproxy.io/owning-gateway-name",
    # The semantic-router Helm chart's release label.
    "vllm-semantic-router-system": "app.kubernetes.io/instance",
}
"""Namespaces whose scraped pods a controller or a chart creates: the program renders no Deployment to match."""


def gateway_monitor(obj: dict) -> bool:
    return obj["kind"] == "PodMonitor" and obj["metadata"].get("namespace") in CHART_OWNED_PODS


REFERRING_KINDS = {"ScaledObject", "PodMonitor", "Gateway"}
"""The kinds whose references ``check_references`` follows (a Gateway stands for the whole gateway section)."""


@pytest.mark.parametrize("stack", STACKS)
def test_references_between_rendered_objects_resolve(stack_objects, stack):
    if not {o["kind"] for o in custom_resources(stack_objects[stack])} & REFERRING_KINDS:
        pytest.skip(f"Pulumi.{stack}.yaml renders no {' / '.join(sorted(REFERRING_KINDS))}")
    check_references(stack_objects[stack])


def test_scale_to_zero_render_matches_its_pinned_crds_and_resolves(scale_to_zero_objects):
    found = custom_resources(scale_to_zero_objects)
    assert refused(found) == {}
    check_references(scale_to_zero_objects)
    spec = find(found, "ScaledObject")["spec"]
    assert spec["minReplicaCount"] == 0
    assert [t["type"] for t in spec["triggers"]] == ["prometheus", "cron"]
    # The cron scaler's metadata is a map of strings to the CRD: only this comparison checks its keys and values.
    assert spec["triggers"][1]["metadata"] == {**ACTIVE_HOURS, "desiredReplicas": "1"}


def test_scaled_objects_scale_in_through_the_hpa_behavior(stack_objects, scale_to_zero_objects):
    scalers = [o for o in stack_objects["dev"] + scale_to_zero_objects if o["kind"] == "ScaledObject"]
    assert len(scalers) == 2
    for obj in scalers:
        behavior = obj["spec"]["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]
        assert behavior["scaleDown"]["stabilizationWindowSeconds"] == 600


@pytest.mark.parametrize("stack", STACKS)
def test_pod_monitors_carry_azures_label_limits_and_the_instance_label(stack_objects, stack):
    if not stack_config(stack).get("aks-gpu-inference:models"):
        pytest.skip(f"Pulumi.{stack}.yaml serves no models, so it has no PodMonitors")
    found = [o for o in custom_resources(stack_objects[stack]) if o["kind"] == "PodMonitor"]
    assert found
    for obj in found:
        spec = obj["spec"]
        assert (spec.get("labelLimit"), spec.get("labelNameLengthLimit"), spec.get("labelValueLengthLimit")) == (63, 511, 1023)
        # The model's monitors tag every series with the model (the dashboards group by it); the gateway's and
        # the router's monitors scrape one shared proxy/router each and need no such label.
        if not gateway_monitor(obj):
            assert spec.get("podTargetLabels") == ["app.kubernetes.io/instance"]
    assert any(not gateway_monitor(o) for o in found), "every model has its PodMonitor"


def check_references(objects: list[dict]) -> None:
    check_gateway_references(objects)
    deployments = [o for o in objects if o["kind"] == "Deployment"]
    for obj in custom_resources(objects):
        namespace = obj["metadata"].get("namespace")
        spec = obj.get("spec", {})
        if obj["kind"] == "ScaledObject":
            target = find(
                [d for d in deployments if d["metadata"]["namespace"] == namespace], "Deployment", spec["scaleTargetRef"]["name"]
            )
            assert target["spec"]["replicas"] == spec.get("minReplicaCount")
            for trigger in spec["triggers"]:
                if trigger["type"] == "cron":
                    assert "authenticationRef" not in trigger, "the cron scaler reads the clock, not a secured source"
                    continue
                auth = [o for o in objects if o["kind"] == "TriggerAuthentication" and o["metadata"]["namespace"] == namespace]
                assert "authenticationRef" in trigger, f"{trigger['type']} trigger without authenticationRef"
                find(auth, "TriggerAuthentication", trigger["authenticationRef"]["name"])
        if obj["kind"] == "PodMonitor" and gateway_monitor(obj):
            # Pods created by a controller or a chart: check the selector names the label they carry.
            assert CHART_OWNED_PODS[namespace] in spec["selector"]["matchLabels"], obj["metadata"]["name"]
            continue
        if obj["kind"] == "PodMonitor":
            selected = [
                d
                for d in deployments
                if d["metadata"]["namespace"] == namespace
                and spec["selector"]["matchLabels"].items() <= d["spec"]["template"]["metadata"]["labels"].items()
            ]
            assert selected, f"PodMonitor {obj['metadata']['name']} selects no pods"
            for d in selected:
                pod = d["spec"]["template"]["spec"]
                sidecars = [c for c in pod.get("initContainers", []) if c.get("restartPolicy") == "Always"]
                ports = {p.get("name") for c in pod["containers"] + sidecars for p in c.get("ports", [])}
                for endpoint in spec["podMetricsEndpoints"]:
                    assert endpoint["port"] in ports, f"{d['metadata']['name']} has no port named {endpoint['port']}"


def test_every_ai_service_backend_is_routed_and_secured(stack_objects):
    found = custom_resources(stack_objects["dev"])
    backends = {o["metadata"]["name"] for o in found if o["kind"] == "AIServiceBackend"}
    (route,) = [o["spec"] for o in found if o["kind"] == "AIGatewayRoute"]
    routed = {b["name"] for rule in route["rules"] for b in rule["backendRefs"]}
    secured = {t["name"] for o in found if o["kind"] == "BackendSecurityPolicy" for t in o["spec"]["targetRefs"]}
    assert routed == backends == secured == {"llama-8b", "aoai-gpt-5-5"}


def test_a_gateway_reference_to_a_missing_object_is_caught(stack_objects):
    objects = copy.deepcopy(stack_objects["dev"])
    route = find(objects, "AIGatewayRoute")
    route["spec"]["rules"][0]["backendRefs"][0]["name"] = "llama-70b"
    with pytest.raises(AssertionError, match="llama-70b"):
        check_gateway_references(objects)
    objects = copy.deepcopy(stack_objects["dev"])
    find(objects, "Gateway")["spec"]["infrastructure"]["parametersRef"]["name"] = "other"
    with pytest.raises(AssertionError, match="parametersRef"):
        check_gateway_references(objects)


def access_secret_workspace() -> dict:
    return KaitoWorkspaceArgs(
        name="llama", preset="llama-3.1-8b-instruct", instance_type="Standard_NC24ads_A100_v4", model_access_secret="hf-token"
    ).manifest()


def test_kaito_workspace_with_an_access_secret_matches_its_pinned_crd():
    manifest = access_secret_workspace()
    assert crd_errors(manifest) == []
    assert manifest["inference"]["preset"]["presetOptions"]["modelAccessSecret"] == "hf-token"


# ---- negative: the pinned CRD refuses a misspelled field or a wrongly typed value -----------------


def renamed(obj: dict, path: tuple, new_key: str) -> dict:
    """A copy of ``obj`` with the key at ``path`` (keys and list indexes) renamed to ``new_key``."""
    broken = copy.deepcopy(obj)
    parent = broken
    for part in path[:-1]:
        parent = parent[part]
    parent[new_key] = parent.pop(path[-1])
    return broken


def replaced(obj: dict, path: tuple, value: Any) -> dict:
    broken = copy.deepcopy(obj)
    parent = broken
    for part in path[:-1]:
        parent = parent[part]
    parent[path[-1]] = value
    return broken


def json_path(path: tuple) -> str:
    """``("spec", "triggers", 0, "name")`` as the validator writes it: ``spec.triggers[0].name``."""
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).removeprefix(".")


def sample(stack_objects, kind: str) -> dict:
    return copy.deepcopy(find(stack_objects["dev"] + stack_objects["prod"], kind))


def assert_unknown_field_refused(obj: dict, path: tuple, misspelling: str) -> None:
    assert crd_errors(obj) == [], "the unchanged object passes"
    where = json_path((*path[:-1], misspelling))
    errors = crd_errors(renamed(obj, path, misspelling))
    assert any(e.startswith(f"{where}: unknown field") for e in errors), errors


def assert_value_refused(obj: dict, path: tuple, value: Any, expected: str) -> None:
    assert crd_errors(obj) == [], "the unchanged object passes"
    errors = crd_errors(replaced(obj, path, value))
    assert any(expected in e for e in errors), errors


BEHAVIOR = ("spec", "advanced", "horizontalPodAutoscalerConfig", "behavior")


@pytest.mark.parametrize(
    "path, misspelling",
    [
        (("spec", "advanced", "horizontalPodAutoscalerConfig"), "horizontalPodAutoScalerConfig"),
        ((*BEHAVIOR, "scaleDown"), "scaledown"),
        ((*BEHAVIOR, "scaleDown", "stabilizationWindowSeconds"), "stabilizationWindow"),
    ],
)
def test_a_misspelled_behavior_field_is_refused(scale_to_zero_objects, path, misspelling):
    assert_unknown_field_refused(find(scale_to_zero_objects, "ScaledObject"), path, misspelling)


@pytest.mark.parametrize(
    "path, value, expected",
    [
        (
            ("spec", "triggers", 1, "metadata", "desiredReplicas"),
            1,
            "spec.triggers[1].metadata[desiredReplicas]: must be of type string, got integer 1",
        ),
        (
            (*BEHAVIOR, "scaleDown", "stabilizationWindowSeconds"),
            "600",
            f'{json_path(BEHAVIOR)}.scaleDown.stabilizationWindowSeconds: must be of type integer, got string "600"',
        ),
    ],
)
def test_a_wrongly_typed_cron_or_behavior_value_is_refused(scale_to_zero_objects, path, value, expected):
    assert_value_refused(find(scale_to_zero_objects, "ScaledObject"), path, value, expected)


@pytest.mark.parametrize(
    "kind, path, misspelling",
    [
        ("ScaledObject", ("spec",), "specs"),
        ("ScaledObject", ("spec", "minReplicaCount"), "minReplicasCount"),
        ("ScaledObject", ("spec", "cooldownPeriod"), "coolDownPeriod"),
        ("ScaledObject", ("spec", "scaleTargetRef", "name"), "deploymentName"),
        ("ScaledObject", ("spec", "triggers", 0, "authenticationRef"), "authRef"),
        ("TriggerAuthentication", ("spec", "podIdentity"), "podIdentities"),
        ("TriggerAuthentication", ("spec", "podIdentity", "identityId"), "identityID"),
        ("PodMonitor", ("spec", "podMetricsEndpoints"), "podMetricsEndpoint"),
        ("PodMonitor", ("spec", "selector", "matchLabels"), "matchLabel"),
        ("PodMonitor", ("spec", "podMetricsEndpoints", 0, "path"), "metricsPath"),
        ("Workspace", ("resource",), "resources"),
        ("Workspace", ("resource", "instanceType"), "instancetype"),
        ("Workspace", ("resource", "labelSelector", "matchLabels"), "matchlabels"),
        ("Workspace", ("inference", "preset", "name"), "presetName"),
        ("Gateway", ("spec", "infrastructure", "parametersRef"), "parameterRef"),
        ("GatewayClass", ("spec", "controllerName"), "controller"),
        ("BackendTLSPolicy", ("spec", "validation", "wellKnownCACertificates"), "wellKnownCACerts"),
        ("EnvoyProxy", ("spec", "provider", "kubernetes", "envoyService"), "envoyServices"),
        ("ClientTrafficPolicy", ("spec", "connection", "bufferLimit"), "bufferLimits"),
        ("SecurityPolicy", ("spec", "apiKeyAuth", "forwardClientIDHeader"), "forwardClientIdHeader"),
        ("BackendTrafficPolicy", ("spec", "rateLimit", "global", "rules", 0, "clientSelectors"), "clientSelector"),
        ("Backend", ("spec", "endpoints", 0, "fqdn", "hostname"), "host"),
        ("EnvoyExtensionPolicy", ("spec", "extProc", 0, "processingMode"), "processing"),
        ("ReferenceGrant", ("spec", "to", 0, "kind"), "kinds"),
        ("AIGatewayRoute", ("spec", "llmRequestCosts"), "llmRequestCost"),
        ("AIServiceBackend", ("spec", "schema"), "apiSchema"),
        ("BackendSecurityPolicy", ("spec", "apiKey", "secretRef"), "secretName"),
    ],
)
def test_a_misspelled_field_is_refused(stack_objects, kind, path, misspelling):
    assert_unknown_field_refused(sample(stack_objects, kind), path, misspelling)


def test_a_misspelled_preset_option_is_refused():
    path = ("inference", "preset", "presetOptions", "modelAccessSecret")
    assert_unknown_field_refused(access_secret_workspace(), path, "modelAccessSecrets")


def test_workspace_fields_under_spec_are_refused(stack_objects):
    obj = sample(stack_objects, "Workspace")
    nested = {k: v for k, v in obj.items() if k not in ("resource", "inference")}
    nested["spec"] = {"resource": obj["resource"], "inference": obj["inference"]}
    assert any(e.startswith("spec: unknown field") for e in crd_errors(nested))


RATE_LIMIT_RULE = ("spec", "rateLimit", "global", "rules", 0)
TOKENS = {"namespace": "io.envoy.ai_gateway", "key": "llm_total_token"}


@pytest.mark.parametrize(
    "kind, path, value, expected",
    [
        (
            "ScaledObject",
            ("spec", "triggers", 0, "metadata", "threshold"),
            5,
            "spec.triggers[0].metadata[threshold]: must be of type string, got integer 5",
        ),
        ("ScaledObject", ("spec", "minReplicaCount"), "1", 'spec.minReplicaCount: must be of type integer, got string "1"'),
        (
            "TriggerAuthentication",
            ("spec", "podIdentity", "provider"),
            "azure",
            'spec.podIdentity.provider: unsupported value "azure": must be one of "azure-workload"',
        ),
        (
            "PodMonitor",
            ("spec", "podMetricsEndpoints", 0, "port"),
            8000,
            "spec.podMetricsEndpoints[0].port: must be of type string, got integer 8000",
        ),
        (
            "PodMonitor",
            ("spec", "podMetricsEndpoints", 0, "interval"),
            "30 seconds",
            'spec.podMetricsEndpoints[0].interval: "30 seconds" does not match the pattern',
        ),
        ("PodMonitor", ("spec", "labelLimit"), "63", 'spec.labelLimit: must be of type integer, got string "63"'),
        (
            "PodMonitor",
            ("spec", "podTargetLabels"),
            "app.kubernetes.io/instance",
            'spec.podTargetLabels: must be of type array, got string "app.kubernetes.io/instance"',
        ),
        ("Gateway", ("spec", "listeners", 0, "port"), "80", 'spec.listeners[0].port: must be of type integer, got string "80"'),
        (
            "AIServiceBackend",
            ("spec", "backendRef", "kind"),
            "Service",
            "spec.backendRef: BackendRef must be a Backend resource of Envoy Gateway",
        ),
        (
            "AIServiceBackend",
            ("spec", "schema", "name"),
            "Azure",
            'spec.schema.name: unsupported value "Azure": must be one of "OpenAI"',
        ),
        (
            "BackendSecurityPolicy",
            ("spec", "type"),
            "AzureAPIKey",
            "spec: When type is AzureAPIKey, only azureAPIKey field should be set",
        ),
        (
            "BackendTrafficPolicy",
            (*RATE_LIMIT_RULE, "limit", "unit"),
            "Hours",
            f'{json_path(RATE_LIMIT_RULE)}.limit.unit: unsupported value "Hours": must be one of "Second", "Minute", "Hour"',
        ),
        (
            "BackendTrafficPolicy",
            (*RATE_LIMIT_RULE, "cost", "request"),
            {"from": "Number", "number": 0, "metadata": TOKENS},
            f"{json_path(RATE_LIMIT_RULE)}.cost.request: only one of number or metadata can be specified",
        ),
        (
            "BackendTLSPolicy",
            ("spec", "validation", "wellKnownCACertificates"),
            None,
            "spec.validation: must specify either CACertificateRefs or WellKnownCACertificates",
        ),
        (
            "EnvoyExtensionPolicy",
            ("spec", "extProc", 0, "processingMode", "request", "body"),
            "Buffer",
            'spec.extProc[0].processingMode.request.body: unsupported value "Buffer": must be one of',
        ),
    ],
)
def test_a_wrongly_typed_value_is_refused(stack_objects, kind, path, value, expected):
    assert_value_refused(sample(stack_objects, kind), path, value, expected)
