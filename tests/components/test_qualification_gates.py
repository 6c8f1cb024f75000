"""QualificationGates under mocks: seed 004 section 7's six gates as Indexed Jobs carrying the
RDMA pod contract, and the whole prod stack validated object by object against Kubernetes 1.34."""

from dataclasses import dataclass

import kubernetes_validate
import pulumi_kubernetes as k8s
import pytest

from aks_gpu_inference.components import DraDeviceClasses, GpuNodePool, QualificationGates, QualificationGatesArgs, RdmaNetwork
from aks_gpu_inference.components.core import pins
from aks_gpu_inference.components.gpu.gate_jobs import GATES, SCRIPTS, GatePlan
from aks_gpu_inference.components.gpu.pod_contract import RdmaPodSpec
from aks_gpu_inference.components.gpu.qualification_gates import qualification_gates_problems
from aks_gpu_inference.planner.engine.values import kubernetes_object
from tests.components.gpu_pools import pool_facts
from tests.conftest import (
    cluster_context,
    is_custom_resource,
    of_type,
    one,
    planned_stack,
    refusal_message,
    run_components,
)

H100 = "Standard_ND96isr_H100_v5"
AGENTPOOL = "kubernetes.azure.com/agentpool"
SKU_GPU = {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
GATE_LABEL = "aks-gpu-inference/gate"
SLUGS = {
    1: "nic-isolation",
    2: "full-node-nics",
    3: "ib-write-bw",
    4: "nccl",
    5: "nixl",
    6: "full-node-nccl",
}
SCRIPT_OF = {1: "uverbs.sh", 2: "uverbs.sh", 3: "ib_write_bw.sh", 4: "nccl.sh", 5: "nixl.sh", 6: "nccl.sh"}
ONE_NIC_GATES = {1, 3}
TWO_NODE_GATES = {3, 4, 5, 6}


def k8s_cluster():
    """The cluster context with a Kubernetes provider (named ``k8s``), on Kubernetes 1.34."""
    return cluster_context(provider=k8s.Provider("k8s", kubeconfig="x"), kubernetes_version="1.34")


def gates_program(holder: dict, args=None, network_args=None, dra_args=None, pools=("h100",), pool_args=None):
    """Pools (two nodes each unless ``pool_args`` says otherwise), an RdmaNetwork (1-NIC template by
    default), optional DRA claims, then the gates."""

    def program():
        cluster = k8s_cluster()
        sizing = {"count": 2} if pool_args is None else pool_args
        built = [
            GpuNodePool(p, {"name": p, "vm_size": H100, "rdma": True, **sizing}, cluster=cluster_context("aks-test", "rg-test"))
            for p in pools
        ]
        network = RdmaNetwork(
            "rdma", {"partial_node_nics": [1]} if network_args is None else network_args, pools=built, cluster=cluster
        )
        dra = None
        if dra_args is not None:
            dra = DraDeviceClasses(
                "dra", {"namespace": network.namespace, "create_namespace": False, **dra_args}, pools=built, cluster=cluster
            )
        holder["gates"] = QualificationGates(
            "qualify", {"pool": pools[0], **(args or {})}, network=network, cluster=cluster, gpu_claims=dra
        )

    return program


def build(args=None, network_args=None, dra_args=None, pools=("h100",), pool_args=None):
    holder = {}
    run = run_components(gates_program(holder, args, network_args, dra_args, pools, pool_args))
    return holder["gates"], run


@pytest.fixture(scope="module")
def default_run():
    """The gates with every default, built once for the tests that only read them."""
    return build()[1]


def jobs_by_gate(run) -> dict[int, dict]:
    """Gate number -> Job inputs."""
    return {int(r.name.rsplit("-", 1)[1]): r.inputs for r in of_type(run, "batch/v1:Job")}


def pod_of(job: dict) -> dict:
    return job["spec"]["template"]["spec"]


def env_of(job: dict) -> dict[str, str]:
    (container,) = pod_of(job)["containers"]
    return {e["name"]: e["value"] for e in container["env"]}


def test_six_indexed_jobs_named_by_gate_and_run():
    gates, run = build({"run": "2"})
    jobs = jobs_by_gate(run)
    assert sorted(jobs) == [1, 2, 3, 4, 5, 6]
    for number, job in jobs.items():
        name = f"qualify-{number}-{SLUGS[number]}-2"
        assert job["metadata"]["name"] == name
        assert job["metadata"]["namespace"] == "llm-d-infra"
        assert job["metadata"]["labels"] == {GATE_LABEL: "qualify"}
        assert job["metadata"]["annotations"]["aks-gpu-inference/gate-title"]
        spec = job["spec"]
        nodes = 2 if number in TWO_NODE_GATES else 1
        assert (spec["completionMode"], spec["completions"], spec["parallelism"]) == ("Indexed", nodes, nodes)
        assert spec["backoffLimit"] == 0
        assert spec["activeDeadlineSeconds"] == 30 * 60
        assert spec["template"]["metadata"]["labels"] == {GATE_LABEL: "qualify"}
        assert gates.jobs[f"gate-{number}-{SLUGS[number]}"] == name
    assert len(gates.jobs) == 6
    assert gates.verdict_command == (
        "kubectl -n llm-d-infra logs -l aks-gpu-inference/gate=qualify --prefix --tail=-1 | grep -E 'GATE (PASS|FAIL)'"
    )


def test_two_node_gates_never_share_a_node(default_run):
    run = default_run
    for number, job in jobs_by_gate(run).items():
        affinity = pod_of(job).get("affinity")
        if number in TWO_NODE_GATES:
            assert affinity == {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "labelSelector": {"matchLabels": {"job-name": job["metadata"]["name"]}},
                            "topologyKey": "kubernetes.io/hostname",
                        }
                    ]
                }
            }
        else:
            assert affinity is None


