"""A consumer stack in another folder installs this repo as a package and imports the components."""

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from tests.conftest import REPO

CONSUMER = REPO / "examples" / "consumer"

DRIVER = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from aks_gpu_inference import components
    import aks_gpu_inference.planner.engine.program as engine, aks_gpu_inference.planner.inputs.stackfile as stackfile
    assert components.__file__.startswith(sys.argv[1]), components.__file__
    stack = stackfile.read_stack(Path.cwd(), "dev")
    run = engine.run_program(Path.cwd(), stack.project, "dev", stack.config)
    print(json.dumps({"components": components.__file__, "resources": [[r.type, r.name, r.inputs] for r in run.resources], "outputs": run.outputs}))
    """
)


# What a build must not see: local state that is not part of the source tree.
NOT_SOURCE = shutil.ignore_patterns(".git", ".venv", "build", "out", "*.egg-info", "__pycache__", ".*_cache", ".hypothesis")


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """This repo built as a wheel and installed into a bare folder, as `pip install <repo>` would.

    The wheel is built from a copy, because setuptools writes ``build/`` and ``*.egg-info`` into the
    tree it builds and the suite must leave the checkout as it found it."""
    source, wheels, target = (tmp_path_factory.mktemp(n) for n in ("source", "wheel", "site"))
    shutil.copytree(REPO, source / "repo", ignore=NOT_SOURCE)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet"]
    subprocess.run(
        [*pip, "wheel", "--no-deps", "--wheel-dir", str(wheels), str(source / "repo")], check=True, capture_output=True
    )
    (wheel,) = wheels.glob("aks_gpu_inference-*.whl")
    subprocess.run([*pip, "install", "--no-deps", "--target", str(target), str(wheel)], check=True, capture_output=True)
    return target


def test_the_wheel_puts_one_name_at_the_top_of_site_packages(installed):
    """Nothing generic (``components``, ``planner``, ``policies``) lands beside a Pulumi project's own folders."""
    top = {p.name for p in installed.iterdir() if not p.name.endswith(".dist-info")} - {"bin"}
    assert top == {"aks_gpu_inference"}
    assert not (installed / "aks_gpu_inference" / "__init__.py").exists(), "an implicit namespace package"


def test_wheel_ships_every_package_of_the_repo(installed):
    packages = {str(p.parent.relative_to(REPO)) for p in REPO.glob("*/**/__init__.py") if p.parent.name != "tests"}
    packages = {p for p in packages if p.split("/")[0] in ("components", "planner", "policies")}
    assert len(packages) > 15, "the repo's packages were found"
    assert sorted(p for p in packages if not (installed / "aks_gpu_inference" / p / "__init__.py").is_file()) == []


def test_wheel_ships_the_packages_data_and_command(installed):
    root = installed / "aks_gpu_inference"
    assert (root / "components" / "core" / "gpu_sizes.json").is_file()
    assert (root / "components" / "core" / "models.json").is_file()
    assert (root / "components" / "gpu" / "gate_scripts" / "nccl.sh").is_file(), (
        "QualificationGates reads its scripts at run time"
    )
    assert (root / "components" / "gateway" / "refresher" / "refresh_token.py").is_file()
    assert (root / "planner" / "cli.py").is_file() and (root / "policies" / "rules").is_dir()
    stubs = {p.relative_to(REPO) for p in (REPO / "components").rglob("__init__.pyi")}
    assert stubs and all((root / stub).is_file() for stub in stubs), "type checkers see the lazy packages' names"
    assert all((root / package / "py.typed").is_file() for package in ("components", "planner", "policies"))
    entry_points = next(installed.glob("aks_gpu_inference-*.dist-info")) / "entry_points.txt"
    assert "aks-gpu = aks_gpu_inference.planner.cli:main" in entry_points.read_text()


def test_consumer_stack_runs_on_the_installed_package(installed):
    # PYTHONPATH puts the installed copy ahead of the repo's editable install.
    env = {"PYTHONPATH": str(installed), "PATH": "/usr/bin:/bin"}
    result = subprocess.run([sys.executable, "-c", DRIVER, str(installed)], cwd=CONSUMER, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    types = [t for t, _, _ in plan["resources"]]
    assert "azure-native:containerservice:ManagedCluster" not in types, "the consumer uses an existing cluster"
    pool = next(inputs for t, _, inputs in plan["resources"] if t.endswith(":AgentPool"))
    assert (pool["resourceName"], pool["resourceGroupName"], pool["vmSize"]) == (
        "aks-gpu-dev",
        "rg-aks-gpu-dev",
        "Standard_NC4as_T4_v3",
    )
    namespace = next(inputs for t, _, inputs in plan["resources"] if t == "kubernetes:core/v1:Namespace")
    kubernetes_validate.validate(yaml.safe_load(yaml.safe_dump(namespace)), "1.35", strict=True)
    assert plan["outputs"]["node_selector"] == {"kubernetes.azure.com/agentpool": "t4batch"}


def test_a_project_with_its_own_components_and_policies_folders_imports_the_library(installed, tmp_path):
    """Pulumi's Python host puts the project folder first on ``sys.path``; a project's own ``components/`` and
    ``policies/`` packages must neither hide the library nor be hidden by it."""
    project = tmp_path / "team"
    shutil.copytree(CONSUMER, project)
    for folder in ("components", "policies"):
        (project / folder).mkdir()
        (project / folder / "__init__.py").write_text(f'"""The team\'s own {folder}."""\n\nOWNER = "team"\n')
    driver = DRIVER + "import components, policies\nassert components.OWNER == policies.OWNER == 'team'\n"
    env = {"PYTHONPATH": str(installed), "PATH": "/usr/bin:/bin"}
    result = subprocess.run([sys.executable, "-c", driver, str(installed)], cwd=project, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    assert plan["components"].startswith(str(installed / "aks_gpu_inference"))
    assert any(t.endswith(":AgentPool") for t, _, _ in plan["resources"])
