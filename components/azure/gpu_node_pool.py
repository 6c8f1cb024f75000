"""GpuNodePool: one AKS user agent pool of a catalog GPU size, tainted, labelled and ready for
the serving components, with every AKS rule checked before the pool is created."""

from __future__ import annotations

import re
from typing import Literal

import pulumi
from pulumi_azure_native import containerservice
from pydantic import Field, field_validator, model_validator

from .._base import PACKAGE, StrictModel, validate_args
from ..context import ClusterContext
from ..core import catalog, vm_disks
from ..core.errors import FieldProblem

GPU_TAINT = "sku=gpu:NoSchedule"
"""The taint seed 002 and seed 004 put on GPU pools so that general workloads stay off them."""

SPOT_TAINT = "kubernetes.azure.com/scalesetpriority=spot:NoSchedule"
"""AKS adds this taint to every Spot pool; declaring it keeps Pulumi from seeing a perpetual diff."""

RDMA_LABEL = "aks-gpu-inference/rdma"
GPU_MODEL_LABEL = "aks-gpu-inference/gpu-model"
AGENTPOOL_LABEL = "kubernetes.azure.com/agentpool"

_POOL_NAME = re.compile(r"^[a-z][a-z0-9]{0,11}$")
_TAINT = re.compile(
    r"^(?P<key>[A-Za-z0-9./_-]+)(=(?P<value>[A-Za-z0-9._-]*))?:(?P<effect>NoSchedule|PreferNoSchedule|NoExecute)$"
)
_SURGE = re.compile(r"^(\d+|([1-9]\d?|100)%)$")


