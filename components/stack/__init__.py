"""The stack program: typed stack config, its cross-field checks, and the program that composes the components."""

from .._lazy import exporter

_EXPORTS = {
    "StackConfig": ".config",
    "load_stack_config": ".program",
}

__all__ = sorted(_EXPORTS)
__getattr__ = exporter(__name__, _EXPORTS)