def test_every_gate_pod_carries_the_rdma_contract(default_run):
    run = default_run
    for number, job in jobs_by_gate(run).items():
        pod = pod_of(job)
        (container,) = pod["containers"]
        assert pod["restartPolicy"] == "Never" and pod["subdomain"] == "qualify-peers"
        assert pod["nodeSelector"] == {AGENTPOOL: "h100"}
        assert pod["tolerations"] == [SKU_GPU]
        template = "h100-rdma-1-nic" if number in ONE_NIC_GATES else "h100-rdma-full-node"
        assert pod["resourceClaims"] == [{"name": "rdma-nics", "resourceClaimTemplateName": template}]
        assert container["resources"]["claims"] == [{"name": "rdma-nics"}]
        context = container["securityContext"]
        assert context == RdmaPodSpec.security_context(), "the contract's context: IPC_LOCK as root, nothing else"
        assert "privileged" not in context
        env = env_of(job)
        assert env["UCX_TLS"] == "rc_x,cuda_copy,cuda_ipc,self" and env["NCCL_IB_DISABLE"] == "0"
        assert container["command"] == ["bash", f"/gates/{SCRIPT_OF[number]}"]
        assert container["volumeMounts"] == [{"name": "gates", "mountPath": "/gates", "readOnly": True}]
        assert pod["volumes"] == [{"name": "gates", "configMap": {"name": "qualify-scripts-1"}}]
        image = pins.image("vllm") if number == 5 else pins.image("gate-tools")
        assert container["image"] == image


def test_gate_environment_states_what_each_gate_expects(default_run):
    jobs = jobs_by_gate(default_run)
    for number, job in jobs.items():
        env = env_of(job)
        assert env["GATE_JOB"] == job["metadata"]["name"]
        assert (env["GATE_SERVICE"], env["GATE_NAMESPACE"]) == ("qualify-peers", "llm-d-infra")
        assert env["EXPECTED_UVERBS"] == ("1" if number in ONE_NIC_GATES else "8")
        assert env["MIN_GBPS"] == "300", "75% of the catalog's 400 Gb/s NDR rail"
        assert env["EXPECTED_RAILS"] == ("8" if number == 6 else "1")
        assert env["GPUS_PER_NODE"] == ("8" if number == 6 else "1")
    _, run = build({"min_gbps_per_rail": 350.5})
    assert {env_of(job)["MIN_GBPS"] for job in jobs_by_gate(run).values()} == {"350.5"}


