"""RdmaNetwork under mocks: DRANET pinned as seed 004 section 3, the dranet.net DeviceClass of
section 4, one full-node NIC claim template per pool (section 5) and the pod contract (section 6)."""

import pulumi
import pulumi_kubernetes as k8s
import pytest

from aks_gpu_inference.components import AksCluster, GpuNodePool, RdmaNetwork, RdmaNetworkArgs
from aks_gpu_inference.components.context import AzureScope
from aks_gpu_inference.components.gpu.dra_api import kubernetes_version_problems
from aks_gpu_inference.components.gpu.pod_contract import RDMA_ENV
from aks_gpu_inference.components.gpu.rdma_network import dranet_values, rdma_network_problems
from tests.components.gpu_pools import pool_facts
from tests.conftest import cluster_context, of_type, one, refusal_message, run_components

H100 = "Standard_ND96isr_H100_v5"
H200 = "Standard_ND96isr_H200_v5"
A100 = "Standard_NC24ads_A100_v4"
POOL = "aks-gpu-inference/pool"
AGENTPOOL = "kubernetes.azure.com/agentpool"
SKU_GPU = {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
SEED_CEL = 'device.driver == "dra.net" && device.attributes["dra.net"].rdma == true'
SEED_RESOURCES = {"requests": {"cpu": "100m", "memory": "50Mi"}, "limits": {"memory": "256Mi"}}
NO_SCHEDULE = {"operator": "Exists", "effect": "NoSchedule"}


def rdma_pool(name: str = "h100", vm_size: str = H100, **overrides) -> GpuNodePool:
    args = {"name": name, "vm_size": vm_size, "rdma": True, "count": 2, **overrides}
    return GpuNodePool(name, args, cluster=cluster_context("aks-test", "rg-test"))


def k8s_cluster(version: str | None = "1.34"):
    """The cluster context with a Kubernetes provider (named ``k8s``) and a version."""
    return cluster_context(provider=k8s.Provider("k8s", kubeconfig="x"), kubernetes_version=version)


def network_program(holder: dict, args=None, pools=(("h100", H100),), version="1.34"):
    def program():
        built = [rdma_pool(name, size) for name, size in pools]
        holder["network"] = RdmaNetwork("rdma", args or {}, pools=built, cluster=k8s_cluster(version))

    return program


def build(args=None, pools=(("h100", H100),), version="1.34"):
    holder = {}
    run = run_components(network_program(holder, args, pools, version))
    return holder["network"], run


@pytest.fixture(scope="module")
def default_build():
    """One network with every default, for the tests that only read it."""
    return build()


def templates(run) -> dict[str, dict]:
    return {r.inputs["metadata"]["name"]: r for r in of_type(run, "resource.k8s.io/v1:ResourceClaimTemplate")}


def request_of(template) -> dict:
    (request,) = template.inputs["spec"]["spec"]["devices"]["requests"]
    return request


def test_dranet_chart_is_pinned_as_seed_004_qualified_it(default_build):
    _, run = default_build
    chart = one(run, "helm.sh/v4:Chart")
    assert chart.name == "rdma-dranet"
    assert chart.inputs["chart"] == "oci://registry.k8s.io/networking/charts/dranet"
    assert chart.inputs["version"] == "v1.3.0"  # rack-scale pools take v1.4.0 (test_gb300_stack.py)
    assert chart.inputs["namespace"] == "kube-system"
    assert chart.inputs["values"] == {
        "image": {"repository": "registry.k8s.io/networking/dranet", "tag": "v1.3.0", "pullPolicy": "IfNotPresent"},
        "nodeSelector": {AGENTPOOL: "h100"},
        "args": {"cloudProviderHint": "AZURE", "moveIBInterfaces": False},
        "resources": SEED_RESOURCES,
        # Every NoSchedule taint (sku=gpu among them); the pool has no other kind.
        "tolerations": [NO_SCHEDULE],
    }
    assert chart.parent.endswith("aks-gpu:index:RdmaNetwork::rdma")
    assert chart.options["provider"].endswith("pulumi:providers:kubernetes::k8s")


def test_two_pools_select_dranet_nodes_by_node_affinity():
    network, run = build(pools=(("h200", H200), ("h100", H100)))
    values = one(run, "helm.sh/v4:Chart").inputs["values"]
    assert "nodeSelector" not in values
    assert values["affinity"] == {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": AGENTPOOL, "operator": "In", "values": ["h100", "h200"]}]}]
            }
        }
    }
    assert network.nics == {"h200": 8, "h100": 8}
    assert network.full_node_templates == {"h100": "h100-rdma-full-node", "h200": "h200-rdma-full-node"}
    found = templates(run)
    assert set(found) == {"h100-rdma-full-node", "h200-rdma-full-node"}
    selector = request_of(found["h200-rdma-full-node"])["exactly"]["selectors"]
    assert selector == [{"cel": {"expression": f'device.attributes["azure.dra.net"]["vmSize"] == "{H200}"'}}]


