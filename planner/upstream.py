"""Where the pinned upstream data files (CRDs, chart values) live: ``shared/upstream`` beside the repository.

The files are upstream's, byte for byte, and must not be copied into this repository; they are read in place.
The repository root's parent holds ``shared/`` (in CI a copy of ``shared/`` sits beside the clone). Set
``AKS_GPU_UPSTREAM`` to use another folder; when it is set, it is the only place looked at.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV_VAR = "AKS_GPU_UPSTREAM"
REPO_ROOT = Path(__file__).resolve().parents[1]
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