class GpuNodePoolArgs(StrictModel):
    """What a GPU pool is. Every field is a plain value because it decides names, counts or replacement."""

    name: str
    """AKS pool name: lowercase letters and digits, starting with a letter, at most 12 characters
    (the Linux limit). Required; it is also the pool's identity, so renaming replaces the pool."""

    vm_size: str
    """A GPU size from the catalog (``components/core/gpu_sizes.json``), e.g. ``Standard_NC24ads_A100_v4``.
    Required. Changing it replaces the pool."""

    count: int = Field(1, ge=0, le=1000)
    """Nodes to create. Default 1. With autoscaling it is only the starting size: the autoscaler
    owns the count afterwards and Pulumi ignores drift on it."""

    min_count: int | None = Field(None, ge=0, le=1000)
    """Autoscaler lower bound. Default None (no autoscaling). Set with ``max_count``; 0 lets an idle
    GPU pool scale to nothing, which is where GPU money is saved."""

    max_count: int | None = Field(None, ge=1, le=1000)
    """Autoscaler upper bound. Default None (no autoscaling). Keep it within your N-series vCPU quota
    (seed 002: quota starts at 0 and a request fails ten minutes later)."""

    mode: Literal["User", "System"] = "User"
    """AKS pool mode. Default ``User``: system pods belong on the cluster's small system pool."""

    os_sku: Literal["Ubuntu", "Ubuntu2204", "AzureLinux", "AzureLinux3"] = "Ubuntu"
    """Node OS. Default ``Ubuntu``, which is Ubuntu 24.04 from Kubernetes 1.35 on (AKS OS SKU docs): the
    image seed 004 qualified for RDMA (inbox mlx5 modules). ``Ubuntu2404`` is not accepted: the
    containerservice API version of the pinned SDK (2025-09-01) lacks it (added in 2025-10-01,
    azure-rest-api-specs#38610). ``AzureLinux``/``AzureLinux3`` are the smaller, validated-driver option (seed 000)."""

    driver: Literal["aks", "none"] = "aks"
    """Who installs the GPU driver. Default ``aks`` (``gpuProfile.driver=Install``): AKS bakes a
    validated driver into the node image, the GA path. ``none`` skips it for clusters that run the
    NVIDIA GPU Operator (custom MIG or vGPU setups, seed 002 section 3) or AMD's GPU operator."""

    mig_profile: Literal["MIG1g", "MIG2g", "MIG3g", "MIG4g", "MIG7g"] | None = None
    """MIG instance profile (``gpuInstanceProfile``) for A100, H100 and H200 sizes. Default None
    (whole GPUs). Immutable: changing it replaces the pool. Pods must then request
    ``nvidia.com/mig-<slice>``, never ``nvidia.com/gpu`` (seed 002 gotcha 3)."""

    spot: bool = False
    """Use Spot VMs. Default False: GPU Spot capacity is scarce and evictions kill long model loads."""

    spot_eviction_policy: Literal["Delete", "Deallocate"] = "Delete"
    """What happens to evicted Spot nodes. Default ``Delete``: deallocated nodes still count against quota."""

    spot_max_price: float = Field(-1, ge=-1, le=10_000, allow_inf_nan=False)
    """Highest hourly price for Spot nodes in USD, finite and at most 10,000 (GPU list prices are below 200).
    Default -1: pay up to the on-demand price, evict only on capacity."""

    os_disk_type: Literal["Ephemeral", "Managed"] | None = None
    """OS disk type. Default None: ``Ephemeral`` where the size supports it and its local disk holds
    AKS's default 128 GB OS disk (faster node start and reimage, no disk cost), else ``Managed``
    (``Standard_NC24ads_A100_v4`` has a 64 GiB local disk: VMCannotFitEphemeralOSDisk otherwise)."""

    os_disk_size_gb: int | None = Field(None, ge=30, le=2048)
    """OS disk size. Default None: AKS's default (128 GB); an explicit ``Ephemeral`` disk on a size whose
    local disk is smaller gets that disk's size. Ephemeral sizes above the local disk are refused."""

    taints: list[str] = Field(default_factory=lambda: [GPU_TAINT])
    """Node taints as ``key=value:Effect``. Default ``sku=gpu:NoSchedule`` so that only pods which
    tolerate it land on expensive GPU nodes. The Spot taint is added automatically."""

    workload: str = Field("inference", pattern=r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
    """Value of the ``workload`` node label. Default ``inference``."""

    labels: dict[str, str] = Field(default_factory=dict)
    """Extra node labels, merged over the ones the pool sets (``accelerator``, ``workload``, GPU model)."""

    rdma: bool = False
    """Label the pool as serving RDMA work (``aks-gpu-inference/rdma=true``). Default False. Requires
    an RDMA-capable ND size; the policy pack enforces the same."""

    availability_zones: list[Literal["1", "2", "3"]] = Field(default_factory=list)
    """Zones for the nodes. Default none: GPU capacity is often in one zone only, and pinning a zone
    the region lacks fails the create."""

    capacity_reservation_group_id: str | None = None
    """Resource ID of an on-demand capacity reservation group to draw nodes from. Default None.
    Reserving GPU capacity is the reliable way to scale out when regions run dry."""

    max_surge: str = "0"
    """Extra nodes added during an upgrade. Default ``0``: surge GPU nodes need spare quota and
    capacity that GPU subscriptions rarely have, and a failed surge blocks the upgrade."""

    max_unavailable: str = "1"
    """Nodes upgraded in place at once. Default ``1``: with no surge, one node at a time is drained
    and reimaged, so capacity drops by one node and never needs extra quota."""

    drain_timeout_minutes: int = Field(30, ge=1, le=1440)
    """How long AKS waits for pods to leave a node before the upgrade fails. Default 30 minutes,
    AKS's own default, long enough for an inference server to finish in-flight requests."""

    node_soak_minutes: int = Field(0, ge=0, le=30)
    """Wait after draining a node before reimaging it. Default 0."""

    tags: dict[str, str] = Field(default_factory=dict)
    """Azure tags for the pool's VM scale set. Default none."""

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        if not _POOL_NAME.match(value):
            raise ValueError("AKS Linux pool names are 1-12 lowercase letters or digits, starting with a letter (e.g. 'gpua100')")
        return value

    @field_validator("vm_size")
    @classmethod
    def _check_vm_size(cls, value: str) -> str:
        catalog.get_current_sku(value)
        return value

    @field_validator("taints")
    @classmethod
    def _check_taints(cls, value: list[str]) -> list[str]:
        for taint in value:
            if not _TAINT.match(taint):
                raise ValueError(
                    f"taint {taint!r} is not 'key=value:Effect' with Effect NoSchedule, PreferNoSchedule or NoExecute"
                )
        return value

    @field_validator("max_surge", "max_unavailable")
    @classmethod
    def _check_surge(cls, value: str) -> str:
        if not _SURGE.match(value):
            raise ValueError("expected a whole number of nodes (e.g. '1') or a percentage from 1% to 100% (e.g. '10%')")
        return value

    @field_validator("spot_max_price", mode="before")
    @classmethod
    def _check_spot_price(cls, value: object) -> object:
        # Azure takes -1 (the on-demand price) or a positive price; 0 and other negatives fail. Non-finite: the Field's.
        if isinstance(value, (int, float)) and not isinstance(value, bool) and float("-inf") < value <= 0 and value != -1:
            raise ValueError("expected -1 (pay up to the on-demand price) or a positive price in USD per hour, e.g. 2.5")
        return value

    @model_validator(mode="after")
    def _check_combination(self) -> GpuNodePoolArgs:
        sku = catalog.get_sku(self.vm_size)
        if self.mig_profile:
            if not sku.mig_capable:
                raise FieldProblem(
                    "mig_profile",
                    self.mig_profile,
                    f"{self.vm_size} ({sku.gpu_model}) has no MIG; MIG-capable sizes: {', '.join(catalog.mig_capable_sizes())}",
                )
            if self.driver != "aks":
                raise FieldProblem(
                    "mig_profile",
                    self.mig_profile,
                    "AKS partitions MIG only with driver 'aks'; with driver 'none' configure MIG through the GPU Operator's MIG manager instead",
                )
        if sku.gpu_vendor == "amd" and self.driver == "aks":
            raise FieldProblem(
                "driver",
                self.driver,
                f"AKS installs NVIDIA drivers only; {self.vm_size} has AMD GPUs: use driver 'none' and AMD's GPU operator",
            )
        if (self.min_count is None) != (self.max_count is None):
            raise FieldProblem(
                "min_count" if self.min_count is None else "max_count",
                None,
                "set both min_count and max_count to enable autoscaling, or neither",
            )
        if self.min_count is not None and self.max_count is not None:
            if self.min_count > self.max_count:
                raise FieldProblem("min_count", self.min_count, f"must be at most max_count ({self.max_count})")
            if not self.min_count <= self.count <= self.max_count:
                raise FieldProblem(
                    "count", self.count, f"must lie between min_count ({self.min_count}) and max_count ({self.max_count})"
                )
        if self.mode == "System":
            if self.spot:
                raise FieldProblem("spot", self.spot, "AKS system pools cannot use Spot VMs; use mode 'User'")
            if self.count < 1 or (self.min_count is not None and self.min_count < 1):
                raise FieldProblem("count", self.count, "a system pool needs at least one node")
        if not self.spot and self.spot_max_price != -1:
            raise FieldProblem("spot_max_price", self.spot_max_price, "applies to Spot pools only: set spot: true or remove it")
        if self.os_disk_type == "Ephemeral" and not sku.ephemeral_os_disk:
            raise FieldProblem(
                "os_disk_type", self.os_disk_type, f"{self.vm_size} does not support ephemeral OS disks; use 'Managed'"
            )
        limit = ephemeral_limit_gib(self.vm_size)
        if self.os_disk_type == "Ephemeral" and limit is not None and (self.os_disk_size_gb or 0) > limit:
            raise FieldProblem(
                "os_disk_size_gb",
                self.os_disk_size_gb,
                f"an ephemeral OS disk on {self.vm_size} lives on its {limit} GiB local disk (components/core/vm_disks.json); "
                f"use at most {limit}, or os_disk_type 'Managed'",
            )
        if self.rdma and not sku.rdma:
            raise FieldProblem("rdma", self.rdma, f"{self.vm_size} is not RDMA-capable; RDMA sizes: {', '.join(rdma_sizes())}")
        if self.max_surge in ("0", "0%") and self.max_unavailable in ("0", "0%"):
            raise FieldProblem(
                "max_unavailable",
                self.max_unavailable,
                "with max_surge 0 at least one node must be allowed to be unavailable, or upgrades cannot progress",
            )
        return self

    @property
    def sku(self) -> catalog.GpuSku:
        return catalog.get_sku(self.vm_size)

    @property
    def autoscaling(self) -> bool:
        return self.min_count is not None

    def node_taints(self) -> list[str]:
        return self.taints + ([SPOT_TAINT] if self.spot and SPOT_TAINT not in self.taints else [])

    def node_labels(self) -> dict[str, str]:
        sku = self.sku
        labels = {
            "accelerator": f"{sku.gpu_vendor}-{sku.gpu_model.split('-')[0].lower()}",
            "workload": self.workload,
            GPU_MODEL_LABEL: sku.gpu_model,
        }
        if self.rdma:
            labels[RDMA_LABEL] = "true"
        return {**labels, **self.labels}

    def tolerations(self) -> list[dict[str, str]]:
        """Kubernetes tolerations that let a pod onto this pool, one per taint."""
        result = []
        for taint in self.node_taints():
            match = _TAINT.match(taint)
            toleration = {"key": match["key"], "operator": "Equal", "value": match["value"] or "", "effect": match["effect"]}
            if match["value"] is None:
                toleration = {"key": match["key"], "operator": "Exists", "effect": match["effect"]}
            result.append(toleration)
        return result


def rdma_sizes() -> list[str]:
    return sorted(name for name, sku in catalog.skus().items() if sku.rdma and not sku.retired)


DEFAULT_OS_DISK_GB = 128
"""AKS's OS disk size when none is given (azure-aks-docs concepts-storage, ephemeral OS disk)."""


def ephemeral_limit_gib(vm_size: str) -> int | None:
    """The largest ephemeral OS disk ``vm_size`` holds, or None where the disk table does not know the size."""
    return vm_disks.max_ephemeral_os_disk_gib(vm_size) if vm_size in vm_disks.sizes() else None


def os_disk(args: GpuNodePoolArgs) -> tuple[str, int | None]:
    """(osDiskType, osDiskSizeGB) for the pool: ephemeral only where the OS disk fits the local disk."""
    limit = ephemeral_limit_gib(args.vm_size)
    if args.os_disk_type is None:
        fits = limit is None or (args.os_disk_size_gb or DEFAULT_OS_DISK_GB) <= limit
        return ("Ephemeral" if args.sku.ephemeral_os_disk and fits else "Managed"), args.os_disk_size_gb
    if args.os_disk_type == "Ephemeral" and args.os_disk_size_gb is None and limit is not None and limit < DEFAULT_OS_DISK_GB:
        return "Ephemeral", limit
    return args.os_disk_type, args.os_disk_size_gb


class GpuNodePool(pulumi.ComponentResource):
    """A separate AKS ``AgentPool`` for one GPU size (never an inline ``agentPoolProfiles`` edit).

    Outputs are what the serving components need: ``node_selector`` and ``tolerations`` to place
    pods, ``gpu_resource_name`` and ``gpus_per_node`` to request GPUs, ``rdma_capable``.
    """

    pool_name: str
    node_selector: dict[str, str]
    tolerations: list[dict[str, str]]
    gpu_resource_name: str
    gpus_per_node: int
    rdma_capable: bool
    driver: str
    mig_profile: str | None
    max_nodes: int
    sku: catalog.GpuSku
    agent_pool: containerservice.AgentPool

    def __init__(
        self,
        name: str,
        args: GpuNodePoolArgs | dict,
        opts: pulumi.ResourceOptions | None = None,
        *,
        cluster: ClusterContext,
    ):
        """
        :param name: Logical name of the component; child resources are named ``<name>-pool``.
        :param args: The pool's settings, a ``GpuNodePoolArgs`` or a dict of its fields.
        :param opts: Standard Pulumi resource options.
        :param cluster: The AKS cluster that owns the pool (``AksCluster.context``); its name and
            resource group are used.
        """
        args = validate_args(GpuNodePoolArgs, args, "GpuNodePool", name)
        super().__init__(f"{PACKAGE}:index:GpuNodePool", name, None, opts)
        sku = args.sku
        disk_type, disk_size = os_disk(args)

        autoscale = {}
        if args.autoscaling:
            autoscale = {"enable_auto_scaling": True, "min_count": args.min_count, "max_count": args.max_count}
        spot = {}
        if args.spot:
            spot = {
                "scale_set_priority": "Spot",
                "scale_set_eviction_policy": args.spot_eviction_policy,
                "spot_max_price": args.spot_max_price,
            }

        self.agent_pool = containerservice.AgentPool(
            f"{name}-pool",
            agent_pool_name=args.name,
            resource_name_=cluster.cluster_name,
            resource_group_name=cluster.resource_group_name,
            vm_size=args.vm_size,
            count=args.count,
            mode=args.mode,
            os_type="Linux",
            os_sku=args.os_sku,
            os_disk_type=disk_type,
            os_disk_size_gb=disk_size,
            gpu_profile={"driver": "Install" if args.driver == "aks" else "None"},
            gpu_instance_profile=args.mig_profile,
            node_taints=args.node_taints(),
            node_labels=args.node_labels(),
            availability_zones=args.availability_zones or None,
            capacity_reservation_group_id=args.capacity_reservation_group_id,
            upgrade_settings={
                "max_surge": args.max_surge,
                "max_unavailable": args.max_unavailable,
                "drain_timeout_in_minutes": args.drain_timeout_minutes,
                "node_soak_duration_in_minutes": args.node_soak_minutes,
            },
            tags=args.tags or None,
            **autoscale,
            **spot,
            opts=pulumi.ResourceOptions(
                parent=self,
                # The autoscaler owns the node count once enabled; without this every `pulumi up`
                # would try to reset it.
                ignore_changes=["count"] if args.autoscaling else None,
                # A GPU pool takes longer than the default to provision and drain.
                custom_timeouts=pulumi.CustomTimeouts(create="60m", update="90m", delete="60m"),
            ),
        )

        self.pool_name = args.name
        self.node_selector = {AGENTPOOL_LABEL: args.name}
        self.tolerations = args.tolerations()
        self.gpu_resource_name, self.gpus_per_node = sku.gpu_resource(args.mig_profile)
        self.rdma_capable = sku.rdma
        self.driver = args.driver
        self.mig_profile = args.mig_profile
        self.max_nodes = args.max_count if args.autoscaling else args.count
        self.sku = sku
        self.register_outputs(
            {
                "pool_name": self.pool_name,
                "node_selector": self.node_selector,
                "gpu_resource_name": self.gpu_resource_name,
                "gpus_per_node": self.gpus_per_node,
                "rdma_capable": self.rdma_capable,
            }
        )
