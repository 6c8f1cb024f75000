"""The custom resources the stacks render, checked against models of their CRDs (``tests/crd_models.py``):
every rendered object matches its model, references between objects resolve, and each model refuses
a misspelled field or a wrongly typed value."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from pydantic import ValidationError

from components.serving.kaito_workspace import KaitoWorkspaceArgs
from planner.render import kubernetes_object
from tests.conftest import CUSTOM_RESOURCE_GROUPS, STACKS, planned_stack, run_stack, stack_config
from tests.crd_models import (
    MODELS,
    AIGatewayRoute,
    BackendSecurityPolicy,
    CronTriggerMetadata,
    PodMonitor,
    ScaledObject,
    Workspace,
    check_gateway_references,
    custom_resources,
)

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


SCHEMA_CHECKED = {"ray.io"}
"""Groups checked against their pinned CRD's OpenAPI schema (and CEL rules) instead of a hand model:
KubeRay's CRDs are in ../shared/upstream, and the planner's validator reads them."""


POD_TEMPLATES_CHECKED = {"nvidia.com"}
"""Groups whose CRD ships inside an operator image (Dynamo 1.x applies it from its crd-apply init container)
and is not among the pinned upstream files: checked against that CRD once it is pinned there, and until
then each pod template they carry is checked as a core/v1 PodTemplateSpec of the cluster's version."""


def test_every_custom_resource_group_has_a_model_or_is_rendered_only_by_charts():
    modelled = {api.split("/")[0] for api, _ in MODELS}
    # InferencePool (inference.networking.k8s.io) is rendered by the inferencepool Helm chart, not by the program.
    assert CUSTOM_RESOURCE_GROUPS - modelled - SCHEMA_CHECKED - POD_TEMPLATES_CHECKED == {"inference.networking.k8s.io"}
    assert {"gateway.networking.k8s.io", "gateway.envoyproxy.io", "aigateway.envoyproxy.io"} <= modelled


@pytest.mark.parametrize("stack", STACKS)
def test_every_rendered_custom_resource_matches_its_model(stack_objects, stack):
    found = custom_resources(stack_objects[stack])
    assert found, f"{stack} renders no custom resources"
    for obj in found:
        key = (obj["apiVersion"], obj["kind"])
        if obj["apiVersion"].split("/")[0] in SCHEMA_CHECKED:
            _check_against_pinned_crd(obj)
            continue
        if obj["apiVersion"].split("/")[0] in POD_TEMPLATES_CHECKED:
            _check_pod_templates(obj)
            continue
        assert key in MODELS, f"no model for {key} ({obj['metadata']['name']}); add one from the CRD's source"
        MODELS[key].model_validate(obj)


def _check_against_pinned_crd(obj: dict) -> None:
    from planner.crd_files import crd_index
    from planner.upstream import crds_dir, missing_reason

    if crds_dir() is None:
        pytest.skip(missing_reason())
    result = crd_index(crds_dir()).validate(obj)
    assert result is not None, f"no pinned CRD for {obj['apiVersion']} {obj['kind']}"
    assert not result.errors, f"{obj['kind']} {obj['metadata']['name']}: {result.errors}"


def _check_pod_templates(obj: dict) -> None:
    """Against the pinned CRD where there is one; else every ``spec.components[].podTemplate`` strictly as a
    Kubernetes 1.35 PodTemplateSpec (kubernetes-validate's copy of the upstream OpenAPI)."""
    import kubernetes_validate

    from planner.crd_files import crd_index
    from planner.upstream import crds_dir

    result = crd_index(crds_dir()).validate(obj) if crds_dir() else None
    if result is not None:
        assert not result.errors, f"{obj['kind']} {obj['metadata']['name']}: {result.errors}"
        return
    components = obj["spec"]["components"]
    assert components, f"{obj['kind']} {obj['metadata']['name']} has no components"
    for component in components:
        template = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": component["name"]}}
        kubernetes_validate.validate({**template, "template": component["podTemplate"]}, "1.35", strict=True)


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


@pytest.mark.parametrize("stack", STACKS)
def test_references_between_rendered_objects_resolve(stack_objects, stack):
    check_references(stack_objects[stack])


