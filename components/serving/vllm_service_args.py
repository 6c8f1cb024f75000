"""What a VllmService is given: its settings (``VllmServiceArgs``, plain values checked by pydantic) and
the other components and secrets it depends on (small frozen dataclasses). No Pulumi import, so the
stack config and the planner read these types without loading the SDKs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from pydantic import Field, field_validator, model_validator

from .._base import StrictModel
from ..core import models, pins
from ..core.errors import FieldProblem, FieldProblems
from ..core.images import pin_problem
from ..core.names import DNS_LABEL

if TYPE_CHECKING:
    import pulumi

    from ..azure.gpu_node_pool import GpuNodePool
    from ..azure.model_store import ModelStore
    from ..azure.workload_identity import WorkloadIdentity
    from ..gpu.dra_device_classes import DraDeviceClasses
    from ..gpu.rdma_network import RdmaNetwork

CRONTAB = r"^\S+( \S+){4}$"
"""Five space-separated crontab fields, as KEDA's cron scaler takes them."""


class ActiveHours(StrictModel):
    """When a scale-to-zero service must be up: a KEDA cron window (crontab start and end)."""

    start: str = Field(pattern=CRONTAB)
    """Crontab expression that opens the window, e.g. ``0 8 * * 1-5``. Required."""

    end: str = Field(pattern=CRONTAB)
    """Crontab expression that closes it, e.g. ``0 20 * * 1-5``. Required."""

    timezone: str = "UTC"
    """IANA time zone of the expressions. Default ``UTC``."""


class AutoscalingArgs(StrictModel):
    """KEDA scaling on queued requests (``vllm:num_requests_waiting``) from Azure managed Prometheus."""

    min_replicas: int = Field(1, ge=0, le=100)
    """Replicas kept when idle. Default 1; 0 is scale to zero and needs ``scale_to_zero: true``."""

    max_replicas: int = Field(4, ge=1, le=100)
    """Upper bound. Default 4; keep it within the pool's max_count x replicas per node."""

    waiting_requests_target: int = Field(5, ge=1)
    """Queued requests per replica that trigger a scale-out. Default 5."""

    scale_to_zero: bool = False
    """Allow zero replicas when idle. Default False: the first request after idle waits for a GPU node
    and a model load. Opt in for dev or batch endpoints; needs ``active_hours``."""

    active_hours: ActiveHours | None = None
    """Window in which at least ``max(1, min_replicas)`` replicas run (KEDA cron trigger). Required with
    ``scale_to_zero``: at zero replicas vLLM publishes no queue metric, so the queue alone can never
    wake the service. Default None."""

    @model_validator(mode="after")
    def _check(self) -> AutoscalingArgs:
        problems = []
        if self.min_replicas == 0 and not self.scale_to_zero:
            problems.append(
                FieldProblem("min_replicas", 0, "zero replicas means scale to zero; set scale_to_zero: true to opt in")
            )
        if self.scale_to_zero and self.active_hours is None:
            problems.append(
                FieldProblem(
                    "active_hours",
                    None,
                    "scale to zero needs a wake-up window: an idle vLLM has no pods, so no queue metric to scale on",
                )
            )
        if self.scale_to_zero and self.min_replicas > 0:
            why = f"only lets min_replicas be 0, and it is {self.min_replicas}: set min_replicas 0, or leave scale_to_zero out"
            problems.append(FieldProblem("scale_to_zero", True, why))
        if self.min_replicas > self.max_replicas:
            problems.append(
                FieldProblem("min_replicas", self.min_replicas, f"must be at most max_replicas ({self.max_replicas})")
            )
        if problems:
            raise FieldProblems(problems)
        return self


class DisaggregationArgs(StrictModel):
    """Prefill/decode disaggregation on full RDMA nodes (seed 004), KV moved over NIXL."""

    prefill_replicas: int = Field(1, ge=1, le=32)
    """Prefill engines, one full node each. Default 1."""

    decode_replicas: int = Field(1, ge=1, le=32)
    """Decode engines, one full node each. Default 1."""

    decider: Literal["prefix", "always"] = "prefix"
    """How llm-d's picker decides whether a request's prompt goes to a prefill pod. Default ``prefix``
    (``prefix-based-pd-decider``): when at least ``prefill_threshold_tokens`` of the prompt are not in the chosen
    decode pod's prefix cache; a follow-up turn the decode pod already holds stays there. ``always``
    (``always-disagg-pd-decider``) prefills every prompt on a prefill pod."""

    prefill_threshold_tokens: int = Field(16, ge=1, le=1_048_576)
    """With ``decider: prefix``: how many uncached prompt tokens send a request to prefill. Default 16, the value
    llm-d-router's e2e tests run; raise it to keep short prompts on decode. 0 would never disaggregate, so it is
    refused."""


