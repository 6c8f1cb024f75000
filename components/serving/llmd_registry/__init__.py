"""What llm-d's endpoint picker and disagg sidecar accept at a release, as generated from their Go source by
``tools/llmd_registry.py`` (one JSON file per llm-d-router tag; nothing hand-written). Pulumi-free.

The file holds the config loader's rules (apiVersions, fields, feature gates, plugin instantiation order), every
registered plugin type with its parameters, defaults and plugin references, the picker's and the sidecar's
command-line flags, and the kinds the picker watches.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

_DIR = Path(__file__).resolve().parent
IMAGE_REPOSITORIES = ("llm-d/llm-d-router-endpoint-picker", "llm-d/llm-d-router-disagg-sidecar")
"""The images llm-d-router publishes from one tag (its ci-release workflow): the picker and the sidecar."""


def releases() -> list[str]:
    """The llm-d-router tags a table exists for."""
    return sorted(p.stem for p in _DIR.glob("v*.json"))


@cache
def load(tag: str) -> dict[str, Any]:
    """The table of llm-d-router ``tag`` (cached; do not mutate it)."""
    path = _DIR / f"{tag}.json"
    if not path.is_file():
        raise ValueError(f"no llm-d picker table for {tag!r} (have: {', '.join(releases()) or 'none'})")
    return json.loads(path.read_text(encoding="utf-8"))


def release_of(image: str) -> str | None:
    """The llm-d-router tag an image of the picker or the sidecar names, when a table exists for it; else None."""
    name, _, tag = image.rpartition(":")
    if not any(name.endswith(repository) for repository in IMAGE_REPOSITORIES) or "@" in image:
        return None
    return tag if tag in releases() else None
