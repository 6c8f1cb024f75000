"""Cross-field checks of the typed stack configuration that need more than one section: a model's GPUs
against its pool, full-node engines against the pool's nodes, the names the gateway routes by, the models' fallbacks
and the pools' zones against the region's.

Each returns ``FieldProblem``s with the full key path (``models[0].tensor_parallel_size``), so that
``StackConfig`` reports them all at once, before any resource is created.
"""

from __future__ import annotations

from typing import Any

from ..azure.gpu_node_pool import GpuNodePoolArgs
from ..core import regions
from ..core.errors import FieldProblem
from ..gateway import router_config
from ..serving.vllm_service import VllmServiceArgs


def gpu_problems(where: str, model: VllmServiceArgs, pool: GpuNodePoolArgs) -> list[FieldProblem]:
    """A replica's tensor-parallel GPUs against its pool's nodes and the model's attention heads."""
    tp, sku, field = model.tensor_parallel_size, pool.sku, f"{where}.tensor_parallel_size"
    on = f"pool {pool.name!r} ({pool.vm_size})"
    if pool.mig_profile and tp != 1:
        return [
            FieldProblem(field, tp, f"{on} serves MIG slices ({pool.mig_profile}); a slice cannot join tensor parallelism: use 1")
        ]
    if not pool.mig_profile and tp > sku.gpus:
        gpus = f"{sku.gpus} GPU{'s' * (sku.gpus != 1)}"
        return [FieldProblem(field, tp, f"{on} has {gpus} per node and a replica's GPUs share one node: use at most {sku.gpus}")]
    try:
        facts = model.facts()
    except ValueError as err:
        return [FieldProblem(f"{where}.model", model.model, str(err).replace("\n", " "))]
    problem = facts.tp_problem(tp)
    if problem:
        limit = 1 if pool.mig_profile else sku.gpus
        fitting = [str(t) for t in range(1, limit + 1) if not facts.tp_problem(t)]
        accepted = " or ".join(", ".join(fitting).rsplit(", ", 1)) or "none"
        return [FieldProblem(field, tp, f"{problem}; accepted for {model.model} on {on}: {accepted}")]
    return []


def full_node_problems(models: list[VllmServiceArgs], pools: dict[str, GpuNodePoolArgs]) -> list[FieldProblem]:
    """Disaggregated prefill and decode engines each take a whole node and never share one (seed 004):
    a pool must have a node for every engine of every such model it serves."""
    problems, taken = [], dict.fromkeys(pools, 0)
    for index, model in enumerate(models):
        if model.disaggregation is None or model.pool not in pools:
            continue
        pool, split = pools[model.pool], model.disaggregation
        engines = split.prefill_replicas + split.decode_replicas
        taken[model.pool] += engines
        nodes = pool.max_count if pool.autoscaling else pool.count
        if taken[model.pool] > nodes:
            others = taken[model.pool] - engines
            besides = f" besides the {others} of the models before it" if others else ""
            bound = f"max_count {pool.max_count}" if pool.autoscaling else f"count {pool.count}"
            problems.append(
                FieldProblem(
                    f"models[{index}].disaggregation.prefill_replicas + models[{index}].disaggregation.decode_replicas",
                    engines,
                    f"each engine takes a whole node of pool {pool.name!r} and no two share one, so they need {engines} "
                    f"nodes{besides}; the pool has at most {nodes} ({bound}): raise it to {taken[model.pool]}, or lower "
                    "prefill_replicas/decode_replicas",
                )
            )
    return problems


def gateway_name_problems(config: Any) -> list[FieldProblem]:
    """The gateway routes by model name (a ``StackConfig`` with a gateway): every name it serves must be
    unique across self-hosted models, KAITO presets and Azure OpenAI deployments and not one that asks the
    router to choose (and a model's served name must be one the router accepts), and the gateway's
    ``default_model`` and decisions must name one of them."""
    named = [
        (f"models[{i}].served_model_name", m.served_model_name or m.model, m.served_model_name is None)
        for i, m in enumerate(config.models)
    ]
    if config.dynamo is not None:
        d = config.dynamo
        named.append(("dynamo.served_model_name", d.served_model_name or d.model, d.served_model_name is None))
    named += [(f"kaito[{i}].preset", w.preset, False) for i, w in enumerate(config.kaito)]
    gateway = config.gateway
    named += [
        (f"gateway.azure_openai.deployments[{i}].name", d.name, False) for i, d in enumerate(gateway.azure_openai.deployments)
    ]
    problems, first = [], {}
    for where, name, defaulted in named:
        default = " (the default: the model id)" if defaulted else ""
        if name in router_config.auto_model_names():
            problems.append(FieldProblem(where, name, "reserved: clients send this name to let the router choose"))
        elif where.startswith(("models[", "dynamo.")) and not router_config.MODEL_NAME.match(name):
            hint = " (the default: the model id; set served_model_name)" if defaulted else ""
            problems.append(
                FieldProblem(
                    where, name, f"routed model names are lower-case letters, digits, '.', '_' or '-'{hint}, e.g. 'llama-8b'"
                )
            )
        elif name in first:
            problems.append(
                FieldProblem(
                    where,
                    name,
                    f"{first[name]} already serves this name{default}; the gateway routes by it, so give each model "
                    "its own served_model_name",
                )
            )
        first.setdefault(name, where)
    served = ", ".join(sorted(first)) or "none"
    if gateway.default_model is not None and gateway.default_model not in first:
        problems.append(
            FieldProblem("gateway.default_model", gateway.default_model, f"not a model the gateway serves ({served})")
        )
    for i, decision in enumerate(gateway.decisions or []):
        if decision.model not in first:
            problems.append(
                FieldProblem(f"gateway.decisions[{i}].model", decision.model, f"not a model the gateway serves ({served})")
            )
    return problems