def test_the_nccl_gates_fail_rather_than_fall_back_to_sockets(default_run):
    """Gates 4 and 6 run NCCL as the training workers do, with NCCL_NET=IB: no usable InfiniBand is a failed
    communicator, not a pass over TCP that only the log grep would catch. The other gates run no NCCL."""
    jobs = jobs_by_gate(default_run)
    assert {n: env_of(job).get("NCCL_NET") for n, job in jobs.items()} == {1: None, 2: None, 3: None, 4: "IB", 5: None, 6: "IB"}


def test_gate_pods_join_the_groups_their_image_needs(default_run):
    """Root with every capability dropped reaches a group-only directory (rayproject's /home/ray) only as a member."""
    assert all("securityContext" not in pod_of(job) for job in jobs_by_gate(default_run).values())
    _, run = build({"supplemental_groups": [100]})
    for job in jobs_by_gate(run).values():
        pod = pod_of(job)
        assert pod["securityContext"] == {"supplementalGroups": [100]}
        assert pod["containers"][0]["securityContext"]["runAsUser"] == 0, "still the contract's root"


def test_gpus_from_the_device_plugin_without_dra(default_run):
    run = default_run
    for number, job in jobs_by_gate(run).items():
        (container,) = pod_of(job)["containers"]
        limits = container["resources"].get("limits")
        expected = {4: {"nvidia.com/gpu": 1}, 5: {"nvidia.com/gpu": 1}, 6: {"nvidia.com/gpu": 8}}.get(number)
        assert limits == expected


def test_gpus_from_dra_claim_templates():
    _, run = build(dra_args={"gpu_counts": [1, 8]})
    for number, job in jobs_by_gate(run).items():
        pod = pod_of(job)
        (container,) = pod["containers"]
        claims = {c["name"]: c["resourceClaimTemplateName"] for c in pod["resourceClaims"]}
        expected_gpu = {4: "gpu-1", 5: "gpu-1", 6: "h100-gpus-full-node"}.get(number)
        if expected_gpu:
            assert claims["gpus"] == expected_gpu
            assert {"name": "gpus"} in container["resources"]["claims"]
        else:
            assert "gpus" not in claims
        assert "limits" not in container["resources"], "no device-plugin request beside a DRA claim"
    # Every template a gate pod names exists in the gate's namespace.
    templates = {(r.inputs["metadata"]["namespace"], r.inputs["metadata"]["name"]) for r in of_type(run, "ResourceClaimTemplate")}
    for job in jobs_by_gate(run).values():
        for claim in pod_of(job)["resourceClaims"]:
            assert (job["metadata"]["namespace"], claim["resourceClaimTemplateName"]) in templates


def test_configmap_ships_every_gate_script_and_service_is_headless(default_run):
    run = default_run
    config_map = one(run, "core/v1:ConfigMap").inputs
    assert config_map["metadata"] == {"name": "qualify-scripts-1", "namespace": "llm-d-infra"}
    expected = {p.name: p.read_text() for p in SCRIPTS.iterdir() if p.suffix in (".sh", ".py")}
    assert set(expected) >= {
        "common.sh",
        "uverbs.sh",
        "ib_write_bw.sh",
        "nccl.sh",
        "nixl.sh",
        "nccl_allreduce.py",
        "nixl_transfer.py",
    }
    assert config_map["data"] == expected
    service = one(run, "core/v1:Service").inputs
    assert service["metadata"] == {"name": "qualify-peers", "namespace": "llm-d-infra"}
    assert service["spec"] == {"clusterIP": "None", "selector": {GATE_LABEL: "qualify"}, "publishNotReadyAddresses": True}
    scripts, peers = one(run, "core/v1:ConfigMap"), one(run, "core/v1:Service")
    for job in of_type(run, "batch/v1:Job"):
        assert {scripts.urn, peers.urn} <= set(job.options["dependsOn"])
        assert job.options["customTimeouts"] == {"create": "45m"}
        assert job.parent.endswith("aks-gpu:index:QualificationGates::qualify")


def test_images_and_timeout_are_configurable():
    _, run = build(
        {"tools_image": "myacr.azurecr.io/perftest@sha256:" + "a" * 64, "nixl_image": "nixl:0.7.0", "timeout_minutes": 60}
    )
    jobs = jobs_by_gate(run)
    assert pod_of(jobs[3])["containers"][0]["image"].startswith("myacr.azurecr.io/perftest@sha256:")
    assert pod_of(jobs[5])["containers"][0]["image"] == "nixl:0.7.0"
    assert jobs[1]["spec"]["activeDeadlineSeconds"] == 3600
    assert {j.options["customTimeouts"]["create"] for j in of_type(run, "batch/v1:Job")} == {"75m"}


