"""Shared pieces for the component modules: the strict args base class, input validation that reports
every problem at once before any child exists, the Kubernetes provider a component uses, and the
options its children are created with."""

from __future__ import annotations

import types
import typing
from typing import Annotated, Any, Literal, TypeVar

import pulumi
from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError, ValidationInfo, field_validator

from .core.errors import ConfigError, FieldProblem, StackFileConfigError, validation_problems
from .core.security import NODE_AGENT_LABELS

PACKAGE = "aks-gpu"
"""Type-token package of every component: ``aks-gpu:index:<Component>``."""


def _distinct_zones(zones: list[str]) -> list[str]:
    repeated = sorted({z for z in zones if zones.count(z) > 1})
    if repeated:
        raise ValueError(f"zone {', '.join(repeated)} is listed more than once: name each zone once")
    return zones


AvailabilityZones = Annotated[list[Literal["1", "2", "3"]], AfterValidator(_distinct_zones)]
"""The zones a pool spreads its nodes over, each once (AKS refuses a pool that names a zone twice)."""


def _plain_types(annotation: Any) -> set[type]:
    """The scalar types a field accepts (``int | None`` -> {int, NoneType}); empty for anything richer."""
    args = typing.get_args(annotation)
    options = args if typing.get_origin(annotation) in (typing.Union, types.UnionType) else (annotation,)
    return {option for option in options if isinstance(option, type)}


class StrictModel(BaseModel):
    """Plain-value args: unknown keys are errors, values are checked on assignment too. Booleans are
    ``true``/``false`` only (Pulumi config may hand them over as those strings) and never stand in for
    numbers: pydantic's lax mode would take ``spot: "1"`` or ``backoff_limit: true`` without a word."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, frozen=True)

    @field_validator("*", mode="before")
    @classmethod
    def _no_loose_booleans(cls, value: Any, info: ValidationInfo) -> Any:
        accepted = _plain_types(cls.model_fields[info.field_name].annotation) if info.field_name else set()
        if bool in accepted and not isinstance(value, bool):
            if value in ("true", "false"):
                return value == "true"
            if not (accepted - {bool, type(None)}) and value is not None:
                raise ValueError(f"expected true or false, not {value!r}")
        elif accepted & {int, float} and bool not in accepted and isinstance(value, bool):
            raise ValueError(f"expected a number, not {str(value).lower()}")
        return value


class ComponentInputError(ConfigError, pulumi.RunError, pulumi.InputPropertiesError):
    """A ConfigError raised by a component: Pulumi prints RunError messages without a traceback, and a
    component provider reports an ``InputPropertiesError``'s ``errors`` property by property."""

    def __init__(self, context: str, problems: list[str], errors: list[FieldProblem] | None = None):
        super().__init__(context, problems)
        self.field_problems = list(errors or [])
        """The problems as ``FieldProblem``s, where the raiser had them (``raise_problems``)."""
        self.message = str(self)
        self.errors = [{"property_path": e.field, "reason": e.problem} for e in errors or []] or [
            {"property_path": p.split("=", 1)[0], "reason": p} for p in problems
        ]


class StackFileError(ComponentInputError, StackFileConfigError):
    """The stack file itself is at fault (``load_stack_config``): the planner reports it as the file's error,
    not as a component refusing its arguments."""


Args = TypeVar("Args", bound=BaseModel)


def validate_args(model: type[Args], args: Args | dict[str, Any] | None, component: str, name: str) -> Args:
    """Accept an args model or a plain dict and check it before any child resource exists."""
    if isinstance(args, model):
        return args
    try:
        return model.model_validate(args or {})
    except ValidationError as err:
        raise ComponentInputError(f"{component} {name!r}: invalid arguments", validation_problems(err)) from None


def raise_problems(component: str, name: str, problems: list[FieldProblem]) -> None:
    """Raise every problem a pure validator found, once, as one ``ComponentInputError``; nothing if none."""
    if problems:
        raise ComponentInputError(f"{component} {name!r}: invalid arguments", [str(p) for p in problems], problems)


def fail(component: str, name: str, field: str, value: Any, problem: str) -> None:
    raise_problems(component, name, [FieldProblem(field, value, problem)])


def kubernetes_provider(opts: pulumi.ResourceOptions | None, fallback: Any = None) -> Any:
    """The Kubernetes provider a component's children use: ``opts.provider`` or the ``kubernetes`` entry
    of ``opts.providers`` where given (Pulumi's own convention), else ``fallback`` (the cluster
    context's), else None: Pulumi's default provider, i.e. the ambient kubeconfig."""
    if opts is not None:
        candidates = [opts.provider] if opts.provider is not None else []
        providers = opts.providers
        candidates += list(providers.values()) if isinstance(providers, dict) else list(providers or [])
        for provider in candidates:
            if getattr(provider, "package", None) == "kubernetes":
                return provider
    return fallback


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


def node_agent_namespace(resource_name: str, namespace: str, opts: pulumi.ResourceOptions, why: str) -> Any:
    """A namespace for node agents that need host access: Pod Security ``privileged``, warning at baseline.

    ``why`` goes into an annotation, so that whoever reads the namespace learns why it is privileged.
    """
    import pulumi_kubernetes as k8s

    return k8s.core.v1.Namespace(
        resource_name,
        metadata={
            "name": namespace,
            "labels": dict(NODE_AGENT_LABELS),
            "annotations": {"aks-gpu-inference/privileged-because": why},
        },
        opts=opts,
    )
