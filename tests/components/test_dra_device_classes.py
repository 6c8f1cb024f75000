"""DraDeviceClasses under mocks: the NVIDIA GPU DRA driver, per-model DeviceClasses from the
catalog, claim templates, the optional GPU Operator, and every combination it refuses."""

import pulumi
import pulumi_kubernetes as k8s
import pytest

from aks_gpu_inference.components import DraDeviceClasses, DraDeviceClassesArgs, GpuNodePool
from aks_gpu_inference.components.core import catalog
from aks_gpu_inference.components.gpu.dra_device_classes_args import dra_device_classes_problems
from aks_gpu_inference.components.gpu.dra_manifests import (
    count_claim,
    dra_driver_values,
    full_node_claim,
    gpu_operator_values,
    mig_claim,
)
from tests.components.gpu_pools import pool_facts
from tests.conftest import cluster_context, of_type, one, refusal_message, run_components

H100 = "Standard_ND96isr_H100_v5"
A100 = "Standard_NC24ads_A100_v4"
MI300X = "Standard_ND96isr_MI300X_v5"
AGENTPOOL = "kubernetes.azure.com/agentpool"
SKU_GPU = {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
NVIDIA_TAINT = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}

H100_POOL = {"name": "h100", "vm_size": H100}


def dra_program(holder: dict, args=None, pools=(H100_POOL,), version="1.34"):
    def program():
        cluster = cluster_context(provider=k8s.Provider("k8s", kubeconfig="x"), kubernetes_version=version)
        built = [GpuNodePool(p["name"], p, cluster=cluster_context("aks-test", "rg-test")) for p in pools]
        holder["dra"] = DraDeviceClasses("dra", args or {}, pools=built, cluster=cluster)

    return program


def build(args=None, pools=(H100_POOL,), version="1.34"):
    holder = {}
    run = run_components(dra_program(holder, args, pools, version))
    return holder["dra"], run


@pytest.fixture(scope="module")
def default_build():
    """One H100 pool with every default, for the tests that only read it."""
    return build()


def charts(run) -> dict:
    return {r.name: r for r in of_type(run, "helm.sh/v4:Chart")}


def templates(run) -> dict:
    return {r.inputs["metadata"]["name"]: r for r in of_type(run, "resource.k8s.io/v1:ResourceClaimTemplate")}


def request_of(template) -> dict:
    (request,) = template.inputs["spec"]["spec"]["devices"]["requests"]
    assert request["name"] == "gpus"
    return request["exactly"]


def test_dra_driver_chart_for_aks_managed_driver(default_build):
    dra, run = default_build
    found = charts(run)
    assert set(found) == {"dra-driver"}, "no GPU Operator unless configured"
    chart = found["dra-driver"]
    assert chart.inputs["chart"] == "oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu"
    assert chart.inputs["version"] == "0.4.1"
    assert chart.inputs["namespace"] == "dra-driver-nvidia-gpu"
    assert chart.options["customTimeouts"] == {"create": "20m"}
    values = chart.inputs["values"]
    assert values["nvidiaDriverRoot"] == "/"
    assert values["resourceApiVersion"] == "resource.k8s.io/v1"
    assert values["gpuResourcesEnabledOverride"] is True
    assert values["resources"] == {"gpus": {"enabled": True}, "computeDomains": {"enabled": False}}
    assert values["webhook"] == {"enabled": False}
    assert values["kubeletPlugin"] == {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": AGENTPOOL, "operator": "In", "values": ["h100"]}]}]
                }
            }
        },
        "tolerations": [NVIDIA_TAINT, SKU_GPU],
    }
    assert dra.namespace == "gpu-inference"


