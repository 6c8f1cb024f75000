"""Lazy re-exports: a package lists ``name -> module`` and imports the module on first use, so
importing a package (``components``, ``components.core``) never pulls in the Pulumi SDKs by itself."""

from __future__ import annotations

from importlib import import_module
from typing import Any


def exporter(package: str, exports: dict[str, str]):
    """A module ``__getattr__`` for ``package`` that loads ``exports[name]`` (a relative module) on demand."""

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(import_module(exports[name], package), name)

    return __getattr__
