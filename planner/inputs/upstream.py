"""Where the pinned upstream data files (CRDs, chart values) live: ``shared/upstream`` beside the repository.

The files are upstream's, byte for byte, and must not be copied into this repository; they are read in place.
The repository root's parent holds ``shared/`` (in CI a copy of ``shared/`` sits beside the clone). Set
``AKS_GPU_UPSTREAM`` to use another folder; when it is set, it is the only place looked at.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV_VAR = "AKS_GPU_UPSTREAM"
REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT = REPO_ROOT / ".." / "shared" / "upstream"


def upstream_dir() -> Path | None:
    """The ``shared/upstream`` folder, or None when it is absent (or ``$AKS_GPU_UPSTREAM`` names no folder)."""
    configured = os.environ.get(ENV_VAR)
    candidate = Path(configured).expanduser() if configured else DEFAULT
    return candidate.resolve() if candidate.is_dir() else None


def crds_dir() -> Path | None:
    """``<upstream>/crds``, the pinned CustomResourceDefinitions, or None when absent."""
    base = upstream_dir()
    return base / "crds" if base is not None and (base / "crds").is_dir() else None


def missing_reason() -> str:
    """Why :func:`upstream_dir` found nothing, for skip messages."""
    configured = os.environ.get(ENV_VAR)
    if configured:
        return f"${ENV_VAR}={configured} is not a folder"
    return f"no shared/upstream beside the repository ({DEFAULT.resolve()}); set ${ENV_VAR} to its path"


# Files of shared/upstream that stand in for a release they are not (each named in the note beside them).
_SNAPSHOTS = {
    "dynamo-platform-1.6.1.tgz": "DYNAMO.md",
    "nvidia.com_dynamographdeployments.yaml": "DYNAMO.md",
}


def snapshot_note(path: str | Path) -> str:
    """What a file of the upstream copy really is, when it is a snapshot standing in for the pinned release."""
    path = Path(path)
    note = _SNAPSHOTS.get(path.name)
    if note is None or not (path.parent.parent / note).is_file():
        return ""
    return (
        f"{path.name} of the upstream copy is a snapshot of upstream main (2026-08-21, 1.5.0 development) packaged as "
        f"the pinned release, not the release itself ({path.parent.parent / note})"
    )
