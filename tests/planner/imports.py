"""The ``components`` modules a package's source imports, read with ``ast`` (nothing is imported), for the
tests that keep the planner and the policy pack off the Pulumi components."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def component_imports(package: str) -> dict[str, set[str]]:
    """``components`` module -> the files of ``package`` (``planner``, ``policies``) that import it.

    ``from components.gateway import router_fields`` counts as ``components.gateway.router_fields``, the
    module it binds; ``from components.core.labels import GPU_TAINT`` as ``components.core.labels``."""
    found: dict[str, set[str]] = {}
    for path in sorted((REPO / package).rglob("*.py")):
        where = str(path.relative_to(REPO))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), where)):
            for module in _imported(node):
                if module == "components" or module.startswith("components."):
                    found.setdefault(module, set()).add(where)
    return found


def _imported(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
        return []
    submodules = [f"{node.module}.{alias.name}" for alias in node.names if _is_module(f"{node.module}.{alias.name}")]
    return submodules or [node.module]


def _is_module(name: str) -> bool:
    base = REPO.joinpath(*name.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def is_core(module: str) -> bool:
    """Whether ``module`` is ``components.core`` or one of its modules."""
    return module == "components.core" or module.startswith("components.core.")
