"""What the stack's sections ask of its GPU pools, checked against them: the pools ``dra``, ``rdma``, ``training``,
``dynamo`` and each model name exist, have InfiniBand where the work needs it and room for every worker; a model's
store, DRA, RDMA and metrics are there. ``StackConfig`` calls these while it validates itself and reports every
``FieldProblem`` with its key path at once, before any resource is created.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from ..azure.model_store import blob_path_problem
from ..core import catalog
from ..core.errors import FieldProblem
from ..gpu.qualification_gates import rail_rate_problem
from .config_checks import gpu_problems

if TYPE_CHECKING:
    from ..azure.aks_cluster import AksClusterArgs
    from ..azure.gpu_node_pool import GpuNodePoolArgs
    from ..azure.model_store import ModelStoreArgs
    from .config_sections import DraConfig, DynamoConfig, ModelConfig, RdmaConfig, TrainingConfig


class StackConfig(Protocol):
    """What these checks read of a ``StackConfig`` (a protocol: the config calls them while it validates itself)."""

    cluster: AksClusterArgs
    gpu_pools: Sequence[GpuNodePoolArgs]
    dra: DraConfig | None
    rdma: RdmaConfig | None
    model_store: ModelStoreArgs | None
    models: Sequence[ModelConfig]
    training: TrainingConfig | None
    dynamo: DynamoConfig | None

    def dra_pools(self) -> list[str]: ...


def no_infiniband(pool: GpuNodePoolArgs, needs: str) -> str | None:
    """The root cause, when it is one: the pool's size has no InfiniBand, so listing it in rdma.pools (the
    next step the other advice leads to) would only be refused for the size."""
    if catalog.is_rdma_capable(pool.vm_size):
        return None
    return (
        f"{needs}, and pool {pool.name!r} is {pool.vm_size}, which has no InfiniBand: use a pool of an RDMA size "
        f"({', '.join(catalog.rdma_sizes())})"
    )


def no_such_pool(pools: dict[str, GpuNodePoolArgs]) -> str:
    """Why a section's pool name is refused, naming the pools there are."""
    return f"no such GPU pool; pools: {', '.join(sorted(pools)) or 'none'}"


def section_pool_problems(config: StackConfig) -> list[FieldProblem]:
    """The pools ``dra`` and ``rdma`` name, and the RDMA pool the qualification gates run on."""
    pools = {p.name: p for p in config.gpu_pools}
    listing = no_such_pool(pools)
    problems = [FieldProblem("dra.pools", n, listing) for n in (config.dra.pools or [] if config.dra else []) if n not in pools]
    if config.rdma is None:
        return problems
    for name in config.rdma.pools:
        if name not in pools:
            problems.append(FieldProblem("rdma.pools", name, listing))
        elif why := no_infiniband(pools[name], "the RDMA network needs InfiniBand"):
            # The root cause first: "set rdma: true" would only lead to the size's own refusal.
            problems.append(FieldProblem("rdma.pools", name, why))
        elif not pools[name].rdma:
            why = f"set gpu_pools[].rdma: true on {name!r} so it is labelled and checked as an RDMA pool"
            problems.append(FieldProblem("rdma.pools", name, why))
    gates = config.rdma.gates
    if gates is not None and gates.pool and gates.pool not in config.rdma.pools:
        problems.append(FieldProblem("rdma.gates.pool", gates.pool, f"not one of rdma.pools ({', '.join(config.rdma.pools)})"))
    elif gates is not None and gates.pool in pools and (why := rail_rate_problem(gates.min_gbps_per_rail, pools[gates.pool].sku)):
        problems.append(FieldProblem("rdma.gates.min_gbps_per_rail", gates.min_gbps_per_rail, why))
    return problems


def training_problems(config: StackConfig, pools: dict[str, GpuNodePoolArgs]) -> list[FieldProblem]:
    """The training run against the stack: its pool is an RDMA pool, checkpoints have a store, Spot matches."""
    job = config.training
    if job is None:
        return []
    if job.pool not in pools:
        return [FieldProblem("training.pool", job.pool, no_such_pool(pools))]
    problems, pool = [], pools[job.pool]
    if config.rdma is None or job.pool not in config.rdma.pools:
        why = no_infiniband(pool, "the workers talk over InfiniBand")
        problems.append(
            FieldProblem("training.pool", job.pool, why or "the workers talk over InfiniBand: list the pool in rdma.pools")
        )
    if config.model_store is None:
        problems.append(FieldProblem("training", "set", "checkpoints go to the model store: add a model_store section"))
    if job.spot != pool.spot:
        why = f"must match gpu_pools[{job.pool}].spot ({str(pool.spot).lower()}): Spot workers tolerate the Spot taint"
        problems.append(FieldProblem("training.spot", job.spot, why))
    per_node = pool.sku.gpus
    serving = sum(math.ceil(m.replicas * m.tensor_parallel_size / per_node) for m in config.models if m.pool == job.pool)
    capacity = (pool.max_count if pool.autoscaling else pool.count) - serving
    if job.workers > capacity:
        why = f"pool {job.pool!r} has room for {capacity} worker nodes (its maximum, less {serving} for models)"
        problems.append(FieldProblem("training.workers", job.workers, why))
    return problems


