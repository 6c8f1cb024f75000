"""The policy pack as pip installs it: the wheel built offline, installed into a fresh venv, found with
``aks-gpu policy-pack-path`` and started there the way ``pulumi preview --policy-pack <that folder>`` starts it.

pulumi-language-python's RunPlugin (pip toolchain) runs a pack whose PulumiPolicy.yaml names no ``virtualenv`` with
``python3`` from the PATH, or ``$PULUMI_PYTHON_CMD``: ``python3 -u -m pulumi.policy <engine> <pack folder>`` in the
pack folder; ``pulumi.policy`` runs the folder's ``__main__.py``, whose ``PolicyPack`` prints its port and serves the
Analyzer service. The fresh venv holds the wheel only. Its dependencies come from this venv's site-packages through a
``.pth`` line, which puts them after the wheel's own packages and leaves this venv's ``.pth`` files (the editable
install's finder) unprocessed, so nothing there can import the checkout.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import grpc
import pytest
import yaml
from google.protobuf import empty_pb2
from packaging.requirements import Requirement
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc

from aks_gpu_inference.planner.analyzer import analyze_request
from aks_gpu_inference.planner.engine.program import Registered
from aks_gpu_inference.policies.rules import RULES
from tests.conftest import REPO
from tests.test_consumer_example import NOT_SOURCE

# pulumi/policy/__main__.py takes the engine address and never dials it; nothing listens here.
ENGINE_ADDRESS = "127.0.0.1:1"
STARTUP_TIMEOUT = 60
CALL_TIMEOUT = 10


@dataclass(frozen=True)
class FreshVenv:
    root: Path
    site: Path
    env: dict[str, str]
    """A clean environment: the fresh venv's bin alone on the PATH, no PYTHONPATH, no bytecode written into this venv."""

    @property
    def bin(self) -> Path:
        return self.root / "bin"


def _unmet_build_requirement() -> str | None:
    """Why this venv cannot build the wheel without build isolation (pyproject's build requirements), or None."""
    for text in tomllib.loads((REPO / "pyproject.toml").read_text())["build-system"]["requires"]:
        requirement = Requirement(text)
        try:
            found = version(requirement.name)
        except PackageNotFoundError:
            return f"{requirement.name} is not installed"
        if not requirement.specifier.contains(found, prereleases=True):
            return f"{requirement.name} {found} is installed, pyproject.toml's [build-system] requires {requirement}"
    return None


def _run(argv: list, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=300, **kwargs)
    assert result.returncode == 0, f"{argv}: exit code {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def fresh(tmp_path_factory) -> FreshVenv:
    """The wheel, built offline from a copy of the checkout (setuptools writes build/ and *.egg-info into the tree it
    builds), installed alone into a new venv that borrows this venv's site-packages for the dependencies."""
    unmet = _unmet_build_requirement()
    if unmet:
        pytest.skip(f"an offline wheel build (--no-build-isolation) needs the build backend in this venv: {unmet}")
    work = tmp_path_factory.mktemp("pack-install")
    shutil.copytree(REPO, work / "source", ignore=NOT_SOURCE)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet"]
    # This venv's modules are compiled in place (make); under a pycache prefix every pip would compile them again.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPYCACHEPREFIX"}
    wheels, root = work / "wheels", work / "venv"
    _run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "--no-index", "--wheel-dir", wheels, work / "source"],
        cwd=work,
        env=env,
    )
    (wheel,) = wheels.glob("aks_gpu_inference-*.whl")
    _run([sys.executable, "-m", "venv", "--without-pip", root], cwd=work)
    python = root / "bin" / "python"
    _run([*pip, "--python", python, "install", "--no-deps", "--no-index", wheel], cwd=work, env=env)
    site = Path(_run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], cwd=work).stdout.strip())
    ours = dict.fromkeys([sysconfig.get_path("purelib"), sysconfig.get_path("platlib")])
    (site / "aks-gpu-test-dependencies.pth").write_text("".join(f"{path}\n" for path in ours))
    return FreshVenv(root, site, {"PATH": str(root / "bin"), "PYTHONDONTWRITEBYTECODE": "1"})


@pytest.fixture(scope="module")
def printed(fresh) -> subprocess.CompletedProcess:
    """``aks-gpu policy-pack-path`` as the fresh venv's console script, with that venv active (first on the PATH)."""
    return _run([fresh.bin / "aks-gpu", "policy-pack-path"], cwd=fresh.root, env=fresh.env)


def test_the_command_prints_the_installed_pack(fresh, printed):
    folder = Path(printed.stdout.strip())
    assert printed.stdout == f"{folder}\n" and printed.stderr == "", "one line, and no note with the venv active"
    assert folder == (fresh.site / "aks_gpu_inference" / "policies").resolve()
    assert {"PulumiPolicy.yaml", "__main__.py", "config.example.json"} <= {p.name for p in folder.iterdir()}


