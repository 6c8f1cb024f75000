"""The typed stack configuration: everything a ``Pulumi.<stack>.yaml`` holds, validated once,
before the first resource is created.

Keys live in the project's config namespace (``aks-gpu-inference:cluster``, ...) and use the same
snake_case names as the component args, so one vocabulary serves stack files and Python.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import pulumi
from pydantic import Field, ValidationError, field_validator, model_validator

from .._base import ComponentInputError, StrictModel
from ..azure.aks_cluster import AksClusterArgs
from ..azure.gpu_node_pool import GpuNodePoolArgs
from ..azure.model_store import ModelStoreArgs, blob_path_problem
from ..azure.monitoring import ManagedPrometheusArgs
from ..core import catalog
from ..core.errors import ConfigError, FieldProblem, FieldProblems, validation_problems
from ..gateway.semantic_router_gateway import SemanticRouterGatewayArgs
from ..gpu import dra_api
from ..gpu.device_plugin import NvidiaDevicePluginArgs
from ..gpu.dra_device_classes import DraDeviceClassesArgs
from ..gpu.qualification_gates import QualificationGatesArgs, rail_rate_problem
from ..gpu.rdma_network import RdmaNetworkArgs
from ..serving.dynamo_args import DynamoInferenceArgs
from ..serving.kaito_workspace import KaitoWorkspaceArgs
from ..serving.vllm_service import VllmServiceArgs
from ..training.distributed_training_args import DistributedTrainingArgs
from .config_checks import (
    fallback_problems,
    full_node_problems,
    gateway_name_problems,
    gpu_problems,
    name_clash_problems,
    rack_problems,
    zone_problems,
)
from .idle_keys import idle_key_problems
from .stack_input import SECRET_KEYS, plain_credential_problems, region_problem, stack_problems, typo_secret_keys

PROJECT = "aks-gpu-inference"


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


MAX_TAGS = 50
"""Tag name/value pairs Azure accepts per resource (Azure Resource Manager "Use tags": limitations); the stack adds
``managed-by`` to the user's."""
MAX_TAG_NAME = 128
"""Tag name length: 512 characters, but 128 for storage accounts, which the stack creates (same page)."""
MAX_TAG_VALUE = 256
FORBIDDEN_TAG_NAME = set("<>%&\\?/")
"""Characters a tag name may not contain (same page)."""


def tag_problems(tags: dict[str, str]) -> list[str]:
    """What Azure would refuse at ``pulumi up`` in the stack's tags, each naming the tag."""
    problems = []
    if len(tags) > MAX_TAGS - 1:
        problems.append(f"{len(tags)} tags: Azure takes at most {MAX_TAGS} per resource, and the stack adds managed-by")
    for name, value in tags.items():
        if len(name) > MAX_TAG_NAME:
            problems.append(f"tag {name[:40]!r}...: names are at most {MAX_TAG_NAME} characters on storage accounts")
        if FORBIDDEN_TAG_NAME & set(name):
            bad = "".join(sorted(FORBIDDEN_TAG_NAME & set(name)))
            problems.append(f"tag {name!r}: Azure refuses tag names with any of {bad!r}")
        if len(value) > MAX_TAG_VALUE:
            problems.append(f"tag {name!r}: its value has {len(value)} characters, Azure takes at most {MAX_TAG_VALUE}")
    return problems


