"""``plan.html``: the plan as one picture a person reads at a glance, drawn from the summary document (``summary``).

Top to bottom, the way a request travels: the client, each Gateway (listener, authentication, budget), the semantic
router, one box per backend (model -> what answers it), then the node pools with their size, GPUs, list price and
the workloads the scheduler would place there; the boxes inside the dashed frame are in the cluster. Each backend's
colour marks the workloads that answer it. The page is one self-contained file: inline SVG and CSS, no scripts, no
fonts or anything else fetched.
"""

from __future__ import annotations

import re
from html import escape
from typing import Any

from aks_gpu_inference.planner.report import cost
from aks_gpu_inference.planner.report import summary as summary_doc
from aks_gpu_inference.planner.report.svg_boxes import (
    CHAR,
    FRAME,
    GAP_X,
    GAP_Y,
    MARGIN,
    OTHER,
    PALETTE,
    PROXY,
    ROUTER,
    STYLE,
    Box,
    Line,
    edge,
    marker_id,
    place_row,
    row_width,
    svg_box,
)
from aks_gpu_inference.planner.report.topology import EXTERNAL


def _pool_lines(pool: dict[str, Any]) -> list[Line]:
    nodes = summary_doc.nodes_text(pool["nodes_min"], pool["nodes_max"])
    scaled = " (autoscaled)" if pool["nodes_min"] != pool["nodes_max"] else ""
    lines = [Line(f"{nodes} x {pool['vm_size']}{scaled}")]
    gpu = pool["gpu"]
    if gpu:
        lines.append(
            Line(
                f"{gpu['max_total']} GPU{'s' * (gpu['max_total'] != 1)} max: {gpu['per_node']} x {gpu['model']} per node "
                f"({gpu['vram_gb_per_node']:g} GB)"
            )
        )
    else:
        lines.append(Line("CPU only"))
    month = pool["usd_per_month"]
    if month is None:
        lines.append(Line("no list price in the catalog", "muted"))
    elif pool["spot"]:
        lines.append(Line(f"up to {cost.money_range(month['max'], month['max'])} / month (Spot ceiling)", "serves"))
    else:
        lines.append(Line(f"{cost.money_range(month['min'], month['max'])} / month (list price)", "serves"))
    return lines


def _workload_lines(workloads: list[dict[str, Any]], colors: dict[str, str], extra: list[Line]) -> list[Line]:
    lines = list(extra)
    namespace = object()
    for w in workloads:
        if w["namespace"] != namespace:
            namespace = w["namespace"]
            lines.append(Line(f"namespace {namespace}" if namespace else "cluster-wide", "ns"))
        name = w["name"] + (f" ({w['part']})" if w["part"] else "")
        notes = [w["accelerators"]] if w["accelerators"] else []
        if w["every_node"]:
            notes.append("every node")
        color = colors.get(w["id"])
        lines.append(Line(f"{w['kind']} {name}", "serves" if color and color != ROUTER else "", color or OTHER, ", ".join(notes)))
    return lines


def draw(summary: dict[str, Any]) -> str:
    """The picture as an inline ``<svg>`` element."""
    return _Picture(summary).svg()


