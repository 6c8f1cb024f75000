"""What bounded loading of input someone else wrote refuses with, for YAML (``safe_yaml``) and JSON
(``safe_json``) alike: the default bounds, ``InputError``, and reading a text or file within a size as UTF-8.
"""

from __future__ import annotations

from pathlib import Path

from aks_gpu_inference.components.core.errors import ConfigError

MAX_BYTES = 20 * 2**20
"""Default largest input: 20 MiB, ten times the largest ``helm template`` output the project renders."""

MAX_DEPTH = 100
"""Default deepest nesting of mappings and lists (Kubernetes objects nest about 15 levels deep)."""

MAX_ALIASES = 100_000
"""Default number of nodes aliases may add when expanded: generous for anchors written by hand, a
billionth of a billion-laughs document."""

MAX_INT_DIGITS = 30
"""Default longest integer, in digits: ``2**64`` has 20; nothing the project reads needs more."""

MAX_PROBLEMS = 20
"""Problems reported per file before the rest are summarised."""


class InputError(ConfigError):
    """A refused input; ``line`` is the 1-based line of the first problem, when there is one."""

    def __init__(self, context: str, problems: list[str], line: int | None = None):
        super().__init__(context, problems)
        self.line = line


def read_text(text_or_path: str | Path, source: str | None = None, max_bytes: int = MAX_BYTES) -> tuple[str, str]:
    """The text and its display name; a ``Path`` is read as UTF-8 (a leading BOM dropped)."""
    if not isinstance(text_or_path, Path):
        source = source or "<text>"
        if len(text_or_path) > max_bytes:
            raise InputError(f"{source} is too large", [f"{len(text_or_path):,} characters; the limit is {max_bytes:,} bytes"])
        return text_or_path, source
    path, source = text_or_path, source or str(text_or_path)
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise InputError(f"{source} is too large", [f"{size:,} bytes; the limit is {max_bytes:,} bytes"])
        data = path.read_bytes()
    except OSError as err:
        raise InputError(f"cannot read {source}", [err.strerror or str(err)]) from None
    try:
        return data.decode("utf-8").removeprefix("\ufeff"), source
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise InputError(
            f"{source} is not UTF-8 text",
            [f"{source}:{line}: byte 0x{data[err.start]:02x} at offset {err.start} is not valid UTF-8; save the file as UTF-8"],
            line,
        ) from None


def clip(text: str, limit: int = 40) -> str:
    """``text`` cut to ``limit`` characters for a message."""
    return text if len(text) <= limit else text[: limit - 3] + "..."
