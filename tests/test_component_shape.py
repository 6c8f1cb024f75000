"""The library's shape: every ComponentResource takes ``(name, args, opts)`` positionally and the rest
by keyword, is exported from ``components`` and its domain package, and ``components.core`` stays
free of the Pulumi SDKs so the command line's fit and scan paths never load them."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import subprocess
import sys

import pulumi
import pytest

from aks_gpu_inference import components
from tests.conftest import REPO


def _component_classes() -> list[type]:
    found = []
    for info in pkgutil.walk_packages(components.__path__, "aks_gpu_inference.components."):
        module = importlib.import_module(info.name)
        for _, value in inspect.getmembers(module, inspect.isclass):
            if issubclass(value, pulumi.ComponentResource) and value.__module__ == module.__name__:
                found.append(value)
    return sorted(found, key=lambda c: c.__name__)


COMPONENTS = _component_classes()


def test_the_library_has_its_components():
    names = {c.__name__ for c in COMPONENTS}
    assert {"GpuNodePool", "RdmaNetwork", "DraDeviceClasses", "VllmService", "SemanticRouterGateway"} <= names
    assert len(COMPONENTS) >= 18


@pytest.mark.parametrize("component", COMPONENTS, ids=lambda c: c.__name__)
def test_constructor_takes_name_args_opts_and_the_rest_by_keyword(component):
    parameters = list(inspect.signature(component.__init__).parameters.values())[1:]
    positional = [p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    assert positional == ["name", "args", "opts"], f"{component.__name__}{inspect.signature(component.__init__)}"
    assert not [p.name for p in parameters if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    untyped = [p.name for p in parameters if p.annotation is inspect.Parameter.empty]
    assert untyped == [], f"{component.__name__}: untyped parameters {untyped}"
    assert next(p for p in parameters if p.name == "opts").default is None


@pytest.mark.parametrize("component", COMPONENTS, ids=lambda c: c.__name__)
def test_every_parameter_is_documented(component):
    doc = inspect.getdoc(component.__init__) or ""
    names = list(inspect.signature(component.__init__).parameters)[1:]
    assert [n for n in names if f":param {n}:" not in doc] == []


@pytest.mark.parametrize("component", COMPONENTS, ids=lambda c: c.__name__)
def test_exported_from_components_and_its_domain(component):
    domain = component.__module__.split(".")[2]
    assert getattr(components, component.__name__) is component
    assert getattr(importlib.import_module(f"aks_gpu_inference.components.{domain}"), component.__name__) is component
    args = f"{component.__name__}Args"
    if hasattr(importlib.import_module(component.__module__), args):
        assert hasattr(components, args), f"{args} is not exported"


def test_every_export_resolves():
    for name in components.__all__:
        assert getattr(components, name) is not None, name


def test_core_and_the_package_roots_import_no_pulumi():
    modules = [f"aks_gpu_inference.components.core.{m.name}" for m in pkgutil.iter_modules([str(REPO / "components" / "core")])]
    code = (
        "import importlib, sys\n"
        f"for m in {[*modules, 'aks_gpu_inference.components', *(f'aks_gpu_inference.components.{d}' for d in components.DOMAINS)]!r}: importlib.import_module(m)\n"
        "print(sorted({m.split('.')[0] for m in sys.modules if m.startswith('pulumi')}))"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_the_docs_import_only_what_components_exports():
    import ast
    import re

    docs = [REPO / "README.md", *(REPO / "docs").glob("*.md")]
    blocks = [b for doc in docs for b in re.findall(r"```python\n(.*?)```", doc.read_text(), flags=re.S)]
    imported = {
        alias.name
        for block in blocks
        for node in ast.walk(ast.parse(block))
        if isinstance(node, ast.ImportFrom) and node.module == "aks_gpu_inference.components"
        for alias in node.names
    }
    assert imported and sorted(n for n in imported if not hasattr(components, n)) == []
