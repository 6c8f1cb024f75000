"""The settings of one GPU pool (``GpuNodePoolArgs``) and what follows from them: taints, labels, tolerations and
the OS disk. The AKS rules they must keep together are ``gpu_node_pool_checks.pool_problems``."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from .._base import AvailabilityZones, StrictModel
from ..core import catalog, vm_disks
from ..core.errors import FieldProblems
from ..core.labels import GPU_TAINT, RDMA_LABEL, SPOT_TAINT
from ..core.names import AKS_POOL_NAME, DNS_LABEL
from .gpu_node_pool_checks import pool_problems
from .interconnect import INTERCONNECT_LABEL, InterconnectArgs

GPU_MODEL_LABEL = "aks-gpu-inference/gpu-model"
"""Node label with the pool's GPU model (``A100-80GB``), for dashboards and node selection by model."""

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
    NVIDIA GPU Operator (custom MIG or vGPU setups, seed 002 section 3) or AMD's GPU operator; a stack whose dra
    section's ``gpu_operator`` does not serve the pool plans with a warning."""

    gpu_management: Literal["unmanaged", "managed"] = "unmanaged"
    """Who runs the GPU software on the nodes. Default ``unmanaged``: AKS installs the driver (``driver``)
    and this project's device plugin or DRA driver advertises the GPUs. ``managed``: AKS's managed GPU
    experience (preview; ``gpuProfile.nvidia.managementMode: Managed``) also runs the device plugin, the
    DCGM exporter (scraped by managed Prometheus) and GPU health checks; the subscription needs the
    ``Microsoft.ContainerService/ManagedGPUExperiencePreview`` feature, the pool scales by hand (no
    autoscaler), and the mode is fixed at creation: AKS refuses to change it, so a new mode means a new pool."""

    mig_strategy: Literal["mixed", "single"] = "mixed"
    """How a managed MIG pool advertises its slices (``gpuProfile.nvidia.migStrategy``). Default ``mixed``:
    ``nvidia.com/mig-<slice>``, as on every other MIG pool of the project; ``single``: each slice is a
    ``nvidia.com/gpu``. Managed pools only."""

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

    workload: str = Field("inference", pattern=DNS_LABEL.pattern)
    """Value of the ``workload`` node label. Default ``inference``."""

    labels: dict[str, str] = Field(default_factory=dict)
    """Extra node labels, merged over the ones the pool sets (``accelerator``, ``workload``, GPU model)."""

    rdma: bool = False
    """Label the pool as serving RDMA work (``aks-gpu-inference/rdma=true``). Default False. Requires
    an RDMA-capable ND size; the policy pack enforces the same."""

    availability_zones: AvailabilityZones = Field(default_factory=list)
    """Zones for the nodes. Default none: GPU capacity is often in one zone only, and pinning a zone
    the region lacks fails the create."""

    interconnect: InterconnectArgs | None = None
    """The Azure InterconnectGroup of a rack-scale pool (ND GB200/GB300 v6): the stack creates it, and every NIC claim
    of the pool selects its group and subgroup through DRANET's attributes (``components/azure/interconnect.py`` says
    what that enforces and what AKS cannot). Default None. Needs ``rdma: true`` and at most one rack of nodes."""

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
        if not AKS_POOL_NAME.match(value):
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
        problems = pool_problems(self)
        if problems:
            raise FieldProblems(problems)
        return self

    @property
    def sku(self) -> catalog.GpuSku:
        """The catalog entry of ``vm_size``."""
        return catalog.get_sku(self.vm_size)

    @property
    def autoscaling(self) -> bool:
        """Whether the cluster autoscaler owns the node count (``min_count`` and ``max_count`` set)."""
        return self.min_count is not None

    def node_taints(self) -> list[str]:
        """The pool's taints: ``taints`` plus the one AKS adds to Spot pools, declared so that Pulumi sees no diff."""
        return self.taints + ([SPOT_TAINT] if self.spot and SPOT_TAINT not in self.taints else [])

    def node_labels(self) -> dict[str, str]:
        """The pool's node labels: accelerator, workload, GPU model and RDMA, then ``labels`` over them."""
        sku = self.sku
        labels = {
            "accelerator": f"{sku.gpu_vendor}-{sku.gpu_model.split('-')[0].lower()}",
            "workload": self.workload,
            GPU_MODEL_LABEL: sku.gpu_model,
        }
        if self.rdma:
            labels[RDMA_LABEL] = "true"
        if self.interconnect is not None:
            labels[INTERCONNECT_LABEL] = self.interconnect.name
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


def os_disk(args: GpuNodePoolArgs) -> tuple[str, int | None]:
    """(osDiskType, osDiskSizeGB) for the pool: ephemeral only where the OS disk fits the local disk."""
    limit = vm_disks.ephemeral_limit_gib(args.vm_size)
    if args.os_disk_type is None:
        fits = limit is None or (args.os_disk_size_gb or vm_disks.DEFAULT_OS_DISK_GB) <= limit
        return ("Ephemeral" if args.sku.ephemeral_os_disk and fits else "Managed"), args.os_disk_size_gb
    if (
        args.os_disk_type == "Ephemeral"
        and args.os_disk_size_gb is None
        and limit is not None
        and limit < vm_disks.DEFAULT_OS_DISK_GB
    ):
        return "Ephemeral", limit
    return args.os_disk_type, args.os_disk_size_gb