def dynamo_problems(config: StackConfig, pools: dict[str, GpuNodePoolArgs]) -> list[FieldProblem]:
    """The Dynamo model against the stack: an RDMA pool with a node for every worker."""
    graph = config.dynamo
    if graph is None:
        return []
    if graph.pool not in pools:
        return [FieldProblem("dynamo.pool", graph.pool, no_such_pool(pools))]
    problems, pool = [], pools[graph.pool]
    if config.rdma is None or graph.pool not in config.rdma.pools:
        needs = "prefill workers hand KV caches to decode workers over InfiniBand (NIXL)"
        why = no_infiniband(pool, needs) or f"{needs}: list the pool in rdma.pools"
        problems.append(FieldProblem("dynamo.pool", graph.pool, why))
    per_node = pool.sku.gpus
    taken = sum(math.ceil(m.replicas * m.tensor_parallel_size / per_node) for m in config.models if m.pool == graph.pool)
    if config.training is not None and config.training.pool == graph.pool:
        taken += config.training.workers
    capacity = (pool.max_count if pool.autoscaling else pool.count) - taken
    workers = graph.prefill.replicas + graph.decode.replicas
    if workers > capacity:
        why = f"each worker takes a whole node; pool {graph.pool!r} has room for {capacity} (its maximum, less {taken} for other workloads)"
        problems.append(FieldProblem("dynamo.prefill.replicas + dynamo.decode.replicas", workers, why))
    return problems


def model_problems(config: StackConfig, where: str, model: ModelConfig, pools: dict[str, GpuNodePoolArgs]) -> list[FieldProblem]:
    """What one model asks of the rest of the stack: its pool, store, DRA, RDMA and metrics."""
    problems = []
    if model.pool not in pools:
        problems.append(FieldProblem(f"{where}.pool", model.pool, no_such_pool(pools)))
    if model.source == "blob":
        problems += _blob_problems(config, where, model)
    if model.gpu_access == "dra" and model.pool not in config.dra_pools():
        problems.append(FieldProblem(f"{where}.gpu_access", "dra", f"pool {model.pool!r} is not served by the dra section"))
    if model.rdma and (config.rdma is None or model.pool not in config.rdma.pools):
        why = no_infiniband(pools[model.pool], "RDMA serving needs InfiniBand") if model.pool in pools else None
        problems.append(FieldProblem(f"{where}.rdma", True, why or f"pool {model.pool!r} is not in rdma.pools"))
    if model.autoscaling and not config.cluster.managed_prometheus:
        why = "scales on managed Prometheus metrics: keep cluster.managed_prometheus on"
        problems.append(FieldProblem(f"{where}.autoscaling", "set", why))
    if model.pool in pools:
        problems += gpu_problems(where, model, pools[model.pool])
    return problems


def _blob_problems(config: StackConfig, where: str, model: ModelConfig) -> list[FieldProblem]:
    problems = []
    if config.model_store is None:
        problems.append(FieldProblem(f"{where}.source", "blob", "add a model_store section, or use source huggingface"))
    path = model.model_path or model.model
    problem = blob_path_problem(path)
    if problem:
        key = "model_path" if model.model_path else "model"
        problems.append(FieldProblem(f"{where}.{key}", path, f"as the weights' path in the model store: {problem}"))
    return problems


def driverless_pool_warnings(config: StackConfig) -> list[str]:
    """Pools created with ``driver: none`` that nothing in this stack gives a driver (the GPU Operator of the dra
    section installs one for the pools it serves, unless told not to): valid for a cluster whose own operator does,
    but otherwise their GPUs never appear, so the plan says so instead of passing in silence."""
    dra = config.dra
    served = set(config.dra_pools()) if dra is not None and dra.gpu_operator is not None and dra.gpu_operator.driver else set()
    return [
        f"gpu_pools[{index}] {pool.name} has driver: none and nothing in this stack installs its NVIDIA driver (a dra "
        "section whose gpu_operator installs drivers serves only the pools in dra.pools); its GPUs stay invisible "
        "until an operator you run yourself installs one: add the pool to dra.pools with dra.gpu_operator, or use "
        "driver: aks"
        for index, pool in enumerate(config.gpu_pools)
        if pool.driver == "none" and pool.name not in served
    ]
