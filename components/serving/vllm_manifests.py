"""The objects a VllmService deploys, as plain dicts: the engine pod and Deployment, the Service, the
disruption budget, the PodMonitor managed Prometheus scrapes and KEDA's scaler. No Pulumi import:
values may be Pulumi inputs (the KEDA identity), but every name, count and budget is decided here.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core import models, pins, startup
from ..core.endpoints import INSTANCE_LABEL, VLLM_PORT
from ..core.labels import ROLE_LABEL, is_mig_resource, mig_slice
from ..core.security import restricted_container, restricted_pod
from ..gpu.compute_domain import CHANNEL_CLAIM
from .vllm_disaggregation import (
    NIXL_KV_TRANSFER,
    engine_anti_affinity,
    engine_port,
    engine_roles,
    routing_sidecar,
)
from .vllm_service_args import ScalingMonitor, VllmServiceArgs

if TYPE_CHECKING:
    from ..azure.gpu_node_pool import GpuNodePool
    from ..gpu.pod_contract import RdmaPodSpec

VLLM_UID = 1000
"""The non-root user vLLM runs as (the image defines none; HOME and USER are set for it)."""


def service_labels(args: VllmServiceArgs) -> dict[str, str]:
    """Labels of every object of the service; the instance label tells services apart."""
    return {"app.kubernetes.io/name": "vllm", INSTANCE_LABEL: args.name}


def cold_start(args: VllmServiceArgs, facts: models.ModelFactsArgs, gpu_model: str) -> startup.ColdStart:
    """The allowance from container start to a ready engine on a cold node (``core/startup.py``). The whole
    checkpoint streams even with dtype fp8: vLLM quantizes after loading."""
    eager = "--enforce-eager" in args.extra_args
    return startup.cold_start(facts.weight_bytes("auto"), facts.layers, args.tensor_parallel_size, args.source, gpu_model, eager)


def shm_gib(args: VllmServiceArgs) -> int:
    """``/dev/shm`` for the tensor-parallel workers (NCCL and PyTorch exchange tensors there): 4 GiB per GPU."""
    return max(2, 4 * args.tensor_parallel_size)


def host_memory(args: VllmServiceArgs, facts: models.ModelFactsArgs) -> str:
    """The engine pod's memory request and limit: ``args.memory``, else what it uses while it loads."""
    needed = startup.host_memory_gib(facts.weight_bytes("auto"), args.tensor_parallel_size, shm_gib(args), args.source)
    return args.memory or f"{math.ceil(needed)}Gi"


def streamer_concurrency(facts: models.ModelFactsArgs) -> int:
    """More parallel reads for bigger checkpoints: 16 up to ~16 GB, up to 64 for 70B-class models."""
    gigabytes = facts.weight_bytes("auto") / 1e9
    return int(min(64, max(16, 2 ** math.ceil(math.log2(max(gigabytes, 1))))))


def dra_template(pool: GpuNodePool, gpus: int) -> str:
    """The DraDeviceClasses claim template for ``gpus`` GPUs, or for one slice on a MIG pool."""
    if is_mig_resource(pool.gpu_resource_name):
        return f"{pool.pool_name}-mig-{mig_slice(pool.gpu_resource_name).replace('.', '-')}"
    return f"gpu-{gpus}"


@dataclass(frozen=True)
class VllmEngine:
    """What every engine pod of one service is built from, resolved once before anything is created."""

    args: VllmServiceArgs
    """The service's settings."""
    facts: models.ModelFactsArgs
    """The served model's facts (catalog or ``model_facts``)."""
    pool: GpuNodePool
    """The GPU pool the pods run on."""
    model: str
    """What vLLM's ``--model`` gets: the ``az://`` URI of the weights in the model store, or the hub id."""
    storage_account: str | None = None
    """The model store's account, for the streamer (``source: blob``)."""
    rdma: RdmaPodSpec | None = None
    """RdmaNetwork's pod contract for the pool, for ``rdma: true``."""
    imex_channel: str | None = None
    """The IMEX channel template of the pool's ComputeDomain (NVLink to the engines on other nodes of the rack), for
    an RDMA engine on a rack-scale pool whose GPUs DRA serves."""

    @property
    def cold_start(self) -> startup.ColdStart:
        """The cold-start allowance, which sizes the startup probe and Pulumi's wait."""
        return cold_start(self.args, self.facts, self.pool.sku.gpu_model)


