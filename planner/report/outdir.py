"""The plan's output folder, written so that it is never half a plan and never someone else's folder.

- A plan is written to a temporary folder beside the target and moved into place (``rename``) only
  when it is complete.
- Every folder the planner writes carries the marker file ``MARKER``. The planner replaces only a
  folder that carries it, or an empty one; any other non-empty folder is refused (exit 2), however
  much it looks like a plan, so ``--out .`` inside a checkout deletes nothing.
- A refused or failed plan leaves no previous plan that looks current: a marked folder holding an
  earlier plan is replaced by one holding only ``MARKER``, ``STALE`` (the reason) and a
  ``deployability.json`` of ``{"stale": true, "reason": ...}``; the earlier artifacts are deleted.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from aks_gpu_inference.components.core.errors import ConfigError
from aks_gpu_inference.components.core.secrets import redact

MARKER = ".aks-gpu-plan"
"""Marks a folder the planner created; the only kind of non-empty folder it replaces or deletes."""
MARKER_TEXT = "written by aks-gpu plan; the planner may replace or delete this folder\n"
STALE = "STALE"
MAX_REASON = 500


def _is_marked(path: Path) -> bool:
    """Only the planner's own marker says a folder is a plan: files that look like plan artifacts
    (a ``resources.json``, a ``graph.dot``, a ``kubernetes/`` folder) may be the user's own."""
    return (path / MARKER).is_file()


def _redact_files(folder: Path) -> None:
    """The last guard before a plan is in place: no credential-shaped text in any file it holds (a secret the
    stack refused to take in plain text cannot get here; anything else that looks like one is masked)."""
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink():
            try:
                text = path.read_text()
            except UnicodeDecodeError:  # graph.svg and the like are text; nothing binary is written
                continue
            clean = redact(text)
            if clean != text:
                path.write_text(clean)


class PlanOutput:
    """Where one plan goes: ``staging`` while it is written, ``target`` once ``commit`` moved it there."""

    def __init__(self, target: Path):
        self.target = Path(os.path.abspath(target))
        self.staging: Path | None = None
        self._created: list[Path] = []

    def check(self) -> None:
        """Refuse a target the planner must not replace; raises ConfigError (exit 2)."""
        target = self.target
        problem = None
        if target.is_symlink():
            problem = "is a symbolic link; give the folder it points to, or a new folder"
        elif target.exists() and not target.is_dir():
            problem = "is a file, not a folder"
        elif target.is_dir() and not _is_marked(target) and any(target.iterdir()):
            problem = (
                f"is a folder that holds other files and no {MARKER} marker, so it was not made by `aks-gpu plan` "
                "and would be deleted by writing the plan there; give an empty or new folder (e.g. out/<stack>)"
            )
        if problem:
            raise ConfigError("--out is refused", [f"{target}: {problem}"])

    def prepare(self) -> Path:
        """A fresh, empty staging folder beside the target (same file system, so the final move is a rename)."""
        self.check()
        missing = [p for p in [self.target.parent, *self.target.parent.parents] if not p.exists()]
        self._created = missing  # parents made only for this plan: removed again if it fails (deepest first)
        self._clear_leftovers()
        try:
            self.target.parent.mkdir(parents=True, exist_ok=True)
            self.staging = Path(tempfile.mkdtemp(prefix=f".{self.target.name}.", suffix=".partial", dir=self.target.parent))
        except OSError as err:
            raise ConfigError("--out cannot be written", [f"{self.target.parent}: {err.strerror or err}"]) from None
        (self.staging / MARKER).write_text(MARKER_TEXT)
        return self.staging

    def _clear_leftovers(self) -> None:
        """Staging folders a killed plan left beside the target (``.<name>.<random>.partial`` or ``.stale``), when
        they carry the marker: this planner's own, so the next plan removes them."""
        parent = self.target.parent
        if not parent.is_dir():
            return
        for leftover in parent.glob(f".{self.target.name}.*"):
            ours = leftover.suffix in (".partial", ".stale") and not leftover.is_symlink() and _is_marked(leftover)
            if ours:
                shutil.rmtree(leftover, ignore_errors=True)

    def commit(self) -> None:
        """Move the complete plan in ``staging`` to ``target``, replacing an earlier plan there."""
        assert self.staging is not None, "prepare() first"
        (self.staging / MARKER).touch()  # write_plan may have recreated the folder
        _redact_files(self.staging)
        self._swap(self.staging)
        self.staging = None

    def abandon(self, reason: str) -> None:
        """After a refused or failed plan: drop the partial plan and mark an earlier one stale."""
        if self.staging is not None:
            shutil.rmtree(self.staging, ignore_errors=True)
            self.staging = None
        if not (self.target.is_dir() and not self.target.is_symlink() and _is_marked(self.target)):
            for parent in self._created:  # a failed first plan leaves no empty out/ behind
                try:
                    parent.rmdir()
                except OSError:
                    break
            return  # nothing of ours there: an empty, new or foreign folder stays as it is
        reason = " ".join(redact(reason).split())
        reason = reason if len(reason) <= MAX_REASON else reason[: MAX_REASON - 1] + "…"
        stale = Path(tempfile.mkdtemp(prefix=f".{self.target.name}.", suffix=".stale", dir=self.target.parent))
        (stale / MARKER).write_text(MARKER_TEXT)
        when = datetime.now(UTC).isoformat(timespec="seconds")
        (stale / STALE).write_text(f"The last `aks-gpu plan` into this folder failed at {when}, so no plan is here:\n{reason}\n")
        (stale / "deployability.json").write_text(
            json.dumps({"stale": True, "reason": reason, "failed_at": when}, indent=2) + "\n"
        )
        self._swap(stale)

    def _swap(self, ready: Path) -> None:
        """Put the folder ``ready`` (ours, complete) where ``target`` is."""
        target = self.target
        if not target.exists() and not target.is_symlink():
            ready.rename(target)
            return
        if target.is_symlink() or not target.is_dir() or (not _is_marked(target) and any(target.iterdir())):
            shutil.rmtree(ready, ignore_errors=True)  # the target changed since check(): refuse it now
            self.check()
            raise ConfigError("--out is refused", [f"{target}: changed while the plan was written"])
        if not _is_marked(target):
            # An empty folder we did not create: keep it, move the plan's entries in, the marker last.
            for entry in ready.iterdir():
                if entry.name != MARKER:
                    entry.rename(target / entry.name)
            (ready / MARKER).rename(target / MARKER)
            ready.rmdir()
            return
        old = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=target.parent))
        old.rmdir()
        target.rename(old)  # ours (marked): moved aside, deleted once the new plan is in place
        ready.rename(target)
        shutil.rmtree(old, ignore_errors=True)
