"""The objects a DistributedTraining deploys, as plain dicts: the KubeRay operator's chart values and the
``RayJob`` (head, GPU workers on the RDMA pool, job submitter). No Pulumi import: every name, count and
size is decided here, from the args and the facts of the pool, the network's pod contract and the store.

KubeRay 1.7.0 facts relied on (ray-project/kuberay@v1.7.0, ray-operator/controllers/ray/): the Ray
container is ``containers[0]`` (utils/constant.go ``RayContainerIndex``); ``num-cpus``/``num-gpus`` come
from the container's CPU and GPU limits (falling back to the CPU request) unless ``rayStartParams`` set
them (common/pod.go ``generateRayStartCommand``); a ``/dev/shm`` already mounted is kept, otherwise one the
size of the memory limit is added (common/pod.go ``addEmptyDir``); a submitter container without a
command gets ``ray job submit`` (rayjob_controller.go ``configureSubmitterContainer``); ``activeDeadlineSeconds`` and
``preRunningDeadlineSeconds`` count from the attempt's ``status.startTime``, which every retry sets anew
(rayjob_controller.go ``initRayJobStatusIfNeed``, ``checkActiveDeadlineAndUpdateStatusIfNeeded``,
``checkPreRunningDeadlineAndUpdateStatusIfNeeded``); the operator creates no PodDisruptionBudget (none under
ray-operator/); a RayJob whose dashboard cannot be reached for ``RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS`` (300 by default,
utils/constant.go) fails with ``JobStatusCheckTimeoutExceeded`` and is not retried.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import yaml

from ..core import pins
from ..core.images import parse
from ..core.labels import SPOT_LABEL, SPOT_TAINT
from ..core.security import restricted_container, restricted_pod
from ..gpu.pod_contract import NCCL_IB_ONLY
from .checkpoint_storage import CHECKPOINT_ENV

if TYPE_CHECKING:
    from ..core.catalog import GpuSku
    from ..gpu.pod_contract import RdmaPodSpec
    from ..gpu.pools import GpuPool
    from .distributed_training_args import DistributedTrainingArgs

OPERATOR_CHART = pins.chart("kuberay-operator").name
OPERATOR_REPO = pins.chart("kuberay-operator").repository
"""KubeRay's Helm repository (kuberay helm-chart/kuberay-operator/README.md); no OCI copy is published."""
OPERATOR_IMAGE = pins.image_pin("kuberay-operator").name
OPERATOR_UID = 65532
"""The operator image's user: ``USER 65532:65532`` on distroless ``nonroot`` (ray-operator/Dockerfile)."""
RAY_UID = 1000
"""The ``ray`` user of the rayproject images."""
RAY_GID = 100
"""The ``ray`` user's group, ``users``, which owns ``/home/ray`` where the images install Ray and Python
(ray-project/ray docker/base-deps/Dockerfile: ``ARG RAY_GID=100``, ``useradd ... -d /home/ray ray --uid $RAY_UID --gid
$RAY_GID``, ``ENV PATH "/home/ray/anaconda3/bin:$PATH..."``, no chmod of /home/ray). ``useradd -m`` makes the home
``HOME_MODE`` 0750 on Ubuntu 21.04 and later, the images' base: root with every capability dropped is then "other" to
it and cannot reach ``ray`` or ``python``. A process that also holds this group can. Read at a later commit of the
Dockerfile than 2.52.0's (which could not be had here) and not checked on the image itself; if the 2.52.0 home is 0755
the group changes nothing."""
HEAD_PROTECTION = {"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}
"""On the head pod: the cluster autoscaler does not scale down the node it runs on (kubernetes/autoscaler
cluster-autoscaler/simulator/drainability/rules/notsafetoevict). Node upgrades and drains go through the eviction API
instead, which the head's PodDisruptionBudget answers."""

TRAINING_LABEL = "aks-gpu-inference/training"
"""Label with the job's name on the RayJob and its pods."""
ROLE_LABEL = "aks-gpu-inference/ray-role"
"""Label telling head, worker and submitter pods apart (the workers' anti-affinity selects on it)."""
WORKER_CONTAINER = "ray-worker"
WORKER_GROUP = "gpu"

HOME = "/tmp/home"
"""The workers' HOME: an emptyDir, since root without CAP_DAC_OVERRIDE cannot write the image's /home/ray (its group
may only read and enter it)."""
FINISHED_TTL_SECONDS = 300
"""How long the finished job's Ray cluster stays for its logs before KubeRay deletes it and frees the GPUs."""
SUBMITTER_RESOURCES = {"requests": {"cpu": "500m", "memory": "200Mi"}, "limits": {"cpu": "1", "memory": "1Gi"}}
"""KubeRay's own defaults for the submitter (common/job.go ``GetDefaultSubmitterContainer``)."""

_RAY_IMAGE = re.compile(r"^rayproject/ray(-ml|-llm)?$")
_RAY_TAG = re.compile(r"^:(\d+\.\d+\.\d+)(?:[.-]|$)")


def image_ray_version(image: str) -> str | None:
    """The Ray version a ``rayproject/ray*`` image's tag names (``2.52.0-py311-cu128`` -> ``2.52.0``), else None."""
    ref = parse(image)
    match = _RAY_TAG.match(ref.reference)
    return match[1] if ref.registry == "docker.io" and _RAY_IMAGE.match(ref.repository) and match else None


def worker_cpu(args: DistributedTrainingArgs, sku: GpuSku) -> int:
    """CPU cores per worker: the explicit value, else 85% of the size's vCPUs."""
    return args.worker_cpu or int(sku.vcpus * 0.85)


def worker_memory_gib(args: DistributedTrainingArgs, sku: GpuSku) -> int:
    """Memory per worker in GiB: the explicit value, else 80% of the size's RAM."""
    return args.worker_memory_gib or int(sku.ram_gib * 0.8)


def operator_values(args: DistributedTrainingArgs, watch_namespace: str) -> dict[str, Any]:
    """Values for kuberay-operator 1.7.0 (ray-project/kuberay@v1.7.0:helm-chart/kuberay-operator): namespaced RBAC
    and a watch on the one namespace the job runs in, the pinned image, restricted pod security, the CPU pool."""
    return {
        "image": {"repository": OPERATOR_IMAGE, "tag": args.operator.image_tag, "pullPolicy": "IfNotPresent"},
        # Roles instead of a ClusterRole, and --watch-namespace: the operator sees only the job's namespace.
        "singleNamespaceInstall": True,
        "watchNamespace": [watch_namespace],
        # The chart's container securityContext already is restricted; the pod side is {} by default.
        "podSecurityContext": restricted_pod(OPERATOR_UID, fs_group=False),
        # The chart sets limits only (cpu 100m, memory 512Mi); a CPU limit throttles reconciles.
        "resources": {"requests": {"cpu": "100m", "memory": "512Mi"}, "limits": {"memory": "512Mi"}},
        "nodeSelector": dict(args.head.node_selector),
    }


@dataclass(frozen=True)
class TrainingPlan:
    """What the RayJob is built from, resolved once before anything is created."""

    args: DistributedTrainingArgs
    namespace: str
    """The RDMA network's namespace, where the NIC claim templates live."""
    pool: GpuPool
    contract: RdmaPodSpec
    """``RdmaNetwork.pod_spec`` for the pool (with the DRA GPU claim when GPUs come from DRA)."""
    service_account: str
    pod_labels: dict[str, str]
    """The workload identity's pod labels."""
    env: dict[str, str]
    """``training_env``: the run name and where and how often to checkpoint."""

    @property
    def dra_gpus(self) -> bool:
        return "gpus" in self.contract.claims


def training_env(args: DistributedTrainingArgs, account: str, container: str, uri: str) -> dict[str, str]:
    """The environment of the head and workers (``checkpoint_storage.CHECKPOINT_ENV``): the stable run name, the
    checkpoint location in three forms (``az://`` URI; ``<container>/<prefix>``, the ``storage_path`` that goes with
    the adlfs filesystem ``checkpoint_storage.run_config_kwargs`` builds; the storage account) and the interval."""
    values = (args.name, uri, f"{container}/{args.checkpoint_path}", str(args.checkpoint_interval_minutes * 60), account)
    return dict(zip(CHECKPOINT_ENV, values, strict=True))


def _env(values: dict[str, str]) -> list[dict[str, str]]:
    return [{"name": k, "value": v} for k, v in values.items()]


def _labels(plan: TrainingPlan, role: str) -> dict[str, str]:
    return {TRAINING_LABEL: plan.args.name, ROLE_LABEL: role}


def head_template(plan: TrainingPlan) -> dict[str, Any]:
    """The head: restricted, on the CPU pool, running as the federated service account (the driver
    writes the run's state to the checkpoint location too)."""
    head = plan.args.head
    memory = f"{head.memory_gib}Gi"
    container = {
        "name": "ray-head",
        "image": plan.args.image,
        "env": _env(plan.env),
        "resources": {"requests": {"cpu": str(head.cpu), "memory": memory}, "limits": {"memory": memory}},
        # Ray writes its session under /tmp/ray and caches under HOME: no read-only root filesystem.
        "securityContext": restricted_container(read_only_root=False),
    }
    spec = {
        "serviceAccountName": plan.service_account,
        "nodeSelector": dict(head.node_selector),
        "securityContext": restricted_pod(RAY_UID),
        "containers": [container],
    }
    metadata = {"labels": {**_labels(plan, "head"), **plan.pod_labels}, "annotations": dict(HEAD_PROTECTION)}
    return {"metadata": metadata, "spec": spec}


def head_disruption_budget(plan: TrainingPlan) -> dict[str, Any]:
    """A PodDisruptionBudget that lets no voluntary eviction (a node drain, an upgrade) take the head: KubeRay makes
    none, and a head unreachable for 300 s ends the RayJob for good. Once the job ends, the head is gone and the budget
    selects nothing. An AKS upgrade that must drain the head's node waits ``drainTimeoutInMinutes`` for it, then fails."""
    return {
        "metadata": {"name": f"{plan.args.name}-head", "namespace": plan.namespace, "labels": {TRAINING_LABEL: plan.args.name}},
        # An integer minAvailable: the only form the disruption controller computes for pods of a controller without
        # a scale subresource, such as KubeRay's RayCluster (Kubernetes "Specifying a Disruption Budget").
        "spec": {"minAvailable": 1, "selector": {"matchLabels": _labels(plan, "head")}},
    }


def _worker_resources(plan: TrainingPlan) -> dict[str, Any]:
    args, pool = plan.args, plan.pool
    memory = f"{worker_memory_gib(args, pool.sku)}Gi"
    requests: dict[str, Any] = {"cpu": str(worker_cpu(args, pool.sku)), "memory": memory}
    limits: dict[str, Any] = {"memory": memory}
    if not plan.dra_gpus:
        requests[pool.gpu_resource_name] = limits[pool.gpu_resource_name] = pool.gpus_per_node
    return {"requests": requests, "limits": limits}


def worker_template(plan: TrainingPlan) -> dict[str, Any]:
    """A worker: one per node with all its GPUs and NICs, through the network's RDMA contract plus ``NCCL_NET=IB``
    (fail rather than fall back to sockets), a sized ``/dev/shm``, and the Spot toleration for a Spot run."""
    args = plan.args
    container = {
        "name": WORKER_CONTAINER,
        "image": args.image,
        "env": _env({**plan.env, **NCCL_IB_ONLY, "HOME": HOME}),
        "resources": _worker_resources(plan),
        # Root, with every capability dropped but the contract's IPC_LOCK: Kubernetes grants added
        # capabilities to non-root processes only through ambient capabilities, which it does not set
        # (kubernetes/kubernetes#56374), so a non-root NCCL could not pin memory past RLIMIT_MEMLOCK.
        "securityContext": {"runAsUser": 0, "runAsGroup": 0, "runAsNonRoot": False},
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}, {"name": "home", "mountPath": HOME}],
    }
    term = {"labelSelector": {"matchLabels": _labels(plan, "worker")}, "topologyKey": "kubernetes.io/hostname"}
    spec: dict[str, Any] = {
        "serviceAccountName": plan.service_account,
        # Root reaches the image's Ray and Python under /home/ray through the group that owns it (RAY_GID).
        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}, "supplementalGroups": [RAY_GID]},
        "containers": [container],
        "volumes": [
            {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": f"{args.shm_size_gib}Gi"}},
            {"name": "home", "emptyDir": {}},
        ],
        # The full-node NIC claim already allows one worker per node; say so to the scheduler too.
        "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}},
    }
    if args.spot:
        key, _, rest = SPOT_TAINT.partition("=")
        value, _, effect = rest.partition(":")
        spec["tolerations"] = [{"key": key, "operator": "Equal", "value": value, "effect": effect}]
    spec = plan.contract.apply(spec, containers=[WORKER_CONTAINER])
    return {"metadata": {"labels": {**_labels(plan, "worker"), **plan.pod_labels}}, "spec": spec}


