"""Golden files: what each repo stack renders (Kubernetes manifests, Azure resources) is reviewed
in diffs. After an intended change, refresh them with `make snapshots` and read the diff."""

import difflib
import os
import shutil

import pytest

from planner.cli import main
from tests.conftest import REPO, STACKS

SNAPSHOTS = REPO / "tests" / "snapshots"
UPDATE = os.environ.get("UPDATE_SNAPSHOTS") == "1"


@pytest.mark.parametrize("stack", STACKS)
def test_rendered_stack_matches_its_snapshot(stack, tmp_path):
    assert main(["plan", stack, "--project-dir", str(REPO), "--out", str(tmp_path), "--quiet"]) == 0
    for part in ("kubernetes", "azure"):
        rendered = {p.name: p.read_text() for p in sorted((tmp_path / part).iterdir())}
        golden_dir = SNAPSHOTS / stack / part
        if UPDATE:
            shutil.rmtree(golden_dir, ignore_errors=True)
            golden_dir.mkdir(parents=True)
            for name, text in rendered.items():
                (golden_dir / name).write_text(text)
            continue
        golden = {p.name: p.read_text() for p in sorted(golden_dir.iterdir())} if golden_dir.is_dir() else {}
        assert rendered.keys() == golden.keys(), f"{stack}/{part}: files differ from the snapshot (run `make snapshots`)"
        for name, text in rendered.items():
            diff = "".join(difflib.unified_diff(golden[name].splitlines(True), text.splitlines(True), f"snapshot/{name}", name))
            assert not diff, f"{stack}/{part}/{name} differs from its snapshot (run `make snapshots` if intended):\n{diff}"
