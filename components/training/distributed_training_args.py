"""What a DistributedTraining is given: its settings (``DistributedTrainingArgs``, plain values checked by
pydantic) and the components it runs on and writes to (small frozen dataclasses). No Pulumi import, so the
stack config and the planner read these types without loading the SDKs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import Field

from .._base import StrictModel
from ..core import pins
from ..core.names import DNS_LABEL

if TYPE_CHECKING:
    from ..azure.gpu_node_pool import GpuNodePool
    from ..azure.model_store import ModelStore
    from ..azure.workload_identity import WorkloadIdentity
    from ..gpu.dra_device_classes import DraDeviceClasses
    from ..gpu.rdma_network import RdmaNetwork

PLATFORM_POOL_SELECTOR = {"aks-gpu-inference/pool": "platform"}
"""The node label ``AksCluster`` puts on its CPU platform pool, whatever the pool is called."""


class KubeRayOperatorArgs(StrictModel):
    """The KubeRay operator: chart, image and the namespace it runs in."""

    namespace: str = Field("kuberay-system", pattern=DNS_LABEL.pattern)
    """Namespace of the operator, labelled Pod Security ``restricted`` (the chart's pod passes it). Default
    ``kuberay-system``. It must not be the RDMA namespace: that one is ``privileged`` for the NICs."""

    create_namespace: bool = True
    """Create the namespace. Default True; False when another part of the stack owns it."""

    chart_version: str = Field(pins.chart("kuberay-operator").version, pattern=r"^\d+\.\d+\.\d+$")
    """``kuberay-operator`` chart version from ``https://ray-project.github.io/kuberay-helm/``, exact (no
    range). Default: the pins table's, the release whose archive and CRDs ``shared/upstream`` holds; ``aks-gpu plan``
    renders any version it can find or ``--pull``."""

    image_tag: str = Field(pins.image_pin("kuberay-operator").tag, pattern=r"^v\d+\.\d+\.\d+$")
    """Tag of ``quay.io/kuberay/operator``. Default: the pinned image, the chart's own (values.yaml ``image.tag``)."""


class HeadArgs(StrictModel):
    """The Ray head: GCS, dashboard and the job driver, CPU only."""

    cpu: int = Field(2, ge=1, le=64)
    """CPU cores requested. Default 2: the head schedules no Ray work (``num-cpus: 0``); it runs the GCS,
    the dashboard and the training driver, which only coordinates."""

    memory_gib: int = Field(8, ge=2, le=256)
    """Memory request and limit in GiB. Default 8, which fits the default platform pool's
    ``Standard_D4ds_v5`` (16 GiB) beside its other pods."""

    node_selector: dict[str, str] = Field(default_factory=lambda: dict(PLATFORM_POOL_SELECTOR))
    """Where the head, the job submitter and the operator run. Default ``aks-gpu-inference/pool: platform``,
    the CPU platform pool ``AksCluster`` creates: never a Spot node, since losing the head loses the cluster
    (ray-project/kuberay#2153). For a cluster without that pool, select another untainted on-demand pool."""


