"""``aks-gpu policy-pack-path``: the folder it prints, the note on stderr when Pulumi would run the pack with another
Python, exit code 2 for an install without the manifest, and the promise that it imports neither Pulumi nor the pack.
The installed wheel is tests/test_pack_install.py's."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from aks_gpu_inference.planner import pack_path
from aks_gpu_inference.planner.cli import main
from tests.conftest import REPO

INSTALLED_MANIFEST = "runtime:\n  name: python\n  options:\n    toolchain: pip\n"


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["policy-pack-path", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_editable_install_prints_the_checkouts_pack(capsys):
    """The checkout's manifest names .venv, which Pulumi runs whatever the PATH holds: no note."""
    assert run(capsys) == (0, f"{REPO / 'policies'}\n", "")


def test_an_install_without_the_manifest_exits_2(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(pack_path, "pack_dir", lambda: tmp_path)
    code, out, err = run(capsys)
    assert (code, out) == (2, "")
    assert err == f"error: {tmp_path / 'PulumiPolicy.yaml'}: No such file or directory\n"


def test_no_note_when_pulumi_would_run_this_python(monkeypatch, tmp_path):
    (tmp_path / "PulumiPolicy.yaml").write_text(INSTALLED_MANIFEST)
    monkeypatch.setenv("PULUMI_PYTHON_CMD", sys.executable)
    assert pack_path.interpreter_note(tmp_path) is None


def test_a_note_when_pulumi_would_run_another_python(monkeypatch, tmp_path):
    (tmp_path / "PulumiPolicy.yaml").write_text(INSTALLED_MANIFEST)
    other = tmp_path / "python3"
    other.write_text("#!/bin/sh\necho /opt/another-python\n")
    other.chmod(0o755)
    monkeypatch.delenv("PULUMI_PYTHON_CMD", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    note = pack_path.interpreter_note(tmp_path)
    assert note == (
        f"Pulumi would run the pack with {other} (prefix /opt/another-python), not the Python it is installed in; "
        f"activate the environment of {sys.prefix}, or set PULUMI_PYTHON_CMD={sys.executable}"
    )


def test_a_note_when_pulumi_finds_no_python(monkeypatch, tmp_path):
    (tmp_path / "PulumiPolicy.yaml").write_text(INSTALLED_MANIFEST)
    monkeypatch.setenv("PULUMI_PYTHON_CMD", str(tmp_path / "missing"))
    assert pack_path.interpreter_note(tmp_path).startswith("Pulumi finds no Python to run the pack with")


def test_help(capsys):
    with pytest.raises(SystemExit) as done:
        main(["policy-pack-path", "--help"])
    assert done.value.code == 0
    assert 'pulumi preview --policy-pack "$(aks-gpu policy-pack-path)"' in capsys.readouterr().out


def test_the_command_imports_neither_pulumi_nor_the_pack():
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "aks_gpu_inference.planner", "policy-pack-path"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    modules = [m[1].strip() for m in re.finditer(r"^import time:[^|]*\|[^|]*\|(.*)$", result.stderr, re.MULTILINE)]
    assert "aks_gpu_inference.planner.pack_path" in modules and "aks_gpu_inference.policies" in modules, (
        "importtime output was parsed"
    )
    heavy = ("pulumi", "pulumi_policy", "pulumi_azure_native", "grpc", "google", "pydantic")
    heavy += ("aks_gpu_inference.policies.pack", "aks_gpu_inference.policies.rules")
    assert [m for m in modules if m.split(".")[0] in heavy or m in heavy] == []
