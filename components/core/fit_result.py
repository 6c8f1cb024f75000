"""What a memory fit reports: the figures per GPU, the verdict and the single changes that would fit."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Literal

from . import catalog


@dataclass(frozen=True)
class Suggestion:
    """One change that, by itself, makes the model fit."""

    kind: Literal["tp", "mig_profile", "vm_size", "max_model_len", "dtype", "kv_cache_dtype"]
    """Which setting to change."""

    value: int | str
    """The new value of that setting."""

    text: str
    """The change in words, with what it gives."""


@dataclass(frozen=True)
class FitResult:
    """How one model fits one GPU configuration; every memory figure is per GPU unless named otherwise."""

    model: str
    """Hugging Face id."""
    vm_size: str | None
    """Catalog VM size, or None for a bare GPU memory figure."""
    gpu: str
    """GPU model, with the MIG slice when on one (e.g. ``A100-80GB MIG 3g.40gb``)."""
    tp: int
    """Tensor-parallel size: GPUs one replica uses."""
    mig_profile: str | None
    """AKS ``gpuInstanceProfile`` (e.g. MIG3g) when on a MIG slice, else None."""
    replicas_per_vm: int
    """Replicas of this configuration one VM holds (GPUs // tp, or MIG slices)."""
    max_model_len: int
    """Context length checked, in tokens."""
    dtype: str
    """Weight dtype asked for."""
    kv_cache_dtype: str
    """KV cache dtype asked for."""
    gpu_memory_utilization: float
    """Fraction of GPU memory vLLM may use."""
    vllm_version: str
    """vLLM release whose profiler and KV arithmetic the figures follow."""
    gpu_memory_gib: float
    """Memory of the GPU or MIG slice."""
    budget_gib_per_gpu: float
    """GPU memory x utilization."""
    weights_gib_per_gpu: float
    """Weights one GPU holds."""
    overhead_gib: float
    """Runtime overhead counted per GPU: the sum of the four terms below."""
    non_torch_gib: float
    """Memory outside PyTorch's allocator (cuBLAS, NCCL and custom all-reduce buffers)."""
    activation_gib: float
    """Activation peak of vLLM's profile run, including the MoE workspace."""
    cuda_graph_gib: float
    """CUDA-graph pool vLLM reserves inside the budget (0 with CUDA graphs off)."""
    max_num_seqs: int
    """Sequences vLLM schedules at once (its default for the GPU unless given); sizes the sampler term."""
    max_num_batched_tokens: int
    """Tokens per scheduler step (its default for the GPU unless given); sizes the forward-pass term."""
    cuda_graphs: bool
    """Whether vLLM captures CUDA graphs (False: ``--enforce-eager``)."""
    custom_all_reduce: bool
    """Whether tensor-parallel ranks use vLLM's custom all-reduce (False across nodes or when disabled)."""
    kv_budget_gib_per_gpu: float
    """What is left for the KV cache: vLLM's "Available KV cache memory" (negative when the weights do not load)."""
    kv_bytes_per_token: int
    """KV bytes per token for the whole model (all layers, all KV heads)."""
    kv_bytes_per_token_per_gpu: int
    """KV bytes per token on one GPU (all layers, its share of KV heads)."""
    kv_block_size: int
    """Tokens per KV block of the attention backend vLLM picks (16; 64 for MLA on Hopper)."""
    kv_cache_groups: int
    """KV cache groups vLLM forms (more than 1 for a hybrid model under the hybrid KV cache manager)."""
    kv_tokens: int
    """vLLM's "GPU KV cache size: N tokens": blocks x block size, and for a hybrid model blocks divided over
    its groups (every layer, padding included); independent of the context length."""
    max_concurrency: float
    """vLLM's "Maximum concurrency for max_model_len tokens per request: X"."""
    full_length_sequences: int
    """Sequences of ``max_model_len`` tokens that fit at once (the concurrency, rounded down)."""
    kv_needed_gib: float
    """KV cache one request of ``max_model_len`` tokens needs per GPU: vLLM refuses to start below it."""
    longest_request_tokens: int
    """The longest request the KV cache holds alone (vLLM's estimated maximum model length, not capped)."""
    hybrid: bool
    """Full-attention and sliding-window layers kept apart (hybrid KV cache manager): a request's sliding
    layers hold only the window, so ``max_concurrency x max_model_len`` tokens of requests fit, more than
    ``kv_tokens``."""
    price_usd_per_hour: float | None
    """List price of the VM (not of the replica), or None when the catalog has none."""
    price_usd_per_month: float | None
    """The same for 730 hours."""
    problem: str | None = None
    """Why it does not fit, or None."""
    problem_kind: Literal["vm", "tp", "context", "weights", "kv"] | None = None
    """Which check failed: the VM (GPU count, MIG, retired), tp vs heads, context, weights, KV cache."""
    warning: str | None = None
    """Set when it fits but fewer than ``warn_below_sequences`` full-length sequences do."""
    suggestions: tuple[Suggestion, ...] = field(default_factory=tuple)
    """Single changes that make it fit, when it does not."""
    nodes: int = 1
    """VMs (pods) one replica spans; its ``tp`` GPUs are split evenly over them."""

    @property
    def fits(self) -> bool:
        """True when the model loads and at least one full-length sequence fits."""
        return self.problem is None

    @property
    def effective_tokens(self) -> int:
        """Tokens of full-length requests the KV cache holds at once: ``max_concurrency x max_model_len``; above
        ``kv_tokens`` for a hybrid model, whose sliding layers keep only the window."""
        return int(self.max_concurrency * self.max_model_len)

    @property
    def gpu_share(self) -> float:
        """GPUs one replica occupies (a fraction for a MIG slice)."""
        return self.tp if self.mig_profile is None else 1 / catalog.mig_slices_per_gpu(self.mig_profile)

    def as_dict(self) -> dict:
        """Plain JSON-ready values, including ``fits``; GiB and dollar figures rounded to 4 decimals."""
        values = {k: round(v, 4) if isinstance(v, float) else v for k, v in asdict(self).items()}
        return {**values, "effective_tokens": self.effective_tokens, "fits": self.fits}
