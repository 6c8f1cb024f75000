"""Shared pieces for the component modules: the strict args base class, input validation and the
restricted container security context."""

from __future__ import annotations

from typing import Any, TypeVar

import pulumi
from pydantic import BaseModel, ConfigDict, ValidationError

from .errors import ConfigError, validation_problems

PACKAGE = "aks-gpu"
"""Type-token package of every component: ``aks-gpu:index:<Component>``."""


class StrictModel(BaseModel):
    """Plain-value args: unknown keys are errors, values are checked on assignment too."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, frozen=True)


class ComponentInputError(ConfigError, pulumi.RunError):
    """A ConfigError raised by a component; Pulumi prints RunError messages without a traceback."""


Args = TypeVar("Args", bound=BaseModel)


def validate_args(model: type[Args], args: Args | dict[str, Any] | None, component: str, name: str) -> Args:
    """Accept an args model or a plain dict and check it before any child resource exists."""
    if isinstance(args, model):
        return args
    try:
        return model.model_validate(args or {})
    except ValidationError as err:
        raise ComponentInputError(f"{component} {name!r}: invalid arguments", validation_problems(err)) from None


def fail(component: str, name: str, field: str, value: Any, problem: str) -> None:
    raise ComponentInputError(f"{component} {name!r}: invalid arguments", [f"{field}={value!r}: {problem}"])


def restricted_container() -> dict[str, Any]:
    """Container securityContext of the restricted Pod Security profile with a read-only root: a fresh
    dict per call, so callers may extend it."""
    return {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}, "readOnlyRootFilesystem": True}
