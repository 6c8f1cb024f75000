"""Deployment simulation: each blocker kind is caught on a broken variant, with the object named;
the repository's stacks are clean. Charts are rendered from the project's profiles (no helm)."""

from __future__ import annotations

from datetime import date

import pulumi_kubernetes as k8s
import pytest
from pulumi_azure_native import containerservice

from aks_gpu_inference.planner import claims, deploy
from aks_gpu_inference.planner.cli import main
from aks_gpu_inference.planner.engine.program import Registered
from aks_gpu_inference.planner.inputs.upstream import missing_reason, upstream_dir
from tests.conftest import REPO, STACKS, expand_charts, planned_stack, run_components, run_stack, stack_config

AS_OF = date(2026, 12, 1)


def findings_of(run, as_of: date = AS_OF) -> list[deploy.Finding]:
    run, renders = expand_charts(run)
    model = deploy.build(run, renders, claims.check(run))
    return deploy.run(model, as_of, upstream_dir())


def blockers(found: list[deploy.Finding], check: str) -> list[deploy.Finding]:
    return [f for f in found if f.level == "blocker" and f.check == check]


@pytest.fixture(scope="module")
def stack_runs():
    return {stack: planned_stack(stack) for stack in STACKS}


ENGINES = {"Deployment llm-d-infra/llama-70b-prefill", "Deployment llm-d-infra/llama-70b-decode"}
ROLLOUT_WARNINGS = {"llmd": ENGINES, "gb300": ENGINES}
"""Seed 004's engines fill both nodes: a rollout takes each role's only replica down while it reloads (said, not hidden)."""
UNCHECKED = {
    "gb300": {
        ("architecture", "docker.io/vllm/vllm-openai:v0.32.0"),
        ("architecture", "nvcr.io/nvidia/pytorch:25.09-py3"),
        ("interconnect", "AgentPool gb300-pool"),
    }
}
"""What the rack-scale stack's plan cannot check, said as gaps: two tags whose arm64 variant nobody verified, and that
AKS puts the pool's VMs in the interconnect group (no agent-pool property does)."""


@pytest.mark.parametrize("stack", STACKS)
def test_repository_stacks_have_no_blockers_and_no_warnings_but_their_rollouts(stack_runs, stack):
    found = findings_of(stack_runs[stack])
    rollouts = {f.object for f in found if f.check == "capacity" and "a rollout takes all" in f.message}
    assert rollouts == ROLLOUT_WARNINGS.get(stack, set())
    assert {(f.check, f.object) for f in found if f.level == "unchecked"} == UNCHECKED.get(stack, set())
    assert [(f.check, f.object, f.message) for f in found if f.object not in rollouts and f.level != "unchecked"] == []


def test_a_chart_namespace_nothing_creates_is_a_blocker():
    config = stack_config("dev")
    config["aks-gpu-inference:device_plugin"] = {"create_namespace": False}
    found = blockers(findings_of(run_stack(config)), "namespaces")
    assert [f.object for f in found] == ["DaemonSet nvidia-device-plugin/nvidia-device-plugin"]
    assert "created by nothing" in found[0].message


def test_an_object_that_does_not_wait_for_its_namespace_is_a_blocker():
    def program():
        k8s.core.v1.Namespace("ns", metadata={"name": "apps"})
        k8s.core.v1.ConfigMap("cm", metadata={"name": "settings", "namespace": "apps"})

    (finding,) = blockers(findings_of(run_components(program)), "namespaces")
    assert finding.object == "ConfigMap apps/settings" and "does not wait" in finding.message


def test_pods_without_a_pool_are_blockers_and_name_every_pool():
    config = stack_config("dev")
    config["aks-gpu-inference:cluster"]["platform_pool"] = None
    found = blockers(findings_of(run_stack(config)), "scheduling")
    objects = {f.object for f in found}
    assert "Deployment envoy-gateway-system/redis" in objects
    assert "Deployment vllm-semantic-router-system/semantic-router (chart semantic-router 0.3.0)" in objects
    redis = next(f for f in found if f.object == "Deployment envoy-gateway-system/redis")
    assert "system: does not tolerate CriticalAddonsOnly=true:NoSchedule" in redis.message
    assert "a100: does not tolerate sku=gpu:NoSchedule" in redis.message


def test_a_gpu_pod_on_a_pool_nothing_advertises_gpus_on_is_a_blocker():
    config = stack_config("dev")
    # Without the device plugin nothing advertises nvidia.com/gpu on the A100 nodes.
    config["aks-gpu-inference:device_plugin"] = {"namespace": "kube-system", "create_namespace": False}
    run = run_stack(config)
    run.resources[:] = [r for r in run.resources if "NvidiaDevicePlugin" not in r.urn]
    (finding,) = blockers(findings_of(run), "scheduling")
    assert finding.object == "Deployment gpu-inference/llama-8b"
    assert "a100: requests 1 nvidia.com/gpu, nodes advertise none" in finding.message


