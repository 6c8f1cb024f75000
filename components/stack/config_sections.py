"""The stack config's own sections: a component's args plus where the stack runs it (``pool``, ``pools``), and the
resource group. ``StackConfig`` (``config.py``, which re-exports them) holds them; ``reference.py`` documents the
fields they add as read by the stack program."""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from .._base import StrictModel
from ..gpu.dra_device_classes import DraDeviceClassesArgs
from ..gpu.qualification_gates import QualificationGatesArgs
from ..gpu.rdma_network import RdmaNetworkArgs
from ..serving.dynamo_args import DynamoInferenceArgs
from ..serving.vllm_service import VllmServiceArgs
from ..training.distributed_training_args import DistributedTrainingArgs


class ResourceGroupConfig(StrictModel):
    """The resource group that holds the cluster."""

    name: str = Field(pattern=r"^[-\w._()]{0,89}[-\w_()]$")
    """Resource group name (1-90 characters, not ending in a period). Required."""

    create: bool = True
    """Create the group. Default True; False uses an existing group of that name."""


class DraConfig(DraDeviceClassesArgs):
    """GPUs through Dynamic Resource Allocation (resource.k8s.io/v1: the pins table's minimum Kubernetes minor)."""

    pools: list[str] | None = None
    """GPU pools whose GPUs DRA allocates. Default: every NVIDIA pool."""


class GatesConfig(QualificationGatesArgs):
    """Seed 004's qualification gates, opt-in; ``pool`` defaults to the first RDMA pool."""

    pool: str = ""
    """The RDMA pool whose nodes the gates run on (one of ``rdma.pools``). Default: the first of ``rdma.pools``."""


class RdmaConfig(RdmaNetworkArgs):
    """InfiniBand NICs through DRANET."""

    pools: list[str]
    """GPU pools that serve RDMA work; each needs ``rdma: true`` and an RDMA-capable size. Required."""

    gates: GatesConfig | None = None
    """Run the qualification gates on an RDMA pool. Default None (off)."""

    @model_validator(mode="before")
    @classmethod
    def _gates_on_the_first_pool(cls, data: Any) -> Any:
        """``gates.pool`` defaults to the first RDMA pool, settled here so the stack hands the gates typed args."""
        gates, pools = (data.get("gates"), data.get("pools")) if isinstance(data, dict) else (None, None)
        if isinstance(gates, dict) and not gates.get("pool") and isinstance(pools, list) and pools:
            return {**data, "gates": {**gates, "pool": pools[0]}}
        return data


class TrainingConfig(DistributedTrainingArgs):
    """A distributed training run (KubeRay RayJob) on one RDMA pool of the stack."""

    pool: str
    """Name of the RDMA GPU pool (in ``gpu_pools`` and ``rdma.pools``) the workers fill. Required."""

    service_account: str | None = Field(None, pattern=r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
    """Service account the head and workers run as (a workload identity with write access to the
    checkpoints). Default: the run's ``name``."""


class DynamoConfig(DynamoInferenceArgs):
    """A model served by NVIDIA Dynamo (disaggregated prefill and decode) on one RDMA pool of the stack."""

    pool: str
    """Name of the RDMA GPU pool (in ``gpu_pools`` and ``rdma.pools``) the workers run on. Required."""


class ModelConfig(VllmServiceArgs):
    """A model served by vLLM on one of the stack's GPU pools."""

    pool: str
    """Name of the GPU pool (in ``gpu_pools``) to run on. Required."""
