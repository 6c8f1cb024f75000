"""How ``plan.html``'s picture is drawn: the sizes and colours, the stylesheet, a box of lines and how it becomes SVG,
the arrows between boxes and rows of boxes side by side. What goes in which box, and where, is ``picture``'s job."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from html import escape

CHAR = 6.7
"""Width of a 12 px character, a little over the average of the sans-serif fonts browsers fall back to."""
TITLE_CHAR = 7.9
BOLD_CHAR = 7.3
LINE = 16
PAD = 9
TITLE = 24
GAP_X, GAP_Y = 26, 44
MARGIN, FRAME = 16, 18
PALETTE = ("#2e7d32", "#1565c0", "#ef6c00", "#ad1457", "#00838f", "#6a1b9a", "#827717", "#4e342e")
ROUTER, PROXY, OTHER = "#7b1fa2", "#37474f", "#9e9e9e"

STYLE = """
body { font: 14px system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; margin: 16px; color: #212121; }
h1 { font-size: 20px; margin: 0 0 6px; }
p { margin: 4px 0; }
.ok { color: #1b5e20; font-weight: 600; }
.bad { color: #b71c1c; font-weight: 600; }
.warn { color: #8a5a00; font-weight: 600; }
.picture { overflow: auto; margin-top: 10px; }
svg text { font: 12px system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; fill: #212121; }
svg .title { font-size: 13px; font-weight: 700; }
svg .muted { fill: #616161; font-weight: 400; }
svg .ns { fill: #757575; font-style: italic; font-size: 11px; }
svg .serves { font-weight: 600; }
svg .frame-label { font-size: 12px; font-weight: 700; fill: #455a64; }
svg .box { fill: #ffffff; stroke: #90a4ae; stroke-width: 1.2; }
svg .client { fill: #eceff1; }
svg .gateway { fill: #e3f2fd; stroke: #1565c0; }
svg .router { fill: #f3e5f5; stroke: #7b1fa2; }
svg .backend { fill: #ffffff; stroke-width: 2; }
svg .external { fill: #fafafa; stroke-dasharray: 5 3; }
svg .pool { fill: #fffde7; stroke: #8d6e63; }
svg .gpu { fill: #fff3e0; stroke: #e65100; stroke-width: 1.6; }
svg .kaito { fill: #fff8e1; stroke: #e65100; stroke-dasharray: 6 3; }
svg .unplaced { fill: #ffebee; stroke: #b71c1c; stroke-width: 2; }
svg .frame { fill: none; stroke: #90a4ae; stroke-dasharray: 8 4; stroke-width: 1.5; }
svg .edge { fill: none; stroke-width: 1.8; }
"""


@dataclass
class Line:
    text: str
    cls: str = ""
    dot: str | None = None
    note: str = ""
    """Grey text after ``text`` (a workload's GPUs)."""


@dataclass
class Box:
    title: str
    lines: list[Line]
    cls: str
    color: str | None = None
    """The stripe at the top: the backend's colour."""
    min_width: float = 150
    max_width: float = 330
    x: float = 0
    y: float = 0
    width: float = field(init=False, default=0)

    def __post_init__(self) -> None:
        widest = max([len(self.title) * TITLE_CHAR] + [line_width(line) for line in self.lines])
        self.width = min(self.max_width, max(self.min_width, widest + 2 * PAD + CHAR))
        # Plain lines wrap; a workload's line (with its dot) is cut, the whole text in its tooltip.
        chars = int((self.width - 2 * PAD) / CHAR)
        wrapped = []
        for line in self.lines:
            if line.dot or line.note:
                wrapped.append(line)
                continue
            parts = textwrap.wrap(line.text, chars, break_on_hyphens=False) or [""]
            wrapped += [Line(part, line.cls) for part in parts]
        self.lines = wrapped

    @property
    def height(self) -> float:
        return TITLE + LINE * len(self.lines) + PAD / 2

    @property
    def center(self) -> float:
        return self.x + self.width / 2


def char_width(cls: str) -> float:
    return BOLD_CHAR if cls == "serves" else CHAR


def line_width(line: Line) -> float:
    return len(line.text) * char_width(line.cls) + (len(line.note) + 2) * CHAR * bool(line.note) + (12 if line.dot else 0)


def fit(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[: max(1, chars - 1)] + "\u2026"


def svg_box(box: Box, index: int) -> list[str]:
    clip = f"clip{index}"
    out = [
        f'<clipPath id="{clip}"><rect x="{box.x:.1f}" y="{box.y:.1f}" width="{box.width - 4:.1f}" height="{box.height:.1f}"/></clipPath>',
        f'<rect class="box {box.cls}" x="{box.x:.1f}" y="{box.y:.1f}" width="{box.width:.1f}" height="{box.height:.1f}" rx="7"'
        + (f' style="stroke: {box.color}"' if box.color and box.cls.startswith("backend") else "")
        + "/>",
    ]
    if box.color:
        out.append(f'<rect x="{box.x:.1f}" y="{box.y:.1f}" width="{box.width:.1f}" height="5" rx="2" fill="{box.color}"/>')
    out.append(f'<g clip-path="url(#{clip})">')
    chars = int((box.width - 2 * PAD) / TITLE_CHAR)
    out.append(svg_text(box.x + PAD, box.y + 18, box.title, "title", chars))
    for i, line in enumerate(box.lines):
        baseline = box.y + TITLE + LINE * i + 11
        x = box.x + PAD
        if line.dot:
            out.append(f'<circle cx="{x + 4:.1f}" cy="{baseline - 4:.1f}" r="4" fill="{line.dot}"/>')
            x += 12
        room = box.x + box.width - PAD - x
        if line_width(line) - (12 if line.dot else 0) <= room:
            note = f'<tspan class="muted" dx="8">{escape(line.note)}</tspan>' if line.note else ""
            out.append(f'<text x="{x:.1f}" y="{baseline:.1f}" class="{line.cls}">{escape(line.text)}{note}</text>')
        else:
            full = line.text + (f" \u00b7 {line.note}" if line.note else "")
            out.append(svg_text(x, baseline, full, line.cls, int(room / char_width(line.cls))))
    out.append("</g>")
    return out


def svg_text(x: float, y: float, text: str, cls: str, chars: int) -> str:
    shown = fit(text, chars)
    tooltip = f"<title>{escape(text)}</title>" if shown != text else ""
    return f'<text x="{x:.1f}" y="{y:.1f}" class="{cls}">{tooltip}{escape(shown)}</text>'


def edge(x1: float, y1: float, x2: float, y2: float, color: str, marker: str) -> str:
    middle = (y1 + y2) / 2
    return (
        f'<path class="edge" d="M{x1:.1f},{y1:.1f} C{x1:.1f},{middle:.1f} {x2:.1f},{middle:.1f} {x2:.1f},{y2 - 2:.1f}" '
        f'stroke="{color}" marker-end="url(#{marker})"/>'
    )


def place_row(boxes: list[Box], x0: float, width: float, y: float) -> float:
    """Place ``boxes`` side by side, centred in ``width`` from ``x0``, tops at ``y``; the row's height."""
    total = sum(b.width for b in boxes) + GAP_X * max(0, len(boxes) - 1)
    x = x0 + max(0.0, (width - total) / 2)
    for box in boxes:
        box.x, box.y = x, y
        x += box.width + GAP_X
    return max((b.height for b in boxes), default=0)


def row_width(boxes: list[Box]) -> float:
    return sum(b.width for b in boxes) + GAP_X * max(0, len(boxes) - 1)


def marker_id(color: str) -> str:
    return "arrow-" + color.lstrip("#")