def test_scale_to_zero_render_matches_the_models_and_resolves(scale_to_zero_objects):
    found = custom_resources(scale_to_zero_objects)
    for obj in found:
        MODELS[(obj["apiVersion"], obj["kind"])].model_validate(obj)
    check_references(scale_to_zero_objects)
    spec = ScaledObject.model_validate(find(found, "ScaledObject")).spec
    assert spec.minReplicaCount == 0
    assert [t.type for t in spec.triggers] == ["prometheus", "cron"]
    CronTriggerMetadata.model_validate(spec.triggers[1].metadata)


def test_scaled_objects_scale_in_through_the_hpa_behavior(stack_objects, scale_to_zero_objects):
    scalers = [o for o in stack_objects["dev"] + scale_to_zero_objects if o["kind"] == "ScaledObject"]
    assert len(scalers) == 2
    for obj in scalers:
        spec = ScaledObject.model_validate(obj).spec
        assert spec.advanced.horizontalPodAutoscalerConfig.behavior.scaleDown.stabilizationWindowSeconds == 600


@pytest.mark.parametrize("stack", STACKS)
def test_pod_monitors_carry_azures_label_limits_and_the_instance_label(stack_objects, stack):
    if not stack_config(stack).get("aks-gpu-inference:models"):
        pytest.skip(f"Pulumi.{stack}.yaml serves no models, so it has no PodMonitors")
    found = [o for o in custom_resources(stack_objects[stack]) if o["kind"] == "PodMonitor"]
    assert found
    for obj in found:
        spec = PodMonitor.model_validate(obj).spec
        assert (spec.labelLimit, spec.labelNameLengthLimit, spec.labelValueLengthLimit) == (63, 511, 1023)
        # The model's monitors tag every series with the model (the dashboards group by it); the gateway's and
        # the router's monitors scrape one shared proxy/router each and need no such label.
        if not gateway_monitor(obj):
            assert spec.podTargetLabels == ["app.kubernetes.io/instance"]
    assert any(not gateway_monitor(o) for o in found), "every model has its PodMonitor"


def check_references(objects: list[dict]) -> None:
    check_gateway_references(objects)
    deployments = [o for o in objects if o["kind"] == "Deployment"]
    for obj in custom_resources(objects):
        namespace = obj["metadata"].get("namespace")
        if obj["kind"] == "ScaledObject":
            spec = ScaledObject.model_validate(obj).spec
            target = find(
                [d for d in deployments if d["metadata"]["namespace"] == namespace], "Deployment", spec.scaleTargetRef.name
            )
            assert target["spec"]["replicas"] == spec.minReplicaCount
            for trigger in spec.triggers:
                if trigger.type == "cron":
                    assert trigger.authenticationRef is None, "the cron scaler reads the clock, not a secured source"
                    continue
                auth = [o for o in objects if o["kind"] == "TriggerAuthentication" and o["metadata"]["namespace"] == namespace]
                assert trigger.authenticationRef is not None, f"{trigger.type} trigger without authenticationRef"
                find(auth, "TriggerAuthentication", trigger.authenticationRef.name)
        if obj["kind"] == "PodMonitor" and gateway_monitor(obj):
            # Pods created by a controller or a chart: check the selector names the label they carry.
            spec = PodMonitor.model_validate(obj).spec
            assert CHART_OWNED_PODS[namespace] in spec.selector.matchLabels, obj["metadata"]["name"]
            continue
        if obj["kind"] == "PodMonitor":
            spec = PodMonitor.model_validate(obj).spec
            selected = [
                d
                for d in deployments
                if d["metadata"]["namespace"] == namespace
                and spec.selector.matchLabels.items() <= d["spec"]["template"]["metadata"]["labels"].items()
            ]
            assert selected, f"PodMonitor {obj['metadata']['name']} selects no pods"
            for d in selected:
                pod = d["spec"]["template"]["spec"]
                sidecars = [c for c in pod.get("initContainers", []) if c.get("restartPolicy") == "Always"]
                ports = {p.get("name") for c in pod["containers"] + sidecars for p in c.get("ports", [])}
                for endpoint in spec.podMetricsEndpoints:
                    assert endpoint.port in ports, f"{d['metadata']['name']} has no port named {endpoint.port}"


@pytest.mark.parametrize("stack", STACKS)
def test_gateway_references_resolve(stack_objects, stack):
    check_gateway_references(stack_objects[stack])


