"""Every reason a DistributedTraining cannot run as asked, found before anything is created: the pool, the
image and Ray version, the workers' size, Spot, the schedule, the runtime environment, the checkpoints and
where the CPU side runs. Pure functions: the inputs are the args and the plain facts of the pool, network,
DRA claims, store and identity (the Protocols below), so tests pass stand-ins."""

from __future__ import annotations

from typing import Any, Protocol

from ..azure.model_store import blob_path_problem
from ..core.catalog import GpuSku
from ..core.errors import FieldProblem
from ..core.images import pin_problem
from ..core.labels import AGENTPOOL_LABEL, NVIDIA_GPU, SPOT_LABEL, is_mig_resource
from ..gpu.pod_contract import NCCL_IB_ONLY, RDMA_ENV, full_node_gpu_problems
from ..gpu.pools import GpuClaimTemplates, GpuPool, NicNetwork
from .checkpoint_storage import CHECKPOINT_ENV
from .distributed_training_args import DistributedTrainingArgs
from .ray_manifests import image_ray_version, is_spot_pool, worker_cpu, worker_memory_gib

MIN_RAY_VERSION = (2, 38, 0)
"""KubeRay's compatibility note: "Don't use Ray versions between 2.11.0 and 2.37.0"; KubeRay 1.3 and later
support Ray 2.38.0 and later (docs.ray.io, cluster/kubernetes/user-guides/upgrade-guide, "KubeRay / Ray compatibility")."""
RESERVED_ENV = frozenset({*RDMA_ENV, *NCCL_IB_ONLY, *CHECKPOINT_ENV})
"""Variables ``runtime_env.env_vars`` must not override: the RDMA contract's, NCCL's and the checkpoint ones."""


class Workers(Protocol):
    """What the checks read from ``TrainingWorkers``."""

    pool: GpuPool
    network: NicNetwork
    gpu_claims: GpuClaimTemplates | None


class Store(Protocol):
    account_name: str
    container_name: str


class Identity(Protocol):
    namespace: str
    service_account: str


class Checkpoints(Protocol):
    """What the checks read from ``CheckpointStore``."""

    store: Store
    identity: Identity


def ray_version(args: DistributedTrainingArgs) -> str | None:
    """The Ray version of the job: ``args.ray_version``, else the one a ``rayproject/ray*`` image's tag names."""
    return args.ray_version or image_ray_version(args.image)


def distributed_training_problems(
    args: DistributedTrainingArgs, workers: Workers, checkpoints: Checkpoints
) -> list[FieldProblem]:
    """Every reason the job cannot run as ``args`` ask on ``workers`` writing to ``checkpoints``; empty if none."""
    return [
        *_pool_problems(args, workers),
        *_image_problems(args),
        *_size_problems(args, workers.pool.sku),
        *_spot_problems(args, workers.pool),
        *_schedule_problems(args),
        *_runtime_env_problems(args.runtime_env),
        *_checkpoint_problems(args, workers.network, checkpoints),
        *_placement_problems(args, workers),
    ]


def _pool_problems(args: DistributedTrainingArgs, workers: Workers) -> list[FieldProblem]:
    pool, network, claims = workers.pool, workers.network, workers.gpu_claims
    name, problems = pool.pool_name, []
    if not pool.rdma_capable:
        why = f"{pool.sku.name} is not RDMA-capable: multi-node training needs InfiniBand (an ND size with 'r', e.g. Standard_ND96isr_H100_v5)"
        problems.append(FieldProblem("workers.pool", name, why))
    elif name not in network.nics:
        problems.append(
            FieldProblem("workers.pool", name, f"not a pool of the RDMA network; its pools: {', '.join(network.nics)}")
        )
    if pool.gpu_resource_name != NVIDIA_GPU:
        what = "MIG slices" if is_mig_resource(pool.gpu_resource_name) else pool.gpu_resource_name
        why = f"workers take whole NVIDIA GPUs (NCCL over CUDA); this pool advertises {what}"
        problems.append(FieldProblem("workers.pool", name, why))
    if args.workers > pool.max_nodes:
        why = f"one worker per node: pool {name!r} has at most {pool.max_nodes} nodes (its count, or max_count)"
        problems.append(FieldProblem("workers", args.workers, why))
    return problems + full_node_gpu_problems("workers.gpu_claims", claims, name, network.namespace)


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def _image_problems(args: DistributedTrainingArgs) -> list[FieldProblem]:
    problems = []
    pin = pin_problem(args.image)
    if pin:
        why = f"{pin}; pin a version tag or digest, so a retry runs the same code as the first attempt"
        problems.append(FieldProblem("image", args.image, why))
    tagged, version = image_ray_version(args.image), ray_version(args)
    if version is None:
        why = "the image is not a rayproject/ray* image with a version tag: give the Ray version it contains"
        problems.append(FieldProblem("ray_version", None, why))
    elif tagged and tagged != version:
        problems.append(FieldProblem("ray_version", version, f"the image's tag says Ray {tagged}"))
    elif _version(version) < MIN_RAY_VERSION:
        why = "KubeRay supports Ray 2.38.0 and later (and warns against 2.11.0 to 2.37.0); use a newer image"
        problems.append(FieldProblem("ray_version", version, why))
    return problems


