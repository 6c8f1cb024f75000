"""VllmService under mocks: the vLLM Deployment (weights streamed from Blob under workload identity,
the API key from a Secret, probes sized to the load), its Service, PDB and PodMonitor, KEDA
autoscaling, prefill/decode disaggregation, everything it refuses before registering anything, and
the identity and secret chains of the real dev and prod stacks."""

import functools
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace

import kubernetes_validate
import pulumi
import pulumi_kubernetes as k8s
import pytest
import yaml

from aks_gpu_inference.components import (
    AzureServices,
    DraDeviceClasses,
    DraDeviceClassesArgs,
    GpuNodePool,
    GpuNodePoolArgs,
    GpuPlacement,
    RdmaNetwork,
    RdmaNetworkArgs,
    ScalingMonitor,
    VllmSecrets,
    VllmService,
    VllmServiceArgs,
)
from aks_gpu_inference.components._base import ComponentInputError, raise_problems, validate_args
from aks_gpu_inference.components.azure.model_store import ModelStore
from aks_gpu_inference.components.azure.workload_identity import BUILT_IN_ROLES, WorkloadIdentity
from aks_gpu_inference.components.core import models, pins
from aks_gpu_inference.components.core import startup as cold
from aks_gpu_inference.components.core.labels import is_mig_resource
from aks_gpu_inference.components.serving.picker_check import check_config
from aks_gpu_inference.components.serving.vllm_checks import vllm_service_problems
from aks_gpu_inference.components.serving.vllm_disaggregation import INFERENCEPOOL_CHART, PICKER_RELEASE
from aks_gpu_inference.components.serving.vllm_manifests import dra_template
from aks_gpu_inference.planner.analyzer import analyze
from aks_gpu_inference.planner.engine.values import kubernetes_object
from tests.conftest import (
    cluster_context,
    of_type,
    one,
    planned_stack,
    registered_before_error,
    run_components,
    run_stack,
    stack_config,
)