class StackConfig(StrictModel):
    """One environment: where it runs, its cluster and its GPU pools."""

    location: str
    """Azure region name, e.g. ``eastus`` (lowercase, no spaces; ``components/stack/azure_regions.json``). Required."""

    resource_group: ResourceGroupConfig
    """Resource group for the cluster. Required."""

    cluster: AksClusterArgs
    """The AKS cluster (or an existing one). Required."""

    gpu_pools: list[GpuNodePoolArgs] = Field(default_factory=list)
    """GPU node pools, one separate AKS agent pool each. Default none."""

    device_plugin: NvidiaDevicePluginArgs = Field(default_factory=NvidiaDevicePluginArgs)
    """The NVIDIA device plugin, deployed on NVIDIA pools that AKS drives and DRA does not serve."""

    dra: DraConfig | None = None
    """DRA GPU device classes and claim templates. Default None (GPUs through the device plugin)."""

    rdma: RdmaConfig | None = None
    """RDMA networking for ND pools. Default None."""

    prometheus: ManagedPrometheusArgs | None = None
    """The Azure Monitor workspace managed Prometheus ships to. Default: a new workspace named
    ``<cluster>-prometheus`` when ``cluster.managed_prometheus`` is on."""

    model_store: ModelStoreArgs | None = None
    """Blob storage for model weights (keyless). Default None; needed by models with source blob."""

    models: list[ModelConfig] = Field(default_factory=list)
    """Models served by vLLM. Default none."""

    kaito: list[KaitoWorkspaceArgs] = Field(default_factory=list)
    """KAITO preset models, one Workspace each (needs cluster.kaito). Default none."""

    gateway: SemanticRouterGatewayArgs | None = None
    """One OpenAI-compatible endpoint with a semantic router in front of ``models`` and Azure OpenAI.
    Default None."""

    training: TrainingConfig | None = None
    """One distributed training run on an RDMA pool (KubeRay; one per cluster, since the operator owns the
    cluster-wide ray.io CRDs). Default None."""

    dynamo: DynamoConfig | None = None
    """One model served by NVIDIA Dynamo on an RDMA pool, routable by the gateway (one per cluster: the
    Dynamo operator runs cluster-wide). Default None."""

    tags: dict[str, str] = Field(default_factory=dict)
    """Azure tags applied to every resource that takes tags. Default none."""

    @field_validator("tags")
    @classmethod
    def _check_tags(cls, tags: dict[str, str]) -> dict[str, str]:
        problems = tag_problems(tags)
        if problems:
            raise ValueError("; ".join(problems))
        return tags

    @field_validator("location")
    @classmethod
    def _check_location(cls, value: str) -> str:
        problem = region_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    @model_validator(mode="after")
    def _unique_pools(self) -> StackConfig:
        problems, seen = [], {self.cluster.system_pool.name}
        for index, pool in enumerate(self.gpu_pools):
            if pool.name in seen:
                problems.append(
                    FieldProblem(
                        f"gpu_pools[{index}].name",
                        pool.name,
                        "pool names must be unique in a cluster (the system pool counts too)",
                    )
                )
            seen.add(pool.name)
        if self.cluster.existing is None:  # an existing cluster's pools are not created here
            system, platform = self.cluster.system_pool, self.cluster.platform_pool
            for where, vm_size, is_system in (
                ("cluster.system_pool.vm_size", system.vm_size, True),
                ("cluster.platform_pool.vm_size", platform.vm_size if platform else None, False),
            ):
                problem = catalog.node_size_problem(vm_size, system=is_system) if vm_size else None
                if problem:
                    problems.append(FieldProblem(where, vm_size, problem))
        _raise(problems)
        return self

    @model_validator(mode="after")
    def _dra_and_rdma(self) -> StackConfig:
        _raise(self._version_problems() + self._section_pool_problems() + rack_problems(self) + zone_problems(self))
        return self

    def _version_problems(self) -> list[FieldProblem]:
        version = self.cluster.kubernetes_version
        if not dra_api.too_old(version):
            return []
        why = f"uses {dra_api.version_advice()}"
        return [
            FieldProblem("cluster.kubernetes_version", version, f"{section} {why}")
            for section, value in (("dra", self.dra), ("rdma", self.rdma))
            if value is not None
        ]

    @staticmethod
    def _no_infiniband(pool: GpuNodePoolArgs, needs: str) -> str | None:
        """The root cause, when it is one: the pool's size has no InfiniBand, so listing it in rdma.pools (the
        next step the other advice leads to) would only be refused for the size."""
        if catalog.is_rdma_capable(pool.vm_size):
            return None
        return (
            f"{needs}, and pool {pool.name!r} is {pool.vm_size}, which has no InfiniBand: use a pool of an RDMA size "
            f"({', '.join(catalog.rdma_sizes())})"
        )

    def _section_pool_problems(self) -> list[FieldProblem]:
        pools = {p.name: p for p in self.gpu_pools}
        listing = f"no such GPU pool; pools: {', '.join(pools) or 'none'}"
        problems = [FieldProblem("dra.pools", n, listing) for n in (self.dra.pools or [] if self.dra else []) if n not in pools]
        if self.rdma is None:
            return problems
        for name in self.rdma.pools:
            if name not in pools:
                problems.append(FieldProblem("rdma.pools", name, listing))
            elif why := self._no_infiniband(pools[name], "the RDMA network needs InfiniBand"):
                # The root cause first: "set rdma: true" would only lead to the size's own refusal.
                problems.append(FieldProblem("rdma.pools", name, why))
            elif not pools[name].rdma:
                why = f"set gpu_pools[].rdma: true on {name!r} so it is labelled and checked as an RDMA pool"
                problems.append(FieldProblem("rdma.pools", name, why))
        gates = self.rdma.gates
        if gates is not None and gates.pool and gates.pool not in self.rdma.pools:
            problems.append(FieldProblem("rdma.gates.pool", gates.pool, f"not one of rdma.pools ({', '.join(self.rdma.pools)})"))
        elif (
            gates is not None
            and gates.pool in pools
            and (why := rail_rate_problem(gates.min_gbps_per_rail, pools[gates.pool].sku))
        ):
            problems.append(FieldProblem("rdma.gates.min_gbps_per_rail", gates.min_gbps_per_rail, why))
        return problems

    @model_validator(mode="after")
    def _models(self) -> StackConfig:
        pools = {p.name: p for p in self.gpu_pools}
        problems: list[FieldProblem] = []
        names: set[str] = set()
        for index, model in enumerate(self.models):
            where = f"models[{index}]"
            if model.name in names:
                problems.append(FieldProblem(f"{where}.name", model.name, "model names must be unique"))
            names.add(model.name)
            problems += self._model_problems(where, model, pools)
        problems += full_node_problems(self.models, pools)
        problems += name_clash_problems(self)
        problems += self._section_problems()
        problems += self._training_problems(pools) + self._dynamo_problems(pools) + idle_key_problems(self)
        _raise(problems)
        return self

    def _training_problems(self, pools: dict[str, GpuNodePoolArgs]) -> list[FieldProblem]:
        """The training run against the stack: its pool is an RDMA pool, checkpoints have a store, Spot matches."""
        job = self.training
        if job is None:
            return []
        if job.pool not in pools:
            return [FieldProblem("training.pool", job.pool, f"no such GPU pool; pools: {', '.join(sorted(pools)) or 'none'}")]
        problems, pool = [], pools[job.pool]
        if self.rdma is None or job.pool not in self.rdma.pools:
            why = self._no_infiniband(pool, "the workers talk over InfiniBand")
            problems.append(
                FieldProblem("training.pool", job.pool, why or "the workers talk over InfiniBand: list the pool in rdma.pools")
            )
        if self.model_store is None:
            problems.append(FieldProblem("training", "set", "checkpoints go to the model store: add a model_store section"))
        if job.spot != pool.spot:
            why = f"must match gpu_pools[{job.pool}].spot ({str(pool.spot).lower()}): Spot workers tolerate the Spot taint"
            problems.append(FieldProblem("training.spot", job.spot, why))
        per_node = pool.sku.gpus
        serving = sum(math.ceil(m.replicas * m.tensor_parallel_size / per_node) for m in self.models if m.pool == job.pool)
        capacity = (pool.max_count if pool.autoscaling else pool.count) - serving
        if job.workers > capacity:
            why = f"pool {job.pool!r} has room for {capacity} worker nodes (its maximum, less {serving} for models)"
            problems.append(FieldProblem("training.workers", job.workers, why))
        return problems

    def _dynamo_problems(self, pools: dict[str, GpuNodePoolArgs]) -> list[FieldProblem]:
        """The Dynamo model against the stack: an RDMA pool with a node for every worker."""
        graph = self.dynamo
        if graph is None:
            return []
        if graph.pool not in pools:
            return [FieldProblem("dynamo.pool", graph.pool, f"no such GPU pool; pools: {', '.join(sorted(pools)) or 'none'}")]
        problems, pool = [], pools[graph.pool]
        if self.rdma is None or graph.pool not in self.rdma.pools:
            needs = "prefill workers hand KV caches to decode workers over InfiniBand (NIXL)"
            why = self._no_infiniband(pool, needs) or f"{needs}: list the pool in rdma.pools"
            problems.append(FieldProblem("dynamo.pool", graph.pool, why))
        per_node = pool.sku.gpus
        taken = sum(math.ceil(m.replicas * m.tensor_parallel_size / per_node) for m in self.models if m.pool == graph.pool)
        if self.training is not None and self.training.pool == graph.pool:
            taken += self.training.workers
        capacity = (pool.max_count if pool.autoscaling else pool.count) - taken
        workers = graph.prefill.replicas + graph.decode.replicas
        if workers > capacity:
            why = f"each worker takes a whole node; pool {graph.pool!r} has room for {capacity} (its maximum, less {taken} for other workloads)"
            problems.append(FieldProblem("dynamo.prefill.replicas + dynamo.decode.replicas", workers, why))
        return problems

    def _model_problems(self, where: str, model: ModelConfig, pools: dict[str, GpuNodePoolArgs]) -> list[FieldProblem]:
        """What one model asks of the rest of the stack: its pool, store, DRA, RDMA and metrics."""
        problems = []
        if model.pool not in pools:
            choices = ", ".join(sorted(pools)) or "none"
            problems.append(FieldProblem(f"{where}.pool", model.pool, f"no such GPU pool; pools: {choices}"))
        if model.source == "blob":
            problems += self._blob_problems(where, model)
        if model.gpu_access == "dra" and model.pool not in self.dra_pools():
            problems.append(FieldProblem(f"{where}.gpu_access", "dra", f"pool {model.pool!r} is not served by the dra section"))
        if model.rdma and (self.rdma is None or model.pool not in self.rdma.pools):
            why = self._no_infiniband(pools[model.pool], "RDMA serving needs InfiniBand") if model.pool in pools else None
            problems.append(FieldProblem(f"{where}.rdma", True, why or f"pool {model.pool!r} is not in rdma.pools"))
        if model.autoscaling and not self.cluster.managed_prometheus:
            why = "scales on managed Prometheus metrics: keep cluster.managed_prometheus on"
            problems.append(FieldProblem(f"{where}.autoscaling", "set", why))
        if model.pool in pools:
            problems += gpu_problems(where, model, pools[model.pool])
        return problems

    def _blob_problems(self, where: str, model: ModelConfig) -> list[FieldProblem]:
        problems = []
        if self.model_store is None:
            problems.append(FieldProblem(f"{where}.source", "blob", "add a model_store section, or use source huggingface"))
        path = model.model_path or model.model
        problem = blob_path_problem(path)
        if problem:
            key = "model_path" if model.model_path else "model"
            problems.append(FieldProblem(f"{where}.{key}", path, f"as the weights' path in the model store: {problem}"))
        return problems

    def _section_problems(self) -> list[FieldProblem]:
        """The gateway and KAITO sections against the rest of the stack."""
        problems = fallback_problems(self) + (gateway_name_problems(self) if self.gateway is not None else [])
        if self.gateway is not None and not self.models and self.dynamo is None:
            why = "routes to self-hosted models: add at least one entry to models, or a dynamo section"
            problems.append(FieldProblem("gateway", "set", why))
        if self.kaito and not self.cluster.kaito:
            why = "the kaito section needs the AI toolchain operator add-on: set cluster.kaito true"
            problems.append(FieldProblem("cluster.kaito", False, why))
        return problems

    def dra_pools(self) -> list[str]:
        if self.dra is None:
            return []
        if self.dra.pools is not None:
            return self.dra.pools
        # Every NVIDIA pool whose GPUs AKS does not already advertise itself (managed GPU pools).
        return [p.name for p in self.gpu_pools if p.sku.gpu_vendor == "nvidia" and p.gpu_management != "managed"]


