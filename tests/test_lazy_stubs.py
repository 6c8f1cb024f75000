"""The lazy packages' type stubs (``tools/lazy_stubs.py``) say exactly what each package exports, from where: a type
checker sees ``from aks_gpu_inference.components import VllmService`` as the class the package hands out at run time."""

from __future__ import annotations

import ast
import importlib
import sys

import pytest

from tests.conftest import REPO

sys.path.insert(0, str(REPO / "tools"))
import lazy_stubs

INITS = lazy_stubs.lazy_packages()


def test_every_lazy_package_has_a_current_stub():
    assert len(INITS) == 8, [str(p) for p in INITS]
    assert lazy_stubs.stale() == [], "run `make docs` (python tools/lazy_stubs.py --write)"


@pytest.mark.parametrize("init", INITS, ids=lambda p: str(p.parent.relative_to(REPO)))
def test_each_name_of_the_stub_is_the_object_the_package_exports(init):
    package = importlib.import_module(lazy_stubs.module_name(init))
    tree = ast.parse(init.with_suffix(".pyi").read_text())
    imported = [
        (node.module, alias.name, alias.asname) for node in tree.body if isinstance(node, ast.ImportFrom) for alias in node.names
    ]
    assert {name for _, name, _ in imported} == set(package._EXPORTS) == set(package.__all__)
    for module, name, alias in imported:
        assert alias == name, "an explicit re-export (PEP 484: `X as X`)"
        source = importlib.import_module(f".{module}", package.__name__)
        assert getattr(package, name) is getattr(source, name), f"{package.__name__}.{name} is {module}.{name}"


def test_a_stale_stub_is_reported_and_rewritten_only_when_asked(tmp_path, monkeypatch):
    """The check lists, the write rewrites; the check alone changes nothing."""
    copy = tmp_path / "components" / "serving"
    copy.mkdir(parents=True)
    init = REPO / "components" / "serving" / "__init__.py"
    (copy / "__init__.py").write_text(init.read_text())
    (copy / "__init__.pyi").write_text("# stale\n")
    monkeypatch.setattr(lazy_stubs, "REPO", tmp_path)
    assert lazy_stubs.main([]) == 1 and (copy / "__init__.pyi").read_text() == "# stale\n"
    assert lazy_stubs.main(["--write"]) == 0 and lazy_stubs.stale() == []
    assert (copy / "__init__.pyi").read_text() == init.with_suffix(".pyi").read_text()