A100 = "Standard_NC24ads_A100_v4"
A100X4 = "Standard_NC96ads_A100_v4"
A10 = "Standard_NV36ads_A10_v5"
H100 = "Standard_ND96isr_H100_v5"
LLAMA_8B = "meta-llama/Llama-3.1-8B-Instruct"
LLAMA_70B = "meta-llama/Llama-3.3-70B-Instruct"
POOLS = {
    "a100": {"name": "a100", "vm_size": A100},
    "a100mig": {"name": "a100mig", "vm_size": A100, "mig_profile": "MIG3g"},
    "a100x4": {"name": "a100x4", "vm_size": A100X4},
    "a10": {"name": "a10", "vm_size": A10},
    "h100": {"name": "h100", "vm_size": H100, "rdma": True, "count": 2},
}
SKU_GPU = {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
AGENTPOOL = "kubernetes.azure.com/agentpool"
QUERY_ENDPOINT = "https://amw-test-a1b2.eastus.prometheus.monitor.azure.com"
KEDA_CLIENT_ID = "00000000-0000-0000-0000-00000000keda"
LABELS = {"app.kubernetes.io/name": "vllm", "app.kubernetes.io/instance": "llama"}
ROLE = "llm-d.ai/role"
READER_GUID = BUILT_IN_ROLES["Storage Blob Data Reader"]
SERVICE_CHILDREN = (
    "kubernetes:core/v1:ServiceAccount",
    "kubernetes:core/v1:Secret",
    "kubernetes:apps/v1:Deployment",
    "kubernetes:core/v1:Service",
    "kubernetes:policy/v1:PodDisruptionBudget",
    "kubernetes:azmonitoring.coreos.com/v1:PodMonitor",
    "kubernetes:keda.sh/v1alpha1:TriggerAuthentication",
    "kubernetes:keda.sh/v1alpha1:ScaledObject",
)


# ---- building -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Setup:
    """What a test program builds around the VllmService. ``dra`` and ``rdma`` are the DraDeviceClasses /
    RdmaNetwork args plus ``pools`` (names from POOLS); ``opts_provider`` makes a Kubernetes provider
    to pass in the service's ``opts``."""

    pool: str = "a100"
    pools: tuple[str, ...] | None = None
    blob: bool = True
    hf_token: bool = False
    dra: dict | None = None
    rdma: dict | None = None
    monitoring: bool = False
    api_key: str = "k"
    opts_provider: Callable[[], k8s.Provider] | None = None


def device_components(setup: Setup, built: dict, cluster) -> tuple[DraDeviceClasses | None, RdmaNetwork | None]:
    network = classes = None
    if setup.rdma is not None:
        settings = dict(setup.rdma)
        members = [built[p] for p in settings.pop("pools")]
        network = RdmaNetwork("rdma", settings, pools=members, cluster=cluster)
    if setup.dra is not None:
        settings = dict(setup.dra)
        members = [built[p] for p in settings.pop("pools")]
        classes = DraDeviceClasses("dra", settings, pools=members, cluster=cluster)
    return classes, network


def blob_access(args: dict, cluster) -> tuple[ModelStore, WorkloadIdentity]:
    store = ModelStore("models", {"account_name": "gpumodels01"}, scope=cluster.scope)
    identity = WorkloadIdentity(
        "llama-identity",
        {"namespace": args.get("namespace", "gpu-inference"), "service_account": args["name"]},
        cluster=cluster,
    )
    store.grant_read(identity)
    return store, identity


def service_program(holder: dict, args: dict, **options):
    """A program that builds the pools (and, as ``options`` (``Setup``'s fields) ask, DRA, RDMA, store
    and identity) and one VllmService."""
    setup = Setup(**options)
    args = {"name": "llama", "model": LLAMA_8B, **args}

    def program():
        cluster = cluster_context(provider=k8s.Provider("k8s", kubeconfig="x"), kubernetes_version="1.34")
        names = dict.fromkeys(setup.pools or (setup.pool,))
        built = {name: GpuNodePool(name, POOLS[name], cluster=cluster) for name in names}
        classes, network = device_components(setup, built, cluster)
        store, identity = blob_access(args, cluster) if setup.blob else (None, None)
        hf_token = pulumi.Output.secret("hf-test-token") if setup.hf_token else None
        try:
            service = VllmService(
                "llama",
                args,
                opts=pulumi.ResourceOptions(provider=setup.opts_provider()) if setup.opts_provider else None,
                cluster=cluster,
                placement=GpuPlacement(built[setup.pool], dra=classes, rdma=network),
                secrets=VllmSecrets(pulumi.Output.secret(setup.api_key), hf_token=hf_token),
                azure=AzureServices(
                    model_store=store, identity=identity, monitoring=scaling_monitor() if setup.monitoring else None
                ),
            )
        except ComponentInputError as err:
            holder["error"] = str(err)
            raise
        holder.update(service=service, pool=built[setup.pool], store=store, identity=identity)
        pulumi.export("endpoint", service.endpoint)

    return program


def scaling_monitor() -> ScalingMonitor:
    return ScalingMonitor(query_endpoint=QUERY_ENDPOINT, keda_client_id=KEDA_CLIENT_ID)


def build(args: dict | None = None, **options):
    holder: dict = {}
    run = run_components(service_program(holder, args or {}, **options))
    return holder, run


RDMA_H100 = {"pools": ["h100"]}
DRA_H100 = {"pools": ["h100"], "namespace": "llm-d-infra", "create_namespace": False, "gpu_counts": [8]}
DISAGGREGATED = {
    "model": LLAMA_70B,
    "namespace": "llm-d-infra",
    "tensor_parallel_size": 8,
    "max_model_len": 32768,
    "gpu_access": "dra",
    "rdma": True,
    "disaggregation": {"prefill_replicas": 1, "decode_replicas": 2},
}


@pytest.fixture(scope="module")
def default_build():
    """Llama 3.1 8B on one A100 from Blob, every other setting at its default."""
    return build()


@pytest.fixture(scope="module")
def tp8_build():
    """Llama 3.3 70B over the eight H100s of one node, GPUs from the device plugin."""
    return build({"model": LLAMA_70B, "tensor_parallel_size": 8}, pool="h100")


@pytest.fixture(scope="module")
def hub_build():
    """Llama 3.1 8B downloaded from the Hugging Face hub with a token."""
    return build({"source": "huggingface"}, blob=False, hf_token=True)


@pytest.fixture(scope="module")
def autoscaled_build():
    return build({"autoscaling": {"min_replicas": 1, "max_replicas": 3, "waiting_requests_target": 7}}, monitoring=True)


@pytest.fixture(scope="module")
def disaggregated_build():
    return build(DISAGGREGATED, pool="h100", dra=DRA_H100, rdma=RDMA_H100)


def deployments(run) -> dict[str, dict]:
    return {obj["metadata"]["name"]: obj for obj in map(kubernetes_object, of_type(run, "apps/v1:Deployment"))}


def deployment(run, name: str = "llama") -> dict:
    return deployments(run)[name]


def pod_of(obj: dict) -> dict:
    return obj["spec"]["template"]["spec"]


def vllm_container(obj: dict) -> dict:
    (container,) = [c for c in pod_of(obj)["containers"] if c["name"] == "vllm"]
    return container


def flag(args: list[str], name: str) -> str:
    assert args.count(name) == 1, f"{name} given {args.count(name)} times in {args}"
    return args[args.index(name) + 1]


def env_of(container: dict) -> dict[str, dict]:
    return {e["name"]: e for e in container["env"]}


def expected_budget(model: str, tp: int, source: str, gpu: str) -> int:
    """The cold start worked out from the published figures (core/startup.py's sources), independently of the code:
    the doubled sum of the steps, held to 10 minutes (15 for over 100 GB at TP 8), rounded up to a minute."""
    facts = models.get_model(model)
    rate = {"H100": 232.8 / 37.14, "A100": 27.4 / 10}[gpu]  # GiB/s streamed from Blob, as measured
    weights = facts.weight_bytes("auto") / 2**30 / rate if source == "blob" else facts.weight_bytes("auto") / 1e9 / 0.15
    steps = weights + 60 + (30 + 1.5 * facts.layers) + (15 + 0.5 * facts.layers) + 30
    floor = 900 if facts.weight_bytes("auto") > 100e9 and tp >= 8 else 600
    return math.ceil(max(2 * steps, floor) / 60) * 60


def startup_budget_seconds(container: dict) -> int:
    probe = container["startupProbe"]
    return probe.get("initialDelaySeconds", 0) + probe["periodSeconds"] * probe["failureThreshold"]


# ---- the Deployment -----------------------------------------------------------------------------


def test_vllm_args_stream_weights_from_blob_with_the_runai_streamer(default_build):
    holder, run = default_build
    container = vllm_container(deployment(run))
    args = container["args"]
    assert container["image"] == pins.image("vllm")
    container_name = one(run, "storage:BlobContainer").inputs["containerName"]
    assert flag(args, "--model") == f"az://{container_name}/{LLAMA_8B}" == holder["store"].model_uri(LLAMA_8B)
    assert flag(args, "--load-format") == "runai_streamer"
    loader = json.loads(flag(args, "--model-loader-extra-config"))
    assert set(loader) == {"concurrency"} and isinstance(loader["concurrency"], int) and 16 <= loader["concurrency"] <= 64
    assert flag(args, "--served-model-name") == LLAMA_8B
    assert flag(args, "--tensor-parallel-size") == "1"
    assert flag(args, "--max-model-len") == "8192"
    assert flag(args, "--gpu-memory-utilization") == "0.9"
    assert flag(args, "--port") == "8000"
    assert "--enable-prefix-caching" in args
    for absent in ("--quantization", "--kv-cache-dtype", "--kv-transfer-config", "--max-num-seqs"):
        assert absent not in args


def test_precision_context_and_names_reach_vllm():
    _, run = build(
        {
            "dtype": "fp8",
            "kv_cache_dtype": "fp8",
            "max_model_len": 16384,
            "gpu_memory_utilization": 0.85,
            "served_model_name": "llama-8b",
            "model_path": "weights/llama-3.1-8b",
            "enable_prefix_caching": False,
            "max_num_seqs": 64,
            "extra_args": ["--enable-chunked-prefill"],
        }
    )
    args = vllm_container(deployment(run))["args"]
    assert flag(args, "--quantization") == "fp8"
    assert flag(args, "--kv-cache-dtype") == "fp8"
    assert flag(args, "--max-model-len") == "16384"
    assert flag(args, "--gpu-memory-utilization") == "0.85"
    assert flag(args, "--served-model-name") == "llama-8b"
    assert flag(args, "--model") == "az://models/weights/llama-3.1-8b"
    assert flag(args, "--max-num-seqs") == "64"
    assert "--enable-prefix-caching" not in args
    assert args[-1] == "--enable-chunked-prefill", "extra args come last, as given"


def test_seventy_b_streams_with_the_most_concurrency(tp8_build):
    _, run = tp8_build
    args = vllm_container(deployment(run))["args"]
    # Distributed streaming: the node reads one copy, partitioned across its eight ranks.
    assert json.loads(flag(args, "--model-loader-extra-config")) == {"concurrency": 64, "distributed": True}
    assert flag(args, "--tensor-parallel-size") == "8"
    resources = vllm_container(deployment(run))["resources"]
    assert resources["requests"]["nvidia.com/gpu"] == resources["limits"]["nvidia.com/gpu"] == 8, "one GPU per TP rank"


def test_api_key_and_storage_account_reach_the_container_without_secret_values(default_build):
    _, run = default_build
    env = env_of(vllm_container(deployment(run)))
    assert env["VLLM_API_KEY"] == {
        "name": "VLLM_API_KEY",
        "valueFrom": {"secretKeyRef": {"name": "llama-secrets", "key": "api-key"}},
    }
    assert env["AZURE_STORAGE_ACCOUNT_NAME"] == {"name": "AZURE_STORAGE_ACCOUNT_NAME", "value": "gpumodels01"}
    assert "HF_TOKEN" not in env
    secret = kubernetes_object(one(run, "core/v1:Secret"))
    assert secret["metadata"]["name"] == "llama-secrets" and secret["type"] == "Opaque"
    assert secret["stringData"] == {"api-key": "<secret>"}, "the key is a Pulumi secret, masked in every record"
    assert "data" not in secret


def test_no_secret_value_is_recorded_anywhere():
    distinctive = "sk-test-0f3c9a7e-never-in-plain-text"
    _, run = build({"source": "huggingface"}, blob=False, hf_token=True, api_key=distinctive)
    recorded = json.dumps([r.inputs for r in run.resources], default=str) + json.dumps(run.outputs, default=str)
    assert distinctive not in recorded


def test_blob_pods_run_as_the_federated_service_account(default_build):
    holder, run = default_build
    obj = deployment(run)
    template = obj["spec"]["template"]
    assert template["metadata"]["labels"] == {**LABELS, "azure.workload.identity/use": "true"}
    assert obj["spec"]["selector"]["matchLabels"] == LABELS, "the identity label is on the pods, not in the selector"
    account = kubernetes_object(one(run, "core/v1:ServiceAccount"))
    assert account["metadata"]["name"] == pod_of(obj)["serviceAccountName"] == holder["service"].service_account == "llama"
    assert account["metadata"]["namespace"] == obj["metadata"]["namespace"] == "gpu-inference"
    assert account["metadata"]["annotations"] == {
        "azure.workload.identity/client-id": "<computed:llama-identity-identity.clientId>"
    }
    assert account["automountServiceAccountToken"] is True
    assert holder["identity"].subject == "system:serviceaccount:gpu-inference:llama"


def test_shared_memory_is_a_memory_backed_empty_dir_sized_by_tp(default_build, tp8_build):
    _, run = default_build
    pod = pod_of(deployment(run))
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["dshm"] == {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "4Gi"}}
    assert {"name": "dshm", "mountPath": "/dev/shm"} in vllm_container(deployment(run))["volumeMounts"]
    _, run8 = tp8_build
    volumes8 = {v["name"]: v for v in pod_of(deployment(run8))["volumes"]}
    assert volumes8["dshm"]["emptyDir"] == {"medium": "Memory", "sizeLimit": "32Gi"}