class DistributedTrainingArgs(StrictModel):
    """One distributed training run as a KubeRay ``RayJob``. Plain values: they decide names, counts and cost."""

    name: str = Field(pattern=r"^[a-z]([-a-z0-9]{0,45}[a-z0-9])?$")
    """RayJob name: a DNS-1035 label of at most 47 characters (KubeRay's ``MaxRayJobNameLength``). Required.
    It is also the run's stable name (``TRAINING_RUN_NAME``): a retry or a new RayJob of the same name
    resumes from the checkpoints under it."""

    entrypoint: str = Field(min_length=1)
    """The command the job runs on the head, e.g. ``python -m train --config /app/llama.yaml``. Required.
    The program should build ``RunConfig(**checkpoint_storage.run_config_kwargs(), ...)`` (the run's name, its
    ``storage_path`` and the adlfs ``storage_filesystem`` reaching the model store with the workload identity: the
    storage path alone is no URI Ray can resolve), report a checkpoint every ``$CHECKPOINT_INTERVAL_SECONDS`` and set
    ``FailureConfig(max_failures=...)`` so Ray Train replaces evicted workers; the environment section of the
    component's docstring lists every variable."""

    image: str
    """Training image for the head and the workers, pinned to a version tag or digest. Required: base Ray
    images carry no ML libraries, so this is normally your image built FROM ``rayproject/ray:<version>-py311-cu128``
    with torch, adlfs, azure-identity and this package (``pip install --no-deps``, for ``checkpoint_storage``). The
    qualification gates 4 and 6 run their NCCL test in it, so it must also carry ``torchrun``."""

    ray_version: str | None = Field(None, pattern=r"^\d+\.\d+\.\d+$")
    """Ray version inside ``image`` (``rayClusterSpec.rayVersion``). Default None: read from the tag of a
    ``rayproject/ray*`` image (``2.52.0-py311-cu128`` -> ``2.52.0``); required for any other image."""

    runtime_env: dict[str, Any] = Field(default_factory=dict)
    """Ray runtime environment of the job (becomes ``runtimeEnvYAML``), e.g. ``{"env_vars": {...},
    "working_dir": "https://.../code.zip"}``. Default none: everything comes from the image. Paths in
    ``working_dir``/``py_modules`` must be remote URIs (the submitter pod has no local copy), and
    ``env_vars`` must not override the NCCL, UCX or checkpoint variables the component sets."""

    workers: int = Field(ge=1, le=1000)
    """Worker pods, one per node of the RDMA pool with all its GPUs and NICs (the data-parallel world is
    ``workers x GPUs per node``). Required; at most the pool's node count."""

    worker_cpu: int | None = Field(None, ge=1)
    """CPU cores each worker requests. Default None: 85% of the VM size's vCPUs, leaving the rest to the
    kubelet and the node agents (DRANET, device plugin or DRA driver, monitoring)."""

    worker_memory_gib: int | None = Field(None, ge=8)
    """Memory request and limit of each worker in GiB. Default None: 80% of the VM size's RAM, the
    same headroom reasoning."""

    shm_size_gib: int = Field(64, ge=1, le=1024)
    """Size of the memory-backed ``/dev/shm`` of each worker in GiB. Default 64: NCCL's shared-memory
    segments, PyTorch DataLoader workers and Ray's object store (given half of it, ``object-store-memory``)
    live there. Without it KubeRay sizes ``/dev/shm`` to the whole memory limit, all of it chargeable to
    the pod; NCCL fails to initialise when ``/dev/shm`` is too small (NVIDIA NCCL troubleshooting guide)."""

    head: HeadArgs = Field(default_factory=HeadArgs)
    """The head's resources and where the CPU-side pods run. Default: 2 CPUs, 8 GiB, the platform pool."""

    operator: KubeRayOperatorArgs = Field(default_factory=KubeRayOperatorArgs)
    """The KubeRay operator. Default: chart 1.7.0 in ``kuberay-system``, watching only the RDMA namespace."""

    checkpoint_prefix: str | None = None
    """Blob path in the model store under which the run's checkpoints go. Default None:
    ``checkpoints/<name>``. The workload identity may write, and delete, only below it."""

    checkpoint_interval_minutes: int = Field(30, ge=1, le=1440)
    """How often the program should checkpoint (``CHECKPOINT_INTERVAL_SECONDS``). Default 30 minutes: Azure
    gives a Spot VM about 30 seconds' notice, too little to write a checkpoint, so the interval bounds the
    work an eviction loses (30 minutes of every node)."""

    backoff_limit: int = Field(3, ge=0, le=100)
    """Whole-job retries (RayJob ``backoffLimit``); each retry is a new Ray cluster that resumes from the
    latest checkpoint. Default 3. Worker loss inside a run is Ray Train's ``FailureConfig``, not this. KubeRay retries
    neither an attempt that ran out of ``active_deadline_hours`` nor one whose head stayed unreachable for 300 s
    (rayjob_controller.go ``checkBackoffLimitAndUpdateStatusIfNeeded``)."""

    hours: float = Field(gt=0, le=24 * 90)
    """Expected run time in hours, for the cost estimate and the default deadline. Required."""

    active_deadline_hours: float | None = Field(None, gt=0, le=24 * 180)
    """Hard stop for each attempt (``activeDeadlineSeconds``), not for the whole job: KubeRay 1.7.0 counts it from the
    attempt's start and starts the clock again on every retry (rayjob_controller.go ``initRayJobStatusIfNeed``). An
    attempt that hits it fails the job for good (no retry), so the job ends within ``backoff_limit + 1`` attempts of at
    most this long each (``max_job_hours``), which the plan prints with its cost. Default None: 1.5 x ``hours``, room to
    resume after evictions without leaving a stuck attempt burning GPU hours."""

    pre_running_deadline_minutes: int = Field(60, ge=1, le=24 * 60)
    """How long each attempt may take to reach Running, i.e. its Ray cluster ready and the job submitted
    (``preRunningDeadlineSeconds``): a cluster that cannot get its nodes (no Spot capacity, a pull that never ends)
    fails the attempt with ``PreRunningDeadlineExceeded``, which KubeRay retries, using one of ``backoff_limit``.
    Default 60 minutes: the pool scales from zero (node creation and the GPU, RDMA and image set-up take tens of
    minutes on ND sizes), with room to spare; shorter than ``active_deadline_hours``."""

    spot: bool = False
    """The workers run on a Spot pool: they tolerate ``kubernetes.azure.com/scalesetpriority=spot:NoSchedule``.
    Default False. Must match the pool, so that evictable capacity is a decision written down, and needs
    ``backoff_limit`` of at least 1."""

    @property
    def deadline_seconds(self) -> int:
        """``activeDeadlineSeconds``: the explicit deadline, else 1.5 x ``hours``."""
        return math.ceil((self.active_deadline_hours or 1.5 * self.hours) * 3600)

    @property
    def max_job_hours(self) -> float:
        """The longest the job can run: ``backoff_limit + 1`` attempts of ``deadline_seconds`` each (an attempt that
        fails early for a retryable reason just before its deadline is the worst case), plus nothing for teardown."""
        return (self.backoff_limit + 1) * self.deadline_seconds / 3600

    @property
    def checkpoint_path(self) -> str:
        """The blob prefix of the run's checkpoints inside the store's container."""
        return self.checkpoint_prefix or f"checkpoints/{self.name}"