def vllm_args(engine: VllmEngine, role: str) -> list[str]:
    """vLLM's command-line flags for one engine role (``""`` when serving is aggregated)."""
    args = engine.args
    loader = []
    if args.source == "blob":
        streamer: dict[str, Any] = {"concurrency": streamer_concurrency(engine.facts)}
        if args.tensor_parallel_size > 1:
            # One copy per node, partitioned across the ranks, instead of every rank reading the whole checkpoint
            # (vllm@v0.32.0 runai_streamer_loader.py accepts "distributed").
            streamer["distributed"] = True
        loader = ["--load-format", "runai_streamer", "--model-loader-extra-config", json.dumps(streamer)]
    result = [
        "--model", engine.model, *loader,
        "--served-model-name", args.served_model_name or args.model,
        "--host", "0.0.0.0", "--port", str(engine_port(role)[1]),
        "--tensor-parallel-size", str(args.tensor_parallel_size),
        "--max-model-len", str(args.max_model_len),
        "--gpu-memory-utilization", str(args.gpu_memory_utilization),
    ]  # fmt: skip
    if args.dtype == "fp8":
        result += ["--quantization", "fp8"]
    if args.kv_cache_dtype == "fp8":
        result += ["--kv-cache-dtype", "fp8"]
    if args.enable_prefix_caching:
        result.append("--enable-prefix-caching")
    if args.max_num_seqs:
        result += ["--max-num-seqs", str(args.max_num_seqs)]
    if role:
        result += ["--kv-transfer-config", json.dumps(NIXL_KV_TRANSFER)]
    return result + list(args.extra_args)


def _secret_env(name: str, secret: str, key: str) -> dict[str, Any]:
    return {"name": name, "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}}


def vllm_env(engine: VllmEngine, role: str) -> list[dict[str, Any]]:
    """The engine's environment: the API key and hub token from the service's Secret, never as values."""
    secret = f"{engine.args.name}-secrets"
    env = [
        _secret_env("VLLM_API_KEY", secret, "api-key"),
        # The image has no user for a non-root UID; HOME and USER keep torch, triton and getpass working.
        {"name": "HOME", "value": "/home/vllm"},
        {"name": "USER", "value": "vllm"},
        {"name": "HF_HOME", "value": "/home/vllm/.cache/huggingface"},
    ]
    if engine.args.source == "blob":
        env.append({"name": "AZURE_STORAGE_ACCOUNT_NAME", "value": engine.storage_account})
    else:
        env.append(_secret_env("HF_TOKEN", secret, "hf-token"))
    if role:
        env.append({"name": "VLLM_NIXL_SIDE_CHANNEL_HOST", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}})
    return env


def vllm_resources(engine: VllmEngine) -> tuple[dict[str, Any], dict[str, str]]:
    """The container's resources and the pod's claims (claim name -> template): GPUs from the device
    plugin's resource, or from a DRA claim."""
    args, pool = engine.args, engine.pool
    memory = host_memory(args, engine.facts)
    resources: dict = {"requests": {"cpu": args.cpu, "memory": memory}, "limits": {"memory": memory}}
    claims: dict[str, str] = {}
    if args.gpu_access == "dra":
        claims["gpus"] = dra_template(pool, args.tensor_parallel_size)
        resources["claims"] = [{"name": "gpus"}]
        if engine.imex_channel:
            claims[CHANNEL_CLAIM] = engine.imex_channel
            resources["claims"].append({"name": CHANNEL_CLAIM})
    else:
        resources["requests"][pool.gpu_resource_name] = args.tensor_parallel_size
        resources["limits"][pool.gpu_resource_name] = args.tensor_parallel_size
    return resources, claims