@pytest.mark.parametrize(
    "built, model, tp, source, gpu",
    [
        ("default_build", LLAMA_8B, 1, "blob", "A100"),
        ("tp8_build", LLAMA_70B, 8, "blob", "H100"),
        ("hub_build", LLAMA_8B, 1, "huggingface", "A100"),
    ],
    ids=["8b-blob", "70b-blob", "8b-hub"],
)
def test_startup_budget_and_timeouts_cover_a_cold_start(request, built, model, tp, source, gpu):
    _, run = request.getfixturevalue(built)
    resource = one(run, "apps/v1:Deployment")
    container = vllm_container(kubernetes_object(resource))
    budget = expected_budget(model, tp, source, gpu)
    probe = container["startupProbe"]
    assert probe["httpGet"] == {"path": "/health", "port": "http"}
    assert probe["periodSeconds"] == 10
    assert startup_budget_seconds(container) == budget
    minutes = math.ceil((budget + 900) / 60)
    assert resource.options["customTimeouts"] == {"create": f"{minutes}m", "update": f"{minutes}m"}
    assert minutes * 60 >= startup_budget_seconds(container) + 900, "Pulumi also waits out scheduling and the image pull"


def test_a_big_checkpoint_at_tp8_never_gets_less_than_fifteen_minutes(tp8_build):
    _, run = tp8_build
    assert startup_budget_seconds(vllm_container(deployment(run))) >= 15 * 60
    derived = cold.cold_start(models.get_model(LLAMA_70B).weight_bytes("auto"), 80, 8, "blob", "H100")
    assert derived.derived < derived.floor == 900, "on H100 the floor, not the derivation, sets it"
    assert "budget 900 s" in derived.explain()


def test_readiness_and_liveness_probe_health(default_build):
    _, run = default_build
    container = vllm_container(deployment(run))
    for probe in ("readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"] == {"path": "/health", "port": "http"}
        assert container[probe]["failureThreshold"] == 3
    assert {"name": "http", "containerPort": 8000} in container["ports"]


def test_startup_budget_for_fp8_covers_streaming_the_checkpoint(tp8_build):
    """--quantization fp8 quantizes a bf16 checkpoint online: the streamer still reads every byte of it."""
    _, run = build({"model": LLAMA_70B, "tensor_parallel_size": 8, "dtype": "fp8"}, pool="h100")
    resource = one(run, "apps/v1:Deployment")
    container = vllm_container(kubernetes_object(resource))
    assert flag(container["args"], "--quantization") == "fp8"
    _, full_precision = tp8_build
    unquantized = one(full_precision, "apps/v1:Deployment")
    assert startup_budget_seconds(container) == startup_budget_seconds(vllm_container(kubernetes_object(unquantized)))
    assert resource.options["customTimeouts"] == unquantized.options["customTimeouts"], "same stream, same Pulumi wait"


def test_whole_gpus_come_from_the_device_plugin(default_build):
    _, run = default_build
    resources = vllm_container(deployment(run))["resources"]
    # One copy of the 16 GB checkpoint, one worker and the server at 4 GiB each, and 4 GiB of /dev/shm at TP 1.
    needed = math.ceil(models.get_model(LLAMA_8B).weight_bytes("auto") / 2**30 + 4 + 4 + 4)
    assert resources == {
        "requests": {"cpu": "8", "memory": f"{needed}Gi", "nvidia.com/gpu": 1},
        "limits": {"memory": f"{needed}Gi", "nvidia.com/gpu": 1},
    }
    assert "resourceClaims" not in pod_of(deployment(run))


def test_mig_pool_requests_its_slice_resource():
    holder, run = build(pool="a100mig")
    resources = vllm_container(deployment(run))["resources"]
    assert holder["pool"].gpu_resource_name == "nvidia.com/mig-3g.40gb"
    assert resources["requests"]["nvidia.com/mig-3g.40gb"] == resources["limits"]["nvidia.com/mig-3g.40gb"] == 1
    assert "nvidia.com/gpu" not in resources["requests"] and "nvidia.com/gpu" not in resources["limits"]
    assert holder["service"].fit.mig_profile == "MIG3g" and holder["service"].fit.gpu == "A100-80GB MIG 3g.40gb"
    assert pod_of(deployment(run))["nodeSelector"] == {AGENTPOOL: "a100mig"}


def test_dra_access_claims_the_gpu_template_instead_of_a_resource():
    _, run = build(
        {"model": LLAMA_70B, "tensor_parallel_size": 8, "namespace": "llm-d-infra", "gpu_access": "dra"},
        pool="h100",
        dra=DRA_H100,
    )
    pod = pod_of(deployment(run))
    assert pod["resourceClaims"] == [{"name": "gpus", "resourceClaimTemplateName": "gpu-8"}]
    resources = vllm_container(deployment(run))["resources"]
    assert resources["claims"] == [{"name": "gpus"}]
    assert "nvidia.com/gpu" not in resources["requests"] and "nvidia.com/gpu" not in resources["limits"]
    templates = {kubernetes_object(r)["metadata"]["name"] for r in of_type(run, "ResourceClaimTemplate")}
    assert "gpu-8" in templates


def test_dra_on_a_mig_pool_claims_the_pools_mig_template():
    """The DRA driver publishes only 'mig' devices on a MIG-partitioned node, so a whole-GPU claim never allocates."""
    dra = {"pools": ["a100", "a100mig"], "gpu_counts": [1]}
    holder, run = build({"gpu_access": "dra"}, pool="a100mig", pools=("a100", "a100mig"), dra=dra)
    templates = {kubernetes_object(r)["metadata"]["name"] for r in of_type(run, "ResourceClaimTemplate")}
    assert {"gpu-1", "a100mig-mig-3g-40gb"} <= templates
    pod = pod_of(deployment(run))
    assert pod["resourceClaims"] == [{"name": "gpus", "resourceClaimTemplateName": "a100mig-mig-3g-40gb"}]
    resources = vllm_container(deployment(run))["resources"]
    assert resources["claims"] == [{"name": "gpus"}]
    assert not {"nvidia.com/gpu", "nvidia.com/mig-3g.40gb"} & (set(resources["requests"]) | set(resources["limits"]))
    assert pod["nodeSelector"] == {AGENTPOOL: "a100mig"}
    assert holder["service"].fit.gpu == "A100-80GB MIG 3g.40gb", "the fit is for the slice the claim allocates"


@pytest.mark.parametrize(
    "pools, dra",
    [
        (("a100", "a100mig"), {"pools": ["a100"], "gpu_counts": [1]}),
        (("h100", "a100mig"), {"pools": ["h100", "a100mig"], "gpu_counts": [8]}),
    ],
    ids=["classes-without-the-mig-pool", "mig-template-without-gpu-1"],
)
def test_dra_on_a_mig_pool_checks_the_mig_template(pools, dra):
    program = service_program({}, {"gpu_access": "dra"}, pool="a100mig", pools=pools, dra=dra)
    if "a100mig" in dra["pools"]:
        run = run_components(program)
        claims = pod_of(deployment(run))["resourceClaims"]
        assert claims == [{"name": "gpus", "resourceClaimTemplateName": "a100mig-mig-3g-40gb"}]
    else:
        message = refusal({"gpu_access": "dra"}, pool="a100mig", dra=dra)
        assert (
            "gpu_access='dra': needs the claim template 'a100mig-mig-3g-40gb': give DraDeviceClasses serving this MIG pool"
            in message
        )


def test_pods_are_placed_on_the_pool_and_tolerate_its_taints(default_build):
    holder, run = default_build
    pod = pod_of(deployment(run))
    assert pod["nodeSelector"] == holder["pool"].node_selector == {AGENTPOOL: "a100"}
    assert pod["tolerations"] == holder["pool"].tolerations == [SKU_GPU]


def test_pod_security_is_restricted_compatible(default_build):
    _, run = default_build
    pod = pod_of(deployment(run))
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    context = vllm_container(deployment(run))["securityContext"]
    assert context["allowPrivilegeEscalation"] is False
    assert context["capabilities"] == {"drop": ["ALL"]}
    assert "privileged" not in context
    assert all(set(v) & {"hostPath"} == set() for v in pod["volumes"])