def name_clash_problems(config: Any) -> list[FieldProblem]:
    """Two workloads that would make objects of the same name in one namespace: a model's Service and Deployment
    (its ``name``), a KAITO workspace and its Service (its ``name``), Dynamo's graph and the Services its operator
    makes (``<name>``, ``<name>-frontend``, ``-prefill``, ``-decode``). The second would overwrite the first, or
    ``pulumi up`` fails on an object that already exists; the same KAITO entry twice is one such clash."""
    from ..core.endpoints import dynamo_component_service
    from ..serving.dynamo_manifests import COMPONENTS

    taken: dict[tuple[str, str], str] = {}
    problems = []

    def take(namespace: str, names: list[str], where: str, value: str) -> None:
        for name in names:
            owner = taken.setdefault((namespace, name), where)
            if owner != where:
                why = f"{owner} already makes {name!r} in namespace {namespace!r}: give one of them another name or namespace"
                problems.append(FieldProblem(f"{where}.name", value, why))
                return

    for index, model in enumerate(config.models):
        if model.name not in [m.name for m in config.models[:index]]:  # a repeated model name is refused on its own
            take(model.namespace, [model.name], f"models[{index}]", model.name)
    for index, workspace in enumerate(config.kaito):
        take(workspace.namespace, [workspace.name], f"kaito[{index}]", workspace.name)
    if config.dynamo is not None and config.rdma is not None:
        graph = config.dynamo.name
        names = [graph, *(dynamo_component_service(graph, c) for c in COMPONENTS.values())]
        take(config.rdma.namespace, names, "dynamo", graph)
    return problems


def rack_problems(config: Any) -> list[FieldProblem]:
    """Rack-scale RDMA pools (ND GB200/GB300 v6) against the rest of the stack: NVLink across their nodes comes from a
    ComputeDomain of the NVIDIA DRA driver, which the dra section installs for the pools it serves."""
    if config.rdma is None:
        return []
    pools = {p.name: p for p in config.gpu_pools}
    served = config.dra_pools()
    problems = []
    for name in config.rdma.pools:
        pool = pools.get(name)
        if pool is not None and pool.sku.rack_size and name not in served:
            why = (
                f"{name} is a rack-scale pool ({pool.vm_size}): its NVLink across nodes is a ComputeDomain of the NVIDIA "
                "DRA driver, which the dra section installs for the pools it serves; add a dra section (or list the pool "
                "in dra.pools)"
            )
            problems.append(FieldProblem("rdma.pools", name, why))
    return problems


def fallback_problems(config: Any) -> list[FieldProblem]:
    """Each ``models[].fallback`` (a ``StackConfig``) names another model the gateway serves, one it can fall back to:
    not the model itself, and not a prefill/decode model (its InferencePool cannot share a route rule)."""
    wanting = [(i, m) for i, m in enumerate(config.models) if m.fallback is not None]
    if not wanting:
        return []
    if config.gateway is None:
        why = "the gateway sends calls to the fallback: add a gateway section, or drop fallback"
        return [FieldProblem(f"models[{i}].fallback", m.fallback, why) for i, m in wanting]
    pools = {m.served_model_name or m.model for m in config.models if m.disaggregation}
    served = {m.served_model_name or m.model for m in config.models} | {w.preset for w in config.kaito}
    served |= {d.name for d in config.gateway.azure_openai.deployments}
    if config.dynamo is not None:
        served.add(config.dynamo.served_model_name or config.dynamo.model)
    problems = []
    for i, model in wanting:
        name, where = model.served_model_name or model.model, f"models[{i}].fallback"
        if model.fallback == name:
            problems.append(FieldProblem(where, model.fallback, "a model cannot fall back to itself: name another model"))
        elif model.fallback not in served:
            problems.append(FieldProblem(where, model.fallback, f"not a model the gateway serves ({', '.join(sorted(served))})"))
        elif model.fallback in pools:
            why = (
                "that model is served prefill/decode through an InferencePool, which AI Gateway v1.1.0 cannot put beside "
                "another backend in one route rule: fall back to an Azure OpenAI deployment or an aggregated model"
            )
            problems.append(FieldProblem(where, model.fallback, why))
    return problems


def zone_problems(config: Any) -> list[FieldProblem]:
    """Every pool's ``availability_zones`` (a ``StackConfig``'s system, platform and GPU pools) against the zones its
    region has (``core/regions.py``, from Azure's ListLocations answer): AKS refuses a zone the region lacks, after the
    cluster or pool has started to be created. A region the data does not know is left to Azure."""
    region = regions.get(config.location)
    if region is None:
        return []
    cluster = config.cluster
    pools = [("cluster.system_pool", cluster.system_pool)]
    pools += [("cluster.platform_pool", cluster.platform_pool)] if cluster.platform_pool is not None else []
    pools += [(f"gpu_pools[{i}]", pool) for i, pool in enumerate(config.gpu_pools)]
    if region.zones:
        accepted = f"{region.name} has zones {', '.join(region.zones)}"
    else:
        accepted = f"{region.name} has no availability zones: leave availability_zones out (or pick a region with zones)"
    problems = []
    for where, pool in pools:
        wrong = [zone for zone in pool.availability_zones if zone not in region.zones]
        if wrong:
            why = f"{accepted} ({regions.source()})"
            problems.append(FieldProblem(f"{where}.availability_zones", wrong, why))
    return problems
