"""What a DynamoInference is given: its settings (``DynamoInferenceArgs``, plain values checked by pydantic)
and the components it runs on (small frozen dataclasses). No Pulumi import, so the stack config and the
planner read these types without loading the SDKs.

Every Dynamo fact here is pinned to one release, 1.6.1 (``dynamo_manifests.DYNAMO_VERSION``); the sources
are listed in ``dynamo_manifests``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from .._base import StrictModel
from ..core import models, pins
from ..core.names import DNS_LABEL

if TYPE_CHECKING:
    from ..azure.gpu_node_pool import GpuNodePool
    from ..gpu.dra_device_classes import DraDeviceClasses
    from ..gpu.rdma_network import RdmaNetwork


class DynamoPlatformArgs(StrictModel):
    """The Dynamo platform: the ``dynamo-platform`` chart (the operator, its webhooks and, through the
    operator's init container, the nvidia.com CRDs)."""

    namespace: str = Field("dynamo-system", pattern=DNS_LABEL.pattern)
    """Namespace of the operator. Default ``dynamo-system``, the namespace Dynamo's install
    guide uses. It must not be the RDMA namespace: that one is ``privileged`` for the NICs."""

    create_namespace: bool = True
    """Create the namespace. Default True; False when another part of the stack owns it."""

    chart_version: str = Field(pins.chart("dynamo-platform").version, pattern=r"^\d+\.\d+\.\d+$")
    """Version of the ``dynamo-platform`` chart (``https://helm.ngc.nvidia.com/nvidia/ai-dynamo/charts/``),
    exact; the operator image gets the same tag. Default: the pins table's ``dynamo-platform``. The
    runtime image must be of the same release, so change both together. ``aks-gpu plan`` renders the chart of
    this version where it finds its archive (``--charts``, the cache, ``shared/upstream``, or ``--pull``)."""

    extra_values: dict[str, Any] = Field(default_factory=dict)
    """More ``dynamo-platform`` values, merged over the component's (e.g. ``{"dynamo-operator":
    {"controllerManager": {"tolerations": [...]}}}``). Default none. The chart refuses the pre-1.4 keys
    ``nats.enabled``, ``etcd.enabled``, ``grove.enabled`` and ``kai-scheduler.enabled``."""


class DynamoWorkerArgs(StrictModel):
    """One role of vLLM workers (prefill or decode): each worker is one pod on one RDMA node."""

    replicas: int = Field(1, ge=1, le=64)
    """Worker pods of this role. Default 1; at most the pool's node count for both roles together."""

    tensor_parallel_size: int = Field(8, ge=1, le=8)
    """GPUs of its node one worker uses (vLLM ``--tensor-parallel-size``). Default 8, a full ND node: with
    the node's full NIC claim, a worker owns its node, so a smaller size leaves GPUs idle."""

    max_model_len: int | None = Field(None, ge=256)
    """Context length in tokens (``--max-model-len``), the length the memory fit checks. Default None: the
    model's own maximum, as vLLM's default is."""

    gpu_memory_utilization: float = Field(
        models.DEFAULT_GPU_MEMORY_UTILIZATION, gt=models.GPU_MEMORY_UTILIZATION_ABOVE, le=models.GPU_MEMORY_UTILIZATION_AT_MOST
    )
    """Fraction of GPU memory vLLM may use (``--gpu-memory-utilization``), above 0.1 and at most 0.98 like
    VllmService's. Default 0.9, vLLM's default and what the fit assumes for VllmService too."""

    extra_args: list[str] = Field(default_factory=list)
    """More ``dynamo.vllm`` arguments, appended. Default none. The component sets ``--model``,
    ``--served-model-name``, the role flag, ``--tensor-parallel-size``, ``--max-model-len``,
    ``--gpu-memory-utilization`` and ``--kv-transfer-config``; do not repeat them."""


class DynamoModelCacheArgs(StrictModel):
    """Where the workers keep the downloaded weights (``HF_HOME``): a PersistentVolumeClaim every worker pod mounts, so
    a restarted or rescheduled worker loads from it instead of downloading the checkpoint again."""

    storage_class: str = Field("azurefile-csi-premium", pattern=DNS_LABEL.pattern)
    """StorageClass of the claim. Default ``azurefile-csi-premium``, built into AKS (the Azure Files CSI driver is on by
    default): a premium (SSD) file share, ReadWriteMany, so prefill and decode pods on different nodes share one copy,
    downloaded once for the graph, and keep it across pod restarts, rescheduling and node reimages (weekly node image
    upgrades). Azure Disk classes (``managed-csi*``) attach to one node at a time, so one claim cannot serve a prefill
    and a decode node; Azure Managed Lustre, the faster shared choice in Dynamo's AKS storage guide
    (ai-dynamo/dynamo docs/fern/pages/kubernetes/installation/model-storage/aks-storage.md), needs its CSI driver and a
    Lustre file system that AKS does not install. Another class must offer ``access_mode``."""

    size_gib: int | None = Field(None, ge=100, le=102400)
    """Size of the claim in GiB. Default None: the model's checkpoint (the catalog's weight bytes) plus a quarter for
    tokenizer, config and partial downloads, at least 100 GiB, the smallest premium file share. A premium share's
    throughput grows with its provisioned size: raise it to load faster."""

    access_mode: Literal["ReadWriteMany", "ReadWriteOnce"] = "ReadWriteMany"
    """Access mode of the claim. Default ``ReadWriteMany``; ``ReadWriteOnce`` only fits a class like Azure Disk and a
    graph whose workers all run on one node."""


class DynamoInferenceArgs(StrictModel):
    """A vLLM model served by Dynamo: one Frontend with KV-aware routing and disaggregated workers."""

    name: str = Field(pattern=r"^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$")
    """Name of the DynamoGraphDeployment: a DNS label of at most 40 characters (the operator appends
    component names, e.g. ``<name>-frontend``). Required."""

    model: str = Field(min_length=1)
    """Hugging Face id of the model, e.g. ``meta-llama/Llama-3.3-70B-Instruct``. Required; it must be in the
    catalog (``components/core``) so that the memory fit can be checked per worker."""

    served_model_name: str | None = None
    """The ``model`` clients send. Default None: ``model``."""

    runtime_image: str = Field(pins.image("dynamo-vllm-runtime"), pattern=r"^[^\s:]+(/[^\s:]+)*:[^\s:]+$")
    """Image of the frontend and the workers, pinned by tag. Default: the pins table's ``dynamo-vllm-runtime``,
    the tag of the pinned platform: the runtime and the operator must be of
    one release, and the operator reads the runtime version from this tag."""

    prefill: DynamoWorkerArgs = Field(default_factory=DynamoWorkerArgs)
    """The prefill workers (component ``type: prefill``). Default one full node."""

    decode: DynamoWorkerArgs = Field(default_factory=DynamoWorkerArgs)
    """The decode workers (component ``type: decode``). Default one full node."""

    frontend_replicas: int = Field(1, ge=1, le=16)
    """Frontend pods (OpenAI HTTP server and KV router, CPU only). Default 1: each frontend replica keeps
    its own view of the workers' caches, so more replicas route less precisely."""

    model_cache: DynamoModelCacheArgs = Field(default_factory=DynamoModelCacheArgs)
    """The workers' weights cache. Default: an ``azurefile-csi-premium`` claim sized from the checkpoint."""

    platform: DynamoPlatformArgs = Field(default_factory=DynamoPlatformArgs)
    """The platform release. Default: 1.6.1 in ``dynamo-system``."""


@dataclass(frozen=True)
class DynamoPlacement:
    """Where the workers run: an RDMA GPU pool and the RdmaNetwork whose NIC claims they take."""

    pool: GpuNodePool
    """The RDMA pool (node selector, tolerations, size for the fit). Required; NVIDIA GPUs only."""
    rdma: RdmaNetwork
    """The RdmaNetwork serving the pool; the graph deploys into its namespace. Required."""
    gpu_claims: DraDeviceClasses | None = None
    """The DraDeviceClasses serving the pool, when DRA hands out its GPUs: each worker then claims all of its
    node's GPUs through the ``<pool>-gpus-full-node`` template (in the RDMA namespace) instead of
    ``nvidia.com/gpu``. Default None (the device plugin)."""


@dataclass(frozen=True)
class DynamoSecrets:
    """The Hugging Face token the workers download weights with; pass a Pulumi secret."""

    hf_token: Any = None
    """Becomes ``HF_TOKEN`` in the Secret ``<name>-hf-token`` that every worker reads (``envFrom``). Required for a
    gated model (``components/core/models.json``); default None: the workers download without one."""