def test_gates_on_the_second_pool_of_a_network():
    _, run = build(pools=("h100b", "h100"))
    pod = pod_of(jobs_by_gate(run)[2])
    assert pod["nodeSelector"] == {AGENTPOOL: "h100b"}
    assert pod["resourceClaims"] == [{"name": "rdma-nics", "resourceClaimTemplateName": "h100b-rdma-full-node"}]


def test_the_gates_get_their_one_nic_template_from_the_network():
    # The network's args ask for no partial template: the gates have the network make theirs, for
    # the gated pool only, named and parented as if partial_node_nics had listed 1.
    gates_alone, run = build(network_args={}, pools=("h100", "h100b"))
    _, configured = build(network_args={"partial_node_nics": [1]})
    made = {r.name: r for r in of_type(run, "ResourceClaimTemplate")}
    assert set(made) == {"rdma-h100-rdma-full-node", "rdma-h100b-rdma-full-node", "rdma-h100-rdma-1-nic"}
    listed = next(r for r in of_type(configured, "ResourceClaimTemplate") if r.name == "rdma-h100-rdma-1-nic")
    one_nic = made["rdma-h100-rdma-1-nic"]
    assert (one_nic.urn, one_nic.parent, one_nic.inputs) == (listed.urn, listed.parent, listed.inputs)
    for number in ONE_NIC_GATES:
        claims = pod_of(jobs_by_gate(run)[number])["resourceClaims"]
        assert claims == [{"name": "rdma-nics", "resourceClaimTemplateName": "h100-rdma-1-nic"}]
    assert len(gates_alone.jobs) == 6


# ---- the pure pieces, without the engine -------------------------------------------------------


@dataclass
class Network:
    """What the gates read from an RdmaNetwork."""

    namespace: str
    nics: dict
    pools: dict


@dataclass
class Claims:
    """What the gates read from DraDeviceClasses."""

    namespace: str
    templates: dict


def network_of(*pools) -> Network:
    return Network("llm-d-infra", {p.pool_name: p.sku.infiniband_nics for p in pools}, {p.pool_name: p for p in pools})


def test_every_problem_is_reported_at_once():
    network = network_of(pool_facts(rdma=True, count=1))
    problems = qualification_gates_problems(QualificationGatesArgs(pool="h100"), network, Claims("gpu-inference", {"gpu-8": ""}))
    assert [str(p) for p in problems] == [
        "gpu_claims=['gpu-8']: needs the DRA templates gpu-1 and h100-gpus-full-node (gpu_counts must include 1)",
        "gpu_claims='gpu-inference': claim templates are namespaced: the GPU templates must live in the RDMA "
        "namespace 'llm-d-infra'",
        f"pool='h100': {TWO_NODES}",
    ]


def test_an_unknown_pool_is_the_only_problem():
    problems = qualification_gates_problems(QualificationGatesArgs(pool="h200"), network_of(pool_facts(rdma=True)), None)
    assert [str(p) for p in problems] == ["pool='h200': not an RDMA pool of the network; pools: h100"]


def test_good_input_has_no_problems():
    network = network_of(pool_facts(rdma=True, count=2))
    claims = Claims("llm-d-infra", {"gpu-1": "", "h100-gpus-full-node": ""})
    assert qualification_gates_problems(QualificationGatesArgs(pool="h100"), network, claims) == []
    assert qualification_gates_problems(QualificationGatesArgs(pool="h100"), network, None) == []


def test_gate_plan_builds_each_job_from_plain_values():
    plan = GatePlan("q", "ns", "7", nics=8, gpus_per_node=8, gpu_resource="nvidia.com/gpu", min_gbps=300, timeout_minutes=10)
    contract = RdmaPodSpec(claims={"rdma-nics": "t"}, node_selector={AGENTPOOL: "h100"}, tolerations=[SKU_GPU])
    by_number = {gate.number: gate for gate in GATES}
    spec = plan.job_spec(by_number[6], "img:1", contract)
    (container,) = spec["template"]["spec"]["containers"]
    assert container["resources"]["limits"] == {"nvidia.com/gpu": 8}
    assert spec["activeDeadlineSeconds"] == 600 and spec["completions"] == 2
    assert plan.env(by_number[1])["EXPECTED_UVERBS"] == "1" and plan.env(by_number[2])["EXPECTED_UVERBS"] == "8"
    assert plan.job_name(by_number[3]) == "q-3-ib-write-bw-7" and plan.scripts == "q-scripts-7"
    assert "affinity" not in plan.job_spec(by_number[1], "img:1", contract)["template"]["spec"]


