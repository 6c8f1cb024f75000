"""Everything a VllmService checks before a resource exists, as pure functions: the weights' source,
the GPUs a replica asks of its pool, the DRA and RDMA claims it relies on, autoscaling's metrics and
the GPU-memory fit. Each returns every problem it finds, so one preview lists them all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core import models, startup
from ..core.errors import FieldProblem
from ..core.hub_access import missing_token_problem, missing_token_warning
from ..core.labels import is_mig_resource
from . import llmd_registry
from .picker_check import check_args, check_config
from .vllm_disaggregation import PICKER_RELEASE, picker_config, sidecar_args
from .vllm_manifests import dra_template, shm_gib
from .vllm_service_args import AzureServices, GpuPlacement, VllmSecrets, VllmServiceArgs

if TYPE_CHECKING:
    from ..gpu.pools import GpuPool


def model_facts_problems(args: VllmServiceArgs) -> list[FieldProblem]:
    """An unknown model (with the catalog's close ids), or ``model_facts`` for another model."""
    try:
        args.facts()
    except ValueError as err:
        return [FieldProblem("model", args.model, str(err).replace("\n", " "))]
    return []


def source_problems(args: VllmServiceArgs, secrets: VllmSecrets, azure: AzureServices | None) -> list[FieldProblem]:
    """Blob weights need the store and an identity that may read it; hub weights need a token."""
    azure = azure or AzureServices()
    if args.source == "blob" and (azure.model_store is None or azure.identity is None):
        return [
            FieldProblem(
                "source",
                "blob",
                "give model_store and identity (a WorkloadIdentity with read access to it), or use source huggingface",
            )
        ]
    if args.source == "huggingface" and secrets.hf_token is None:
        problem = missing_token_problem(args.model, _facts_or_none(args))
        return [FieldProblem("source", "huggingface", problem)] if problem else []
    return []


def hub_token_warning(args: VllmServiceArgs, secrets: VllmSecrets) -> str | None:
    """A warning when the weights come from the hub without a token and the catalog cannot say the model is open."""
    if args.source != "huggingface" or secrets.hf_token is not None:
        return None
    return missing_token_warning(args.model, _facts_or_none(args))


def _facts_or_none(args: VllmServiceArgs) -> models.ModelFactsArgs | None:
    try:
        return args.facts()
    except ValueError:  # an unknown model: model_facts_problems reports it
        return None


def gpu_count_problems(args: VllmServiceArgs, pool: GpuPool) -> list[FieldProblem]:
    """Tensor parallelism within one node of the pool; a MIG slice serves alone; P/D takes full nodes."""
    gpus = args.tensor_parallel_size
    problems = []
    if is_mig_resource(pool.gpu_resource_name) and gpus != 1:
        problem = f"pool {pool.pool_name} serves MIG slices ({pool.gpu_resource_name}); a slice cannot join tensor parallelism"
        problems.append(FieldProblem("tensor_parallel_size", gpus, problem))
    if not is_mig_resource(pool.gpu_resource_name) and gpus > pool.sku.gpus:
        problems.append(FieldProblem("tensor_parallel_size", gpus, f"{pool.sku.name} has {pool.sku.gpus} GPUs per node"))
    elif args.disaggregation and gpus != pool.sku.gpus:
        problem = f"disaggregated engines take full nodes: use {pool.sku.gpus} on {pool.sku.name}"
        problems.append(FieldProblem("tensor_parallel_size", gpus, problem))
    return problems


def dra_problems(args: VllmServiceArgs, placement: GpuPlacement) -> list[FieldProblem]:
    """``gpu_access: dra`` needs the pool's claim template, in the service's namespace."""
    if args.gpu_access != "dra":
        return []
    pool, dra = placement.pool, placement.dra
    template = dra_template(pool, args.tensor_parallel_size)
    problems = []
    if dra is None or template not in dra.templates:
        problem = (
            f"needs the claim template {template!r}: give DraDeviceClasses serving this MIG pool"
            if is_mig_resource(pool.gpu_resource_name)
            else f"needs DraDeviceClasses with a gpu-{args.tensor_parallel_size} claim template "
            f"(add {args.tensor_parallel_size} to dra.gpu_counts)"
        )
        problems.append(FieldProblem("gpu_access", "dra", problem))
    if dra is not None and dra.namespace != args.namespace:
        problem = f"DRA claim templates live in {dra.namespace!r}; serve from that namespace"
        problems.append(FieldProblem("namespace", args.namespace, problem))
    return problems


def rdma_problems(args: VllmServiceArgs, placement: GpuPlacement) -> list[FieldProblem]:
    """``rdma: true`` needs an RdmaNetwork over the pool, with its claim templates in the service's namespace."""
    if not args.rdma:
        return []
    pool, rdma = placement.pool, placement.rdma
    problems = []
    if rdma is None or pool.pool_name not in rdma.nics:
        problems.append(FieldProblem("rdma", True, f"pool {pool.pool_name} is not an RDMA pool of the given RdmaNetwork"))
    if rdma is not None and rdma.namespace != args.namespace:
        problem = f"RDMA claim templates live in {rdma.namespace!r}; serve from that namespace"
        problems.append(FieldProblem("namespace", args.namespace, problem))
    return problems


def picker_problems(args: VllmServiceArgs) -> list[FieldProblem]:
    """The picker config and sidecar flags as the pinned llm-d release reads them: what it would refuse at start is
    refused here (warnings, such as a config that never disaggregates, are the plan's)."""
    if not args.disaggregation:
        return []
    table = llmd_registry.load(PICKER_RELEASE)
    found = check_config(picker_config(args), PICKER_RELEASE)
    found += check_args(sidecar_args(), table["sidecar_flags"], "the disagg sidecar", "sidecar")
    return [FieldProblem("disaggregation", args.disaggregation.decider, p.message) for p in found if p.level == "blocker"]


def host_memory_problems(args: VllmServiceArgs, pool: GpuPool) -> list[FieldProblem]:
    """The engine's memory limit against what it uses while loading, and against the node's memory."""
    facts = args.facts()
    needed = startup.host_memory_gib(facts.weight_bytes("auto"), args.tensor_parallel_size, shm_gib(args), args.source)
    given = _gib(args.memory) if args.memory else needed
    why = (
        f"the engine uses about {needed:.0f} GiB of host memory while it loads (one copy of the checkpoint in the "
        f"streamer's buffer, {args.tensor_parallel_size} GPU worker(s), the server and {shm_gib(args)} GiB of /dev/shm)"
    )
    if given < needed:
        return [
            FieldProblem(
                "memory",
                args.memory,
                f"{why}: the load would be OOM-killed; give at least {int(-(-needed // 1))}Gi or leave it unset",
            )
        ]
    if given > pool.sku.ram_gib:
        return [
            FieldProblem(
                "memory", args.memory or f"{needed:.0f}Gi", f"{pool.sku.name} has {pool.sku.ram_gib:g} GiB of memory; {why}"
            )
        ]
    return []


def _gib(quantity: str) -> float:
    return float(quantity[:-2]) / (1024 if quantity.endswith("Mi") else 1)


def _flag(args: list[str], name: str) -> str | None:
    """The value of ``--name N`` or ``--name=N`` in vLLM arguments, the last one given; None when absent."""
    value = None
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith(f"{name}="):
            value = arg.split("=", 1)[1]
    return value


def fit_settings(args: VllmServiceArgs) -> dict:
    """The vLLM settings the service's memory fit runs under (``models.FitSettings``): the release its image names (the
    pinned one for a digest or a tag that names none) and the profile run its own flags set: --max-num-seqs, and from
    ``extra_args`` --max-num-batched-tokens, --enforce-eager and --disable-custom-all-reduce."""
    batched = _flag(args.extra_args, "--max-num-batched-tokens")
    return {
        "max_model_len": args.max_model_len,
        "gpu_memory_utilization": args.gpu_memory_utilization,
        "dtype": args.dtype,
        "kv_cache_dtype": args.kv_cache_dtype,
        # The service's own --max-num-seqs sizes vLLM's profile run (its sampler's logits), as the default would.
        "max_num_seqs": args.max_num_seqs,
        "max_num_batched_tokens": int(batched) if batched and batched.isdigit() and int(batched) > 0 else None,
        "cuda_graphs": "--enforce-eager" not in args.extra_args,
        "custom_all_reduce": "--disable-custom-all-reduce" not in args.extra_args,
        "vllm_version": models.image_version(args.image) or models.PINNED_VLLM_VERSION,
        "warn_below_sequences": args.min_full_sequences,
    }


def service_fit(args: VllmServiceArgs, pool: GpuPool) -> models.FitResult:
    """The GPU-memory fit of one replica on the pool (on its MIG slice, if it serves slices), under ``fit_settings``."""
    return models.fit(args.facts(), pool.sku.name, args.tensor_parallel_size, mig_profile=pool.mig_profile, **fit_settings(args))


def fit_problems(args: VllmServiceArgs, pool: GpuPool) -> list[FieldProblem]:
    """A model that cannot load, with the numbers and the smallest changes that fit."""
    fit = service_fit(args, pool)
    if fit.fits:
        return []
    advice = "; ".join(s.text for s in fit.suggestions) or "choose a larger GPU size"
    problem = f"cannot load on {pool.sku.name}: {fit.problem}. Smallest changes that fit: {advice}"
    return [FieldProblem("model", args.model, problem)]


def vllm_service_problems(
    args: VllmServiceArgs, placement: GpuPlacement, secrets: VllmSecrets, azure: AzureServices | None = None
) -> list[FieldProblem]:
    """Every reason ``VllmService`` refuses these inputs; empty when it can deploy them.

    The fit is checked only for a known model and a GPU count the pool can give one replica.
    """
    facts = model_facts_problems(args)
    gpus = gpu_count_problems(args, placement.pool)
    problems = facts + source_problems(args, secrets, azure) + gpus
    problems += dra_problems(args, placement) + rdma_problems(args, placement) + picker_problems(args)
    if args.autoscaling and (azure is None or azure.monitoring is None):
        problems.append(
            FieldProblem("autoscaling", "set", "needs the cluster's managed Prometheus (query endpoint and KEDA identity)")
        )
    if not facts and not gpus:
        problems += fit_problems(args, placement.pool) + host_memory_problems(args, placement.pool)
    return problems
