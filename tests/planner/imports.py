"""The ``components`` modules a package's source imports, read with ``ast`` (nothing is imported), for the
tests that keep the planner and the policy pack off the Pulumi components."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
NAMESPACE = "aks_gpu_inference."
"""The installed import name of the repo's packages; module names here are written without it (``planner.cli``)."""


def short(module: str) -> str:
    """``aks_gpu_inference.planner.cli`` -> ``planner.cli``: modules named as the repo's folders hold them."""
    return module.removeprefix(NAMESPACE)


def component_imports(package: str) -> dict[str, set[str]]:
    """``components`` module -> the files of ``package`` (``planner``, ``policies``) that import it.

    ``from aks_gpu_inference.components.gateway import router_fields`` counts as ``components.gateway.router_fields``, the
    module it binds; ``from aks_gpu_inference.components.core.labels import GPU_TAINT`` as ``components.core.labels``."""
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
        return [short(alias.name) for alias in node.names]
    if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
        return []
    module = short(node.module)
    submodules = [f"{module}.{alias.name}" for alias in node.names if _is_module(f"{module}.{alias.name}")]
    return submodules or [module]


def _is_module(name: str) -> bool:
    base = REPO.joinpath(*name.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def is_core(module: str) -> bool:
    """Whether ``module`` is ``components.core`` or one of its modules."""
    return module == "components.core" or module.startswith("components.core.")


def _modules(*packages: str) -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (file, whether it is a package's ``__init__``)."""
    modules = {}
    for package in packages:
        for path in (REPO / package).rglob("*.py"):
            parts = list(path.relative_to(REPO).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            modules[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return modules


def _named(node: ast.AST, name: str, is_package: bool, modules: dict) -> list[str]:
    """What an import statement in module ``name`` names: modules where they are modules, else the module."""
    if isinstance(node, ast.Import):
        return [short(alias.name) for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = short(node.module or "")
    if node.level:
        here = name.split(".") if is_package else name.split(".")[:-1]
        base = ".".join([*here[: len(here) - node.level + 1], *([node.module] if node.module else [])])
    return [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]


def module_graph(*packages: str) -> dict[str, set[str]]:
    """Module -> the modules of ``packages`` it imports, anywhere in its source (function-level imports and
    ``TYPE_CHECKING`` blocks included); relative imports resolved."""
    modules = _modules(*packages)
    graph: dict[str, set[str]] = {}
    for name, (path, is_package) in modules.items():
        found = graph.setdefault(name, set())
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            for target in _named(node, name, is_package, modules):
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    found.add(target)
    return graph


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), list(graph[start])
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            todo.extend(graph.get(node, ()))
    return seen


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other, directly or not, each sorted."""
    reach = {node: _reachable(graph, node) for node in graph}
    groups = {frozenset(o for o in reach[node] if node in reach[o]) for node in graph if node in reach[node]}
    return sorted(sorted(group) for group in groups)