def test_rdma_applies_the_pod_contract():
    _, run = build(
        {"model": LLAMA_70B, "tensor_parallel_size": 8, "namespace": "llm-d-infra", "rdma": True},
        pool="h100",
        rdma=RDMA_H100,
    )
    pod = pod_of(deployment(run))
    container = vllm_container(deployment(run))
    assert pod["resourceClaims"] == [{"name": "rdma-nics", "resourceClaimTemplateName": "h100-rdma-full-node"}]
    assert container["resources"]["claims"] == [{"name": "rdma-nics"}]
    assert container["resources"]["requests"]["nvidia.com/gpu"] == 8
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"], "add": ["IPC_LOCK"]}
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert "privileged" not in container["securityContext"]
    env = env_of(container)
    assert env["UCX_TLS"]["value"] == "rc_x,cuda_copy,cuda_ipc,self"
    assert env["NCCL_IB_DISABLE"]["value"] == "0"
    assert env["VLLM_API_KEY"]["valueFrom"] == {"secretKeyRef": {"name": "llama-secrets", "key": "api-key"}}
    assert pod["nodeSelector"] == {AGENTPOOL: "h100"} and pod["tolerations"] == [SKU_GPU]
    assert "VLLM_NIXL_SIDE_CHANNEL_HOST" not in env, "NIXL side channel only for disaggregated engines"


def test_huggingface_source_reads_the_token_from_the_secret(hub_build):
    _, run = hub_build
    obj = deployment(run)
    container = vllm_container(obj)
    env = env_of(container)
    assert env["HF_TOKEN"] == {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "llama-secrets", "key": "hf-token"}}}
    assert env["VLLM_API_KEY"]["valueFrom"] == {"secretKeyRef": {"name": "llama-secrets", "key": "api-key"}}
    assert "AZURE_STORAGE_ACCOUNT_NAME" not in env
    assert all("value" not in env[name] for name in ("HF_TOKEN", "VLLM_API_KEY"))
    assert flag(container["args"], "--model") == LLAMA_8B
    assert "--load-format" not in container["args"]
    assert kubernetes_object(one(run, "core/v1:Secret"))["stringData"] == {"api-key": "<secret>", "hf-token": "<secret>"}
    assert "azure.workload.identity/use" not in obj["spec"]["template"]["metadata"]["labels"]
    account = kubernetes_object(one(run, "core/v1:ServiceAccount"))
    assert account["metadata"]["annotations"] == {} and account["automountServiceAccountToken"] is False
    assert "hf-test-token" not in json.dumps([r.inputs for r in run.resources], default=str)


def test_deployment_replaces_in_place_and_waits_for_account_and_secret(default_build):
    _, run = default_build
    resource = one(run, "apps/v1:Deployment")
    spec = kubernetes_object(resource)["spec"]
    assert spec["replicas"] == 1
    assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}
    assert {one(run, "core/v1:ServiceAccount").urn, one(run, "core/v1:Secret").urn} <= set(resource.options["dependsOn"])
    assert "ignoreChanges" not in resource.options, "without autoscaling Pulumi owns the replica count"
    assert resource.parent == one(run, "aks-gpu:index:VllmService").urn
    assert resource.options["provider"] == one(run, "pulumi:providers:kubernetes").urn


def test_a_provider_in_opts_wins_over_the_clusters():
    _, run = build(opts_provider=lambda: k8s.Provider("other", kubeconfig="y"))
    providers = {r.name: r.urn for r in of_type(run, "pulumi:providers:kubernetes")}
    children = [r for r in run.resources if r.parent == one(run, "aks-gpu:index:VllmService").urn]
    assert {r.type for r in children} >= set(SERVICE_CHILDREN[:6])
    assert {r.options["provider"] for r in children} == {providers["other"]}


def test_service_pdb_and_pod_monitor(default_build):
    holder, run = default_build
    service = kubernetes_object(one(run, "core/v1:Service"))
    assert service["metadata"] == {"name": "llama", "namespace": "gpu-inference", "labels": LABELS}
    assert service["spec"] == {"selector": LABELS, "ports": [{"name": "http", "port": 8000, "targetPort": "http"}]}
    pdb = kubernetes_object(one(run, "policy/v1:PodDisruptionBudget"))
    assert pdb["spec"] == {"maxUnavailable": 1, "selector": {"matchLabels": LABELS}, "unhealthyPodEvictionPolicy": "AlwaysAllow"}
    monitor = kubernetes_object(one(run, "PodMonitor"))
    assert monitor["apiVersion"] == "azmonitoring.coreos.com/v1" and monitor["kind"] == "PodMonitor"
    assert monitor["metadata"]["namespace"] == "gpu-inference"
    assert monitor["spec"]["selector"] == {"matchLabels": LABELS}
    assert monitor["spec"]["podMetricsEndpoints"] == [{"port": "http", "path": "/metrics", "interval": "30s"}]
    port_names = {p["name"] for p in vllm_container(deployment(run))["ports"]}
    assert "http" in port_names, "the PodMonitor's named port exists on the pod"
    assert holder["service"].endpoint == "http://llama.gpu-inference.svc.cluster.local:8000/v1" == run.outputs["endpoint"]
    assert holder["service"].service_name == "llama"
    assert of_type(run, "keda.sh/v1alpha1:ScaledObject") == [] and of_type(run, "helm.sh/v4:Chart") == []


def test_fit_is_exposed(default_build):
    holder, _ = default_build
    fit = holder["service"].fit
    assert fit == models.fit(LLAMA_8B, A100, 1, max_model_len=8192, gpu_memory_utilization=0.9, warn_below_sequences=4)
    assert fit.fits and fit.full_length_sequences >= 4


def test_policy_pack_has_no_mandatory_objection(default_build):
    _, run = default_build
    assert [v for v in analyze(run) if v.mandatory] == []


# ---- autoscaling --------------------------------------------------------------------------------


def test_keda_authenticates_with_its_workload_identity(autoscaled_build):
    _, run = autoscaled_build
    auth = kubernetes_object(one(run, "keda.sh/v1alpha1:TriggerAuthentication"))
    assert auth["metadata"] == {"name": "llama-prometheus", "namespace": "gpu-inference"}
    assert auth["spec"] == {"podIdentity": {"provider": "azure-workload", "identityId": KEDA_CLIENT_ID}}


def test_scaled_object_scales_on_waiting_requests(autoscaled_build):
    _, run = autoscaled_build
    scaler = one(run, "keda.sh/v1alpha1:ScaledObject")
    obj = kubernetes_object(scaler)
    assert obj["metadata"] == {"name": "llama", "namespace": "gpu-inference"}
    spec = obj["spec"]
    assert spec["scaleTargetRef"] == {"name": "llama"} and "llama" in deployments(run)
    assert (spec["minReplicaCount"], spec["maxReplicaCount"]) == (1, 3)
    assert "idleReplicaCount" not in spec
    (trigger,) = spec["triggers"]
    assert trigger["type"] == "prometheus"
    assert trigger["metadata"] == {
        "serverAddress": QUERY_ENDPOINT,
        "query": 'sum(vllm:num_requests_waiting{namespace="gpu-inference",app_kubernetes_io_instance="llama"})',
        "threshold": "7",
    }
    auth = one(run, "keda.sh/v1alpha1:TriggerAuthentication")
    assert trigger["authenticationRef"] == {"name": kubernetes_object(auth)["metadata"]["name"]}
    assert {auth.urn, one(run, "apps/v1:Deployment").urn} <= set(scaler.options["dependsOn"])


def test_keda_owns_the_replica_count(autoscaled_build):
    _, run = autoscaled_build
    resource = one(run, "apps/v1:Deployment")
    assert resource.options["ignoreChanges"] == ["spec.replicas"]
    assert kubernetes_object(resource)["spec"]["replicas"] == 1


ACTIVE_HOURS = {"start": "0 8 * * 1-5", "end": "0 20 * * 1-5", "timezone": "Europe/Amsterdam"}


@pytest.fixture(scope="module")
def zero_build():
    scaling = {"min_replicas": 0, "max_replicas": 2, "scale_to_zero": True, "active_hours": ACTIVE_HOURS}
    return build({"autoscaling": scaling}, monitoring=True)


def test_scale_to_zero_only_when_opted_in(zero_build, autoscaled_build):
    _, run = zero_build
    assert kubernetes_object(one(run, "ScaledObject"))["spec"]["minReplicaCount"] == 0
    assert deployment(run)["spec"]["replicas"] == 0
    _, kept = autoscaled_build
    assert kubernetes_object(one(kept, "ScaledObject"))["spec"]["minReplicaCount"] == 1, "otherwise one warm replica stays"