def _raise(problems: list[FieldProblem]) -> None:
    """Report every problem a validator found, not only the first."""
    if len(problems) == 1:
        raise problems[0]
    if problems:
        raise FieldProblems(problems)


def _decode(value: str) -> Any:
    # Pulumi passes structured config values as JSON text and scalars as plain strings.
    if value[:1] and value[:1] in "{[":
        try:
            return json.loads(value)
        except ValueError:
            return value  # not JSON after all: the typed config says what the key expects
    if re.fullmatch(r"true|false", value):
        return value == "true"
    return value


def parse_stack_config(raw: dict[str, Any], source: str = "stack configuration") -> StackConfig:
    """Validate a mapping of this project's config keys (without the ``aks-gpu-inference:`` prefix)."""
    typos = typo_secret_keys(raw, StackConfig.model_fields)
    problems = [
        f"{key}: unknown key; did you mean the secret {secret!r}? Its value is not shown here; store it encrypted "
        f"under that name: pulumi config set --secret {secret} ..."
        for key, secret in typos.items()
    ]
    try:
        config = StackConfig.model_validate({k: v for k, v in raw.items() if k not in typos})
    except ValidationError as err:
        problems += validation_problems(err, model=StackConfig)
    problems += plain_credential_problems(raw, problems)
    if problems:
        raise ConfigError(f"{source} is invalid", problems)
    return config


def config_from_env(all_config: dict[str, str], project: str = PROJECT, secret_keys: list[str] | None = None) -> dict[str, Any]:
    """Pick this project's keys out of the engine's flat ``project:key -> text`` config map.

    First refuses what the typed config cannot see (``stack_input.stack_problems``): a secret written
    in plain text and an ``azure-native:location`` that is not the stack's region. ``secret_keys``
    defaults to the keys the engine marks secret (``PULUMI_CONFIG_SECRET_KEYS``).
    """
    if secret_keys is None:
        secret_keys = pulumi.runtime.config.get_config_secret_keys_env()
    prefix = f"{project}:"
    raw = {
        key[len(prefix) :]: _decode(value)
        for key, value in all_config.items()
        if key.startswith(prefix) and key[len(prefix) :] not in SECRET_KEYS
    }
    problems = stack_problems(all_config, project, secret_keys)
    if problems:
        try:
            source = f"Pulumi.{pulumi.get_stack()}.yaml"
        except Exception:  # outside a Pulumi program
            source = "the stack configuration"
        try:  # report the typed config's problems too, point by point
            parse_stack_config(raw, source)
        except ConfigError as err:
            problems += err.problems
        raise ComponentInputError(f"{source} is invalid", problems)
    return raw
