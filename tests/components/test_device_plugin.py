"""NvidiaDevicePlugin: the chart's device-plugin DaemonSet on exactly the given pools, tolerating
their taints, never privileged, and refused for pools whose driver AKS does not install."""

import pulumi
import pulumi_kubernetes as k8s

from aks_gpu_inference.components import GpuNodePool, NvidiaDevicePlugin
from aks_gpu_inference.components.gpu.device_plugin import daemonset_spec, device_plugin_problems
from tests.components.gpu_pools import A100, H100, MI300X, pool_facts
from tests.conftest import cluster_context, of_type, one, refusal_message, run_components

AGENTPOOL = "kubernetes.azure.com/agentpool"
SKU_GPU = {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
NVIDIA_TAINT = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def pod_of(spec: dict) -> dict:
    return spec["template"]["spec"]


def test_daemonset_on_exactly_the_pools_tolerating_their_taints():
    spec = daemonset_spec("plugin", "0.17.0", [pool_facts("h100", H100), pool_facts("a100", A100, spot=True)])
    pod = pod_of(spec)
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [{"key": AGENTPOOL, "operator": "In", "values": ["a100", "h100"]}]}]
    spot = {"key": "kubernetes.azure.com/scalesetpriority", "operator": "Equal", "value": "spot", "effect": "NoSchedule"}
    assert pod["tolerations"] == [NVIDIA_TAINT, SKU_GPU, spot], "each taint once"
    (container,) = pod["containers"]
    assert container["image"] == "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"
    assert container["securityContext"] == {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
    assert "MIG_STRATEGY" not in {e["name"] for e in container["env"]}
    assert spec["selector"]["matchLabels"] == {
        "app.kubernetes.io/name": "nvidia-device-plugin",
        "app.kubernetes.io/instance": "plugin",
    }


def test_mig_pools_get_the_mixed_strategy_and_sys_admin_only():
    (container,) = pod_of(daemonset_spec("plugin", "0.17.0", [pool_facts("h100mig", H100, mig_profile="MIG1g")]))["containers"]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env["MIG_STRATEGY"] == "mixed" and env["NVIDIA_MIG_MONITOR_DEVICES"] == "all"
    assert container["securityContext"] == {"capabilities": {"add": ["SYS_ADMIN"]}}, "never privileged"


def test_every_pool_it_must_not_serve_is_a_problem():
    pools = [pool_facts("h100", H100), pool_facts("h100n", H100, driver="none"), pool_facts("mi300x", MI300X, driver="none")]
    problems = device_plugin_problems(pools)
    assert [p.value for p in problems] == ["h100n", "mi300x"]
    assert str(problems[0]) == "pools='h100n': the device plugin serves NVIDIA pools whose driver AKS installs (driver 'aks')"
    assert device_plugin_problems(pools[:1]) == []


def test_the_component_with_its_namespace_and_the_clusters_provider():
    def program():
        pool = GpuNodePool("a100", {"name": "a100", "vm_size": A100}, cluster=cluster_context("aks-test", "rg-test"))
        cluster = cluster_context(provider=k8s.Provider("k8s", kubeconfig="x"))
        NvidiaDevicePlugin("nvidia-device-plugin", pools=[pool], cluster=cluster)

    run = run_components(program)
    provider = one(run, "pulumi:providers:kubernetes")
    namespace, daemonset = one(run, "core/v1:Namespace"), one(run, "apps/v1:DaemonSet")
    assert namespace.inputs["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
    assert daemonset.inputs["metadata"]["namespace"] == "nvidia-device-plugin"
    assert {namespace.options["provider"], daemonset.options["provider"]} == {provider.urn}
    assert daemonset.parent.endswith("aks-gpu:index:NvidiaDevicePlugin::nvidia-device-plugin")


def test_an_existing_namespace_and_a_provider_from_opts():
    def program():
        pool = GpuNodePool("a100", {"name": "a100", "vm_size": A100}, cluster=cluster_context("aks-test", "rg-test"))
        chosen = k8s.Provider("chosen", kubeconfig="y")
        NvidiaDevicePlugin(
            "plugin",
            {"namespace": "kube-system", "create_namespace": False},
            pulumi.ResourceOptions(provider=chosen),
            pools=[pool],
            cluster=cluster_context(),
        )

    run = run_components(program)
    assert of_type(run, "core/v1:Namespace") == []
    daemonset = one(run, "apps/v1:DaemonSet")
    assert daemonset.inputs["metadata"]["namespace"] == "kube-system"
    assert daemonset.options["provider"] == one(run, "pulumi:providers:kubernetes").urn


def test_a_pool_without_the_aks_driver_is_refused_before_anything_is_created():
    def program():
        pool = GpuNodePool(
            "h100n", {"name": "h100n", "vm_size": H100, "driver": "none"}, cluster=cluster_context("aks-test", "rg-test")
        )
        NvidiaDevicePlugin("plugin", pools=[pool], cluster=cluster_context(provider=k8s.Provider("k8s", kubeconfig="x")))

    message = refusal_message(program, "NvidiaDevicePlugin", "plugin", lambda t: t.startswith("kubernetes:"))
    assert "pools='h100n': the device plugin serves NVIDIA pools whose driver AKS installs (driver 'aks')" in message