def test_scale_to_zero_wakes_on_a_schedule_that_exists_at_zero_replicas(zero_build):
    """At zero replicas no vLLM pod publishes vllm:num_requests_waiting, so the queue alone never wakes the service;
    the KEDA cron trigger (keda.sh/docs/2.17/scalers/cron/) raises it to one replica inside active_hours."""
    _, run = zero_build
    auth = kubernetes_object(one(run, "TriggerAuthentication"))["metadata"]["name"]
    prometheus, cron = kubernetes_object(one(run, "ScaledObject"))["spec"]["triggers"]
    assert prometheus["type"] == "prometheus" and prometheus["authenticationRef"] == {"name": auth}
    assert cron == {
        "type": "cron",
        "metadata": {"timezone": "Europe/Amsterdam", "start": "0 8 * * 1-5", "end": "0 20 * * 1-5", "desiredReplicas": "1"},
    }
    from_own_pods = [t for t in (prometheus, cron) if t["type"] == "prometheus" and "vllm:" in t["metadata"]["query"]]
    assert from_own_pods == [prometheus], "the cron trigger does not depend on metrics of the pods scaled to zero"


def test_active_hours_keep_at_least_min_replicas_and_default_to_utc():
    scaling = {"min_replicas": 2, "max_replicas": 4, "active_hours": {"start": "0 6 * * *", "end": "0 22 * * *"}}
    _, run = build({"autoscaling": scaling}, monitoring=True)
    spec = kubernetes_object(one(run, "ScaledObject"))["spec"]
    assert spec["minReplicaCount"] == 2
    assert spec["triggers"][1] == {
        "type": "cron",
        "metadata": {"timezone": "UTC", "start": "0 6 * * *", "end": "0 22 * * *", "desiredReplicas": "2"},
    }


def test_without_active_hours_the_queue_is_the_only_trigger(autoscaled_build):
    _, run = autoscaled_build
    assert [t["type"] for t in kubernetes_object(one(run, "ScaledObject"))["spec"]["triggers"]] == ["prometheus"]


@pytest.mark.parametrize("built", ["autoscaled_build", "zero_build"])
def test_replicas_scale_in_slowly_and_to_zero_after_the_cooldown(request, built):
    """KEDA's cooldownPeriod only governs the step to zero; 1 to N is the HPA's, whose default scale-down window is
    300 s (KEDA ScaledObject spec), so the slow scale-in is the HPA behavior's stabilizationWindowSeconds."""
    _, run = request.getfixturevalue(built)
    spec = kubernetes_object(one(run, "ScaledObject"))["spec"]
    assert spec["cooldownPeriod"] == 600
    # The scale-in window is at least the cooldown; no scaleUp: scale-out keeps the HPA's immediate default.
    assert spec["advanced"] == {"horizontalPodAutoscalerConfig": {"behavior": {"scaleDown": {"stabilizationWindowSeconds": 600}}}}


def test_scaler_query_selects_only_this_services_pods(autoscaled_build):
    _, run = autoscaled_build
    query = kubernetes_object(one(run, "ScaledObject"))["spec"]["triggers"][0]["metadata"]["query"]
    matchers = dict(re.findall(r'(\w+)="([^"]*)"', query))
    assert matchers == {"namespace": "gpu-inference", "app_kubernetes_io_instance": "llama"}
    assert "=~" not in query and "!=" not in query, "exact label matches only: llama-large's pods do not match"


def test_scaler_query_label_comes_from_the_pod_monitor(autoscaled_build):
    """The query filters on a label only the PodMonitor's podTargetLabels put on the series (prometheus-operator copies
    __meta_kubernetes_pod_label_<name> to the sanitized <name>); the pods carry it with this service's name."""
    _, run = autoscaled_build
    query = kubernetes_object(one(run, "ScaledObject"))["spec"]["triggers"][0]["metadata"]["query"]
    monitor = kubernetes_object(one(run, "PodMonitor"))
    copied = {re.sub(r"[^a-zA-Z0-9_]", "_", label): label for label in monitor["spec"].get("podTargetLabels", [])}
    pod_labels = deployment(run)["spec"]["template"]["metadata"]["labels"]
    for name, value in re.findall(r'(\w+)="([^"]*)"', query):
        if name != "namespace":  # set on every target by the operator's own relabelling
            assert name in copied, f"no series carries {name}: add its pod label to the PodMonitor's podTargetLabels"
            assert pod_labels[copied[name]] == value


def test_pod_monitor_copies_the_instance_label_and_sets_azures_label_limits(default_build):
    _, run = default_build
    spec = kubernetes_object(one(run, "PodMonitor"))["spec"]
    assert spec == {
        "selector": {"matchLabels": LABELS},
        "podMetricsEndpoints": [{"port": "http", "path": "/metrics", "interval": "30s"}],
        "podTargetLabels": ["app.kubernetes.io/instance"],
        "labelLimit": 63,
        "labelNameLengthLimit": 511,
        "labelValueLengthLimit": 1023,
    }


# ---- prefill/decode disaggregation --------------------------------------------------------------


def test_prefill_and_decode_deployments_carry_their_roles(disaggregated_build):
    _, run = disaggregated_build
    found = deployments(run)
    assert set(found) == {"llama-prefill", "llama-decode"}
    for role, replicas in (("prefill", 1), ("decode", 2)):
        obj = found[f"llama-{role}"]
        assert obj["metadata"]["labels"] == {**LABELS, ROLE: role}
        assert obj["spec"]["selector"]["matchLabels"] == {**LABELS, ROLE: role}
        assert obj["spec"]["replicas"] == replicas
        assert obj["spec"]["template"]["metadata"]["labels"][ROLE] == role


def test_both_engines_move_kv_over_nixl(disaggregated_build):
    _, run = disaggregated_build
    for obj in deployments(run).values():
        container = vllm_container(obj)
        assert json.loads(flag(container["args"], "--kv-transfer-config")) == {
            "kv_connector": "NixlConnector",
            "kv_role": "kv_both",
        }
        env = env_of(container)
        assert env["VLLM_NIXL_SIDE_CHANNEL_HOST"] == {
            "name": "VLLM_NIXL_SIDE_CHANNEL_HOST",
            "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}},
        }
        assert env["UCX_TLS"]["value"] == "rc_x,cuda_copy,cuda_ipc,self" and env["NCCL_IB_DISABLE"]["value"] == "0"
        pod = pod_of(obj)
        assert {c["name"] for c in pod["resourceClaims"]} == {"gpus", "rdma-nics"}
        assert pod["affinity"] == {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": {"app.kubernetes.io/instance": "llama"}},
                        "topologyKey": "kubernetes.io/hostname",
                    }
                ]
            }
        }