def vllm_container(engine: VllmEngine, role: str, resources: dict[str, Any]) -> dict[str, Any]:
    """The vLLM container, its probes sized to the estimated load."""
    port_name, port = engine_port(role)
    probe = {"httpGet": {"path": "/health", "port": port_name}, "periodSeconds": 10, "timeoutSeconds": 5}
    return {
        "name": "vllm",
        "image": engine.args.image,
        "args": vllm_args(engine, role),
        "ports": [{"name": port_name, "containerPort": port}],
        "env": vllm_env(engine, role),
        "resources": resources,
        # The startup budget covers the estimated weight load; liveness starts only after it.
        "startupProbe": {**probe, "failureThreshold": math.ceil(engine.cold_start.seconds / probe["periodSeconds"])},
        "readinessProbe": {**probe, "failureThreshold": 3},
        "livenessProbe": {**probe, "periodSeconds": 20, "failureThreshold": 3},
        # Exception: torch.compile, triton and the streamer write caches outside the mounted folders.
        "securityContext": {**restricted_container(read_only_root=False), "readOnlyRootFilesystem": False},
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}, {"name": "home", "mountPath": "/home/vllm"}],
    }


def pod_spec(engine: VllmEngine, role: str) -> dict[str, Any]:
    """The engine pod: placed on the pool, restricted, with shared memory for tensor parallelism."""
    args, pool = engine.args, engine.pool
    resources, claims = vllm_resources(engine)
    spec: dict[str, Any] = {
        "serviceAccountName": args.name,
        "nodeSelector": dict(pool.node_selector),
        "tolerations": list(pool.tolerations),
        "securityContext": restricted_pod(VLLM_UID),
        # In-flight requests finish before the node drains.
        "terminationGracePeriodSeconds": 120,
        "containers": [vllm_container(engine, role, resources)],
        "volumes": [
            # NCCL and PyTorch exchange tensors through shared memory between TP workers.
            {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": f"{shm_gib(args)}Gi"}},
            {"name": "home", "emptyDir": {}},
        ],
    }
    if role == "decode":
        spec["initContainers"] = [routing_sidecar()]
    if claims:
        spec["resourceClaims"] = [{"name": k, "resourceClaimTemplateName": v} for k, v in claims.items()]
    if role:
        spec["affinity"] = engine_anti_affinity(args.name)
    if engine.rdma is not None:
        spec = engine.rdma.apply(spec, containers=["vllm"])
    return spec


def role_labels(args: VllmServiceArgs, role: str) -> dict[str, str]:
    """The labels of one role's Deployment and its selector: the service's, plus the engine role if any."""
    return {**service_labels(args), **({ROLE_LABEL: role} if role else {})}


def rolling_update(engine: VllmEngine, role: str) -> dict[str, int]:
    """Surge when the pool has room for one more pod beside the service's own (a new pod loads before an old one goes:
    no downtime); else replace in place, one at a time (the plan warns how long a single replica is then down)."""
    args, pool = engine.args, engine.pool
    per_node = 1 if is_mig_resource(pool.gpu_resource_name) else max(1, pool.sku.gpus // args.tensor_parallel_size)
    roles = engine_roles(args)
    if args.autoscaling:
        roles = {role: args.autoscaling.min_replicas}
    nodes = sum(math.ceil(n / per_node) for n in roles.values())
    extra = math.ceil((roles[role] + 1) / per_node) - math.ceil(roles[role] / per_node)
    room = nodes + extra <= pool.max_nodes and not is_mig_resource(pool.gpu_resource_name)
    return {"maxSurge": 1, "maxUnavailable": 0} if room else {"maxSurge": 0, "maxUnavailable": 1}


def deployment(engine: VllmEngine, role: str, replicas: int, pod_labels: dict[str, str]) -> dict[str, Any]:
    """``metadata`` and ``spec`` of one role's Deployment; ``pod_labels`` are added to the pods only."""
    args = engine.args
    labels = role_labels(args, role)
    return {
        "metadata": {"name": args.name + (f"-{role}" if role else ""), "namespace": args.namespace, "labels": labels},
        "spec": {
            "replicas": (args.autoscaling.min_replicas if args.autoscaling else replicas),
            "selector": {"matchLabels": labels},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": rolling_update(engine, role)},
            "template": {"metadata": {"labels": {**labels, **pod_labels}}, "spec": pod_spec(engine, role)},
        },
    }


def service(args: VllmServiceArgs) -> dict[str, Any]:
    """The Service clients call; with disaggregation it fronts the decode pods' routing sidecars."""
    labels = service_labels(args)
    front_role = {ROLE_LABEL: "decode"} if args.disaggregation else {}
    return {
        "metadata": {"name": args.name, "namespace": args.namespace, "labels": labels},
        "spec": {"selector": {**labels, **front_role}, "ports": [{"name": "http", "port": VLLM_PORT, "targetPort": "http"}]},
    }


def disruption_budget(args: VllmServiceArgs) -> dict[str, Any]:
    """maxUnavailable 1 with AlwaysAllow never blocks a node drain, even for one replica."""
    labels = service_labels(args)
    return {
        "metadata": {"name": args.name, "namespace": args.namespace, "labels": labels},
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": labels}, "unhealthyPodEvictionPolicy": "AlwaysAllow"},
    }


def pod_monitor(args: VllmServiceArgs) -> dict[str, Any]:
    """Azure managed Prometheus scrapes ``azmonitoring.coreos.com`` PodMonitors (named ports only)."""
    labels = service_labels(args)
    return {
        "apiVersion": pins.api_version("PodMonitor"),
        "kind": "PodMonitor",
        "metadata": {"name": args.name, "namespace": args.namespace, "labels": labels},
        "spec": {
            "selector": {"matchLabels": labels},
            # Carries the instance label onto every series, so queries can tell services apart.
            "podTargetLabels": [INSTANCE_LABEL],
            "podMetricsEndpoints": [{"port": "http", "path": "/metrics", "interval": "30s"}],
            # Microsoft's recommended limits, so no series is dropped in ingestion.
            "labelLimit": 63,
            "labelNameLengthLimit": 511,
            "labelValueLengthLimit": 1023,
        },
    }


def keda_authentication(args: VllmServiceArgs, monitoring: ScalingMonitor) -> dict[str, Any]:
    """KEDA's TriggerAuthentication: it queries Prometheus under its own workload identity."""
    return {
        "apiVersion": pins.api_version("TriggerAuthentication"),
        "kind": "TriggerAuthentication",
        "metadata": {"name": f"{args.name}-prometheus", "namespace": args.namespace},
        "spec": {"podIdentity": {"provider": "azure-workload", "identityId": monitoring.keda_client_id}},
    }


def scaler_triggers(args: VllmServiceArgs, monitoring: ScalingMonitor) -> list[dict[str, Any]]:
    """Queued requests of this service's pods; with active hours, a cron window that holds replicas up."""
    scaling = args.autoscaling
    query = f'sum(vllm:num_requests_waiting{{namespace="{args.namespace}",app_kubernetes_io_instance="{args.name}"}})'
    triggers: list[dict] = [
        {
            "type": "prometheus",
            "metadata": {
                "serverAddress": monitoring.query_endpoint,
                "query": query,
                "threshold": str(scaling.waiting_requests_target),
            },
            "authenticationRef": {"name": f"{args.name}-prometheus"},
        }
    ]
    if scaling.active_hours:
        hours = scaling.active_hours
        metadata = {"timezone": hours.timezone, "start": hours.start, "end": hours.end}
        triggers.append({"type": "cron", "metadata": {**metadata, "desiredReplicas": str(max(1, scaling.min_replicas))}})
    return triggers


def scaled_object(args: VllmServiceArgs, monitoring: ScalingMonitor) -> dict[str, Any]:
    """KEDA's ScaledObject over the engine Deployment."""
    scaling = args.autoscaling
    return {
        "apiVersion": pins.api_version("ScaledObject"),
        "kind": "ScaledObject",
        "metadata": {"name": args.name, "namespace": args.namespace},
        "spec": {
            "scaleTargetRef": {"name": args.name},
            "minReplicaCount": scaling.min_replicas,
            "maxReplicaCount": scaling.max_replicas,
            # Idle time before scaling to zero (KEDA applies cooldownPeriod only to that step).
            "cooldownPeriod": 600,
            # Model loads take minutes: scale in slowly so a brief lull does not drop warm replicas.
            "advanced": {"horizontalPodAutoscalerConfig": {"behavior": {"scaleDown": {"stabilizationWindowSeconds": 600}}}},
            "triggers": scaler_triggers(args, monitoring),
        },
    }