def test_every_ai_service_backend_is_routed_and_secured(stack_objects):
    found = custom_resources(stack_objects["dev"])
    backends = {o["metadata"]["name"] for o in found if o["kind"] == "AIServiceBackend"}
    (route,) = [AIGatewayRoute.model_validate(o).spec for o in found if o["kind"] == "AIGatewayRoute"]
    routed = {b.name for rule in route.rules for b in rule.backendRefs}
    secured = {
        t.name
        for o in found
        if o["kind"] == "BackendSecurityPolicy"
        for t in BackendSecurityPolicy.model_validate(o).spec.targetRefs
    }
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


def test_kaito_workspace_with_an_access_secret_matches_the_model():
    args = {"name": "llama", "preset": "llama-3.1-8b-instruct", "instance_type": "Standard_NC24ads_A100_v4"}
    manifest = KaitoWorkspaceArgs(**args, model_access_secret="hf-token").manifest()
    workspace = Workspace.model_validate(manifest)
    assert workspace.inference.preset.presetOptions.modelAccessSecret == "hf-token"


# ---- negative: each model refuses a misspelled field --------------------------------------------


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


def sample(stack_objects, kind: str) -> dict:
    return copy.deepcopy(find(stack_objects["dev"] + stack_objects["prod"], kind))


@pytest.mark.parametrize(
    "path, misspelling",
    [
        (("spec", "triggers", 1, "metadata", "desiredReplicas"), "desiredReplica"),
        (("spec", "triggers", 1, "metadata", "timezone"), "timeZone"),
        (("spec", "advanced", "horizontalPodAutoscalerConfig"), "horizontalPodAutoScalerConfig"),
        (("spec", "advanced", "horizontalPodAutoscalerConfig", "behavior", "scaleDown"), "scaledown"),
        (
            ("spec", "advanced", "horizontalPodAutoscalerConfig", "behavior", "scaleDown", "stabilizationWindowSeconds"),
            "stabilizationWindow",
        ),
    ],
)
def test_a_misspelled_cron_or_behavior_field_is_refused(scale_to_zero_objects, path, misspelling):
    obj = find(scale_to_zero_objects, "ScaledObject")
    ScaledObject.model_validate(obj)
    with pytest.raises(ValidationError) as caught:
        ScaledObject.model_validate(renamed(obj, path, misspelling))
    assert any(e["type"] == "extra_forbidden" and e["loc"][-1] == misspelling for e in caught.value.errors())


@pytest.mark.parametrize(
    "path, value, expected",
    [
        (("spec", "triggers", 1, "metadata", "desiredReplicas"), 1, "valid string"),
        (("spec", "triggers", 1, "metadata", "desiredReplicas"), "one", "replica count"),
        (("spec", "triggers", 1, "metadata", "timezone"), "CET+1", "not an IANA time zone"),
        (("spec", "triggers", 1, "metadata", "start"), "8am", "String should match pattern"),
        (("spec", "triggers", 1, "metadata", "end"), "0 8 * * 1-5", "start and end should not be the same"),
        (
            ("spec", "advanced", "horizontalPodAutoscalerConfig", "behavior", "scaleDown", "stabilizationWindowSeconds"),
            "600",
            "valid integer",
        ),
        (
            ("spec", "advanced", "horizontalPodAutoscalerConfig", "behavior", "scaleDown", "stabilizationWindowSeconds"),
            7200,
            "less than or equal to 3600",
        ),
        (
            ("spec", "advanced", "horizontalPodAutoscalerConfig", "behavior", "scaleDown", "selectPolicy"),
            "Maximum",
            "'Max', 'Min' or 'Disabled'",
        ),
    ],
)
def test_a_wrongly_typed_cron_or_behavior_value_is_refused(scale_to_zero_objects, path, value, expected):
    obj = find(scale_to_zero_objects, "ScaledObject")
    with pytest.raises(ValidationError, match=re.escape(expected)):
        ScaledObject.model_validate(replaced(obj, path, value))


