"""The typed stack configuration: everything a ``Pulumi.<stack>.yaml`` holds, validated once,
before the first resource is created.

Keys live in the project's config namespace (``aks-gpu-inference:cluster``, ...) and use the same
snake_case names as the component args, so one vocabulary serves stack files and Python.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import Field, ValidationError, model_validator

from ._base import StrictModel
from .aks_cluster import AksClusterArgs
from .device_plugin import NvidiaDevicePluginArgs
from .dra_device_classes import DraDeviceClassesArgs
from .errors import ConfigError, FieldProblem, validation_problems
from .gpu_node_pool import GpuNodePoolArgs
from .kaito_workspace import KaitoWorkspaceArgs
from .model_store import ModelStoreArgs
from .monitoring import ManagedPrometheusArgs
from .qualification_gates import QualificationGatesArgs
from .rdma_network import RdmaNetworkArgs
from .semantic_router_gateway import SemanticRouterGatewayArgs
from .vllm_service import VllmServiceArgs

PROJECT = "aks-gpu-inference"
SECRET_KEYS = {
    "vllm_api_key": "the key clients send to the model endpoints (pulumi config set --secret vllm_api_key ...)",
    "hf_token": "a Hugging Face token, for models with source huggingface (pulumi config set --secret hf_token ...)",
    "gateway_client_keys": 'API key per gateway client, a JSON object (pulumi config set --secret gateway_client_keys \'{"agent": "..."}\')',
}
"""Secrets the program reads with require_secret; they never enter the typed config."""


class ResourceGroupConfig(StrictModel):
    """The resource group that holds the cluster."""

    name: str = Field(pattern=r"^[-\w._()]{0,89}[-\w_()]$")
    """Resource group name (1-90 characters, not ending in a period). Required."""

    create: bool = True
    """Create the group. Default True; False uses an existing group of that name."""


class DraConfig(DraDeviceClassesArgs):
    """GPUs through Dynamic Resource Allocation (Kubernetes 1.34+)."""

    pools: list[str] | None = None
    """GPU pools whose GPUs DRA allocates. Default: every NVIDIA pool."""


class GatesConfig(QualificationGatesArgs):
    """Seed 004's qualification gates, opt-in; ``pool`` defaults to the first RDMA pool."""

    pool: str = ""


class RdmaConfig(RdmaNetworkArgs):
    """InfiniBand NICs through DRANET."""

    pools: list[str]
    """GPU pools that serve RDMA work; each needs ``rdma: true`` and an RDMA-capable size. Required."""

    gates: GatesConfig | None = None
    """Run the qualification gates on an RDMA pool. Default None (off)."""


class ModelConfig(VllmServiceArgs):
    """A model served by vLLM on one of the stack's GPU pools."""

    pool: str
    """Name of the GPU pool (in ``gpu_pools``) to run on. Required."""


