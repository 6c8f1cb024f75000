import pytest

from aks_gpu_inference.components import GpuNodePool, GpuNodePoolArgs
from aks_gpu_inference.components._base import ComponentInputError
from aks_gpu_inference.components.azure.gpu_node_pool_args import pool_problems
from aks_gpu_inference.components.core.labels import SPOT_TAINT
from tests.conftest import cluster_context, of_type, one, registered_before_error, run_components

BASE = {"name": "gpua100", "vm_size": "Standard_NC24ads_A100_v4"}


def build_pool(**overrides):
    holder = {}

    def program():
        holder["pool"] = GpuNodePool("gpu", {**BASE, **overrides}, cluster=cluster_context("aks-test", "rg-test"))

    run = run_components(program)
    return holder["pool"], one(run, "containerservice:AgentPool").inputs, run


def test_defaults_follow_the_seeds():
    pool, inputs, run = build_pool()
    assert inputs["agentPoolName"] == "gpua100" and inputs["resourceName"] == "aks-test"
    assert inputs["vmSize"] == "Standard_NC24ads_A100_v4"
    assert inputs["mode"] == "User"
    assert inputs["nodeTaints"] == ["sku=gpu:NoSchedule"]
    assert inputs["nodeLabels"] == {
        "accelerator": "nvidia-a100",
        "workload": "inference",
        "aks-gpu-inference/gpu-model": "A100-80GB",
    }
    assert inputs["gpuProfile"] == {"driver": "Install"}
    assert inputs["osSKU"] == "Ubuntu"
    # The A100 v4 size's 64 GiB local disk cannot hold AKS's 128 GB OS disk: Managed, not VMCannotFitEphemeralOSDisk.
    assert inputs["osDiskType"] == "Managed" and "osDiskSizeGB" not in inputs
    assert "gpuInstanceProfile" not in inputs and "scaleSetPriority" not in inputs and "enableAutoScaling" not in inputs
    assert inputs["upgradeSettings"] == {
        "maxSurge": "0",
        "maxUnavailable": "1",
        "drainTimeoutInMinutes": 30,
        "nodeSoakDurationInMinutes": 0,
    }
    agent_pool = one(run, "containerservice:AgentPool")
    assert agent_pool.name == "gpu-pool" and agent_pool.parent.endswith("aks-gpu:index:GpuNodePool::gpu")
    assert "ignoreChanges" not in agent_pool.options
    assert pool.node_selector == {"kubernetes.azure.com/agentpool": "gpua100"}
    assert pool.tolerations == [{"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]
    assert (pool.gpu_resource_name, pool.gpus_per_node, pool.rdma_capable) == ("nvidia.com/gpu", 1, False)


def test_autoscaling_leaves_the_count_to_the_autoscaler():
    _, inputs, run = build_pool(count=1, min_count=0, max_count=4)
    assert (inputs["enableAutoScaling"], inputs["minCount"], inputs["maxCount"], inputs["count"]) == (True, 0, 4, 1)
    assert one(run, "containerservice:AgentPool").options["ignoreChanges"] == ["count"]


def test_spot_sets_priority_eviction_and_taint():
    pool, inputs, _ = build_pool(spot=True)
    assert (inputs["scaleSetPriority"], inputs["scaleSetEvictionPolicy"], inputs["spotMaxPrice"]) == ("Spot", "Delete", -1)
    assert inputs["nodeTaints"] == ["sku=gpu:NoSchedule", SPOT_TAINT]
    assert {
        "key": "kubernetes.azure.com/scalesetpriority",
        "operator": "Equal",
        "value": "spot",
        "effect": "NoSchedule",
    } in pool.tolerations


def test_mig_pool_advertises_slices_not_whole_gpus():
    pool, inputs, _ = build_pool(vm_size="Standard_ND96isr_H100_v5", name="h100mig", mig_profile="MIG1g")
    assert inputs["gpuInstanceProfile"] == "MIG1g"
    assert (pool.gpu_resource_name, pool.gpus_per_node) == ("nvidia.com/mig-1g.10gb", 56)


def test_operator_managed_driver_and_rdma_label_and_reservation():
    crg = "/subscriptions/0000/resourceGroups/rg/providers/Microsoft.Compute/capacityReservationGroups/gpu"
    pool, inputs, _ = build_pool(
        vm_size="Standard_ND96isr_H100_v5",
        name="h100",
        driver="none",
        rdma=True,
        os_sku="AzureLinux",
        capacity_reservation_group_id=crg,
    )
    assert inputs["gpuProfile"] == {"driver": "None"}
    assert inputs["nodeLabels"]["aks-gpu-inference/rdma"] == "true"
    assert inputs["osSKU"] == "AzureLinux"
    assert inputs["capacityReservationGroupID"] == crg
    assert (pool.gpus_per_node, pool.rdma_capable) == (8, True)


def test_user_labels_and_taints_override():
    pool, inputs, _ = build_pool(taints=["nvidia.com/gpu:NoSchedule"], labels={"team": "ml"}, workload="batch")
    assert inputs["nodeTaints"] == ["nvidia.com/gpu:NoSchedule"]
    assert inputs["nodeLabels"]["team"] == "ml" and inputs["nodeLabels"]["workload"] == "batch"
    assert pool.tolerations == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


@pytest.mark.parametrize(
    "overrides, expected",
    [
        ({"name": "GpuPool"}, "name='GpuPool': AKS Linux pool names are 1-12 lowercase letters or digits"),
        ({"name": "gpupoolnumber1"}, "name='gpupoolnumber1': AKS Linux pool names are 1-12"),
        ({"name": "1gpu"}, "name='1gpu'"),
        ({"vm_size": "Standard_D4s_v5"}, "vm_size='Standard_D4s_v5': 'Standard_D4s_v5' is not a GPU VM size"),
        ({"vm_size": "Standard_NC24ads_A100"}, "did you mean 'Standard_NC24ads_A100_v4'"),
        ({"vm_size": "Standard_NC6s_v3"}, "vm_size='Standard_NC6s_v3': Standard_NC6s_v3 was retired on 2025-09-30"),
        (
            {"vm_size": "Standard_NC4as_T4_v3", "mig_profile": "MIG1g"},
            "mig_profile='MIG1g': Standard_NC4as_T4_v3 (T4) has no MIG; MIG-capable sizes: ",
        ),
        ({"mig_profile": "MIG5g"}, "mig_profile='MIG5g': Input should be 'MIG1g', 'MIG2g', 'MIG3g', 'MIG4g' or 'MIG7g'"),
        ({"mig_profile": "MIG1g", "driver": "none"}, "mig_profile='MIG1g': AKS partitions MIG only with driver 'aks'"),
        ({"min_count": 3, "max_count": 2}, "min_count=3: must be at most max_count (2)"),
        ({"min_count": 1}, "max_count=None: set both min_count and max_count"),
        ({"count": 5, "min_count": 0, "max_count": 2}, "count=5: must lie between min_count (0) and max_count (2)"),
        ({"mode": "System", "spot": True}, "spot=True: AKS system pools cannot use Spot VMs"),
        ({"vm_size": "Standard_ND96isr_MI300X_v5"}, "driver='aks': AKS installs NVIDIA drivers only"),
        ({"rdma": True}, "rdma=True: Standard_NC24ads_A100_v4 is not RDMA-capable; RDMA sizes: Standard_ND128isr"),
        ({"taints": ["sku=gpu"]}, "taint 'sku=gpu' is not 'key=value:Effect'"),
        ({"max_surge": "0", "max_unavailable": "0"}, "max_unavailable='0': with max_surge 0"),
        ({"max_surge": "150%"}, "max_surge='150%': expected a whole number of nodes"),
        ({"os_sku": "Windows2022"}, "os_sku='Windows2022': Input should be 'Ubuntu'"),
        ({"vmsize": "x"}, "vmsize='x': unknown key"),
    ],
)
def test_bad_input_is_refused_before_anything_is_created(overrides, expected):
    def program():
        GpuNodePool("gpu", {**BASE, **overrides}, cluster=cluster_context("aks-test", "rg-test"))

    with pytest.raises(ComponentInputError) as caught:
        run_components(program)
    assert expected in str(caught.value)
    assert str(caught.value).startswith("GpuNodePool 'gpu': invalid arguments")


def test_refused_input_registers_no_resource():
    def program():
        GpuNodePool("gpu", {**BASE, "min_count": 9, "max_count": 1}, cluster=cluster_context("aks", "rg"))

    assert registered_before_error(program, ComponentInputError) == []


def test_args_model_is_usable_directly_and_frozen():
    args = GpuNodePoolArgs(name="t4", vm_size="Standard_NC4as_T4_v3")
    assert args.sku.gpu_model == "T4" and args.node_labels()["accelerator"] == "nvidia-t4"
    with pytest.raises(ValueError):
        args.count = 3
    run = run_components(lambda: GpuNodePool("t4", args, cluster=cluster_context("aks", "rg")))
    assert len(of_type(run, "AgentPool")) == 1


def test_pool_problems_reports_every_broken_rule_at_once():
    """Before: the first broken rule hid the others; now every one is named in one refusal."""
    t4 = GpuNodePoolArgs.model_construct(
        **{
            **GpuNodePoolArgs(name="t4", vm_size="Standard_NC4as_T4_v3").model_dump(),
            "mig_profile": "MIG1g",
            "driver": "none",
            "min_count": 3,
            "max_count": 2,
            "spot_max_price": 2.5,
            "rdma": True,
            "max_surge": "0",
            "max_unavailable": "0",
        }
    )
    assert [p.field for p in pool_problems(t4)] == [
        "mig_profile",
        "mig_profile",
        "rdma",
        "min_count",
        "count",
        "spot_max_price",
        "max_unavailable",
    ]
    assert pool_problems(GpuNodePoolArgs(**BASE)) == []
    with pytest.raises(ComponentInputError) as caught:
        run_components(
            lambda: GpuNodePool(
                "gpu", {**BASE, "rdma": True, "min_count": 3, "max_count": 2}, cluster=cluster_context("aks-test", "rg-test")
            )
        )
    message = str(caught.value)
    assert "rdma=True: Standard_NC24ads_A100_v4 is not RDMA-capable" in message
    assert "min_count=3: must be at most max_count (2)" in message


def test_system_pool_rules():
    system = GpuNodePoolArgs.model_construct(
        **{**GpuNodePoolArgs(**BASE).model_dump(), "mode": "System", "spot": True, "count": 0}
    )
    assert [str(p) for p in pool_problems(system)] == [
        "count=0: a system pool needs at least one node",
        "spot=True: AKS system pools cannot use Spot VMs; use mode 'User'",
    ]