@pytest.mark.parametrize(
    "kind, path, misspelling",
    [
        ("ScaledObject", ("spec",), "specs"),
        ("ScaledObject", ("spec", "minReplicaCount"), "minReplicasCount"),
        ("ScaledObject", ("spec", "cooldownPeriod"), "coolDownPeriod"),
        ("ScaledObject", ("spec", "scaleTargetRef", "name"), "deploymentName"),
        ("ScaledObject", ("spec", "triggers", 0, "authenticationRef"), "authRef"),
        ("ScaledObject", ("spec", "triggers", 0, "metadata", "serverAddress"), "serverAdress"),
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
    obj = sample(stack_objects, kind)
    model = MODELS[(obj["apiVersion"], kind)]
    model.model_validate(obj)
    with pytest.raises(ValidationError) as caught:
        model.model_validate(renamed(obj, path, misspelling))
    assert any(e["type"] == "extra_forbidden" and e["loc"][-1] == misspelling for e in caught.value.errors())


def test_a_misspelled_preset_option_is_refused():
    manifest = KaitoWorkspaceArgs(
        name="llama", preset="llama-3.1-8b-instruct", instance_type="Standard_NC24ads_A100_v4", model_access_secret="hf-token"
    ).manifest()
    with pytest.raises(ValidationError, match="modelAccessSecrets"):
        Workspace.model_validate(
            renamed(manifest, ("inference", "preset", "presetOptions", "modelAccessSecret"), "modelAccessSecrets")
        )


def test_workspace_fields_under_spec_are_refused(stack_objects):
    obj = sample(stack_objects, "Workspace")
    nested = {k: v for k, v in obj.items() if k not in ("resource", "inference")}
    nested["spec"] = {"resource": obj["resource"], "inference": obj["inference"]}
    with pytest.raises(ValidationError, match="spec"):
        Workspace.model_validate(nested)


@pytest.mark.parametrize(
    "kind, path, value, expected",
    [
        ("ScaledObject", ("spec", "triggers", 0, "metadata", "threshold"), 5, "valid string"),
        ("ScaledObject", ("spec", "triggers", 0, "metadata", "threshold"), "five", "could not convert"),
        ("ScaledObject", ("spec", "minReplicaCount"), "1", "valid integer"),
        ("ScaledObject", ("spec", "triggers"), [], "at least 1 item"),
        ("ScaledObject", ("spec", "idleReplicaCount"), 1, "idleReplicaCount must be less than minReplicaCount"),
        ("TriggerAuthentication", ("spec", "podIdentity", "provider"), "azure", "azure-workload"),
        ("PodMonitor", ("spec", "podMetricsEndpoints", 0, "port"), 8000, "valid string"),
        ("PodMonitor", ("spec", "podMetricsEndpoints", 0, "port"), "8000", "container port name"),
        ("PodMonitor", ("spec", "podMetricsEndpoints", 0, "interval"), "30 seconds", "String should match pattern"),
        ("PodMonitor", ("spec", "labelLimit"), "63", "valid integer"),
        ("PodMonitor", ("spec", "labelValueLengthLimit"), -1, "greater than or equal to 0"),
        ("PodMonitor", ("spec", "podTargetLabels"), "app.kubernetes.io/instance", "valid list"),
        ("PodMonitor", ("spec", "podTargetLabels"), ["app.kubernetes.io/"], "String should match pattern"),
        ("Workspace", ("resource", "count"), 0, "greater than or equal to 1"),
        ("Workspace", ("inference",), {"preset": {"name": "phi-4"}, "template": {}}, "exactly one of preset and template"),
        ("Gateway", ("spec", "listeners", 0, "port"), "80", "valid integer"),
        ("AIServiceBackend", ("spec", "backendRef", "kind"), "Service", "must be a Backend resource of Envoy Gateway"),
        ("AIServiceBackend", ("spec", "schema", "name"), "Azure", "'OpenAI'"),
        ("BackendSecurityPolicy", ("spec", "type"), "AzureAPIKey", "only azureAPIKey field should be set"),
        ("BackendTrafficPolicy", ("spec", "rateLimit", "global", "rules", 0, "limit", "unit"), "Hours", "'Hour'"),
        (
            "BackendTrafficPolicy",
            ("spec", "rateLimit", "global", "rules", 0, "cost", "request", "from"),
            "Metadata",
            "from Number",
        ),
        ("BackendTLSPolicy", ("spec", "validation", "wellKnownCACertificates"), None, "exactly one of caCertificateRefs"),
        ("EnvoyExtensionPolicy", ("spec", "extProc", 0, "processingMode", "request", "body"), "Buffer", "'Buffered'"),
    ],
)
def test_a_wrongly_typed_value_is_refused(stack_objects, kind, path, value, expected):
    obj = sample(stack_objects, kind)
    model = MODELS[(obj["apiVersion"], kind)]
    with pytest.raises(ValidationError, match=re.escape(expected)):
        model.model_validate(replaced(obj, path, value))