class StackConfig(StrictModel):
    """One environment: where it runs, its cluster and its GPU pools."""

    location: str = Field(pattern=r"^[a-z0-9]+$")
    """Azure region name, e.g. ``eastus`` (lowercase, no spaces). Required."""

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

    tags: dict[str, str] = Field(default_factory=dict)
    """Azure tags applied to every resource that takes tags. Default none."""

    @model_validator(mode="after")
    def _unique_pools(self) -> StackConfig:
        seen = {self.cluster.system_pool.name}
        for index, pool in enumerate(self.gpu_pools):
            if pool.name in seen:
                raise FieldProblem(
                    f"gpu_pools[{index}].name", pool.name, "pool names must be unique in a cluster (the system pool counts too)"
                )
            seen.add(pool.name)
        return self

    @model_validator(mode="after")
    def _dra_and_rdma(self) -> StackConfig:
        pools = {p.name: p for p in self.gpu_pools}
        version = self.cluster.kubernetes_version
        for section, value in (("dra", self.dra), ("rdma", self.rdma)):
            if value is not None and version and tuple(int(x) for x in version.split(".")[:2]) < (1, 34):
                raise FieldProblem(
                    "cluster.kubernetes_version",
                    version,
                    f"{section} uses resource.k8s.io/v1, which needs Kubernetes 1.34 or later",
                )
        if self.dra is not None:
            for name in self.dra.pools or []:
                if name not in pools:
                    raise FieldProblem("dra.pools", name, f"no such GPU pool; pools: {', '.join(pools) or 'none'}")
        if self.rdma is not None:
            for name in self.rdma.pools:
                if name not in pools:
                    raise FieldProblem("rdma.pools", name, f"no such GPU pool; pools: {', '.join(pools) or 'none'}")
                if not pools[name].rdma:
                    raise FieldProblem(
                        "rdma.pools",
                        name,
                        f"set gpu_pools[].rdma: true on {name!r} so it is labelled and checked as an RDMA pool",
                    )
            gates = self.rdma.gates
            if gates is not None and gates.pool and gates.pool not in self.rdma.pools:
                raise FieldProblem("rdma.gates.pool", gates.pool, f"not one of rdma.pools ({', '.join(self.rdma.pools)})")
        return self

    @model_validator(mode="after")
    def _models(self) -> StackConfig:
        pools = {p.name for p in self.gpu_pools}
        names: set[str] = set()
        for index, model in enumerate(self.models):
            where = f"models[{index}]"
            if model.name in names:
                raise FieldProblem(f"{where}.name", model.name, "model names must be unique")
            names.add(model.name)
            if model.pool not in pools:
                raise FieldProblem(f"{where}.pool", model.pool, f"no such GPU pool; pools: {', '.join(sorted(pools)) or 'none'}")
            if model.source == "blob" and self.model_store is None:
                raise FieldProblem(f"{where}.source", "blob", "add a model_store section, or use source huggingface")
            if model.gpu_access == "dra" and model.pool not in self.dra_pools():
                raise FieldProblem(f"{where}.gpu_access", "dra", f"pool {model.pool!r} is not served by the dra section")
            if model.rdma and (self.rdma is None or model.pool not in self.rdma.pools):
                raise FieldProblem(f"{where}.rdma", True, f"pool {model.pool!r} is not in rdma.pools")
            if model.autoscaling and not self.cluster.managed_prometheus:
                raise FieldProblem(
                    f"{where}.autoscaling", "set", "scales on managed Prometheus metrics: keep cluster.managed_prometheus on"
                )
        if self.gateway is not None and not self.models:
            raise FieldProblem("gateway", "set", "routes to self-hosted models: add at least one entry to models")
        if self.kaito and not self.cluster.kaito:
            raise FieldProblem(
                "cluster.kaito", False, "the kaito section needs the AI toolchain operator add-on: set cluster.kaito true"
            )
        return self

    def dra_pools(self) -> list[str]:
        if self.dra is None:
            return []
        return self.dra.pools if self.dra.pools is not None else [p.name for p in self.gpu_pools if p.sku.gpu_vendor == "nvidia"]


def _decode(value: str) -> Any:
    # Pulumi passes structured config values as JSON text and scalars as plain strings.
    if value[:1] in "{[":
        return json.loads(value)
    if re.fullmatch(r"true|false", value):
        return value == "true"
    return value


def parse_stack_config(raw: dict[str, Any], source: str = "stack configuration") -> StackConfig:
    """Validate a mapping of this project's config keys (without the ``aks-gpu-inference:`` prefix)."""
    try:
        return StackConfig.model_validate(raw)
    except ValidationError as err:
        raise ConfigError(f"{source} is invalid", validation_problems(err)) from None


def config_from_env(all_config: dict[str, str], project: str = PROJECT) -> dict[str, Any]:
    """Pick this project's keys out of the engine's flat ``project:key -> text`` config map."""
    prefix = f"{project}:"
    return {
        key[len(prefix) :]: _decode(value)
        for key, value in all_config.items()
        if key.startswith(prefix) and key[len(prefix) :] not in SECRET_KEYS
    }