def test_kubelet_plugin_covers_every_pool_and_taint():
    pools = (
        H100_POOL,
        {"name": "a100", "vm_size": A100, "spot": True},
        {"name": "a100b", "vm_size": A100, "taints": ["nvidia.com/gpu:NoSchedule"]},
    )
    _, run = build(pools=pools)
    plugin = charts(run)["dra-driver"].inputs["values"]["kubeletPlugin"]
    terms = plugin["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [{"key": AGENTPOOL, "operator": "In", "values": ["a100", "a100b", "h100"]}]}]
    assert plugin["tolerations"] == [
        NVIDIA_TAINT,
        SKU_GPU,
        {"key": "kubernetes.azure.com/scalesetpriority", "operator": "Equal", "value": "spot", "effect": "NoSchedule"},
    ], "each taint once"


def test_namespace_is_baseline_unless_owned_elsewhere(default_build):
    _, run = default_build
    namespaces = {r.name: r.inputs["metadata"] for r in of_type(run, "core/v1:Namespace")}
    driver = namespaces.pop("dra-driver-namespace")
    assert driver["name"] == "dra-driver-nvidia-gpu", "a Helm Chart never creates its namespace"
    assert driver["labels"]["pod-security.kubernetes.io/enforce"] == "privileged", "the kubelet plugin is a node agent"
    (namespace,) = namespaces.values()
    assert namespace == {
        "name": "gpu-inference",
        "labels": {"pod-security.kubernetes.io/enforce": "baseline", "pod-security.kubernetes.io/warn": "restricted"},
    }
    dra, run = build({"namespace": "llm-d-infra", "create_namespace": False})
    assert [r.name for r in of_type(run, "core/v1:Namespace")] == ["dra-driver-namespace"]
    assert {t.inputs["metadata"]["namespace"] for t in templates(run).values()} == {"llm-d-infra"}
    assert dra.namespace == "llm-d-infra"


def test_one_device_class_per_gpu_model_with_catalog_product_names():
    dra, run = build(pools=(H100_POOL, {"name": "h100b", "vm_size": H100}, {"name": "a100", "vm_size": A100}))
    classes = {r.inputs["metadata"]["name"]: r.inputs["spec"] for r in of_type(run, "resource.k8s.io/v1:DeviceClass")}
    assert dra.device_classes == {"H100-80GB": "gpu-h100-80gb", "A100-80GB": "gpu-a100-80gb"}
    assert set(classes) == {"gpu-h100-80gb", "gpu-a100-80gb"}
    for model, name in dra.device_classes.items():
        sku = next(s for s in catalog.skus().values() if s.gpu_model == model)
        names = ", ".join(f'"{n}"' for n in sku.product_names)
        assert sku.product_names, f"the catalog lists NVML product names for {model}"
        assert classes[name] == {
            "selectors": [
                {
                    "cel": {
                        "expression": 'device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].type == "gpu" '
                        f'&& device.attributes["gpu.nvidia.com"].productName in [{names}]'
                    }
                }
            ]
        }
    assert '"NVIDIA H100 80GB HBM3"' in classes["gpu-h100-80gb"]["selectors"][0]["cel"]["expression"]
    assert '["NVIDIA A100 80GB PCIe", "NVIDIA A100-SXM4-80GB"]' in classes["gpu-a100-80gb"]["selectors"][0]["cel"]["expression"]


def test_claim_templates_for_counts_and_full_nodes():
    dra, run = build({"gpu_counts": [8, 1, 1]})
    found = templates(run)
    assert set(found) == {"gpu-1", "gpu-8", "h100-gpus-full-node"}
    assert request_of(found["gpu-1"]) == {"deviceClassName": "gpu.nvidia.com", "count": 1}
    assert request_of(found["gpu-8"]) == {"deviceClassName": "gpu.nvidia.com", "count": 8}
    assert request_of(found["h100-gpus-full-node"]) == {"deviceClassName": "gpu-h100-80gb", "count": 8}
    assert found["h100-gpus-full-node"].inputs["metadata"] == {
        "name": "h100-gpus-full-node",
        "namespace": "gpu-inference",
        "annotations": {"aks-gpu-inference/pool": "h100"},
    }
    assert "annotations" not in found["gpu-1"].inputs["metadata"], "gpu-<n> fits any pool"
    assert dra.templates == {
        "h100-gpus-full-node": "8 x gpu-h100-80gb",
        "gpu-1": "1 x gpu.nvidia.com",
        "gpu-8": "8 x gpu.nvidia.com",
    }
    driver = charts(run)["dra-driver"]
    namespace = next(r for r in of_type(run, "core/v1:Namespace") if r.name == "dra-namespace")
    for resource in [*found.values(), *of_type(run, "resource.k8s.io/v1:DeviceClass")]:
        assert set(resource.options["dependsOn"]) == {namespace.urn, driver.urn}


def test_mig_pool_gets_a_profile_template_and_no_full_node_template():
    pools = (H100_POOL, {"name": "h100mig", "vm_size": H100, "mig_profile": "MIG1g"})
    dra, run = build(pools=pools)
    found = templates(run)
    assert set(found) == {"gpu-1", "h100-gpus-full-node", "h100mig-mig-1g-10gb"}
    mig = found["h100mig-mig-1g-10gb"]
    assert request_of(mig) == {
        "deviceClassName": "mig.nvidia.com",
        "count": 1,
        "selectors": [{"cel": {"expression": 'device.attributes["gpu.nvidia.com"].profile == "1g.10gb"'}}],
    }
    assert mig.inputs["metadata"]["annotations"] == {"aks-gpu-inference/pool": "h100mig"}
    assert dra.templates["h100mig-mig-1g-10gb"] == '1 x mig.nvidia.com (device.attributes["gpu.nvidia.com"].profile == "1g.10gb")'
    assert dra.device_classes == {"H100-80GB": "gpu-h100-80gb"}, "MIG slices use the driver's mig.nvidia.com class"
    values = charts(run)["dra-driver"].inputs["values"]["kubeletPlugin"]["affinity"]
    assert values["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]["matchExpressions"][
        0
    ]["values"] == ["h100", "h100mig"]


def test_mig_only_pool_with_no_whole_gpu_templates():
    dra, run = build({"gpu_counts": []}, pools=({"name": "h100mig", "vm_size": H100, "mig_profile": "MIG3g"},))
    assert set(templates(run)) == {"h100mig-mig-3g-40gb"}
    assert of_type(run, "resource.k8s.io/v1:DeviceClass") == [] and dra.device_classes == {}


def test_gpu_operator_installs_the_driver_for_driver_none_pools():
    _, run = build({"gpu_operator": {}}, pools=({"name": "h100", "vm_size": H100, "driver": "none"},))
    found = charts(run)
    assert set(found) == {"dra-driver", "dra-gpu-operator"}
    operator = found["dra-gpu-operator"].inputs
    assert operator["chart"] == "gpu-operator"
    assert operator["repositoryOpts"] == {"repo": "https://helm.ngc.nvidia.com/nvidia"}
    assert operator["version"] == "v25.10.0"
    assert operator["namespace"] == "gpu-operator"
    assert operator["values"] == {
        "driver": {"enabled": True},
        "toolkit": {"enabled": True},
        "devicePlugin": {"enabled": False},
        "mig": {"strategy": "mixed"},
        "migManager": {"enabled": False},
        "dcgmExporter": {"enabled": True},
        "daemonsets": {"tolerations": [NVIDIA_TAINT, SKU_GPU]},
        # NFD's worker reads its own tolerations; without them it never labels the tainted GPU nodes.
        "node-feature-discovery": {"worker": {"tolerations": [NVIDIA_TAINT, SKU_GPU]}},
    }
    assert found["dra-driver"].inputs["values"]["nvidiaDriverRoot"] == "/run/nvidia/driver"
    full_node = templates(run)["h100-gpus-full-node"]
    assert found["dra-gpu-operator"].urn in full_node.options["dependsOn"]


def test_gpu_operator_without_driver_beside_aks_pools():
    _, run = build(
        {"gpu_operator": {"driver": False, "chart_version": "v25.3.4"}},
        pools=(H100_POOL, {"name": "h100mig", "vm_size": H100, "mig_profile": "MIG2g"}),
    )
    operator = charts(run)["dra-gpu-operator"].inputs
    assert operator["version"] == "v25.3.4"
    assert operator["values"]["driver"] == {"enabled": False} and operator["values"]["toolkit"] == {"enabled": False}
    assert operator["values"]["migManager"] == {"enabled": True}
    assert charts(run)["dra-driver"].inputs["values"]["nvidiaDriverRoot"] == "/"


def test_device_plugin_only_without_the_dra_driver():
    _, run = build({"install_driver": False, "gpu_operator": {"driver": False, "device_plugin": True}})
    found = charts(run)
    assert set(found) == {"dra-gpu-operator"}
    assert found["dra-gpu-operator"].inputs["values"]["devicePlugin"] == {"enabled": True}


# ---- refusals: the error says why, and nothing is created --------------------------------------


def refused(program) -> str:
    return refusal_message(program, "DraDeviceClasses", "dra", lambda t: t.startswith("kubernetes:"))


NONE_POOL = {"name": "h100n", "vm_size": H100, "driver": "none"}
MIG_POOL = {"name": "h100mig", "vm_size": H100, "mig_profile": "MIG1g"}


@pytest.mark.parametrize(
    "args, pools, version, expected",
    [
        (
            {"gpu_operator": {}},
            (NONE_POOL, {"name": "mi300x", "vm_size": MI300X, "driver": "none"}),
            "1.34",
            "pools='mi300x': Standard_ND96isr_MI300X_v5 has AMD GPUs; the NVIDIA DRA driver serves NVIDIA GPUs only",
        ),
        (
            {},
            ({"name": "mi300x", "vm_size": MI300X, "driver": "none"},),
            "1.34",
            "pools='mi300x': Standard_ND96isr_MI300X_v5 has AMD GPUs; the NVIDIA DRA driver serves NVIDIA GPUs only",
        ),
        (
            {"gpu_operator": {}},
            (H100_POOL,),
            "1.34",
            "gpu_operator.driver=True: pool h100 already gets its driver from AKS (driver 'aks'); two drivers on one node break both",
        ),
        (
            {},
            (NONE_POOL,),
            "1.34",
            "gpu_operator=None: pool h100n has driver 'none', so nothing installs its NVIDIA driver; add gpu_operator (driver true)",
        ),
        (
            {"gpu_operator": {"driver": False}},
            (NONE_POOL,),
            "1.34",
            "gpu_operator.driver=False: pool h100n has driver 'none', so nothing installs its NVIDIA driver; set gpu_operator.driver true",
        ),
        (
            {"gpu_operator": {"driver": False, "device_plugin": True}},
            (H100_POOL,),
            "1.34",
            "gpu_operator.device_plugin=True: the DRA driver already advertises these GPUs; "
            "the device plugin beside it would hand one GPU to two pods",
        ),
        (
            {"gpu_operator": {"driver": False, "mig_strategy": "single"}},
            (H100_POOL, MIG_POOL),
            "1.34",
            "gpu_operator.mig_strategy='single': pool h100mig is MIG-partitioned; 'single' advertises its slices as nvidia.com/gpu",
        ),
        (
            {"gpu_counts": [1, 8, 16]},
            (H100_POOL,),
            "1.34",
            "gpu_counts=[16]: no pool has that many whole GPUs per node (largest: 8)",
        ),
        (
            {},
            (MIG_POOL,),
            "1.34",
            "gpu_counts=[1]: no pool has that many whole GPUs per node (largest: 0)",
        ),
        (
            {},
            (H100_POOL,),
            "1.33",
            "kubernetes_version='1.33': DRA with resource.k8s.io/v1 needs Kubernetes 1.34 or later",
        ),
        ({}, (), "1.34", "pools=[]: give at least one NVIDIA GPU pool"),
        ({"gpu_counts": [0]}, (H100_POOL,), "1.34", "GPU counts are whole numbers of at least 1"),
        ({"gpu_operator": {"mig_strategy": "none"}}, (H100_POOL,), "1.34", "gpu_operator.mig_strategy='none'"),
    ],
)
def test_bad_input_is_refused_before_anything_is_created(args, pools, version, expected):
    assert expected in refused(dra_program({}, args, pools, version))


MIXED_ROOTS = (
    "pools=['h100', 'h100n']: mixes AKS-installed and operator-installed drivers; the DRA driver has one driver root, "
    "and no single gpu_operator setting suits both. Use one driver strategy for DRA pools"
)


@pytest.mark.parametrize("operator", [None, {}, {"driver": False}])
def test_mixed_driver_roots_get_the_one_strategy_message(operator):
    # One 'aks' pool and one 'none' pool: every operator setting leaves one of them wrong, so the
    # refusal names the real problem instead of per-pool advice that contradicts itself.
    args = {} if operator is None else {"gpu_operator": operator}
    message = refused(dra_program({}, args, (H100_POOL, NONE_POOL)))
    assert MIXED_ROOTS in message
    assert "gpu_operator=" not in message and "pool h100" not in message, "no per-pool advice that the other pool contradicts"


def test_mixed_driver_roots_are_refused_even_when_the_dra_driver_is_already_installed():
    # One gpu_operator setting cannot suit an 'aks' pool and a 'none' pool at once.
    message = refused(dra_program({}, {"install_driver": False, "gpu_operator": {"driver": False}}, (H100_POOL, NONE_POOL)))
    assert MIXED_ROOTS in message


def test_children_wait_for_the_components_dependencies_and_use_its_provider():
    def program():
        pool = GpuNodePool("h100", H100_POOL, cluster=cluster_context("aks-test", "rg-test"))
        chosen = k8s.Provider("chosen", kubeconfig="y")
        first = k8s.core.v1.ConfigMap("first", metadata={"name": "first"}, opts=pulumi.ResourceOptions(provider=chosen))
        DraDeviceClasses(
            "dra",
            {},
            pulumi.ResourceOptions(providers=[chosen], depends_on=[first]),
            pools=[pool],
            cluster=cluster_context(kubernetes_version="1.34"),
        )

    run = run_components(program)
    chosen, first = one(run, "pulumi:providers:kubernetes"), one(run, "core/v1:ConfigMap")
    children = [r for r in run.resources if r.parent.endswith(":DraDeviceClasses::dra")]
    assert len(children) == 6
    assert all(r.options["provider"] == chosen.urn and first.urn in r.options["dependsOn"] for r in children)


# ---- the pure pieces, without the engine -------------------------------------------------------


def test_every_problem_is_reported_at_once():
    args = DraDeviceClassesArgs(gpu_counts=[16], gpu_operator={"driver": True, "device_plugin": True, "mig_strategy": "single"})
    pools = [pool_facts(), pool_facts("h100mig", mig_profile="MIG1g")]
    problems = dra_device_classes_problems(args, pools, "1.33")
    assert [p.field for p in problems] == [
        "kubernetes_version",
        "gpu_operator.driver",
        "gpu_operator.driver",
        "gpu_operator.mig_strategy",
        "gpu_operator.device_plugin",
        "gpu_counts",
    ]
    assert [p.problem.split(" already")[0] for p in problems[1:3]] == ["pool h100", "pool h100mig"]


def test_an_amd_pool_gets_no_nvidia_driver_advice():
    problems = dra_device_classes_problems(
        DraDeviceClassesArgs(gpu_counts=[]), [pool_facts("mi300x", MI300X, driver="none")], None
    )
    assert [p.field for p in problems] == ["pools"]


def test_no_pools_is_one_problem():
    assert [str(p) for p in dra_device_classes_problems(DraDeviceClassesArgs(), [], "1.34")] == [
        "pools=[]: give at least one NVIDIA GPU pool"
    ]


def test_mixed_driver_roots_are_one_problem_without_per_pool_advice():
    pools = [pool_facts(), pool_facts("h100n", driver="none")]
    for operator in (None, {}, {"driver": False}):
        problems = dra_device_classes_problems(DraDeviceClassesArgs(gpu_operator=operator), pools, "1.34")
        assert [str(p) for p in problems] == [MIXED_ROOTS]


def test_good_input_has_no_problems():
    none_pool = pool_facts("h100n", driver="none")
    assert dra_device_classes_problems(DraDeviceClassesArgs(gpu_counts=[1, 8]), [pool_facts()], "1.34") == []
    assert dra_device_classes_problems(DraDeviceClassesArgs(gpu_operator={}), [none_pool], None) == []


def test_claims_and_chart_values_from_pool_facts():
    h100, mig = pool_facts(), pool_facts("h100mig", mig_profile="MIG3g", spot=True)
    full = full_node_claim(h100, "gpu-h100-80gb")
    assert (full.template, full.description, full.metadata("ns")) == (
        "h100-gpus-full-node",
        "8 x gpu-h100-80gb",
        {"name": "h100-gpus-full-node", "namespace": "ns", "annotations": {"aks-gpu-inference/pool": "h100"}},
    )
    assert count_claim(2).spec() == {
        "spec": {"devices": {"requests": [{"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2}}]}}
    }
    assert mig_claim(mig).template == "h100mig-mig-3g-40gb"
    values = dra_driver_values("/", [mig, h100])
    assert values["kubeletPlugin"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": AGENTPOOL, "operator": "In", "values": ["h100", "h100mig"]}]}]
    }
    spot = {"key": "kubernetes.azure.com/scalesetpriority", "operator": "Equal", "value": "spot", "effect": "NoSchedule"}
    assert values["kubeletPlugin"]["tolerations"] == [NVIDIA_TAINT, SKU_GPU, spot]
    operator = DraDeviceClassesArgs(gpu_operator={"driver": False}).gpu_operator
    assert gpu_operator_values(operator, [h100])["migManager"] == {"enabled": False}
    assert gpu_operator_values(operator, [h100, mig])["migManager"] == {"enabled": True}