def _size_problems(args: DistributedTrainingArgs, sku: GpuSku) -> list[FieldProblem]:
    cpu, memory, problems = worker_cpu(args, sku), worker_memory_gib(args, sku), []
    if cpu > sku.vcpus:
        problems.append(FieldProblem("worker_cpu", cpu, f"{sku.name} has {sku.vcpus} vCPUs"))
    if memory > sku.ram_gib:
        problems.append(FieldProblem("worker_memory_gib", memory, f"{sku.name} has {sku.ram_gib:g} GiB of RAM"))
    if args.shm_size_gib >= memory:
        why = f"/dev/shm is memory charged to the pod: keep it below the worker's memory ({memory} GiB)"
        problems.append(FieldProblem("shm_size_gib", args.shm_size_gib, why))
    return problems


def _spot_problems(args: DistributedTrainingArgs, pool: GpuPool) -> list[FieldProblem]:
    spot_pool, problems = is_spot_pool(pool), []
    if args.spot and not spot_pool:
        why = f"pool {pool.pool_name!r} is not a Spot pool; drop spot, or run on a pool with spot: true"
        problems.append(FieldProblem("spot", True, why))
    if spot_pool and not args.spot:
        why = f"pool {pool.pool_name!r} is a Spot pool: set spot: true to accept evictions (and checkpoint for them)"
        problems.append(FieldProblem("spot", False, why))
    if args.spot and args.backoff_limit < 1:
        why = "on Spot, one eviction that fails the driver ends the job: allow at least one retry from the last checkpoint"
        problems.append(FieldProblem("backoff_limit", args.backoff_limit, why))
    return problems


def _schedule_problems(args: DistributedTrainingArgs) -> list[FieldProblem]:
    problems = []
    if args.active_deadline_hours is not None and args.active_deadline_hours < args.hours:
        why = f"the job would be stopped before its expected {args.hours:g} hours"
        problems.append(FieldProblem("active_deadline_hours", args.active_deadline_hours, why))
    if args.pre_running_deadline_minutes * 60 >= args.deadline_seconds:
        why = f"not shorter than the attempt's whole deadline ({args.deadline_seconds // 60} minutes): it would never apply"
        problems.append(FieldProblem("pre_running_deadline_minutes", args.pre_running_deadline_minutes, why))
    if args.checkpoint_interval_minutes > args.hours * 60:
        why = f"longer than the whole run ({args.hours:g} hours): no checkpoint would be written before it ends"
        problems.append(FieldProblem("checkpoint_interval_minutes", args.checkpoint_interval_minutes, why))
    return problems


def _runtime_env_problems(runtime_env: dict[str, Any]) -> list[FieldProblem]:
    problems = []
    env_vars = runtime_env.get("env_vars", {})
    if not isinstance(env_vars, dict):
        problems.append(FieldProblem("runtime_env.env_vars", env_vars, "expected a mapping of names to values"))
    elif reserved := sorted(set(env_vars) & RESERVED_ENV):
        why = "set by the component (RDMA contract, NCCL over InfiniBand, checkpoints); a runtime_env value would override it"
        problems.append(FieldProblem("runtime_env.env_vars", reserved, why))
    uploads = [("working_dir", runtime_env.get("working_dir"))]
    modules = runtime_env.get("py_modules")
    uploads += [(f"py_modules[{i}]", m) for i, m in enumerate(modules if isinstance(modules, list) else [])]
    for where, value in uploads:
        if isinstance(value, str) and "://" not in value:
            why = "the submitter pod has no local files: give a remote URI (https://, s3://, gs://, ...)"
            problems.append(FieldProblem(f"runtime_env.{where}", value, why))
    return problems


def _checkpoint_problems(args: DistributedTrainingArgs, network: NicNetwork, checkpoints: Checkpoints) -> list[FieldProblem]:
    identity, path, problems = checkpoints.identity, args.checkpoint_path, []
    if identity.namespace != network.namespace:
        why = (
            f"the job's pods run in the RDMA namespace {network.namespace!r}: federate the identity with a service account there"
        )
        problems.append(FieldProblem("checkpoints.identity.namespace", identity.namespace, why))
    problem = blob_path_problem(path) or (
        "must not contain quotes (it goes into a role-assignment condition)" if "'" in path else None
    )
    if problem:
        problems.append(FieldProblem("checkpoint_prefix", path, problem))
    return problems


def _placement_problems(args: DistributedTrainingArgs, workers: Workers) -> list[FieldProblem]:
    selector, pool, problems = args.head.node_selector, workers.pool, []
    if args.operator.namespace == workers.network.namespace:
        why = "the RDMA namespace is Pod Security privileged (for the NICs); the operator belongs in a restricted one of its own"
        problems.append(FieldProblem("operator.namespace", args.operator.namespace, why))
    if selector.get(AGENTPOOL_LABEL) == pool.pool_name:
        why = f"selects the GPU pool {pool.pool_name!r}: the head, submitter and operator run on a CPU pool"
        problems.append(FieldProblem("head.node_selector", selector, why))
    if selector.get(SPOT_LABEL[0]) == SPOT_LABEL[1]:
        why = "selects Spot nodes: an evicted head takes the whole Ray cluster with it"
        problems.append(FieldProblem("head.node_selector", selector, why))
    return problems