@dataclass(frozen=True)
class TrainingWorkers:
    """Where the workers run: an RDMA pool of an RdmaNetwork, optionally with DRA GPU claims."""

    pool: GpuNodePool
    """The RDMA pool (``rdma: true``, an RDMA-capable size) whose nodes the workers fill. Required."""
    network: RdmaNetwork
    """The RdmaNetwork serving ``pool``; the RayJob runs in its namespace, where the NIC claim templates are. Required."""
    gpu_claims: DraDeviceClasses | None = None
    """DraDeviceClasses with the pool's full-node GPU template, when GPUs come from DRA. Default None:
    ``nvidia.com/gpu`` from the device plugin."""
    spot_max_price: float | None = None
    """The pool's ``GpuNodePoolArgs.spot_max_price``, for the Spot line of the cost estimate (``GpuNodePool``
    does not expose it). Default None: unknown; -1 means "up to the on-demand price", also unknown."""


@dataclass(frozen=True)
class CheckpointStore:
    """Where checkpoints go: the model store, written through a workload identity (no keys)."""

    store: ModelStore
    """The ModelStore whose container holds the checkpoints. Required."""
    identity: WorkloadIdentity
    """The workload identity the head and workers run as: its namespace must be the RDMA network's, its
    service account is created by the component, and it gets write access below the checkpoint prefix. Required."""