def dranet_tolerations(*pools: dict) -> list[dict]:
    holder: dict = {}

    def program():
        built = [rdma_pool(**p) for p in pools]
        holder["network"] = RdmaNetwork("rdma", {}, pools=built, cluster=k8s_cluster())

    run = run_components(program)
    return one(run, "helm.sh/v4:Chart").inputs["values"]["tolerations"]


def test_dranet_tolerates_the_pools_other_taints():
    # A NoExecute taint would evict (and never admit) the DRANET pod, leaving the node without NICs
    # as DRA devices; the chart's blanket toleration covers NoSchedule only.
    evict = {"key": "maintenance", "operator": "Equal", "value": "true", "effect": "NoExecute"}
    prefer = {"key": "team", "operator": "Equal", "value": "llm", "effect": "PreferNoSchedule"}
    tolerations = dranet_tolerations(
        {"name": "h100", "taints": ["sku=gpu:NoSchedule", "maintenance=true:NoExecute"]},
        {"name": "h200", "vm_size": H200, "taints": ["team=llm:PreferNoSchedule"], "spot": True},
    )
    # No toleration per NoSchedule taint (sku=gpu, the Spot taint): the blanket one covers them.
    assert tolerations == [NO_SCHEDULE, evict, prefer]


def test_dranet_tolerations_for_spot_and_keyless_taints():
    # Spot adds a NoSchedule taint (covered); a key-only NoExecute taint becomes an Exists toleration.
    tolerations = dranet_tolerations({"name": "h100", "spot": True, "taints": ["sku=gpu:NoSchedule", "dedicated:NoExecute"]})
    assert tolerations == [NO_SCHEDULE, {"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}]


def test_chart_version_and_image_tag_are_configurable():
    _, run = build({"chart_version": "v1.4.0", "image_tag": "v1.4.0"})
    chart = one(run, "helm.sh/v4:Chart").inputs
    assert (chart["version"], chart["values"]["image"]["tag"]) == ("v1.4.0", "v1.4.0")


def test_device_class_is_the_seed_cel(default_build):
    _, run = default_build
    device_class = one(run, "resource.k8s.io/v1:DeviceClass")
    assert device_class.inputs["metadata"] == {"name": "dranet.net"}
    assert device_class.inputs["spec"] == {"selectors": [{"cel": {"expression": SEED_CEL}}]}
    assert device_class.inputs["apiVersion"] == "resource.k8s.io/v1" and device_class.inputs["kind"] == "DeviceClass"


def test_full_node_template_claims_every_nic_of_the_size(default_build):
    network, run = default_build
    (template,) = templates(run).values()
    assert template.name == "rdma-h100-rdma-full-node"
    assert template.inputs["metadata"] == {
        "name": "h100-rdma-full-node",
        "namespace": "llm-d-infra",
        "annotations": {"aks-gpu-inference/pool": "h100"},
    }
    assert request_of(template) == {
        "name": "rdma-nics",
        "exactly": {
            "deviceClassName": "dranet.net",
            "count": 8,
            "selectors": [{"cel": {"expression": f'device.attributes["azure.dra.net"]["vmSize"] == "{H100}"'}}],
        },
    }
    namespace = one(run, "core/v1:Namespace")
    device_class = one(run, "resource.k8s.io/v1:DeviceClass")
    assert set(template.options["dependsOn"]) == {namespace.urn, device_class.urn}
    assert network.partial_templates == {"h100": {}}, "no partial templates unless asked (seed 004: topology first)"


def test_partial_templates_are_opt_in_and_smaller():
    network, run = build({"partial_node_nics": [2, 1, 1]})
    found = templates(run)
    assert set(found) == {"h100-rdma-full-node", "h100-rdma-1-nic", "h100-rdma-2-nic"}
    assert request_of(found["h100-rdma-1-nic"])["exactly"]["count"] == 1
    assert request_of(found["h100-rdma-2-nic"])["exactly"]["count"] == 2
    assert found["h100-rdma-2-nic"].inputs["metadata"]["annotations"] == {"aks-gpu-inference/pool": "h100"}
    assert network.partial_templates == {"h100": {1: "h100-rdma-1-nic", 2: "h100-rdma-2-nic"}}


def test_namespace_allows_ipc_lock():
    network, run = build({"namespace": "rdma-work"})
    namespace = one(run, "core/v1:Namespace").inputs["metadata"]
    assert namespace["name"] == "rdma-work" == network.namespace
    assert namespace["labels"] == {
        "pod-security.kubernetes.io/enforce": "privileged",
        "pod-security.kubernetes.io/warn": "baseline",
        "aks-gpu-inference/rdma": "true",
    }
    assert all(t.inputs["metadata"]["namespace"] == "rdma-work" for t in templates(run).values())


def test_pod_spec_is_the_seed_contract():
    network, _ = build({"partial_node_nics": [1]})
    spec = network.pod_spec("h100")
    assert spec.claims == {"rdma-nics": "h100-rdma-full-node"}
    assert spec.node_selector == {AGENTPOOL: "h100"}
    assert spec.tolerations == [SKU_GPU]
    assert spec.env == RDMA_ENV
    assert network.pod_spec("h100", nics=8).claims == spec.claims
    assert network.pod_spec("h100", nics=1).claims == {"rdma-nics": "h100-rdma-1-nic"}
    with_gpus = network.pod_spec("h100", gpu_claim_template="h100-gpus-full-node")
    assert with_gpus.claims == {"rdma-nics": "h100-rdma-full-node", "gpus": "h100-gpus-full-node"}
    # The contract carries copies: changing it never changes the pool.
    spec.node_selector["x"] = "y"
    assert network.pod_spec("h100").node_selector == {AGENTPOOL: "h100"}


def test_pod_spec_refuses_unknown_pools_and_nic_counts(default_build):
    network, _ = default_build
    with pytest.raises(ValueError, match="'h200' is not an RDMA pool of this network; pools: h100"):
        network.pod_spec("h200")
    with pytest.raises(ValueError, match="no 2-NIC template for h100; add 2 to partial_node_nics"):
        network.pod_spec("h100", nics=2)


def test_recorded_nic_count_matching_the_catalog_is_accepted():
    network, _ = build({"nics_per_node": {"h100": 8}})
    assert network.nics == {"h100": 8}


def test_works_with_an_aks_cluster_provider():
    holder = {}

    def program():
        cluster = AksCluster("aks", {"name": "aks-test"}, scope=AzureScope("rg-test", "eastus"))
        pool = GpuNodePool(
            "h100", {"name": "h100", "vm_size": H100, "rdma": True}, cluster=cluster_context(cluster.cluster_name, "rg-test")
        )
        holder["network"] = RdmaNetwork("rdma", {}, pools=[pool], cluster=cluster.context)

    run = run_components(program)
    provider = one(run, "pulumi:providers:kubernetes")
    kubernetes = [r for r in run.resources if r.is_kubernetes and r.parent.endswith(":RdmaNetwork::rdma")]
    assert {r.type.rsplit(":", 1)[-1] for r in kubernetes} == {"Namespace", "DeviceClass", "ResourceClaimTemplate"}
    assert all(r.options["provider"] == provider.urn for r in [*kubernetes, one(run, "helm.sh/v4:Chart")])
    assert holder["network"].nics == {"h100": 8}


def test_a_provider_in_opts_wins_over_the_clusters():
    def program():
        pool = rdma_pool()
        chosen = k8s.Provider("chosen", kubeconfig="y")
        RdmaNetwork("rdma", {}, pulumi.ResourceOptions(provider=chosen), pools=[pool], cluster=k8s_cluster())

    run = run_components(program)
    chosen = next(r for r in of_type(run, "pulumi:providers:kubernetes") if r.name == "chosen")
    kubernetes = [r for r in run.resources if r.is_kubernetes and r.parent.endswith(":RdmaNetwork::rdma")]
    children = [*kubernetes, one(run, "helm.sh/v4:Chart")]
    assert len(children) == 4 and all(r.options["provider"] == chosen.urn for r in children)


def test_nic_template_makes_a_partial_template_on_demand():
    holder: dict = {}

    def program():
        network_program(holder)()
        network = holder["network"]
        holder["names"] = [network.nic_template("h100", 1), network.nic_template("h100", 1), network.nic_template("h100", 8)]

    run = run_components(program)
    network = holder["network"]
    assert holder["names"] == ["h100-rdma-1-nic", "h100-rdma-1-nic", "h100-rdma-full-node"], "made once; all NICs: full node"
    found = templates(run)
    assert set(found) == {"h100-rdma-full-node", "h100-rdma-1-nic"}
    made, configured = found["h100-rdma-1-nic"], found["h100-rdma-full-node"]
    # Named, parented and ordered like a template of partial_node_nics: the same URN either way.
    assert made.name == "rdma-h100-rdma-1-nic" and made.parent == configured.parent
    assert made.inputs["metadata"] == {"name": "h100-rdma-1-nic", "namespace": "llm-d-infra", "annotations": {POOL: "h100"}}
    assert request_of(made)["exactly"]["count"] == 1
    assert made.options["dependsOn"] == configured.options["dependsOn"]
    assert made.options["provider"] == configured.options["provider"]
    assert network.partial_templates == {"h100": {1: "h100-rdma-1-nic"}}
    assert network.pod_spec("h100", nics=1).claims == {"rdma-nics": "h100-rdma-1-nic"}


def test_nic_template_refuses_unknown_pools_and_counts(default_build):
    network, _ = default_build
    with pytest.raises(ValueError, match="'h200' is not an RDMA pool of this network; pools: h100"):
        network.nic_template("h200", 1)
    for nics in (0, 9):
        with pytest.raises(ValueError, match=f"a partial claim on h100 asks for 1 to 7 NICs, not {nics}"):
            network.nic_template("h100", nics)


# ---- the pure pieces, without the engine -------------------------------------------------------


def test_every_problem_is_reported_at_once():
    args = RdmaNetworkArgs(nics_per_node={"h100": 4, "gb300": 4}, partial_node_nics=[8])
    a100 = pool_facts("a100", A100)
    problems = rdma_network_problems(args, [pool_facts(rdma=True), a100], "1.33")
    assert [p.field for p in problems] == [
        "kubernetes_version",
        "nics_per_node.h100",
        "partial_node_nics",
        "pools",
        "nics_per_node",
    ]
    assert str(problems[3]).startswith("pools='a100': Standard_NC24ads_A100_v4 is not RDMA-capable")
    assert str(problems[4]) == "nics_per_node=['gb300']: not RDMA pools of this network; pools: h100, a100"


def test_good_input_has_no_problems():
    assert rdma_network_problems(RdmaNetworkArgs(partial_node_nics=[1, 4]), [pool_facts(rdma=True)], "1.34") == []
    assert rdma_network_problems(RdmaNetworkArgs(), [pool_facts(rdma=True)], None) == [], "an unknown version passes"


def test_no_pools_is_one_problem():
    problems = rdma_network_problems(RdmaNetworkArgs(nics_per_node={"h100": 8}), [], "1.34")
    assert [str(p) for p in problems] == ["pools=[]: give at least one RDMA pool"]


def test_dranet_values_place_dranet_on_exactly_the_pools():
    one_pool = dranet_values(RdmaNetworkArgs(), [pool_facts(rdma=True)])
    assert one_pool["nodeSelector"] == {AGENTPOOL: "h100"} and "affinity" not in one_pool
    two = dranet_values(RdmaNetworkArgs(image_tag="v1.4.0"), [pool_facts("h200", H200), pool_facts(rdma=True)])
    terms = two["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [{"key": AGENTPOOL, "operator": "In", "values": ["h100", "h200"]}]}]
    assert two["image"]["tag"] == "v1.4.0" and two["tolerations"] == [NO_SCHEDULE]


# ---- refusals: the error says why, and nothing is created --------------------------------------


def refused(program) -> str:
    return refusal_message(program, "RdmaNetwork", "rdma", lambda t: t.startswith("kubernetes:"))


def test_non_rdma_size_is_refused():
    def program():
        # GpuNodePool itself refuses rdma=True on NC sizes, so the pool is built without it.
        pool = GpuNodePool("a100", {"name": "a100", "vm_size": "Standard_NC24ads_A100_v4"}, cluster=cluster_context("aks", "rg"))
        RdmaNetwork("rdma", {}, pools=[pool], cluster=k8s_cluster())

    assert (
        "pools='a100': Standard_NC24ads_A100_v4 is not RDMA-capable; RDMA sizes have 'r' among the capability letters"
        in refused(program)
    )


@pytest.mark.parametrize(
    "args, version, pools, expected",
    [
        (
            {"nics_per_node": {"h100": 4}},
            "1.34",
            (("h100", H100),),
            "nics_per_node.h100=4: the catalog says Standard_ND96isr_H100_v5 has 8 InfiniBand NICs; "
            "fix the catalog row (with its source) if DRANET really publishes 4",
        ),
        (
            {"partial_node_nics": [1, 8, 9]},
            "1.34",
            (("h100", H100),),
            "partial_node_nics=[8, 9]: a partial claim on h100 (Standard_ND96isr_H100_v5) must ask for fewer than its 8 NICs",
        ),
        (
            {"nics_per_node": {"h100": 8, "gb300": 4}},
            "1.34",
            (("h100", H100),),
            "nics_per_node=['gb300']: not RDMA pools of this network; pools: h100",
        ),
        (
            {},
            "1.33",
            (("h100", H100),),
            "kubernetes_version='1.33': DRA with resource.k8s.io/v1 needs Kubernetes 1.34 or later",
        ),
        ({}, "1.34", (), "pools=[]: give at least one RDMA pool"),
        ({"partial_node_nics": [0]}, "1.34", (("h100", H100),), "NIC counts are whole numbers of at least 1"),
        ({"namespace": "LLM"}, "1.34", (("h100", H100),), "namespace='LLM'"),
        ({"vlan": 1}, "1.34", (("h100", H100),), "vlan=1: unknown key"),
    ],
)
def test_bad_input_is_refused_before_anything_is_created(args, version, pools, expected):
    assert expected in refused(network_program({}, args, pools, version))


@pytest.mark.parametrize("version", ["1.34", "1.34.2", "1.35", "2.0", None])
def test_newer_kubernetes_versions_are_accepted(version):
    assert kubernetes_version_problems(version) == []


def test_older_kubernetes_versions_are_refused_by_the_shared_check():
    for version in ("1.33", "1.33.5", "1.9"):
        (problem,) = kubernetes_version_problems(version)
        assert (problem.field, problem.value) == ("kubernetes_version", version)
        assert "needs Kubernetes 1.34 or later" in problem.problem


def test_the_tests_pool_facts_are_what_a_gpu_node_pool_exposes():
    # The pure tests above use pool_facts; it must stay what GpuNodePool derives from the same args.
    cases = [
        ("h100", H100, {"rdma": True, "count": 2, "taints": ["sku=gpu:NoSchedule", "dedicated:NoExecute"]}),
        ("h100mig", H100, {"mig_profile": "MIG2g", "count": 0, "min_count": 0, "max_count": 3, "spot": True}),
        ("a100", A100, {"driver": "none"}),
    ]
    holder: dict = {}

    def program():
        holder["pools"] = [
            GpuNodePool(name, {"name": name, "vm_size": size, **args}, cluster=cluster_context()) for name, size, args in cases
        ]

    run_components(program)
    for pool, (name, size, args) in zip(holder["pools"], cases, strict=True):
        facts = pool_facts(name, size, **args)
        assert {f: getattr(pool, f) for f in facts.__dataclass_fields__} == vars(facts)


def test_a_rack_scale_pool_refuses_a_dranet_without_the_interconnect_attributes():
    from aks_gpu_inference.components.gpu.rdma_network import rdma_network_problems

    gb300 = pool_facts("gb300", "Standard_ND128isr_GB300_v6")
    (problem,) = rdma_network_problems(RdmaNetworkArgs(chart_version="v1.3.0"), [gb300], "1.35")
    assert problem.field == "chart_version" and "publishes from v1.4.0" in problem.problem
    assert rdma_network_problems(RdmaNetworkArgs(), [gb300], "1.35") == []
