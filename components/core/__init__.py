"""Pulumi-free facts and helpers: the GPU/VM catalog, model sizes and the memory fit, the dated lifecycle table,
VM disks, image references, names and labels, security contexts, and the errors every layer reports with.
The planner and the policy pack import shared facts from here, never from the Pulumi components."""

from .._lazy import exporter

_EXPORTS = {
    "ConfigError": ".errors",
    "FitResult": ".fit_result",
    "FitSettings": ".memory_fit",
    "ModelFactsArgs": ".model_facts",
    "Suggestion": ".fit_result",
    "UnknownModelError": ".model_facts",
}

__all__ = sorted(_EXPORTS)
__getattr__ = exporter(__name__, _EXPORTS)
