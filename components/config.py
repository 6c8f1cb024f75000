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
from .errors import ConfigError, FieldProblem, validation_problems
from .gpu_node_pool import GpuNodePoolArgs

PROJECT = "aks-gpu-inference"


class ResourceGroupConfig(StrictModel):
    """The resource group that holds the cluster."""

    name: str = Field(pattern=r"^[-\w._()]{0,89}[-\w_()]$")
    """Resource group name (1-90 characters, not ending in a period). Required."""

    create: bool = True
    """Create the group. Default True; False uses an existing group of that name."""


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
    return {key[len(prefix) :]: _decode(value) for key, value in all_config.items() if key.startswith(prefix)}
