"""One guardrail rule: its name, level, docs and knobs, and the pure check that yields its findings."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from aks_gpu_inference.policies.manifests import Exemption, StackIndex, Violation


@dataclass(frozen=True)
class Rule:
    name: str
    description: str
    enforcement: Literal["mandatory", "advisory"]
    scope: Literal["resource", "stack"]
    """``resource`` rules look at one resource at a time; ``stack`` rules join resources."""
    unknowns: str
    """What the rule does with a value that is unknown during preview, for the docs."""
    config: dict[str, dict[str, Any]]
    """JSON-schema properties of the rule's knobs, each with its default."""
    check: Callable[[StackIndex, dict[str, Any]], Iterable[Violation | Exemption]]
    """Yields violations, and exemptions where the rule's config accepts a case on purpose."""
    why: str = ""
    """What the rule checks and why, with the seed it comes from (Markdown), for the rule table in docs/policies.md."""
    fix: str = ""
    """The usual fix, in a few words (Markdown), for the rule table."""

    def defaults(self) -> dict[str, Any]:
        return {key: schema["default"] for key, schema in self.config.items()}

    def outcomes(self, index: StackIndex, config: dict[str, Any] | None = None) -> list[Violation | Exemption]:
        return list(self.check(index, {**self.defaults(), **(config or {})}))

    def run(self, index: StackIndex, config: dict[str, Any] | None = None) -> list[Violation]:
        return [o for o in self.outcomes(index, config) if isinstance(o, Violation)]