def test_a_custom_resource_without_its_crd_is_a_blocker():
    """A prefill/decode model brings the Inference Extension's CRDs (its InferencePool needs them); without that
    manifest the InferencePool finds no CRD."""
    run = run_stack(stack_config("llmd"), "llmd")
    assert blockers(findings_of(run), "crds") == []
    crds = next(r for r in run.resources if r.type == "kubernetes:yaml/v2:ConfigFile")
    run.resources.remove(crds)
    for record in run.resources:
        record.options["dependsOn"] = [d for d in record.options.get("dependsOn", []) if d != crds.urn]
    found = blockers(findings_of(run), "crds")
    assert [f.object for f in found] == ["InferencePool llm-d-infra/llama-70b-inferencepool (chart inferencepool v1.3.1)"]
    assert "InferencePool.inference.networking.k8s.io" in found[0].message


def test_the_inference_extension_crds_come_from_the_release_manifest_and_the_pool_waits_for_them():
    run, renders = expand_charts(run_stack(stack_config("llmd"), "llmd"))
    (manifest,) = [r for r in renders if r.resource.type == "kubernetes:yaml/v2:ConfigFile"]
    assert manifest.rendered and manifest.label == "manifest manifests.yaml v1.3.1 (inference-extension-crds)"
    assert sorted(c.kind for c in manifest.crds) == [
        "InferenceModelRewrite",
        "InferenceObjective",
        "InferencePool",
        "InferencePool",
        "InferencePoolImport",
    ]
    children = [r for r in run.resources if r.parent == manifest.resource.urn]
    assert len(children) == 5 and all(c.type.endswith(":CustomResourceDefinition") for c in children)
    pool = next(r for r in renders if r.chart == "inferencepool")
    assert manifest.resource.urn in pool.resource.options["dependsOn"]


def test_a_manifest_not_at_hand_offline_is_named():
    from aks_gpu_inference.planner.charts.config_files import render_config_file

    urn = "urn:pulumi:test::aks-gpu-inference::kubernetes:yaml/v2:ConfigFile::x"
    record = Registered(urn, "kubernetes:yaml/v2:ConfigFile", "x", None, False, {"file": "https://example.invalid/v9/a.yaml"})
    render = render_config_file(record, None, None, "default")
    assert not render.rendered and "not at hand offline" in render.problems[0]


def test_a_custom_resource_from_an_add_on_that_is_off_is_a_blocker():
    def program():
        k8s.apiextensions.CustomResource(
            "so", api_version="keda.sh/v1alpha1", kind="ScaledObject", metadata={"name": "s", "namespace": "default"}, spec={}
        )

    found = blockers(findings_of(run_components(program)), "crds")
    (finding,) = [f for f in found if "no CRD for" in f.message]
    assert finding.object == "ScaledObject default/s" and finding.fix == "switch on the KEDA add-on"


def test_a_field_the_crd_does_not_define_is_a_blocker():
    """The API server prunes unknown fields of a custom resource without a word: the plan says so."""
    if upstream_dir() is None:
        pytest.skip(missing_reason())
    config = stack_config("dev")
    run = run_stack(config, "dev")
    policy = next(r for r in run.resources if r.inputs.get("kind") == "EnvoyExtensionPolicy")
    policy.inputs["spec"]["extProc"][0]["allowModeOverride"] = True
    found = blockers(findings_of(run), "crds")
    assert [f.object for f in found] == ["EnvoyExtensionPolicy ai-gateway/ai-gateway-semantic-router"]
    assert "spec.extProc[0].allowModeOverride: unknown field" in found[0].message


def test_a_needed_hook_under_a_v4_chart_is_a_blocker_and_a_v3_release_is_not():
    def program(kind):
        def build():
            kind(
                "eg",
                chart="oci://docker.io/envoyproxy/gateway-helm",
                version="v1.8.2",
                namespace="kube-system",
                **({"name": "eg"} if kind is k8s.helm.v3.Release else {}),
            )

        return build

    (finding,) = blockers(findings_of(run_components(program(k8s.helm.v4.Chart))), "helm-hooks")
    assert finding.object == "chart gateway-helm v1.8.2 (eg)"
    assert "certgen" in finding.message and "helm.v3.Release" in finding.fix
    assert blockers(findings_of(run_components(program(k8s.helm.v3.Release))), "helm-hooks") == []