class VllmServiceArgs(StrictModel):
    """One model served by vLLM. Plain values: they decide names, counts and the memory fit."""

    name: str = Field(pattern=r"^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$")
    """Service name (lowercase, at most 40 characters, so derived names stay within Kubernetes limits). Required."""

    namespace: str = Field("gpu-inference", pattern=DNS_LABEL.pattern)
    """Namespace. Default ``gpu-inference``, which the service creates (``create_namespace``)."""

    create_namespace: bool = True
    """Create ``namespace``, labelled Pod Security ``restricted`` (the vLLM pods pass it). Default True; False for a
    namespace that already exists or that something else creates. The RDMA network's and the DRA driver's
    namespaces are never created here (they own them). In a stack file, the stack creates each models' namespace
    once, however many models share it."""

    model: str
    """Hugging Face model id, e.g. ``meta-llama/Llama-3.1-8B-Instruct``. Required."""

    model_facts: models.ModelFactsArgs | None = None
    """Parameters, layers, KV heads, head dim and max context for a model the catalog lacks (its
    ``hf_id`` must equal ``model``). Default None: the catalog's facts for ``model``."""

    source: Literal["blob", "huggingface"] = "blob"
    """Where weights come from. Default ``blob``: the RunAI streamer reads them from Azure Blob under
    workload identity, the fast cold start. ``huggingface`` downloads from the hub with a token."""

    model_path: str | None = None
    """Path of the weights inside the model store's container. Default: the model id."""

    image: str = pins.image("vllm")
    """vLLM image, pinned. Default: the pins table's ``vllm`` (Azure Blob streaming needs v0.18.0 or later). The
    memory fit models the release its tag names."""

    served_model_name: str | None = None
    """Name clients pass as ``model``. Default: the model id."""

    tensor_parallel_size: int = Field(1, ge=1, le=8)
    """GPUs per replica. Default 1."""

    max_model_len: int = Field(8192, ge=256)
    """Context length per sequence. Default 8192: long contexts cost KV memory on every replica."""

    gpu_memory_utilization: float = Field(
        models.DEFAULT_GPU_MEMORY_UTILIZATION, gt=models.GPU_MEMORY_UTILIZATION_ABOVE, le=models.GPU_MEMORY_UTILIZATION_AT_MOST
    )
    """Share of each GPU's memory vLLM may use, above 0.1 and at most 0.98 (the range the fit takes). Default 0.9
    (vLLM's default)."""

    dtype: Literal["auto", "bfloat16", "fp8"] = "auto"
    """Weights precision. Default ``auto`` (the checkpoint's); ``fp8`` halves weights on Hopper-class GPUs."""

    kv_cache_dtype: Literal["auto", "fp8"] = "auto"
    """KV cache precision. Default ``auto``; ``fp8`` doubles the tokens that fit."""

    enable_prefix_caching: bool = True
    """Reuse KV of shared prompt prefixes (system prompts, agent scaffolds). Default True."""

    max_num_seqs: int | None = Field(None, ge=1)
    """Concurrent sequences per replica. Default None (vLLM decides)."""

    min_full_sequences: int = Field(4, ge=1)
    """Warn when fewer full-length sequences fit in the KV cache. Default 4."""

    replicas: int = Field(1, ge=1, le=100)
    """Replicas without autoscaling. Default 1."""

    autoscaling: AutoscalingArgs | None = None
    """KEDA autoscaling. Default None (fixed ``replicas``)."""

    gpu_access: Literal["device-plugin", "dra"] = "device-plugin"
    """How pods get GPUs: the device plugin's resource (``nvidia.com/gpu`` or the pool's MIG slice) or a DRA
    claim from DraDeviceClasses. Default ``device-plugin``."""

    rdma: bool = False
    """Claim the pool's InfiniBand NICs through RdmaNetwork's pod contract. Default False."""

    disaggregation: DisaggregationArgs | None = None
    """Separate prefill and decode engines on full RDMA nodes. Default None (aggregated serving)."""

    extra_args: list[str] = Field(default_factory=list)
    """More vLLM flags, appended as given. Default none."""

    cpu: str = "8"
    """CPU request per replica. Default 8 cores: tokenization and scheduling run on the CPU."""

    fallback: str | None = None
    """The served name of another model the gateway serves (an Azure OpenAI deployment, another model) that answers
    this model's calls when none of its replicas can: a rollout, a scale from zero, a lost node. The call keeps its
    client's authentication, budget and metering; the fallback is asked for its own model name. Default None. Needs
    the stack's gateway; not with ``disaggregation`` (AI Gateway v1.1.0 cannot put an InferencePool and another
    backend in one route rule)."""

    memory: str | None = Field(None, pattern=r"^[1-9][0-9]*(Gi|Mi)$")
    """Memory request and limit per replica, e.g. ``200Gi``. Default None: what the engine uses while it loads
    (``core/startup.py host_memory_gib``: one copy of the checkpoint in the streamer's host buffer, 4 GiB per GPU
    worker and for the server, and ``/dev/shm``). A smaller value is refused: the load would be OOM-killed."""

    @field_validator("image")
    @classmethod
    def _pinned(cls, image: str) -> str:
        if pin_problem(image):
            raise ValueError("pin the vLLM image to a version tag or digest")
        return image

    @model_validator(mode="after")
    def _check(self) -> VllmServiceArgs:
        problems = []
        if self.disaggregation and not self.rdma:
            problems.append(
                FieldProblem("disaggregation", "set", "prefill/decode moves KV caches over InfiniBand: set rdma: true")
            )
        if self.disaggregation and self.fallback:
            why = (
                "a prefill/decode model is routed to its InferencePool, and AI Gateway v1.1.0's AIGatewayRoute refuses an "
                "InferencePool beside another backend in one rule ('cannot mix InferencePool and AIServiceBackend "
                "references'), so its calls cannot fall back: drop fallback, or serve the model without disaggregation"
            )
            problems.append(FieldProblem("fallback", self.fallback, why))
        if self.disaggregation and self.autoscaling:
            problems.append(
                FieldProblem("autoscaling", "set", "disaggregated engines are sized by prefill_replicas and decode_replicas")
            )
        facts = self.model_facts
        if facts is not None and facts.hf_id != self.model:
            why = f"facts of another model than the served one ({self.model!r}): give model_facts for model itself"
            problems.append(FieldProblem("model_facts.hf_id", facts.hf_id, why))
        if facts is not None and facts.kaito_preset is not None:
            why = "links the catalog's facts to a KAITO preset (kaito[].preset); vLLM reads no preset: leave it out"
            problems.append(FieldProblem("model_facts.kaito_preset", facts.kaito_preset, why))
        if problems:
            raise FieldProblems(problems)
        return self

    def facts(self) -> models.ModelFactsArgs:
        """The served model's facts: ``model_facts`` if given (for ``model`` itself), else the catalog's."""
        if self.model_facts is not None:
            if self.model_facts.hf_id != self.model:
                raise ValueError(f"model_facts.hf_id {self.model_facts.hf_id!r} is not the served model {self.model!r}")
            return self.model_facts
        return models.get_model(self.model)


