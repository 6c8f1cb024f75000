"""The typed stack configuration: everything a ``Pulumi.<stack>.yaml`` holds, validated once,
before the first resource is created. Its own sections (``ModelConfig``, ``RdmaConfig``, ...) are
in ``config_sections``, the checks across sections in ``config_checks`` and ``pool_checks``.

Keys live in the project's config namespace (``aks-gpu-inference:cluster``, ...) and use the same
snake_case names as the component args, so one vocabulary serves stack files and Python.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pulumi
from pydantic import Field, ValidationError, field_validator, model_validator

from .._base import ComponentInputError, StrictModel
from ..azure.aks_cluster import AksClusterArgs
from ..azure.gpu_node_pool import GpuNodePoolArgs
from ..azure.model_store import ModelStoreArgs
from ..azure.monitoring import ManagedPrometheusArgs
from ..core import catalog
from ..core.errors import ConfigError, FieldProblem, FieldProblems, validation_problems
from ..gateway.semantic_router_gateway import SemanticRouterGatewayArgs
from ..gpu import dra_api
from ..gpu.device_plugin import NvidiaDevicePluginArgs
from ..serving.kaito_workspace import KaitoWorkspaceArgs
from .config_checks import (
    fallback_problems,
    full_node_problems,
    gateway_name_problems,
    name_clash_problems,
    rack_problems,
    zone_problems,
)
from .config_sections import DraConfig, DynamoConfig, ModelConfig, RdmaConfig, ResourceGroupConfig, TrainingConfig
from .idle_keys import idle_key_problems
from .pool_checks import dynamo_problems, model_problems, section_pool_problems, training_problems
from .stack_input import SECRET_KEYS, plain_credential_problems, region_problem, stack_problems, typo_secret_keys

PROJECT = "aks-gpu-inference"


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
        _raise(self._version_problems() + section_pool_problems(self) + rack_problems(self) + zone_problems(self))
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
            problems += model_problems(self, where, model, pools)
        problems += full_node_problems(self.models, pools)
        problems += name_clash_problems(self)
        problems += self._section_problems()
        problems += training_problems(self, pools) + dynamo_problems(self, pools) + idle_key_problems(self)
        _raise(problems)
        return self

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