class _Picture:
    """The boxes of one summary, placed in rows top to bottom, and the arrows between them."""

    def __init__(self, summary: dict[str, Any]):
        self.summary = summary
        self.flows, endpoints = summary["request_paths"], summary["endpoints"]
        order = {p["name"]: i for i, p in enumerate(_ordered_pools(summary["pools"]))}
        # Backends in the order of the pools they run on (fewer crossing arrows), those outside the cluster last.
        shown = sorted(
            [b for f in self.flows for b in f["backends"]] or endpoints,
            key=lambda b: (_outside(b), min([order.get(p, len(order)) for p in b["pools"]] or [len(order)])),
        )
        colors = {wid: ROUTER for f in self.flows for wid in (f["router"] or {}).get("workloads", [])}
        self.backends: list[tuple[dict[str, Any], Box]] = []
        for i, backend in enumerate(shown):
            color = PALETTE[i % len(PALETTE)]
            colors |= dict.fromkeys(backend["workloads"], color)
            self.backends.append((backend, _backend_box(backend, color)))
        self.client = _client_box(self.flows, endpoints)
        self.gateways = [_gateway_box(f) for f in self.flows]
        self.routers = {i: _router_box(f) for i, f in enumerate(self.flows) if f["router"]}
        self.pools = _pool_boxes(summary, self.flows, colors)
        self.inside = [box for b, box in self.backends if not _outside(b)]
        self.outside = [box for b, box in self.backends if _outside(b)]
        rows = (self.gateways, list(self.routers.values()), self.inside, list(self.pools.values()))
        self.inner = max([row_width(r) for r in rows] + [200])
        self.place()

    def place(self) -> None:
        x0, y = MARGIN + FRAME, MARGIN
        if self.client:
            self.client.x, self.client.y = x0 + (self.inner - self.client.width) / 2, y
            y += self.client.height + GAP_Y
        self.frame_top = y
        y += FRAME + 8
        for row in (self.gateways, list(self.routers.values())):
            if row:
                y += place_row(row, x0, self.inner, y) + GAP_Y
        if self.backends:
            height = place_row(self.inside, x0, self.inner, y)
            x = x0 + self.inner + FRAME + GAP_X
            for box in self.outside:
                box.x, box.y = x, y
                x += box.width + GAP_X
            y += max([height] + [b.height for b in self.outside]) + GAP_Y
        self.frame_bottom = y + place_row(list(self.pools.values()), x0, self.inner, y) + FRAME
        self.right = max([x0 + self.inner + FRAME] + [b.x + b.width for b in self.outside]) + MARGIN

    def edges(self) -> list[tuple[float, float, float, float, str]]:
        """(x1, y1, x2, y2, colour): the request path in grey, each backend's way to its pools in its colour."""
        found = []
        for i, flow in enumerate(self.flows):
            gateway = self.gateways[i]
            if self.client:
                found.append(_down(self.client, 1, 1, gateway, PROXY))
            source = self.routers.get(i, gateway)
            if source is not gateway:
                found.append(_down(gateway, 1, 1, source, PROXY))
            mine = [box for b, box in self.backends if any(b is fb for fb in flow["backends"])]
            found += [_down(source, k + 1, len(mine), box, PROXY) for k, box in enumerate(mine)]
        if self.client and not self.flows:
            found += [_down(self.client, 1, 1, box, PROXY) for _, box in self.backends]
        arrows = [(box, pool, box.color or PROXY) for b, box in self.backends for pool in b["pools"] if pool in self.pools]
        for box, pool, color in arrows:
            out = [a for a in arrows if a[0] is box]
            into = [a for a in arrows if a[1] == pool]
            start = box.x + box.width * (out.index((box, pool, color)) + 1) / (len(out) + 1)
            target = self.pools[pool]
            end = target.x + target.width * (into.index((box, pool, color)) + 1) / (len(into) + 1)
            found.append((start, box.y + box.height, end, target.y, color))
        return found

    def svg(self) -> str:
        edges = self.edges()
        height = self.frame_bottom + MARGIN + 30
        markers = "".join(
            f'<marker id="{marker_id(c)}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
            f'orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="{c}"/></marker>'
            for c in sorted({e[4] for e in edges})
        )
        out = [
            f'<svg viewBox="0 0 {self.right:.0f} {height:.0f}" width="{self.right:.0f}" height="{height:.0f}" role="img" '
            f'aria-label="{escape(_aria(self.summary))}">',
            f"<defs>{markers}</defs>",
            f'<rect class="frame" x="{MARGIN}" y="{self.frame_top:.1f}" width="{self.inner + 2 * FRAME:.1f}" '
            f'height="{self.frame_bottom - self.frame_top:.1f}" rx="12"/>',
            f'<text class="frame-label" x="{MARGIN + 12}" y="{self.frame_top + 17:.1f}">'
            f"{escape(_frame_label(self.summary))}</text>",
        ]
        boxes = [self.client] if self.client else []
        boxes += self.gateways + list(self.routers.values()) + [b for _, b in self.backends] + list(self.pools.values())
        for i, box in enumerate(boxes):
            out += svg_box(box, i)
        out += [edge(*e[:4], e[4], marker_id(e[4])) for e in edges]
        out += _legend(MARGIN, self.frame_bottom + 24, bool(self.routers))
        out.append("</svg>")
        return "\n".join(out)


