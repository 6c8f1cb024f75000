"""Plain-text tables for terminal output; no heavy imports so every command can use them."""

from __future__ import annotations


def table(headers: list[str], rows: list[list[object]]) -> str:
    """A plain-text table; numbers right-aligned."""
    cells = [[str(c) for c in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    numeric = [all(_is_number(row[i]) for row in rows) and bool(rows) for i in range(len(headers))]

    def line(row: list[str]) -> str:
        return "  ".join(c.rjust(w) if num else c.ljust(w) for c, w, num in zip(row, widths, numeric, strict=True)).rstrip()

    return "\n".join([line(cells[0]), line(["-" * w for w in widths])] + [line(r) for r in cells[1:]])


def _is_number(value: object) -> bool:
    return (
        isinstance(value, (int, float))
        or str(value).replace(",", "").replace("$", "").replace(".", "").replace("-", "").strip().isdigit()
    )
