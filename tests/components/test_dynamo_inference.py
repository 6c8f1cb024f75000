"""DynamoInference under mocks: the Dynamo 1.6.1 platform chart (the operator, which applies its own CRDs) and
one v1beta1 DynamoGraphDeployment whose frontend routes on KV and whose prefill/decode vLLM workers take full
ND H100 nodes with the RDMA pod contract and move KV over NIXL; refusals through the pure validator."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pulumi
import pulumi_kubernetes as k8s
import pytest
import yaml

from aks_gpu_inference.components import DynamoInference, GpuNodePool, RdmaNetwork
from aks_gpu_inference.components._base import ComponentInputError
from aks_gpu_inference.components.gpu.pod_contract import RdmaPodSpec
from aks_gpu_inference.components.serving import DynamoInferenceArgs, DynamoPlacement, DynamoSecrets
from aks_gpu_inference.components.serving.dynamo_manifests import (
    CHART_REPO,
    OPERATOR_IMAGE,
    dynamo_inference_problems,
    graph_deployment,
)
from aks_gpu_inference.components.serving.dynamo_runtime import REQUEST_PLANE_PORT, RESPONSE_STREAM_PORT
from aks_gpu_inference.planner.inputs.upstream import crds_dir
from aks_gpu_inference.planner.kube.crd_files import parse_crd
from aks_gpu_inference.planner.kube.crd_schema import validate
from tests.components.gpu_pools import H100, MI300X, pool_facts
from tests.conftest import cluster_context, one, registered_before_error, run_components

LLAMA_70B = "meta-llama/Llama-3.3-70B-Instruct"
NAMESPACE = "llm-d-infra"
ARGS = {"name": "llama", "model": LLAMA_70B, "prefill": {"max_model_len": 32768}, "decode": {"max_model_len": 32768}}
FULL_NODE_NICS = "h100-rdma-full-node"
"""The NIC claim template RdmaNetwork makes for the h100 pool (all its NICs)."""
CRD_FILE = (crds_dir() or Path("shared/upstream/crds")) / "nvidia.com_dynamographdeployments.yaml"
"""The CRD, beside the others in ../shared/upstream once it is pinned there (1.x ships it inside the operator
image, applied by its crd-apply init container); until then the CRD check skips and only the cited field
names are checked."""


def program(holder: dict, args: dict, hf_token: str | None = "hf-test", pool: dict | None = None):
    def build():
        cluster = cluster_context(provider=k8s.Provider("k8s", kubeconfig="x"), kubernetes_version="1.34")
        gpus = GpuNodePool("h100", pool or {"name": "h100", "vm_size": H100, "rdma": True, "count": 2}, cluster=cluster)
        network = RdmaNetwork("rdma", {}, pools=[gpus], cluster=cluster)
        token = pulumi.Output.secret(hf_token) if hf_token else None
        service = DynamoInference(
            "llama", args, cluster=cluster, placement=DynamoPlacement(gpus, network), secrets=DynamoSecrets(token)
        )
        holder["service"] = service
        pulumi.export("endpoint", service.endpoint)

    return build


@pytest.fixture(scope="module")
def built():
    holder: dict = {}
    return run_components(program(holder, ARGS)), holder["service"]


def graph(run) -> dict:
    return one(run, "DynamoGraphDeployment").inputs


def charts(run) -> dict[str, dict]:
    return {r.name: r.inputs for r in run.resources if r.type == "kubernetes:helm.sh/v4:Chart" and "llama" in r.name}


def components(run) -> dict[str, dict]:
    return {c["name"]: c for c in graph(run)["spec"]["components"]}


def env_of(container: dict) -> dict[str, str]:
    """name -> value, or the field path of a value from the downward API."""
    return {e["name"]: e.get("value", e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")) for e in container["env"]}


def main_container(component: dict) -> dict:
    (main,) = [c for c in component["podTemplate"]["spec"]["containers"] if c["name"] == "main"]
    return main


# ---- the platform ---------------------------------------------------------------------------------


def test_one_platform_chart_pinned_to_the_release(built):
    """1.x has no separate dynamo-crds chart: the operator's crd-apply init container installs the CRDs."""
    run, _ = built
    found = charts(run)
    assert {n: (i["chart"], i["version"], i["repositoryOpts"]["repo"]) for n, i in found.items()} == {
        "llama-platform": ("dynamo-platform", "1.6.1", CHART_REPO),
    }
    values = found["llama-platform"]["values"]
    assert found["llama-platform"]["namespace"] == "dynamo-system"
    operator = values["dynamo-operator"]
    assert operator["controllerManager"]["manager"]["image"] == {"repository": OPERATOR_IMAGE, "tag": "1.6.1"}
    assert operator["upgradeCRD"] is True and operator["discoveryBackend"] == "kubernetes"
    assert operator["controllerManager"]["manager"]["containerSecurityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    # The pre-1.4 keys make the chart's validate-values.yaml fail the render.
    assert not {"etcd", "nats", "grove", "kai-scheduler"} & set(values)
    assert {k: v["install"] for k, v in values["global"].items()} == dict.fromkeys(
        ("etcd", "nats", "grove", "kai-scheduler"), False
    )


def test_platform_namespace_is_restricted(built):
    run, _ = built
    namespace = next(r for r in run.resources if r.name == "llama-platform-namespace")
    assert namespace.inputs["metadata"]["name"] == "dynamo-system"
    assert namespace.inputs["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"


def test_hf_token_secret_is_secret_and_read_by_every_worker(built):
    run, _ = built
    secret = next(r for r in run.resources if r.name == "llama-hf-token")
    assert secret.inputs["metadata"]["namespace"] == NAMESPACE
    assert "hf-test" not in json.dumps(secret.inputs, default=str)
    found = components(run)
    for role in ("prefill", "decode"):
        assert main_container(found[role])["envFrom"] == [{"secretRef": {"name": "llama-hf-token"}}]
    assert "envFrom" not in main_container(found["frontend"])


# ---- the graph ------------------------------------------------------------------------------------


def test_graph_has_a_kv_routing_frontend_and_prefill_decode_workers(built):
    run, _ = built
    obj = graph(run)
    assert (obj["apiVersion"], obj["kind"]) == ("nvidia.com/v1beta1", "DynamoGraphDeployment")
    assert obj["metadata"]["namespace"] == NAMESPACE
    assert obj["spec"]["backendFramework"] == "vllm"
    found = components(run)
    assert {n: c["type"] for n, c in found.items()} == {"frontend": "frontend", "prefill": "prefill", "decode": "decode"}
    frontend = main_container(found["frontend"])
    assert frontend["args"] == ["-m", "dynamo.frontend"]
    assert env_of(frontend) == {
        "DYN_ROUTER_MODE": "kv",
        "DYN_EVENT_PLANE": "zmq",
        "DYN_TCP_RESPONSE_STREAM_PORT": str(RESPONSE_STREAM_PORT),
        "DYN_TCP_RESPONSE_STREAM_HOST": "status.podIP",
    }
    assert frontend["image"] == "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.6.1"
    assert frontend["securityContext"] == {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
    for role, kv_role in (("prefill", "kv_producer"), ("decode", "kv_consumer")):
        main = main_container(found[role])
        assert main["command"] == ["python3", "-m", "dynamo.vllm"]
        args = main["args"]
        assert args[args.index("--disaggregation-mode") + 1] == role
        assert not {"--is-prefill-worker", "--is-decode-worker"} & set(args)  # removed in 1.x
        assert json.loads(args[args.index("--kv-transfer-config") + 1]) == {"kv_connector": "NixlConnector", "kv_role": kv_role}
        events = json.loads(args[args.index("--kv-events-config") + 1])
        assert events["publisher"] == "zmq" and events["enable_kv_cache_events"] is True
        assert args[args.index("--tensor-parallel-size") + 1] == "8"
        assert args[args.index("--max-model-len") + 1] == "32768"
        assert main["resources"]["limits"] == {"nvidia.com/gpu": "8"}
        assert found[role]["sharedMemorySize"] == "32Gi"


def test_workers_carry_the_rdma_pod_contract(built):
    run, _ = built
    for role in ("prefill", "decode"):
        pod = components(run)[role]["podTemplate"]["spec"]
        assert pod["resourceClaims"] == [{"name": "rdma-nics", "resourceClaimTemplateName": FULL_NODE_NICS}]
        assert pod["nodeSelector"]["kubernetes.azure.com/agentpool"] == "h100"
        assert pod["tolerations"]
        assert pod["volumes"] == [{"name": "model-cache", "persistentVolumeClaim": {"claimName": "llama-model-cache"}}]
        main = main_container(components(run)[role])
        assert main["resources"]["claims"] == [{"name": "rdma-nics"}]
        assert main["securityContext"]["capabilities"] == {"drop": ["ALL"], "add": ["IPC_LOCK"]}
        assert main["securityContext"]["allowPrivilegeEscalation"] is False
        env = env_of(main)
        assert env["UCX_TLS"] == "rc_x,cuda_copy,cuda_ipc,self" and env["NCCL_IB_DISABLE"] == "0"
        assert env["NCCL_NET_GDR_LEVEL"] == "5" and env["DYN_EVENT_PLANE"] == "zmq"
        assert "NCCL_NET" not in env, "a serving engine's in-node NCCL must not need the NICs"
        assert env["HF_HOME"] == "/model-cache" and main["volumeMounts"] == [{"name": "model-cache", "mountPath": "/model-cache"}]


def test_workers_fix_every_port_they_are_called_on_and_advertise_the_pod_ip(built):
    """The request plane, KV events and the NIXL side channel: fixed ports where Dynamo and vLLM have a variable,
    and the pod IP as the advertised address (RDMA pods have more interfaces than the pod network's)."""
    run, _ = built
    for role in ("prefill", "decode"):
        env = env_of(main_container(components(run)[role]))
        assert env["DYN_TCP_RPC_PORT"] == str(REQUEST_PLANE_PORT) and env["VLLM_NIXL_SIDE_CHANNEL_PORT"] == "5600"
        hosts = ("DYN_TCP_RPC_HOST", "DYN_EVENT_PLANE_HOST", "VLLM_NIXL_SIDE_CHANNEL_HOST")
        assert {env[name] for name in hosts} == {"status.podIP"}
    assert {RESPONSE_STREAM_PORT, REQUEST_PLANE_PORT}.isdisjoint({8000, 9090, 19090, 20080, 20380, 5600, 29500}), (
        "no clash with the operator's ports, vLLM's KV events or the NIXL side channel"
    )


def test_the_weights_cache_is_a_shared_claim_sized_from_the_checkpoint(built):
    """141 GB of Llama 3.3 70B in bf16 (131.5 GiB) plus a quarter: 165 GiB, on AKS's premium Azure Files class,
    ReadWriteMany so the prefill and decode nodes share one copy; the graph waits for the claim."""
    run, _ = built
    claim = one(run, "PersistentVolumeClaim")
    assert claim.inputs["metadata"] == {
        "name": "llama-model-cache",
        "namespace": NAMESPACE,
        "labels": {"app.kubernetes.io/instance": "llama"},
    }
    assert claim.inputs["spec"] == {
        "accessModes": ["ReadWriteMany"],
        "storageClassName": "azurefile-csi-premium",
        "resources": {"requests": {"storage": "165Gi"}},
    }
    assert claim.urn in one(run, "DynamoGraphDeployment").options["dependsOn"]


def test_dra_pools_give_workers_the_full_node_gpu_claim_instead_of_nvidia_gpu():
    pool = pool_facts("h100", H100, rdma=True, count=2)
    claims = {"rdma-nics": FULL_NODE_NICS, "gpus": "h100-gpus-full-node"}
    obj = graph_deployment(DynamoInferenceArgs(**ARGS), NAMESPACE, RdmaPodSpec(claims, pool.node_selector, pool.tolerations))
    for component in obj["spec"]["components"][1:]:
        spec = component["podTemplate"]["spec"]
        assert {c["name"] for c in spec["resourceClaims"]} == {"rdma-nics", "gpus"}
        main = main_container(component)
        assert "limits" not in main["resources"] and main["resources"]["claims"] == [{"name": "rdma-nics"}, {"name": "gpus"}]


def test_frontend_is_reachable_like_a_vllm_service(built):
    run, service = built
    assert run.outputs["endpoint"] == "http://llama-frontend.llm-d-infra.svc.cluster.local:8000/v1"
    assert (service.service_name, service.namespace, service.served_model_name) == ("llama-frontend", NAMESPACE, LLAMA_70B)
    labels = components(run)["frontend"]["podTemplate"]["metadata"]["labels"]
    assert service.pod_labels == labels == {"app.kubernetes.io/instance": "llama", "aks-gpu-inference/dynamo-role": "frontend"}
    assert set(service.fit) == {"prefill", "decode"} and all(f.fits for f in service.fit.values())
    assert (service.pool_sku.name, service.worker_nodes) == (H100, 2)


# ---- the CRD --------------------------------------------------------------------------------------

# Fields of the v1beta1 DynamoGraphDeploymentSpec and of one component (DynamoComponentDeploymentSharedSpec),
# ai-dynamo/dynamo deploy/operator/api/v1beta1/dynamographdeployment_types.go @0fddc01b (code index) and the
# 1.6.1 wheel's DGD templates.
GRAPH_FIELDS = {
    "providerOverride", "annotations", "labels", "priorityClassName", "components", "env", "backendFramework",
    "restart", "topologyConstraint", "experimental",
}  # fmt: skip
COMPONENT_FIELDS = {"name", "type", "replicas", "podTemplate", "sharedMemorySize"}


def test_rendered_graph_uses_only_cited_field_names(built):
    run, _ = built
    spec = graph(run)["spec"]
    assert set(spec) <= GRAPH_FIELDS
    for component in spec["components"]:
        assert set(component) <= COMPONENT_FIELDS
        assert set(component["podTemplate"]) == {"metadata", "spec"}


@pytest.mark.skipif(
    not CRD_FILE.is_file(), reason=f"{CRD_FILE} absent: the Dynamo CRD is not among the pinned upstream files yet"
)
@pytest.mark.slow
def test_rendered_graph_validates_against_the_pinned_crd():
    crd = parse_crd(next(d for d in yaml.safe_load_all(CRD_FILE.read_text()) if d))
    pool = pool_facts("h100", H100, rdma=True, count=2)
    contract = RdmaPodSpec({"rdma-nics": FULL_NODE_NICS}, pool.node_selector, pool.tolerations)
    obj = graph_deployment(DynamoInferenceArgs(**ARGS), NAMESPACE, contract)
    result = validate(obj, crd)
    assert result.ok, result.errors


# ---- refusals -------------------------------------------------------------------------------------


def problems(args: dict | None = None, pool=None, nics=None, hf_token="t") -> dict[str, str]:
    pool = pool or pool_facts("h100", H100, rdma=True, count=2)
    rdma = SimpleNamespace(nics=nics if nics is not None else {"h100": 8}, namespace=NAMESPACE)
    found = dynamo_inference_problems(
        DynamoInferenceArgs(**{**ARGS, **(args or {})}), DynamoPlacement(pool, rdma), DynamoSecrets(hf_token)
    )
    return {p.field: p.problem for p in found}


def test_valid_inputs_have_no_problems():
    assert problems() == {}


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        ({"model": "nope/model"}, "model", "not a model in the catalog"),
        ({"prefill": {"tensor_parallel_size": 1, "max_model_len": 131072}}, "prefill.tensor_parallel_size", "cannot load"),
        ({"decode": {"replicas": 2}}, "replicas", "at most 2"),
        ({"platform": {"namespace": NAMESPACE}}, "platform.namespace", "privileged RDMA namespace"),
        ({"model_cache": {"size_gib": 120}}, "model_cache.size_gib", "smaller than the checkpoint"),
        ({"model_cache": {"access_mode": "ReadWriteOnce"}}, "model_cache.access_mode", "attaches to one node"),
    ],
)
def test_refusals_name_the_field(change, field, words):
    assert words in problems(change)[field]


def test_a_pool_outside_the_network_and_a_missing_token_are_refused():
    found = problems(nics={}, hf_token=None)
    assert "not an RDMA pool" in found["placement.pool"] and "Hugging Face" in found["hf_token"]


def test_a_non_nvidia_pool_is_refused():
    found = problems(pool=pool_facts("mi300x", MI300X, count=2, driver="none"), nics={"mi300x": 8})
    assert "nvidia.com/gpu" in found["placement.pool"]


def test_a_refusal_registers_nothing_of_the_component():
    types = registered_before_error(program({}, ARGS, hf_token=None), ComponentInputError)
    assert "kubernetes:core/v1:Node" not in types and "aks-gpu:index:RdmaNetwork" in types
    assert "aks-gpu:index:DynamoInference" not in types
    assert not [t for t in types if "nvidia.com" in t]


def test_the_policy_pack_reads_the_graph_and_finds_nothing_mandatory(built):
    """The pack's template table knows the v1beta1 DynamoGraphDeployment (``components[].podTemplate``): the
    rendered graph passes the mandatory rules, and a privileged worker is caught."""
    import copy

    from aks_gpu_inference.planner.analyzer import analyze

    run, _ = built
    assert [v for v in analyze(run) if v.mandatory] == []
    broken = copy.deepcopy(run)
    dgd = one(broken, "DynamoGraphDeployment")
    worker = next(c for c in dgd.inputs["spec"]["components"] if c["name"] == "decode")["podTemplate"]["spec"]["containers"][0]
    worker.setdefault("securityContext", {})["privileged"] = True
    assert "ipc-lock-without-privileged" in {v.policy for v in analyze(broken) if v.mandatory and v.urn == dgd.urn}