def test_the_installed_manifest_is_the_checkouts_without_its_virtualenv(printed):
    installed = yaml.safe_load((Path(printed.stdout.strip()) / "PulumiPolicy.yaml").read_text())
    checkout = yaml.safe_load((REPO / "policies" / "PulumiPolicy.yaml").read_text())
    assert checkout["runtime"]["options"].pop("virtualenv") == "../.venv"
    assert installed == checkout
    assert installed["runtime"] == {"name": "python", "options": {"toolchain": "pip"}}


def test_the_fresh_venv_imports_the_wheel_and_never_the_checkout(fresh, printed):
    code = (
        "import json, os, sys\nfrom aks_gpu_inference import components, planner, policies\n"
        "print(json.dumps([[m.__file__ for m in (components, planner, policies)], [os.path.realpath(p) for p in sys.path]]))"
    )
    files, path = json.loads(_run([fresh.bin / "python3", "-c", code], cwd=Path(printed.stdout.strip()), env=fresh.env).stdout)
    assert all(Path(f).is_relative_to(fresh.site) for f in files), files
    checkout = [p for p in map(Path, path) if p.is_relative_to(REPO.resolve()) and not p.is_relative_to(REPO.resolve() / ".venv")]
    assert checkout == [], "the checkout is on the fresh venv's import path"


def test_the_command_says_when_pulumi_would_run_another_python(fresh):
    env = {**fresh.env, "PULUMI_PYTHON_CMD": sys.executable}
    result = _run([fresh.bin / "aks-gpu", "policy-pack-path"], cwd=fresh.root, env=env)
    assert Path(result.stdout.strip()) == (fresh.site / "aks_gpu_inference" / "policies").resolve()
    assert result.stderr.startswith(f"note: Pulumi would run the pack with {sys.executable} (prefix {sys.prefix})")
    assert f"set PULUMI_PYTHON_CMD={fresh.bin / 'python'}" in result.stderr


@contextlib.contextmanager
def served(python: str, folder: Path, env: dict[str, str], stderr_file: Path) -> Iterator[analyzer_pb2_grpc.AnalyzerStub]:
    """``python -u -m pulumi.policy ENGINE_ADDRESS FOLDER`` in FOLDER, as RunPlugin starts a Python pack; a stub on its port."""
    with stderr_file.open("wb") as stderr:
        process = subprocess.Popen(
            [python, "-u", "-m", "pulumi.policy", ENGINE_ADDRESS, str(folder)],
            cwd=folder,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr,
        )
    try:
        ready, _, _ = select.select([process.stdout], [], [], STARTUP_TIMEOUT)
        line = process.stdout.readline() if ready else b""
        if not line.strip().isdigit():
            process.kill()
            pytest.fail(
                f"the installed pack printed {line!r} instead of its port; stderr:\n{stderr_file.read_text(errors='replace')}"
            )
        with grpc.insecure_channel(f"127.0.0.1:{int(line)}") as channel:
            grpc.channel_ready_future(channel).result(timeout=CALL_TIMEOUT)
            yield analyzer_pb2_grpc.AnalyzerStub(channel)
    finally:
        process.kill()
        process.wait(timeout=10)
        process.stdout.close()


def test_pulumi_would_serve_the_installed_pack(fresh, printed, tmp_path):
    folder = Path(printed.stdout.strip())
    # The manifest names no virtualenv, so Pulumi's pip toolchain takes python3 from the PATH: the fresh venv's.
    python = shutil.which("python3", path=fresh.env["PATH"])
    assert python and Path(python).parent == fresh.bin
    cluster = Registered(
        urn="urn:pulumi:test::aks-gpu-inference::azure-native:containerservice:ManagedCluster::aks",
        type="azure-native:containerservice:ManagedCluster",
        name="aks",
        parent=None,
        custom=True,
        inputs={"autoUpgradeProfile": {"upgradeChannel": "patch", "nodeOSUpgradeChannel": "Unmanaged"}},
        options={},
    )
    with served(python, folder, fresh.env, tmp_path / "pack.stderr") as stub:
        info = stub.GetAnalyzerInfo(empty_pb2.Empty(), timeout=CALL_TIMEOUT)
        response = stub.Analyze(analyze_request(cluster), timeout=CALL_TIMEOUT)
    assert info.name == "aks-gpu-guardrails"
    assert [p.name for p in info.policies] == [rule.name for rule in RULES]
    assert [(d.policyName, d.enforcementLevel) for d in response.diagnostics] == [
        ("aks-node-os-upgrade-channel", analyzer_pb2.MANDATORY)
    ]
    assert os.path.getsize(tmp_path / "pack.stderr") == 0