@dataclass(frozen=True)
class GpuPlacement:
    """Where a VllmService's pods run and who hands them devices: the GPU pool, and the DRA device
    classes and RDMA network that serve that pool."""

    pool: GpuNodePool
    """The pool the pods run on: its node selector, tolerations and GPU resource, and the size the
    memory fit is checked against. Required."""
    dra: DraDeviceClasses | None = None
    """DraDeviceClasses with a claim template for this pool, for ``gpu_access: dra``. Default None."""
    rdma: RdmaNetwork | None = None
    """The RdmaNetwork this pool belongs to, for ``rdma: true``. Default None."""


@dataclass(frozen=True)
class VllmSecrets:
    """The values of the service's Kubernetes Secret ``<name>-secrets``; pass Pulumi secrets, so that
    no value is recorded in plain text."""

    api_key: pulumi.Input[str]
    """The key clients must send (``Authorization: Bearer``). Required."""
    hf_token: pulumi.Input[str] | None = None
    """Hugging Face token, for ``source: huggingface``. Default None."""


@dataclass(frozen=True)
class ScalingMonitor:
    """Where KEDA reads vLLM's metrics: the managed Prometheus query endpoint and the identity KEDA uses."""

    query_endpoint: pulumi.Input[str]
    """Query endpoint of the Azure Monitor workspace (``ManagedPrometheus.query_endpoint``)."""
    keda_client_id: pulumi.Input[str]
    """Client ID of the workload identity KEDA's operator runs as, with Monitoring Data Reader on the workspace."""


@dataclass(frozen=True)
class AzureServices:
    """The Azure services a VllmService reads, each under a workload identity: the model store under
    the service's own, managed Prometheus (for KEDA) under KEDA's."""

    model_store: ModelStore | None = None
    """ModelStore holding the weights, for ``source: blob``. Default None."""
    identity: WorkloadIdentity | None = None
    """WorkloadIdentity of the service account (``<namespace>/<name>``) with read access to the store,
    for ``source: blob``. Default None."""
    monitoring: ScalingMonitor | None = None
    """Managed Prometheus and KEDA's identity, for ``autoscaling``. Default None."""