def test_decode_runs_vllm_behind_the_routing_sidecar(disaggregated_build):
    _, run = disaggregated_build
    decode = deployments(run)["llama-decode"]
    container = vllm_container(decode)
    assert flag(container["args"], "--port") == "8200"
    assert container["ports"] == [{"name": "engine", "containerPort": 8200}]
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"] == {"path": "/health", "port": "engine"}
    (sidecar,) = pod_of(decode)["initContainers"]
    assert sidecar["name"] == "routing-sidecar" and sidecar["restartPolicy"] == "Always"
    # The sidecar of the picker's release (llm-d-router@v0.10.0 ci-release.yaml), with that version's flags.
    assert sidecar["image"] == pins.image("llm-d-router-disagg-sidecar")
    assert sidecar["image"].rpartition(":")[2] == pins.image_pin("llm-d-router-endpoint-picker").tag, "one release"
    assert sidecar["args"] == ["--port=8000", "--model-server-port=8200", "--kv-connector=nixlv2", "--secure-proxy=false"]
    assert sidecar["ports"] == [{"name": "http", "containerPort": 8000}]
    assert sidecar["securityContext"]["allowPrivilegeEscalation"] is False
    assert sidecar["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert "claims" not in sidecar["resources"], "the NICs and GPUs belong to vLLM"
    prefill = deployments(run)["llama-prefill"]
    assert "initContainers" not in pod_of(prefill)
    assert flag(vllm_container(prefill)["args"], "--port") == "8000"
    service = kubernetes_object(one(run, "core/v1:Service"))
    assert service["spec"]["selector"] == {**LABELS, ROLE: "decode"}, "clients reach decode pods through the sidecar"


def test_inferencepool_chart_routes_over_both_roles(disaggregated_build):
    _, run = disaggregated_build
    chart = by_name(run, "helm.sh/v4:Chart")["llama-inferencepool"]
    assert chart.parent == one(run, "aks-gpu:index:VllmService").urn
    inputs = chart.inputs
    assert inputs["chart"] == INFERENCEPOOL_CHART == "oci://registry.k8s.io/gateway-api-inference-extension/charts/inferencepool"
    assert re.fullmatch(r"v\d+\.\d+\.\d+", inputs["version"]), "pinned chart version"
    assert inputs["namespace"] == "llm-d-infra"
    values = inputs["values"]
    assert values["inferencePool"]["modelServers"] == {"matchLabels": LABELS}, "prefill and decode pods alike"
    assert values["inferencePool"]["targetPorts"] == [{"number": 8000}], "the v1 value; targetPortNumber is v1alpha2's"
    assert "targetPortNumber" not in values["inferencePool"]
    extension = values["inferenceExtension"]
    image = extension["image"]
    assert (image["hub"], image["name"]) == ("ghcr.io/llm-d", "llm-d-router-endpoint-picker")
    assert re.fullmatch(r"v\d+\.\d+\.\d+", image["tag"])
    assert extension["pluginsConfigFile"] == "pd-config.yaml"
    assert set(extension["pluginsCustomConfig"]) == {"pd-config.yaml"}
    config = yaml.safe_load(extension["pluginsCustomConfig"]["pd-config.yaml"])
    assert config["kind"] == "EndpointPickerConfig"
    declared = {p["type"] for p in config["plugins"]}
    assert {"disagg-profile-handler", "prefix-based-pd-decider"} <= declared
    assert check_config(config, PICKER_RELEASE) == [], "the pinned picker loads it and it disaggregates"
    profiles = {p["name"]: [ref["pluginRef"] for ref in p["plugins"]] for p in config["schedulingProfiles"]}
    assert set(profiles) == {"prefill", "decode"}
    assert {ref for refs in profiles.values() for ref in refs} <= declared, "every pluginRef names a declared plugin"
    assert chart.options["provider"] == one(run, "pulumi:providers:kubernetes").urn


def test_disaggregated_service_passes_the_policy_pack(disaggregated_build):
    _, run = disaggregated_build
    assert [v for v in analyze(run) if v.mandatory] == []


# ---- refusals -----------------------------------------------------------------------------------


def pool_facts(name: str) -> SimpleNamespace:
    """What the checks read of a GpuNodePool built from POOLS[name], without the engine."""
    pool = GpuNodePoolArgs(**POOLS[name])
    resource, _ = pool.sku.gpu_resource(pool.mig_profile)
    return SimpleNamespace(pool_name=pool.name, sku=pool.sku, gpu_resource_name=resource, mig_profile=pool.mig_profile)


def dra_facts(settings: dict) -> SimpleNamespace:
    """What the checks read of DraDeviceClasses with these args (plus ``pools``): its namespace and templates."""
    settings = dict(settings)
    pools = [pool_facts(p) for p in settings.pop("pools")]
    dra = DraDeviceClassesArgs(**settings)
    templates = [f"gpu-{n}" for n in dra.gpu_counts] + [dra_template(p, 1) for p in pools if is_mig_resource(p.gpu_resource_name)]
    return SimpleNamespace(namespace=dra.namespace, templates=dict.fromkeys(templates, ""))


def rdma_facts(settings: dict) -> SimpleNamespace:
    """What the checks read of an RdmaNetwork with these args (plus ``pools``): its namespace and NICs per pool."""
    settings = dict(settings)
    pools = [pool_facts(p) for p in settings.pop("pools")]
    return SimpleNamespace(
        namespace=RdmaNetworkArgs(**settings).namespace, nics={p.pool_name: p.sku.infiniband_nics for p in pools}
    )


def refusal(args: dict, **options) -> str:
    """The message VllmService refuses these inputs with, from the checks it runs before registering
    anything (the options are service_program's); fails if they pass."""
    setup = Setup(**options)
    dra = dra_facts(setup.dra) if setup.dra else None
    placement = GpuPlacement(pool_facts(setup.pool), dra=dra, rdma=rdma_facts(setup.rdma) if setup.rdma else None)
    secrets = VllmSecrets("k", hf_token="t" if setup.hf_token else None)
    azure = AzureServices(
        model_store=object() if setup.blob else None,
        identity=object() if setup.blob else None,
        monitoring=scaling_monitor() if setup.monitoring else None,
    )
    with pytest.raises(ComponentInputError) as caught:
        parsed = validate_args(VllmServiceArgs, {"name": "llama", "model": LLAMA_8B, **args}, "VllmService", "llama")
        raise_problems("VllmService", "llama", vllm_service_problems(parsed, placement, secrets, azure))
    message = str(caught.value)
    assert message.startswith("VllmService 'llama': invalid arguments:\n  - ")
    return message


def engine_refusal(args: dict, **options) -> str:
    """Build expecting a refusal; assert nothing of the service was registered; return the message."""
    holder: dict = {}
    types = registered_before_error(service_program(holder, args, **options), ComponentInputError)
    assert "aks-gpu:index:VllmService" not in types
    assert not set(types) & set(SERVICE_CHILDREN), f"service children registered: {set(types) & set(SERVICE_CHILDREN)}"
    assert {"aks-gpu:index:GpuNodePool", "pulumi:providers:kubernetes"} <= set(types), "what the program built first exists"
    message = holder["error"]
    assert message.startswith("VllmService 'llama': invalid arguments:\n  - ")
    return message


@pytest.mark.parametrize(
    "model, pool, tp, max_model_len, kinds",
    [
        ("meta-llama/Llama-3.1-70B-Instruct", "a100", 1, 8192, {"vm_size"}),
        ("meta-llama/Llama-3.1-70B-Instruct", "a100x4", 2, 16384, {"tp", "kv_cache_dtype", "dtype", "max_model_len", "vm_size"}),
        (LLAMA_8B, "a10", 1, 32768, {"kv_cache_dtype", "dtype", "max_model_len", "vm_size"}),
    ],
    ids=["70b-on-one-a100", "70b-tp2-16k-on-four-a100s", "8b-32k-on-an-a10"],
)
def test_a_model_that_does_not_fit_is_refused_with_the_numbers_and_the_fixes(model, pool, tp, max_model_len, kinds):
    args = {"model": model, "tensor_parallel_size": tp, "max_model_len": max_model_len}
    message = refusal(args, pool=pool)
    vm_size = POOLS[pool]["vm_size"]
    fit = models.fit(model, vm_size, tp, max_model_len=max_model_len)
    assert not fit.fits
    assert f"model={model!r}: cannot load on {vm_size}: {fit.problem}. Smallest changes that fit: " in message
    assert re.search(r"\d+\.\d+ GiB", message), "the memory numbers are in the message"
    assert {s.kind for s in fit.suggestions} == kinds
    for suggestion in fit.suggestions:
        assert suggestion.text in message


def test_seventy_b_on_one_a100_names_the_budget():
    message = refusal({"model": "meta-llama/Llama-3.1-70B-Instruct"})
    assert "weights (131.5 GiB) + overhead (2.4 GiB) exceed the 71.2 GiB budget per GPU" in message
    assert "(tp 2, $" in message, "a bigger size, with its tp and price"


@pytest.mark.parametrize(
    "args, options, expected",
    [
        (
            {"model": "meta-llama/Llama-3.1-8B-Instruc"},
            {},
            "did you mean 'meta-llama/Llama-3.1-8B-Instruct'",
        ),
        ({"tensor_parallel_size": 2}, {}, f"tensor_parallel_size=2: {A100} has 1 GPUs per node"),
        (
            {"tensor_parallel_size": 2},
            {"pool": "a100mig"},
            "tensor_parallel_size=2: pool a100mig serves MIG slices (nvidia.com/mig-3g.40gb); a slice cannot join tensor parallelism",
        ),
        ({}, {"blob": False}, "source='blob': give model_store and identity"),
        (
            {"source": "huggingface"},
            {"blob": False},
            "source='huggingface': meta-llama/Llama-3.1-8B-Instruct is a gated Hugging Face repository",
        ),
        (
            {"gpu_access": "dra"},
            {},
            "gpu_access='dra': needs DraDeviceClasses with a gpu-1 claim template (add 1 to dra.gpu_counts)",
        ),
        (
            {"model": LLAMA_70B, "tensor_parallel_size": 8, "gpu_access": "dra"},
            {"pool": "h100", "dra": {"pools": ["h100"], "gpu_counts": [1]}},
            "gpu_access='dra': needs DraDeviceClasses with a gpu-8 claim template (add 8 to dra.gpu_counts)",
        ),
        (
            {"gpu_access": "dra", "namespace": "models"},
            {"dra": {"pools": ["a100"]}},
            "namespace='models': DRA claim templates live in 'gpu-inference'; serve from that namespace",
        ),
        ({"rdma": True}, {}, "rdma=True: pool a100 is not an RDMA pool of the given RdmaNetwork"),
        (
            {"rdma": True, "namespace": "llm-d-infra"},
            {"rdma": RDMA_H100},
            "rdma=True: pool a100 is not an RDMA pool of the given RdmaNetwork",
        ),
        (
            {"model": LLAMA_70B, "tensor_parallel_size": 8, "rdma": True},
            {"pool": "h100", "rdma": RDMA_H100},
            "namespace='gpu-inference': RDMA claim templates live in 'llm-d-infra'; serve from that namespace",
        ),
        (
            {**DISAGGREGATED, "rdma": False},
            {"pool": "h100", "dra": DRA_H100},
            "disaggregation='set': prefill/decode moves KV caches over InfiniBand: set rdma: true",
        ),
        (
            {**DISAGGREGATED, "autoscaling": {"max_replicas": 2}},
            {"pool": "h100", "dra": DRA_H100, "rdma": RDMA_H100, "monitoring": True},
            "autoscaling='set': disaggregated engines are sized by prefill_replicas and decode_replicas",
        ),
        (
            {**DISAGGREGATED, "tensor_parallel_size": 4},
            {"pool": "h100", "dra": {**DRA_H100, "gpu_counts": [4]}, "rdma": RDMA_H100},
            f"tensor_parallel_size=4: disaggregated engines take full nodes: use 8 on {H100}",
        ),
        (
            {"autoscaling": {"max_replicas": 2}},
            {},
            "autoscaling='set': needs the cluster's managed Prometheus (query endpoint and KEDA identity)",
        ),
        ({"image": "vllm/vllm-openai"}, {}, "image='vllm/vllm-openai': pin the vLLM image to a version tag or digest"),
        ({"image": "vllm/vllm-openai:latest"}, {}, "pin the vLLM image to a version tag or digest"),
        (
            {"autoscaling": {"min_replicas": 0, "max_replicas": 2}},
            {"monitoring": True},
            "autoscaling.min_replicas=0: zero replicas means scale to zero; set scale_to_zero: true to opt in",
        ),
        (
            {"autoscaling": {"min_replicas": 0, "max_replicas": 2, "scale_to_zero": True}},
            {"monitoring": True},
            "autoscaling.active_hours=None: scale to zero needs a wake-up window: an idle vLLM has no pods, "
            "so no queue metric to scale on",
        ),
        (
            {"autoscaling": {"max_replicas": 2, "active_hours": {"start": "8am", "end": "0 20 * * 1-5"}}},
            {"monitoring": True},
            "autoscaling.active_hours.start='8am'",
        ),
        (
            {"autoscaling": {"max_replicas": 2, "active_hours": {"start": "0 8 * * 1-5"}}},
            {"monitoring": True},
            "autoscaling.active_hours.end",
        ),
        (
            {"autoscaling": {"min_replicas": 3, "max_replicas": 2}},
            {"monitoring": True},
            "autoscaling.min_replicas=3: must be at most max_replicas (2)",
        ),
        ({"name": "Llama", "source": "huggingface"}, {"blob": False, "hf_token": True}, "name='Llama'"),
        ({"replica": 2}, {}, "replica=2: unknown key"),
    ],
    ids=[
        "unknown-model",
        "tp-over-gpus-per-node",
        "tp-on-mig",
        "blob-without-store",
        "hub-without-token",
        "dra-without-classes",
        "dra-without-template",
        "dra-other-namespace",
        "rdma-without-network",
        "rdma-on-non-rdma-pool",
        "rdma-other-namespace",
        "disaggregation-without-rdma",
        "disaggregation-with-autoscaling",
        "disaggregation-partial-node",
        "autoscaling-without-monitoring",
        "unpinned-image",
        "latest-image",
        "zero-without-opt-in",
        "zero-without-active-hours",
        "active-hours-not-crontab",
        "active-hours-without-end",
        "min-over-max",
        "bad-name",
        "misspelled-key",
    ],
)
def test_bad_input_is_refused(args, options, expected):
    message = refusal(args, **options)
    assert expected in message


@pytest.mark.parametrize(
    "args, options, expected",
    [
        (
            {"model": "meta-llama/Llama-3.1-70B-Instruct"},
            {},
            ["model='meta-llama/Llama-3.1-70B-Instruct': cannot load on Standard_NC24ads_A100_v4"],
        ),
        ({"replica": 2}, {}, ["replica=2: unknown key"]),
        (
            {"gpu_access": "dra", "rdma": True, "autoscaling": {"max_replicas": 2}},
            {"blob": False},
            [
                "source='blob': give model_store and identity",
                "gpu_access='dra': needs DraDeviceClasses with a gpu-1 claim template",
                "rdma=True: pool a100 is not an RDMA pool of the given RdmaNetwork",
                "autoscaling='set': needs the cluster's managed Prometheus",
            ],
        ),
    ],
    ids=["does-not-fit", "misspelled-key", "four-missing-dependencies"],
)
def test_a_refused_service_registers_nothing_and_names_every_problem(args, options, expected):
    message = engine_refusal(args, **options)
    assert message == refusal(args, **options), "the program refuses with what the checks find"
    for problem in expected:
        assert problem in message


def test_unknown_model_lists_the_catalog_and_how_to_give_facts():
    message = refusal({"model": "acme/unknown-model"})
    assert "is not a model in the catalog" in message and "ModelFactsArgs" in message
    assert LLAMA_8B in message, "the known ids are listed"


# ---- warnings -----------------------------------------------------------------------------------


def test_warns_when_fewer_full_length_sequences_fit_than_asked():
    holder, run = build({"source": "huggingface", "min_full_sequences": 64}, blob=False, hf_token=True)
    fit = holder["service"].fit
    assert fit.fits and fit.full_length_sequences < 64
    warned = list(run.warnings)  # what pulumi.log.warn said, as the plan reports it
    assert warned == [f"VllmService 'llama': {fit.warning}"]
    assert f"only {fit.full_length_sequences} sequence(s) of 8192 tokens fit at once (fewer than 64)" in warned[0]
    assert deployment(run), "a warning does not stop the deployment"


def test_no_warning_when_enough_sequences_fit():
    _, run = build({"source": "huggingface"}, blob=False, hf_token=True)
    assert [w for w in run.warnings if "VllmService" in w] == []


# ---- the dev and prod stacks --------------------------------------------------------------------


@pytest.fixture(scope="module")
def dev_run():
    return planned_stack("dev")


@pytest.fixture(scope="module")
def prod_run():
    return planned_stack("prod")


def by_name(run, suffix: str) -> dict:
    return {r.name: r for r in of_type(run, suffix)}


def model_deployments(run) -> dict[str, dict]:
    """The vLLM Deployments only: the dev stack's gateway adds its own (Redis, the trace collector)."""
    return {
        name: obj
        for name, obj in deployments(run).items()
        if obj["metadata"].get("labels", {}).get("app.kubernetes.io/name") == "vllm"
    }


def model_secrets(run) -> list:
    """The vLLM Secrets only: the gateway adds client keys, backend keys and token Secrets of its own."""
    return [
        r
        for r in of_type(run, "core/v1:Secret")
        if kubernetes_object(r)["metadata"].get("labels", {}).get("app.kubernetes.io/name") == "vllm"
    ]


def test_dev_identity_chain_runs_from_the_pod_to_the_blob_container(dev_run):
    (obj,) = model_deployments(dev_run).values()
    pod = pod_of(obj)
    namespace, account_name = obj["metadata"]["namespace"], pod["serviceAccountName"]
    subject = f"system:serviceaccount:{namespace}:{account_name}"

    # The Kubernetes side: the pod is labelled for the webhook and its account names the identity's client id.
    assert obj["spec"]["template"]["metadata"]["labels"]["azure.workload.identity/use"] == "true"
    accounts = [
        kubernetes_object(r)
        for r in of_type(dev_run, "core/v1:ServiceAccount")
        if (kubernetes_object(r)["metadata"]["name"], kubernetes_object(r)["metadata"]["namespace"]) == (account_name, namespace)
    ]
    (account,) = accounts

    # The federation: exactly one credential trusts that account, issued by the cluster's OIDC issuer.
    (credential,) = [r for r in of_type(dev_run, "FederatedIdentityCredential") if r.inputs["subject"] == subject]
    assert credential.inputs["issuer"] == "<computed:oidcIssuerURL>" == dev_run.outputs["oidc_issuer_url"]
    assert credential.inputs["audiences"] == ["api://AzureADTokenExchange"]
    identity_name = re.fullmatch(r"<computed:(.+)\.name>", credential.inputs["resourceName"])[1]
    assert identity_name in by_name(dev_run, "managedidentity:UserAssignedIdentity")
    assert account["metadata"]["annotations"] == {"azure.workload.identity/client-id": f"<computed:{identity_name}.clientId>"}

    # The grant: Storage Blob Data Reader for that identity's principal, on the container the pod reads.
    (account_resource,) = of_type(dev_run, "storage:StorageAccount")
    (container,) = of_type(dev_run, "storage:BlobContainer")
    container_name = container.inputs["containerName"]
    (grant,) = [
        r for r in of_type(dev_run, "RoleAssignment") if r.inputs.get("principalId") == f"<computed:{identity_name}.principalId>"
    ]
    assert grant.inputs["roleDefinitionId"].endswith(f"/providers/Microsoft.Authorization/roleDefinitions/{READER_GUID}")
    assert READER_GUID == "2a2b9908-6ea1-4ae2-8e65-a410df84e7d1"
    assert grant.inputs["scope"] == f"<computed:{account_resource.name}.id>/blobServices/default/containers/{container_name}"
    assert grant.inputs["principalType"] == "ServicePrincipal"
    args = vllm_container(obj)["args"]
    assert flag(args, "--model").startswith(f"az://{container_name}/")
    assert env_of(vllm_container(obj))["AZURE_STORAGE_ACCOUNT_NAME"]["value"] == account_resource.inputs["accountName"]


def test_dev_keda_chain(dev_run):
    auth = kubernetes_object(one(dev_run, "TriggerAuthentication"))
    keda_identity = re.fullmatch(r"<computed:(.+)\.clientId>", auth["spec"]["podIdentity"]["identityId"])[1]
    (credential,) = [
        r
        for r in of_type(dev_run, "FederatedIdentityCredential")
        if r.inputs["resourceName"] == f"<computed:{keda_identity}.name>"
    ]
    assert credential.inputs["subject"] == "system:serviceaccount:kube-system:keda-operator"
    assert credential.inputs["issuer"] == "<computed:oidcIssuerURL>"
    # .get: a principal the mocks cannot compute (e.g. Grafana's system identity) is absent from the inputs.
    (grant,) = [
        r for r in of_type(dev_run, "RoleAssignment") if r.inputs.get("principalId") == f"<computed:{keda_identity}.principalId>"
    ]
    assert grant.inputs["roleDefinitionId"].endswith(BUILT_IN_ROLES["Monitoring Data Reader"])
    assert grant.inputs["scope"] == "<computed:prometheus-workspace.id>"
    trigger = kubernetes_object(one(dev_run, "ScaledObject"))["spec"]["triggers"][0]
    assert (
        trigger["metadata"]["serverAddress"]
        == "<computed:prometheusQueryEndpoint>"
        == dev_run.outputs["prometheus_query_endpoint"]
    )


def test_dev_secrets_are_never_recorded_in_plain_text(dev_run):
    recorded = json.dumps([r.inputs for r in dev_run.resources], default=str) + json.dumps(dev_run.outputs, default=str)
    assert "<secret:aks-gpu-inference:vllm_api_key>" not in recorded
    assert "<secret:" not in recorded, "no secret placeholder leaks unmasked"
    (secret,) = model_secrets(dev_run)
    assert kubernetes_object(secret)["stringData"] == {"api-key": "<secret>"}
    assert dev_run.outputs["kubeconfig"] == "<secret>"
    for other in of_type(dev_run, "core/v1:Secret"):
        data = kubernetes_object(other).get("stringData")
        assert data == "<secret>" or set(data.values()) == {"<secret>"}, f"{other.name} records a value"
    env = env_of(vllm_container(next(iter(model_deployments(dev_run).values()))))
    assert env["VLLM_API_KEY"]["valueFrom"]["secretKeyRef"] == {
        "name": kubernetes_object(secret)["metadata"]["name"],
        "key": "api-key",
    }


def test_dev_hub_model_keeps_its_token_secret_too():
    config = stack_config("dev")
    config["aks-gpu-inference:models"][0]["source"] = "huggingface"
    run = run_stack(config, "dev")
    recorded = json.dumps([r.inputs for r in run.resources], default=str) + json.dumps(run.outputs, default=str)
    assert "<secret:" not in recorded
    (secret,) = model_secrets(run)
    assert kubernetes_object(secret)["stringData"] == {"api-key": "<secret>", "hf-token": "<secret>"}
    subjects = sorted(r.inputs["subject"] for r in of_type(run, "FederatedIdentityCredential"))
    # The gateway's token refresher, trace collector and router-model copier keep their own identities;
    # the model gets none.
    assert subjects == [
        "system:serviceaccount:ai-gateway:aoai-token",
        "system:serviceaccount:ai-gateway:otel-collector",
        "system:serviceaccount:kube-system:keda-operator",
        "system:serviceaccount:vllm-semantic-router-system:router-models",
    ], "no blob identity for a hub model"


@pytest.fixture(scope="module")
def _schemas_read_once():
    """kubernetes_validate re-reads its schema files on every call; read each once for this module."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(kubernetes_validate.utils, "schema_contents", functools.cache(kubernetes_validate.utils.schema_contents))
        yield


def test_every_prod_deployment_validates_strictly_against_1_35(prod_run, _schemas_read_once):
    found = deployments(prod_run)
    assert set(found) == {"llama-70b"}
    for obj in found.values():
        kubernetes_validate.validate(obj, "1.35", strict=True)


def test_strict_validation_would_catch_a_misspelled_field(prod_run, _schemas_read_once):
    obj = deployments(prod_run)["llama-70b"]
    broken = json.loads(json.dumps(obj))
    pod_of(broken)["containers"][0]["startupProbes"] = pod_of(broken)["containers"][0].pop("startupProbe")
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, "1.35", strict=True)


def test_prod_deployments_claim_templates_in_their_namespace(prod_run):
    templates = {
        (obj["metadata"]["namespace"], obj["metadata"]["name"])
        for obj in map(kubernetes_object, of_type(prod_run, "ResourceClaimTemplate"))
    }
    for obj in deployments(prod_run).values():
        for claim in pod_of(obj)["resourceClaims"]:
            assert (obj["metadata"]["namespace"], claim["resourceClaimTemplateName"]) in templates


def test_a_memory_limit_below_what_the_load_uses_is_refused():
    message = refusal({"memory": "16Gi"})
    assert "memory='16Gi': the engine uses about 27 GiB of host memory while it loads" in message
    assert "the load would be OOM-killed; give at least 27Gi or leave it unset" in message


def test_a_memory_limit_above_the_node_is_refused():
    message = refusal({"memory": "4096Gi"})
    assert "memory='4096Gi': Standard_NC24ads_A100_v4 has 220 GiB of memory" in message


def test_enforce_eager_skips_compile_and_graphs_in_the_budget():
    facts = models.get_model(LLAMA_8B)
    eager = cold.cold_start(facts.weight_bytes("auto"), facts.layers, 1, "huggingface", "A100", enforce_eager=True)
    compiled = cold.cold_start(facts.weight_bytes("auto"), facts.layers, 1, "huggingface", "A100")
    assert eager.compile == eager.graphs == 0 and eager.derived < compiled.derived