# ---- refusals ----------------------------------------------------------------------------------


def refused(program) -> str:
    return refusal_message(program, "QualificationGates", "qualify", lambda t: t.endswith((":Job", ":ConfigMap", ":Service")))


@pytest.mark.parametrize(
    "args, network_args, dra_args, expected",
    [
        ({"pool": "h200"}, None, None, "pool='h200': not an RDMA pool of the network; pools: h100"),
        ({"tools_image": "foo/bar"}, None, None, "tools_image='foo/bar': pin the image to a version tag or digest"),
        ({"nixl_image": "vllm/vllm-openai:latest"}, None, None, "nixl_image='vllm/vllm-openai:latest': pin the image"),
        ({"tools_image": "registry:5000/perftest"}, None, None, "tools_image='registry:5000/perftest': pin the image"),
        (
            {},
            None,
            {"gpu_counts": [8]},
            "gpu_claims=['gpu-8', 'h100-gpus-full-node']: needs the DRA templates gpu-1 and h100-gpus-full-node",
        ),
        ({"run": "Run_2"}, None, None, "run='Run_2'"),
        ({"timeout_minutes": 1}, None, None, "timeout_minutes=1"),
        ({"min_gbps_per_rail": 0}, None, None, "min_gbps_per_rail=0"),
        (
            {"min_nvlink_busbw_gbps": 600},
            None,
            None,
            "min_nvlink_busbw_gbps=600.0: h100 (Standard_ND96isr_H100_v5) is not a rack-scale pool, so no NVLink gate runs",
        ),
    ],
)
def test_bad_input_is_refused_before_any_gate_exists(args, network_args, dra_args, expected):
    assert expected in refused(gates_program({}, args, network_args, dra_args))


def test_dra_claims_in_another_namespace_are_refused():
    # With both components' defaults (DraDeviceClasses 'gpu-inference', RdmaNetwork 'llm-d-infra')
    # gates 4-6 would name gpu-1 / h100-gpus-full-node in llm-d-infra, where no such template exists,
    # and their pods would never be created.
    def program():
        cluster = k8s_cluster()
        pool = GpuNodePool(
            "h100", {"name": "h100", "vm_size": H100, "rdma": True, "count": 2}, cluster=cluster_context("aks-test", "rg-test")
        )
        network = RdmaNetwork("rdma", {"partial_node_nics": [1]}, pools=[pool], cluster=cluster)
        dra = DraDeviceClasses("dra", {}, pools=[pool], cluster=cluster)  # namespace gpu-inference
        QualificationGates("qualify", {"pool": "h100"}, network=network, cluster=cluster, gpu_claims=dra)

    assert (
        "gpu_claims='gpu-inference': claim templates are namespaced: the GPU templates must live in the RDMA "
        "namespace 'llm-d-infra'"
    ) in refused(program)


TWO_NODES = "gates 3-6 run across two nodes; give the pool count (or max_count) of at least 2"


@pytest.mark.parametrize(
    "pool_args",
    [
        {"count": 1},
        {"count": 0},
        {"count": 1, "min_count": 1, "max_count": 1},  # an autoscaler that can never add the second node
        {"count": 0, "min_count": 0, "max_count": 1},
    ],
)
def test_a_pool_that_cannot_reach_two_nodes_is_refused(pool_args):
    assert f"pool='h100': {TWO_NODES}" in refused(gates_program({}, pool_args=pool_args))


@pytest.mark.parametrize(
    "pool_args",
    [
        {"count": 2},
        {"count": 4},
        {"count": 0, "min_count": 0, "max_count": 2},  # scale-to-zero: the gate pods bring up both nodes
        {"count": 1, "min_count": 1, "max_count": 3},
    ],
)
def test_a_pool_that_can_reach_two_nodes_is_accepted(pool_args):
    gates, run = build(pool_args=pool_args)
    assert len(gates.jobs) == 6 and len(of_type(run, "batch/v1:Job")) == 6


