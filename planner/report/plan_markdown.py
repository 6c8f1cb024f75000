"""``plan.md``: the summary document (``summary.build``) as Markdown tables, the verdict first, then cost, pools,
request paths, checks and the rest. It reads only the document, so it says nothing ``summary.json`` does not."""

from __future__ import annotations

from typing import Any

from aks_gpu_inference.planner.report import cost, training
from aks_gpu_inference.planner.report import summary as summary_doc


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if value == "":
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        value = ", ".join(map(str, value))
    return " ".join(str(value).split()).replace("|", "\\|") or "-"


def _table(headers: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def markdown(summary: dict[str, Any]) -> str:
    """``plan.md``: the summary as Markdown, the verdict first, then cost, pools, request paths, checks and the rest."""
    s, estimate = summary, summary["cost"]
    total = estimate["total"]
    out = [
        f"# Plan of stack `{s['stack']}` ({s['stack_file']})",
        "",
        f"**{summary_doc.headline(s)}.** Judged offline as of {s['as_of']}; not a diff against live state.",
        "",
        *(f"- Not checked: {g['what']}. How to check: {g['how']}." for g in s["verdict"]["incomplete"]),
        *([""] if s["verdict"]["incomplete"] else []),
        f"Monthly list-price estimate: **{cost.money_range(total['usd_per_month_min'], total['usd_per_month_max'])}**. "
        f"{s['resources']['total']} resources. The picture: [plan.html](plan.html).",
        "",
        "## Monthly cost estimate",
        "",
        _table(
            ["item", "vm size", "nodes", "$/hour/node", "$/month"],
            [
                [
                    r["item"],
                    r["vm_size"],
                    r["nodes"],
                    "n/a"
                    if r["usd_per_hour_per_node"] is None
                    else f"{'Spot <= ' if r['spot'] else ''}${r['usd_per_hour_per_node']:,.3f}",
                    cost.money_range(r["usd_per_month_min"], r["usd_per_month_max"]),
                ]
                for r in estimate["rows"]
            ]
            + [
                [
                    "**total**",
                    "",
                    "",
                    "",
                    f"**{cost.money_range(total['usd_per_month_min'], total['usd_per_month_max'])}**",
                ]
            ],
        ),
        "",
        *[f"- {note}" for note in estimate["notes"]],
        "",
        "## Node pools and what runs on them",
        "",
        _table(
            ["pool", "mode", "vm size", "nodes", "gpus", "priority", "$/month", "workloads"],
            [
                [
                    p["name"],
                    p["mode"],
                    p["vm_size"],
                    summary_doc.nodes_text(p["nodes_min"], p["nodes_max"]),
                    f"{p['gpu']['per_node']} x {p['gpu']['model']} per node" if p["gpu"] else "-",
                    "spot" if p["spot"] else "regular",
                    cost.money_range(p["usd_per_month"]["min"], p["usd_per_month"]["max"]) if p["usd_per_month"] else "n/a",
                    len(p["workloads"]),
                ]
                for p in s["pools"]
            ],
        ),
        "",
        _table(
            ["workload", "runs on", "asks for", "replicas"],
            [
                [w["id"], w["pools"] or "NO POOL", w["accelerators"], "every node" if w["every_node"] else w["replicas"]]
                for w in s["workloads"]
            ],
        ),
        "",
    ]
    out += _request_paths(s)
    out += [
        "## Deployability checks",
        "",
        _table(["check", "blockers", "warnings"], [[c["check"], c["blockers"], c["warnings"]] for c in s["checks"]]),
        "",
    ]
    if s["findings"]:
        out += [
            _table(
                ["level", "check", "object", "problem", "fix"],
                [[f["level"], f["check"], f["object"], f["message"], f["fix"]] for f in s["findings"]],
            ),
            "",
        ]
    policy = s["policy"]
    out += [
        "## Policy verdicts (aks-gpu-guardrails)",
        "",
        f"{policy['mandatory']} mandatory, {policy['advisory']} advisory, {policy['exempted']} exempted "
        "(node agents the pack config accepts).",
        "",
    ]
    rows = [[v["enforcement"], v["policy"], v["where"], v["message"]] for v in policy["verdicts"]]
    rows += [["exempted", e["rule"], e["where"], f"{e['message']}: {e['why']}"] for e in policy["exemptions"]]
    if rows:
        out += [_table(["level", "rule", "where", "finding"], rows), ""]
    if s["claims"]["verdicts"]:
        out += [
            "## Claim satisfiability",
            "",
            f"{s['claims']['unsatisfiable']} unsatisfiable.",
            "",
            _table(
                ["claim template", "request", "device class", "pool", "needs", "ok", "why"],
                [
                    [
                        f"{v['namespace']}/{v['template']}",
                        v["request"],
                        v["device_class"],
                        v["pool"],
                        v["needed"],
                        v["satisfiable"],
                        v["reason"],
                    ]
                    for v in s["claims"]["verdicts"]
                ],
            ),
            "",
        ]
    quota = s["quota"]
    out += [
        f"## Quota ({quota['region']})",
        "",
        "vCPUs at the pools' maximum node counts, upgrade surge included.",
        "",
        _table(
            ["quota", "vCPUs", "pools"],
            [[r["quota"] if r["known"] else f"{r['quota']} (unknown offline)", r["vcpus"], r["pools"]] for r in quota["rows"]],
        ),
        "",
    ]
    if quota["preview_features"]:
        out += [f"Preview features the subscription must have registered: {', '.join(quota['preview_features'])}.", ""]
    out += [f"{quota['note']} Limits and usage: `{quota['limits_checked_by']}`.", ""]
    if s["models"]:
        out += [
            "## Models (vLLM memory fit per GPU)",
            "",
            _table(
                ["name", "model", "gpu", "tp", "context", "weights/gpu", "kv tokens", "full seqs"],
                [
                    [
                        m["name"],
                        m["model"],
                        m["gpu"],
                        m["tp"],
                        m["max_model_len"],
                        f"{m['weights_gib_per_gpu']:.1f} GiB",
                        m["kv_tokens"],
                        m["full_length_sequences"],
                    ]
                    for m in s["models"]
                ],
            ),
            "",
        ]
    if s["training_cost"]:
        t = s["training_cost"]
        out += [f"## {training.heading(t)}", "", _table(training.HEADERS, training.rows(t)), "", training.worst_case(t), ""]
    res = s["resources"]
    out += [
        "## What would be created",
        "",
        f"{res['total']} resources: {res['components']} components, {res['azure']} Azure resources, "
        f"{res['kubernetes']} Kubernetes objects (with what the charts render).",
        "",
        _table(["resource type", "count"], [[t, n] for t, n in res["by_type"].items()]),
        "",
    ]
    if s["charts"]:
        out += [
            _table(
                ["chart", "version", "namespace", "rendered by", "objects"],
                [
                    [c["chart"], c["version"], c["namespace"], c["rendered_by"] or "NOT RENDERED", c["objects"]]
                    for c in s["charts"]
                ],
            ),
            "",
        ]
    out += [
        f"## Images the cluster pulls ({len(s['images'])})",
        "",
        _table(["registry", "image", "used by"], [[i["registry"], f"`{i['image']}`", i["used_by"]] for i in s["images"]]),
        "",
        "## Not checked offline",
        "",
        *[f"- {item}" for item in s["not_checked"]],
        "",
    ]
    return "\n".join(out)


def _usd(value: float | None) -> str:
    return "unknown" if value is None else cost.money(value)


def _request_paths(s: dict[str, Any]) -> list[str]:
    out = []
    for path in s["request_paths"]:
        router = path["router"]
        steps = [
            f"client -> Gateway {path['gateway']} ({', '.join(path['listeners'])})",
            f"auth: {path['auth']}",
            f"budget: {path['budget']}",
        ]
        if router:
            steps.append(
                f"semantic router ({router['service']}; clients send {' or '.join(router['auto_models'])} to let it choose)"
            )
        out += [
            f"## Request path through Gateway {path['gateway']}",
            "",
            " -> ".join(steps) + " -> backend.",
            "",
            "HTTP filters of the listener, in order (simulated from Envoy Gateway and AI Gateway sources):",
            "",
            *[f"    {line}" for line in path["filters"]],
            "",
            _table(
                ["model", "backend", "via", "target", "runs on", "router picks it", "$/1M prompt", "$/1M completion"],
                [
                    [
                        b["model"],
                        b["kind"],
                        b["via"],
                        b["target"],
                        b["pools"],
                        b["router_picks"] + (["default"] if b["router_default"] else []),
                        _usd((b["usd_per_million"] or {}).get("prompt")),
                        _usd((b["usd_per_million"] or {}).get("completion")),
                    ]
                    for b in path["backends"]
                ],
            ),
            "",
            _table(["request", "what answers"], [[r["request"], r["answer"]] for r in path["rows"]]),
            "",
        ]
    if s["endpoints"]:
        out += [
            "## In-cluster model endpoints",
            "",
            _table(
                ["name", "backend", "target", "workloads", "runs on"],
                [[e["model"], e["kind"], e["target"], e["workloads"], e["pools"]] for e in s["endpoints"]],
            ),
            "",
        ]
    return out