def test_a_chart_value_helm_ignores_or_refuses_is_a_blocker():
    def program(chart, version, values):
        return lambda: k8s.helm.v4.Chart(
            chart.rsplit("/", 1)[-1], chart=chart, version=version, namespace="kube-system", values=values
        )

    ignored = program("kuberay-operator", "1.7.0", {"image": {"repository": "r", "tagg": "v1"}})
    (found,) = blockers(findings_of(run_components(ignored)), "chart-values")
    assert found.object == "chart kuberay-operator 1.7.0 (kuberay-operator)" and found.message.startswith("values.image.tagg:")
    refused = program("oci://registry.k8s.io/networking/charts/dranet", "v1.3.0", {"image": {"repository": "r", "tagg": "v1"}})
    (found,) = blockers(findings_of(run_components(refused)), "charts")
    assert found.object == "chart dranet v1.3.0 (dranet)" and "additional properties 'tagg' not allowed" in found.message


def test_a_privileged_pod_in_a_restricted_namespace_is_a_blocker():
    def program():
        ns = k8s.core.v1.Namespace(
            "ns", metadata={"name": "apps", "labels": {"pod-security.kubernetes.io/enforce": "restricted"}}
        )
        k8s.apps.v1.Deployment(
            "app",
            metadata={"name": "app", "namespace": ns.metadata["name"]},
            spec={
                "selector": {"matchLabels": {"a": "b"}},
                "template": {
                    "metadata": {"labels": {"a": "b"}},
                    "spec": {"containers": [{"name": "c", "image": "x:1", "securityContext": {"privileged": True}}]},
                },
            },
        )

    (finding,) = blockers(findings_of(run_components(program)), "pod-security")
    assert finding.object == "Deployment apps/app" and "containers c: privileged" in finding.message
    assert "runAsNonRoot must be true" in finding.message


def test_retired_and_retiring_versions_by_plan_date(stack_runs):
    run = stack_runs["prod"]
    assert blockers(findings_of(run, date(2026, 12, 1)), "lifecycle") == []
    warning = [f for f in findings_of(run, date(2027, 2, 15)) if f.check == "lifecycle"]
    assert [(f.level, f.object) for f in warning] == [("warning", "ManagedCluster kubernetesVersion")]
    assert "1.35 retires on 2027-03-31, in 44 days" in warning[0].message
    (retired,) = blockers(findings_of(run, date(2027, 4, 1)), "lifecycle")
    assert "AKS Kubernetes 1.35 retired on 2027-03-31" in retired.message and "1.36" in retired.fix


def _raw_pool(**props):
    def program():
        containerservice.AgentPool(
            "pool",
            agent_pool_name="gpu",
            resource_name_="aks",
            resource_group_name="rg",
            vm_size="Standard_NC24ads_A100_v4",
            mode="User",
            **props,
        )

    return findings_of(run_components(program))


def test_an_ephemeral_os_disk_larger_than_the_local_disk_is_a_blocker():
    (finding,) = blockers(_raw_pool(os_disk_type="Ephemeral"), "arm")
    assert finding.object == "AgentPool pool"
    assert "128 GB does not fit Standard_NC24ads_A100_v4's local disk (64 GiB)" in finding.message
    assert blockers(_raw_pool(os_disk_type="Ephemeral", os_disk_size_gb=64), "arm") == []


def test_an_enum_value_the_sdk_api_version_lacks_is_a_blocker():
    (finding,) = blockers(_raw_pool(os_sku="Ubuntu2404"), "arm")
    assert "osSKU='Ubuntu2404' is not accepted by containerservice API 2025-09-01" in finding.message


def test_the_plan_prints_deployability_and_exits_1_on_blockers(tmp_path, capsys):
    assert main(["plan", "prod", "--project-dir", str(REPO), "--out", str(tmp_path / "a"), "-q", "--as-of", "2027-04-01"]) == 1
    out = capsys.readouterr().out
    assert "Deployability (would `pulumi up` work? judged as of 2027-04-01): 1 blockers" in out
    assert "not checked offline:" in out
    assert (tmp_path / "a" / "deployability.json").is_file()
    assert main(["plan", "prod", "--project-dir", str(REPO), "--out", str(tmp_path / "b"), "-q", "--as-of", "2026-12-01"]) == 0
    assert main(["plan", "prod", "--project-dir", str(REPO), "--out", str(tmp_path / "c"), "-q", "--as-of", "12/01/2026"]) == 2
    assert "--as-of='12/01/2026': expected a date as YYYY-MM-DD" in capsys.readouterr().err


def test_component_refuses_an_ephemeral_disk_that_cannot_fit():
    from aks_gpu_inference.components.azure.gpu_node_pool import GpuNodePoolArgs

    with pytest.raises(
        Exception, match="os_disk_size_gb=128: an ephemeral OS disk on Standard_NC24ads_A100_v4 lives on its 64 GiB"
    ):
        GpuNodePoolArgs(name="a100", vm_size="Standard_NC24ads_A100_v4", os_disk_type="Ephemeral", os_disk_size_gb=128)
