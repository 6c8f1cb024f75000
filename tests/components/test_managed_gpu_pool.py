"""AKS-managed GPU pools (``gpu_management: managed``): the preview API version, what AKS refuses,
the resources a node advertises, and the same ARM properties the typed AgentPool sends."""

from __future__ import annotations

import pytest

from aks_gpu_inference.components import GpuNodePool, GpuNodePoolArgs
from aks_gpu_inference.components._base import ComponentInputError
from aks_gpu_inference.components.azure import managed_gpu
from aks_gpu_inference.components.azure.gpu_node_pool_args import pool_problems
from tests.conftest import cluster_context, one, registered_before_error, run_components

T4 = {"name": "t4", "vm_size": "Standard_NC4as_T4_v3", "count": 2}
A100_MIG = {"name": "a100", "vm_size": "Standard_NC24ads_A100_v4", "count": 1, "mig_profile": "MIG1g"}


def pool_run(args: dict):
    holder = {}

    def program():
        holder["pool"] = GpuNodePool(args["name"], args, cluster=cluster_context())

    return run_components(program), holder["pool"]


def test_a_managed_pool_is_the_generic_arm_resource_at_the_preview_api_version():
    run, pool = pool_run({**T4, "gpu_management": "managed"})
    resource = one(run, "resources:Resource")
    assert resource.inputs["apiVersion"] == managed_gpu.API_VERSION == "2026-01-02-preview"
    assert resource.inputs["resourceProviderNamespace"] == "Microsoft.ContainerService"
    assert resource.inputs["resourceType"] == "agentPools"
    assert resource.inputs["parentResourcePath"] == "managedClusters/aks-test"
    assert resource.inputs["resourceName"] == "t4" and resource.inputs["resourceGroupName"] == "rg-test"
    assert resource.inputs["properties"]["gpuProfile"] == {"driver": "Install", "nvidia": {"managementMode": "Managed"}}
    assert not [r for r in run.resources if r.type.endswith(":AgentPool")]
    assert (pool.gpu_resource_name, pool.gpus_per_node, pool.gpu_management) == ("nvidia.com/gpu", 1, "managed")


def test_it_sends_the_properties_the_typed_agent_pool_sends():
    managed = one(pool_run({**T4, "gpu_management": "managed", "spot": True})[0], "resources:Resource").inputs["properties"]
    typed = one(pool_run({**T4, "spot": True})[0], ":AgentPool").inputs
    wire = {k: v for k, v in typed.items() if k not in ("agentPoolName", "resourceName", "resourceGroupName", "tags")}
    assert {k: v for k, v in managed.items() if k != "gpuProfile"} == {k: v for k, v in wire.items() if k != "gpuProfile"}


@pytest.mark.parametrize(
    ("strategy", "resource", "count"), [("mixed", "nvidia.com/mig-1g.10gb", 7), ("single", "nvidia.com/gpu", 7)]
)
def test_the_mig_strategy_decides_what_a_node_advertises(strategy, resource, count):
    run, pool = pool_run({**A100_MIG, "gpu_management": "managed", "mig_strategy": strategy})
    nvidia = one(run, "resources:Resource").inputs["properties"]["gpuProfile"]["nvidia"]
    assert nvidia == {"managementMode": "Managed", "migStrategy": strategy.capitalize()}
    assert (pool.gpu_resource_name, pool.gpus_per_node) == (resource, count)


@pytest.mark.parametrize(
    ("extra", "field", "says"),
    [
        ({"count": 0, "min_count": 0, "max_count": 3}, "min_count", "does not support the cluster autoscaler"),
        ({"driver": "none"}, "driver", "needs the AKS-installed driver"),
        ({"vm_size": "Standard_ND96isr_MI300X_v5", "driver": "none"}, "gpu_management", "NVIDIA GPUs only"),
    ],
)
def test_what_aks_refuses_on_a_managed_pool(extra, field, says):
    args = GpuNodePoolArgs.model_construct(**{**T4, "gpu_management": "managed", **extra})
    assert any(p.field == field and says in p.problem for p in pool_problems(args))
    with pytest.raises(ValueError, match=f"{field}="):  # the args model refuses the same
        GpuNodePoolArgs.model_validate({**T4, "gpu_management": "managed", **extra})


def test_a_mig_strategy_on_an_unmanaged_pool_is_refused():
    problems = pool_problems(GpuNodePoolArgs.model_construct(**{**A100_MIG, "mig_strategy": "single"}))
    assert [p.field for p in problems] == ["mig_strategy"]


def test_a_refused_managed_pool_creates_nothing():
    def program():
        GpuNodePool("t4", {**T4, "gpu_management": "managed", "min_count": 0, "max_count": 2}, cluster=cluster_context())

    assert registered_before_error(program, ComponentInputError) == []


def test_the_project_does_not_run_its_own_device_plugin_or_dra_driver_on_a_managed_pool():
    from aks_gpu_inference.components.gpu.device_plugin import device_plugin_problems
    from aks_gpu_inference.components.gpu.dra_device_classes_args import DraDeviceClassesArgs, dra_device_classes_problems
    from tests.components.gpu_pools import pool_facts

    managed = pool_facts("t4", "Standard_NC4as_T4_v3", gpu_management="managed", count=1)
    assert [p.problem.split(";")[0] for p in device_plugin_problems([managed])] == [
        "AKS runs its own device plugin on a managed GPU pool (gpu_management: managed)"
    ]
    dra = dra_device_classes_problems(DraDeviceClassesArgs(), [managed], "1.35")
    assert any(p.field == "pools" and "managed GPU pool" in p.problem for p in dra)


@pytest.mark.slow
def test_a_stack_with_a_managed_pool_scrapes_its_dcgm_exporter_and_leaves_it_to_aks():
    from tests.conftest import run_stack, stack_config

    config = stack_config("dev")
    config["aks-gpu-inference:gpu_pools"].append({"name": "t4m", "vm_size": "Standard_NC4as_T4_v3", "gpu_management": "managed"})
    run = run_stack(config, "dev")
    patch = one(run, "core/v1:ConfigMapPatch")
    assert patch.inputs["metadata"] == {"name": "ama-metrics-settings-configmap", "namespace": "kube-system"}
    assert patch.inputs["data"]["default-scrape-settings-enabled"] == "dcgmexporter = true"
    plugin = one(run, "apps/v1:DaemonSet")
    terms = plugin.inputs["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
    assert "t4m" not in str(terms), "the project's device plugin stays off the managed pool"
