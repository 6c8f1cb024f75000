"""`aks-gpu plan --out`: never deletes a folder it did not create, moves a plan in only when complete,
and leaves no earlier plan looking current after a refused or failed plan."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from aks_gpu_inference.components.core.errors import ConfigError
from aks_gpu_inference.planner.cli import main
from aks_gpu_inference.planner.report.outdir import MARKER, STALE, PlanOutput
from tests.conftest import REPO


def _write_plan(out: PlanOutput, text: str) -> None:
    staging = out.prepare()
    assert staging.parent == out.target.parent and staging != out.target
    (staging / "resources.json").write_text(text)
    out.commit()


def test_a_new_folder_gets_the_plan_and_the_marker(tmp_path):
    out = PlanOutput(tmp_path / "out" / "dev")
    _write_plan(out, "one")
    assert (out.target / "resources.json").read_text() == "one" and (out.target / MARKER).is_file()
    assert sorted(p.name for p in out.target.parent.iterdir()) == ["dev"], "no staging folder left behind"


def test_a_marked_folder_is_replaced_whole(tmp_path):
    out = PlanOutput(tmp_path / "dev")
    _write_plan(out, "one")
    (out.target / "left-over.yaml").write_text("from the earlier plan")
    _write_plan(PlanOutput(out.target), "two")
    assert sorted(p.name for p in out.target.iterdir()) == [MARKER, "resources.json"]
    assert (out.target / "resources.json").read_text() == "two"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dev"]


def test_an_empty_folder_is_used_and_kept(tmp_path):
    target = tmp_path / "empty"
    target.mkdir()
    inode = target.stat().st_ino
    _write_plan(PlanOutput(target), "one")
    assert target.stat().st_ino == inode and (target / MARKER).is_file()


@pytest.mark.parametrize("make", ["checkout", "file", "symlink"])
def test_a_folder_it_did_not_create_is_refused_and_left_alone(tmp_path, make):
    target = tmp_path / "target"
    if make == "checkout":
        target.mkdir()
        (target / "README.md").write_text("mine")
    elif make == "file":
        target.write_text("mine")
    else:
        (tmp_path / "real").mkdir()
        target.symlink_to(tmp_path / "real")
    before = sorted(p.name for p in tmp_path.rglob("*"))
    out = PlanOutput(target)
    with pytest.raises(ConfigError, match="--out is refused"):
        out.prepare()
    out.abandon("refused")
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


def test_a_failed_plan_leaves_a_stale_marker_instead_of_the_earlier_plan(tmp_path):
    out = PlanOutput(tmp_path / "dev")
    _write_plan(out, "one")
    again = PlanOutput(out.target)
    (again.prepare() / "resources.json").write_text("half")
    again.abandon("Pulumi.dev.yaml is invalid:\n  - location='eastu': not an Azure region")
    assert sorted(p.name for p in out.target.iterdir()) == [MARKER, STALE, "deployability.json"]
    stale = json.loads((out.target / "deployability.json").read_text())
    assert stale["stale"] is True and stale["reason"] == "Pulumi.dev.yaml is invalid: - location='eastu': not an Azure region"
    assert "location='eastu'" in (out.target / STALE).read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dev"]


def test_a_failed_plan_into_a_new_folder_leaves_nothing(tmp_path):
    out = PlanOutput(tmp_path / "dev")
    out.prepare()
    out.abandon("failed")
    assert list(tmp_path.iterdir()) == []


# --- through the command line ---------------------------------------------------------------------------------


@pytest.fixture
def checkout(tmp_path) -> Path:
    """A copy of the project: its stack files, program and a file that must survive."""
    project = tmp_path / "checkout"
    project.mkdir()
    for name in ("Pulumi.yaml", "Pulumi.dev.yaml", "__main__.py"):
        shutil.copy(REPO / name, project / name)
    (project / "notes.md").write_text("keep me")
    return project


def test_out_dot_inside_a_checkout_deletes_nothing(checkout, capsys, monkeypatch):
    monkeypatch.chdir(checkout)
    before = sorted(p.name for p in checkout.iterdir())
    assert main(["plan", "dev", "--out", ".", "-q"]) == 2
    err = capsys.readouterr().err
    assert "error: --out is refused" in err and "no .aks-gpu-plan marker" in err
    assert sorted(p.name for p in checkout.iterdir()) == before


@pytest.mark.slow
def test_plan_then_refused_plan_marks_the_default_folder_stale(checkout, capsys):
    assert main(["plan", "dev", "--project-dir", str(checkout), "-q"]) == 0
    out = checkout / "out" / "dev"
    assert (out / MARKER).is_file() and (out / "resources.json").is_file()
    stack = checkout / "Pulumi.dev.yaml"
    stack.write_text(stack.read_text().replace("aks-gpu-inference:location: eastus", "aks-gpu-inference:location: eastu"))
    assert main(["plan", "dev", "--project-dir", str(checkout), "-q"]) == 2
    assert "location='eastu': not an Azure region" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == [MARKER, STALE, "deployability.json"]
    assert json.loads((out / "deployability.json").read_text())["stale"] is True
    assert (checkout / "notes.md").read_text() == "keep me"
    assert sorted(p.name for p in (checkout / "out").iterdir()) == ["dev"]


def test_a_folder_that_only_looks_like_a_plan_is_never_replaced(tmp_path):
    """A user's folder with a resources.json, a graph.dot and a kubernetes/ folder is not a plan: no marker."""
    target = tmp_path / "dev"
    (target / "kubernetes").mkdir(parents=True)
    (target / "kubernetes" / "mine.yaml").write_text("kind: ConfigMap\n")
    for name in ("resources.json", "graph.dot"):
        (target / name).write_text("mine")
    with pytest.raises(ConfigError, match="--out is refused"):
        PlanOutput(target).prepare()
    assert sorted(p.name for p in target.iterdir()) == ["graph.dot", "kubernetes", "resources.json"]
    assert (target / "kubernetes" / "mine.yaml").read_text() == "kind: ConfigMap\n"


def test_a_killed_plans_staging_folder_is_cleared_by_the_next_plan(tmp_path):
    target = tmp_path / "dev"
    killed = PlanOutput(target)
    left = killed.prepare()  # then the process dies: no commit, no abandon
    (left / "resources.json").write_text("half")
    foreign = tmp_path / ".dev.mine.partial"
    foreign.mkdir()
    (foreign / "notes.md").write_text("mine")
    _write_plan(PlanOutput(target), "new")
    assert not left.exists(), "the planner's own leftover is gone"
    assert (foreign / "notes.md").read_text() == "mine", "a folder without the marker is never touched"