def _outside(backend: dict[str, Any]) -> bool:
    return backend["pools"] == [EXTERNAL]


def _down(source: Box, k: int, n: int, target: Box, color: str) -> tuple[float, float, float, float, str]:
    """An arrow from the ``k``-th of ``n`` points along the bottom of ``source`` to the top middle of ``target``."""
    return (source.x + source.width * k / (n + 1), source.y + source.height, target.center, target.y, color)


def _aria(summary: dict[str, Any]) -> str:
    pools = ", ".join(p["name"] for p in summary["pools"])
    models = ", ".join(b["model"] for f in summary["request_paths"] for b in f["backends"])
    return f"Stack {summary['stack']}: node pools {pools}" + (f"; models {models}" if models else "")


def _frame_label(summary: dict[str, Any]) -> str:
    region = summary["quota"]["region"]
    return f"AKS cluster of stack {summary['stack']} ({region})"


def _ordered_pools(pools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """System pools first, then CPU pools, then GPU pools: the request flows left to right, towards the GPUs."""
    return sorted(pools, key=lambda p: (p["mode"] != "System", p["gpu"] is not None))


def _client_box(flows: list[dict[str, Any]], endpoints: list[dict[str, Any]]) -> Box | None:
    if flows:
        autos = sorted({m for f in flows if f["router"] for m in f["router"]["auto_models"]})
        models = sorted({b["model"] for f in flows for b in f["backends"]})
        lines = [Line(f"sends model: {', '.join(models)}")]
        if autos:
            lines.append(Line(f"or {' / '.join(autos)}: the router picks"))
        return Box("Client", lines, "client", min_width=200)
    if endpoints:
        return Box("Client in the cluster", [Line("no AI gateway: calls the model endpoints")], "client", min_width=200)
    return None


def _gateway_box(flow: dict[str, Any]) -> Box:
    lines = [
        Line(f"listener {', '.join(flow['listeners'])}"),
        Line(f"auth: {flow['auth']}"),
        Line(f"budget: {flow['budget']}"),
        Line(f"{len(flow['filters'])} HTTP filters in order (plan.md)", "muted"),
        Line(f"Envoy proxy pods on: {', '.join(flow['proxy_pools']) or 'NO POOL'}", "muted"),
    ]
    return Box(f"Gateway {flow['gateway']}", lines, "gateway", min_width=260, max_width=380)


def _router_box(flow: dict[str, Any]) -> Box:
    router = flow["router"]
    autos = " / ".join(router["auto_models"])
    lines = [
        Line(router["service"]),
        Line(f"model {autos}: {len(router['decisions'])} decisions, default {router['default_model']}"),
        Line("any other model passes through"),
        Line(f"runs on: {', '.join(router['pools']) or 'NO POOL'}", "muted", ROUTER),
    ]
    return Box("Semantic router", lines, "router", min_width=260, max_width=380)


def _backend_box(backend: dict[str, Any], color: str) -> Box:
    via = backend["via"] if backend["via"].startswith(backend["kind"]) else f"{backend['kind']}: {backend['via']}"
    lines = [Line(via), Line(backend["target"], "muted")]
    picks = backend.get("router_picks") or []
    if picks or backend.get("router_default"):
        lines.append(Line("router picks it: " + ", ".join(picks + (["default"] if backend.get("router_default") else []))))
    per_million = backend.get("usd_per_million")
    if per_million:
        lines.append(
            Line(f"${per_million.get('prompt', 0):,.2f} / ${per_million.get('completion', 0):,.2f} per 1M tokens in / out")
        )
    if _outside(backend):
        lines.append(Line("outside the cluster", "muted"))
        return Box(f"model {backend['model']}", lines, "backend external", color, min_width=230, max_width=400)
    lines.append(Line(f"runs on: {', '.join(backend['pools']) or 'NOTHING (no pods behind it)'}", "muted", color))
    return Box(f"model {backend['model']}", lines, "backend", color, min_width=230, max_width=400)


def _pool_boxes(summary: dict[str, Any], flows: list[dict[str, Any]], colors: dict[str, str]) -> dict[str, Box]:
    by_id = {w["id"]: w for w in summary["workloads"]}
    boxes: dict[str, Box] = {}
    for pool in _ordered_pools(summary["pools"]):
        proxies = [
            Line(f"Envoy proxy pods (Gateway {f['gateway']})", "", PROXY, "started by Envoy Gateway")
            for f in flows
            if pool["name"] in f["proxy_pools"]
        ]
        workloads = [by_id[w] for w in pool["workloads"]]
        lines = _pool_lines(pool) + _workload_lines(workloads, colors, proxies)
        if not workloads and not proxies:
            lines.append(Line("nothing of the stack runs here", "muted"))
            lines += [Line(f"taint {taint}", "muted") for taint in pool["taints"]]
        if pool["provisioned_by"]:
            title, cls = f"{pool['name']} (nodes {pool['provisioned_by']} provisions)", "kaito"
        else:
            mode = " (system)" if pool["mode"] == "System" else " (Spot)" if pool["spot"] else ""
            title, cls = f"pool {pool['name']}{mode}", "gpu" if pool["gpu"] else "pool"
        boxes[pool["name"]] = Box(title, lines, cls, min_width=240, max_width=440)
    unplaced = [w for w in summary["workloads"] if not w["pools"]]
    if unplaced:
        lines = [Line("scheduling blockers: their pods stay Pending", "muted")]
        boxes[""] = Box("fits no pool", lines + _workload_lines(unplaced, colors, []), "unplaced", min_width=240, max_width=440)
    return boxes


def _legend(x: float, y: float, router: bool) -> list[str]:
    items = [(PALETTE[0], "a backend and the workloads that answer it (one colour each)")]
    if router:
        items.append((ROUTER, "the semantic router"))
    items += [(PROXY, "request path / Envoy proxy"), (OTHER, "other workload")]
    out, cursor = [], x
    for color, label in items:
        out.append(f'<circle cx="{cursor + 5:.1f}" cy="{y - 4:.1f}" r="5" fill="{color}"/>')
        out.append(f'<text x="{cursor + 14:.1f}" y="{y:.1f}" class="muted">{escape(label)}</text>')
        cursor += 14 + len(label) * CHAR + 24
    return out


def _code(text: str) -> str:
    """Escaped text with its Markdown ``code`` spans as <code>."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", escape(text))


def html(summary: dict[str, Any]) -> str:
    """``plan.html``: a headline (verdict, cost, checks) and the picture, in one file that needs no network."""
    verdict, total = summary["verdict"], summary["cost"]["total"]
    failing = [f"{c['check']} {c['blockers']}/{c['warnings']}" for c in summary["checks"] if c["blockers"] or c["warnings"]]
    checks = (
        f"checks with findings (blockers/warnings): {', '.join(failing)}"
        if failing
        else f"all {len(summary['checks'])} deployability checks clean"
    )
    title = f"Plan of stack {summary['stack']}"
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8"/>',
            f"<title>{escape(title)}</title>",
            f"<style>{STYLE}</style>",
            "</head>",
            "<body>",
            f"<h1>{escape(title)} ({escape(summary['stack_file'])})</h1>",
            f'<p class="{ {"works": "ok", "fails": "bad"}.get(verdict["state"], "warn") }">{_code(summary_doc.headline(summary))}</p>',
            *(
                f'<p class="warn">Not checked: {escape(gap["what"])}. How to check: {escape(gap["how"])}.</p>'
                for gap in verdict["incomplete"]
            ),
            f"<p>Monthly list-price estimate: <b>{escape(cost.money_range(total['usd_per_month_min'], total['usd_per_month_max']))}</b>"
            f" &#183; {summary['resources']['total']} resources &#183; {escape(checks)} &#183; judged offline as of "
            f"{escape(summary['as_of'])}</p>",
            '<div class="picture">',
            draw(summary),
            "</div>",
            "<p>The tables behind the picture: plan.md; the data: summary.json.</p>",
            "</body>",
            "</html>",
            "",
        ]
    )
