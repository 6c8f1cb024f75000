"""Shared pieces for the component modules: the strict args base class, input validation and the
restricted container security context."""

from __future__ import annotations

from typing import Any, TypeVar

import pulumi
from pydantic import BaseModel, ConfigDict, ValidationError

from .core.errors import ConfigError, shown, validation_problems

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
    raise ComponentInputError(f"{component} {name!r}: invalid arguments", [f"{field}={shown(value)}: {problem}"])


def restricted_container() -> dict[str, Any]:
    """Container securityContext of the restricted Pod Security profile with a read-only root: a fresh
    dict per call, so callers may extend it."""
    return {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}, "readOnlyRootFilesystem": True}


class Children:
    """Hands a component's children what they must wait for: the parent, the provider, the
    component's own ``depends_on`` (Pulumi does not pass it down to children) and per child
    whatever else comes first (its namespace, the chart that ships its CRD)."""

    def __init__(
        self, parent: pulumi.Resource, opts: pulumi.ResourceOptions | None, provider: pulumi.ProviderResource | None = None
    ):
        self.parent = parent
        self.provider = provider
        depends = opts.depends_on if opts else None
        self.waits: list[Any] = list(depends) if isinstance(depends, (list, tuple)) else ([depends] if depends else [])

    def opts(self, *after: Any, **extra: Any) -> pulumi.ResourceOptions:
        """Options for one child, created after ``after`` and the component's dependencies."""
        depends = [*self.waits, *(a for a in after if a is not None)]
        return pulumi.ResourceOptions(parent=self.parent, provider=self.provider, depends_on=depends or None, **extra)


RESTRICTED = {"pod-security.kubernetes.io/enforce": "restricted"}
"""Namespace labels that make the API server refuse any pod the restricted Pod Security profile refuses."""


def restricted_namespace(namespace: str) -> dict[str, Any]:
    """Namespace metadata enforcing the restricted Pod Security profile."""
    return {"name": namespace, "labels": dict(RESTRICTED)}


def node_agent_namespace(resource_name: str, namespace: str, opts: pulumi.ResourceOptions, why: str) -> Any:
    """A namespace for node agents that need host access: Pod Security ``privileged``, warning at baseline.

    ``why`` goes into an annotation, so that whoever reads the namespace learns why it is privileged.
    """
    import pulumi_kubernetes as k8s

    return k8s.core.v1.Namespace(
        resource_name,
        metadata={
            "name": namespace,
            "labels": {"pod-security.kubernetes.io/enforce": "privileged", "pod-security.kubernetes.io/warn": "baseline"},
            "annotations": {"aks-gpu-inference/privileged-because": why},
        },
        opts=opts,
    )