def worker_group(plan: TrainingPlan) -> dict[str, Any]:
    """The one worker group: exactly ``workers`` replicas (no autoscaling), Ray's object store in half of ``/dev/shm``."""
    args = plan.args
    params = {"object-store-memory": str(args.shm_size_gib * 2**30 // 2)}
    if plan.dra_gpus:
        # KubeRay counts GPUs from resource limits only; DRA-claimed GPUs must be declared.
        params["num-gpus"] = str(plan.pool.gpus_per_node)
    return {
        "groupName": WORKER_GROUP,
        "replicas": args.workers,
        "minReplicas": args.workers,
        "maxReplicas": args.workers,
        "numOfHosts": 1,
        "rayStartParams": params,
        "template": worker_template(plan),
    }


def submitter_template(plan: TrainingPlan) -> dict[str, Any]:
    """The pod that runs ``ray job submit``: KubeRay's defaults, restricted, on the CPU pool."""
    container = {
        "name": "ray-job-submitter",
        "image": plan.args.image,
        "resources": SUBMITTER_RESOURCES,
        "securityContext": restricted_container(read_only_root=False),
    }
    spec = {
        "restartPolicy": "Never",
        "nodeSelector": dict(plan.args.head.node_selector),
        "securityContext": restricted_pod(RAY_UID),
        "containers": [container],
    }
    return {"metadata": {"labels": _labels(plan, "submitter")}, "spec": spec}


def ray_job(plan: TrainingPlan, ray_version: str) -> dict[str, Any]:
    """The RayJob: a fresh Ray cluster per attempt, shut down when the job ends."""
    args = plan.args
    spec: dict[str, Any] = {
        "entrypoint": args.entrypoint,
        "submissionMode": "K8sJobMode",
        "backoffLimit": args.backoff_limit,
        "activeDeadlineSeconds": args.deadline_seconds,
        "preRunningDeadlineSeconds": args.pre_running_deadline_minutes * 60,
        "shutdownAfterJobFinishes": True,
        "ttlSecondsAfterFinished": FINISHED_TTL_SECONDS,
        "rayClusterSpec": {
            "rayVersion": ray_version,
            "enableInTreeAutoscaling": False,
            # num-cpus 0: no Ray task or actor lands on the head, which must survive the run.
            "headGroupSpec": {"rayStartParams": {"num-cpus": "0"}, "template": head_template(plan)},
            "workerGroupSpecs": [worker_group(plan)],
        },
        "submitterPodTemplate": submitter_template(plan),
    }
    if args.runtime_env:
        spec["runtimeEnvYAML"] = yaml.safe_dump(args.runtime_env, sort_keys=True)
    return {
        "apiVersion": pins.api_version("RayJob"),
        "kind": "RayJob",
        "metadata": {"name": args.name, "namespace": plan.namespace, "labels": {TRAINING_LABEL: args.name}},
        "spec": spec,
    }


def is_spot_pool(pool: GpuPool) -> bool:
    """Whether the pool's nodes carry the Spot taint (its tolerations include it)."""
    return any(t.get("key") == SPOT_LABEL[0] for t in pool.tolerations)
