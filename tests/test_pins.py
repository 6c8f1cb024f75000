"""The pins table is the one home of every version the project writes, and version advice never names a release AKS
no longer supports."""

from __future__ import annotations

import ast
import re
from datetime import date, timedelta

import pytest

from aks_gpu_inference.components.core import lifecycle, pins
from aks_gpu_inference.components.gpu import dra_api
from tests.conftest import REPO

IMAGE = re.compile(r"^[a-z0-9][a-z0-9.-]*(?::\d+)?(/[a-z0-9._-]+)+:v?\d[\w.-]*$")
VERSION = re.compile(r"^v?\d+\.\d+(\.\d+)?([-+][\w.]+)?$")
AZURE_API = re.compile(r"^\d{4}-\d{2}-\d{2}(-preview)?$")
K8S_API = re.compile(r"^([a-z0-9-]+\.)+[a-z]+/v\d+((alpha|beta)\d+)?$")
OWN_VERSION = {("planner/__init__.py", "__version__")}
"""The package's own version (pyproject reads it from there): not a pin of anything upstream."""


def _docstring_ids(tree: ast.AST) -> set[int]:
    """Bare string statements: module, class, function and attribute docstrings (citations may name versions)."""
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        for statement in body if isinstance(body, list) else []:
            if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
                found.add(id(statement.value))
    return found


def version_literals(path, where: str) -> list[str]:
    """``where:line: literal`` for each version-shaped string of the module at ``path`` (shown as ``where``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = _docstring_ids(tree)
    own = {
        id(n.value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Assign)
        for t in n.targets
        if (where, getattr(t, "id", "")) in OWN_VERSION
    }
    shaped = (IMAGE, VERSION, AZURE_API, K8S_API)
    strings = [n for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    return [
        f"{where}:{n.lineno}: {n.value!r}" for n in strings if id(n) not in docs | own and any(rx.match(n.value) for rx in shaped)
    ]


@pytest.mark.slow
def test_no_module_but_the_pins_writes_a_version():
    modules = [p for pkg in ("components", "planner", "policies") for p in sorted((REPO / pkg).rglob("*.py"))]
    assert len(modules) > 150, "the code was found"
    hits = [hit for p in modules if p.name != "pins.py" for hit in version_literals(p, str(p.relative_to(REPO)))]
    assert hits == []


def test_the_scan_finds_each_kind_of_version_literal(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(
        'X = "vllm/vllm-openai:v0.32.0"\nY = "1.34"\nZ = "2025-09-01"\nW = "ray.io/v1"\n"""v9.9.9 in a docstring"""\n'
    )
    assert len(version_literals(probe, "probe.py")) == 4


def test_every_entry_names_its_source():
    data = pins.table()
    for section in ("charts", "images", "manifests"):
        assert all(entry.get("source") for entry in data[section].values()), section
    assert all(entry.get("source") for entry in data["api_versions"]["azure"].values())
    assert all(entry.get("source") and entry.get("value") for entry in data["kubernetes"].values())


def test_the_references_compose_as_the_runtime_reads_them():
    assert pins.image("redis").startswith("docker.io/library/redis:")
    assert pins.chart("dranet").ref == "oci://registry.k8s.io/networking/charts/dranet"
    assert pins.chart("gpu-operator").ref == "gpu-operator", "a repository chart is named, its repository passed apart"
    assert pins.vllm_version() == pins.image_pin("vllm").tag.removeprefix("v")
    with pytest.raises(KeyError, match=r"pins\.json has no images\.nope"):
        pins.image("nope")


@pytest.mark.parametrize("days", range(0, 400, 30))
def test_version_advice_never_names_a_release_aks_no_longer_supports(days):
    as_of = date(2026, 12, 6) + timedelta(days=days)
    advice = dra_api.version_advice(as_of)
    named = re.search(r"set cluster.kubernetes_version to (1\.\d+)", advice)
    if named is None:  # past the table's last supported minor: no number, a way to ask AKS instead
        assert "az aks get-versions" in advice and lifecycle.advised_minor(pins.minimum_kubernetes_minor(), as_of) is None
        return
    advised = named[1]
    state = lifecycle.status("aks_kubernetes", advised, as_of)
    assert state is not None and state.state != "retired", (as_of, advised)
    assert tuple(map(int, advised.split("."))) >= pins.minimum_kubernetes_minor()


def test_the_dra_refusal_on_an_old_cluster_advises_a_supported_minor():
    (problem,) = dra_api.kubernetes_version_problems("1.33")
    assert "needs Kubernetes 1.34 or later" in problem.problem
    assert "set cluster.kubernetes_version to 1.34" not in problem.problem, "AKS ended 1.34 on 2026-11-30"