def mixed_pools_program(holder: dict, gated: str):
    """A network of a two-node pool h100 and a one-node pool h100s; gates on ``gated``."""

    def program():
        cluster = k8s_cluster()
        big = GpuNodePool(
            "h100", {"name": "h100", "vm_size": H100, "rdma": True, "count": 2}, cluster=cluster_context("aks-test", "rg-test")
        )
        small = GpuNodePool(
            "h100s", {"name": "h100s", "vm_size": H100, "rdma": True, "count": 1}, cluster=cluster_context("aks-test", "rg-test")
        )
        network = RdmaNetwork("rdma", {"partial_node_nics": [1]}, pools=[big, small], cluster=cluster)
        holder["gates"] = QualificationGates("qualify", {"pool": gated}, network=network, cluster=cluster)

    return program


def test_only_the_gated_pool_needs_two_nodes():
    assert f"pool='h100s': {TWO_NODES}" in refused(mixed_pools_program({}, "h100s"))
    holder: dict = {}
    run = run_components(mixed_pools_program(holder, "h100"))
    assert len(holder["gates"].jobs) == 6
    assert {pod_of(job)["nodeSelector"][AGENTPOOL] for job in jobs_by_gate(run).values()} == {"h100"}


# ---- the whole prod stack ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def prod_run():
    return planned_stack("prod")


def test_every_prod_kubernetes_object_validates_strictly_against_1_35(prod_run):
    validated = {}
    for resource in prod_run.resources:
        if not resource.is_kubernetes or resource.type.startswith("kubernetes:helm.sh/"):
            continue  # Helm releases are not API objects; their charts are validated upstream
        obj = kubernetes_object(resource)
        if is_custom_resource(obj):
            continue  # checked against their CRD shapes in test_custom_resources.py
        kubernetes_validate.validate(obj, "1.35", strict=True)
        validated.setdefault(obj["kind"], []).append(obj["metadata"]["name"])
    assert len(validated["Job"]) == 6
    assert validated["ConfigMap"] == ["qualify-scripts-1"] and "qualify-peers" in validated["Service"]
    assert sorted(validated["DeviceClass"]) == ["dranet.net", "gpu-h100-80gb"]
    assert sorted(validated["ResourceClaimTemplate"]) == [
        "gpu-1",
        "gpu-8",
        "h100-gpus-full-node",
        "h100-rdma-1-nic",
        "h100-rdma-full-node",
    ]
    assert "llm-d-infra" in validated["Namespace"]
    assert "gpu-inference" not in validated["Namespace"], "DRA templates live in the RDMA namespace"


def test_prod_gate_pods_reference_templates_in_their_namespace(prod_run):
    templates = {
        (r.inputs["metadata"]["namespace"], r.inputs["metadata"]["name"]) for r in of_type(prod_run, "ResourceClaimTemplate")
    }
    jobs = [kubernetes_object(r) for r in of_type(prod_run, "batch/v1:Job")]
    for job in jobs:
        for claim in job["spec"]["template"]["spec"]["resourceClaims"]:
            assert (job["metadata"]["namespace"], claim["resourceClaimTemplateName"]) in templates
    gate6 = next(j for j in jobs if j["metadata"]["name"] == "qualify-6-full-node-nccl-1")
    claims = {c["name"]: c["resourceClaimTemplateName"] for c in gate6["spec"]["template"]["spec"]["resourceClaims"]}
    assert claims == {"rdma-nics": "h100-rdma-full-node", "gpus": "h100-gpus-full-node"}


def test_prod_exports_the_gate_jobs_and_verdict_command(prod_run):
    outputs = prod_run.outputs
    assert outputs["qualification_jobs"] == {f"gate-{n}-{slug}": f"qualify-{n}-{slug}-1" for n, slug in SLUGS.items()}
    assert outputs["qualification_verdicts"] == (
        "kubectl -n llm-d-infra logs -l aks-gpu-inference/gate=qualify --prefix --tail=-1 | grep -E 'GATE (PASS|FAIL)'"
    )
