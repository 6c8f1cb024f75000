"""``aks-gpu alternatives STACK [--model NAME] [--regions R,...] [--format table|json]``: for each self-hosted model of a
stack, the placements that fit it (``planner.alternatives``), cheapest first, the current one marked.

Runs the stack's program offline, as ``aks-gpu plan`` does, and reads what it exports of its models
(``model_placements``: facts, fit settings, replicas, where each runs); no cloud. Exit codes: 0 every model has a
placement, 1 one has none, 2 bad input (a flag refused in one line on stderr naming it, the value and what is
accepted; a stack file refused as ``aks-gpu plan`` refuses it). ``--format json`` prints ``{"stack", "prices",
"assumptions", "models": [{"model", "hf_id", "max_model_len", "replicas", "regions", "current", "rungs": [...]}]}``,
each rung as ``alternatives`` documents it, ``rungs`` cheapest first (docs/capacity.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the command's work imports these when it runs: `aks-gpu --help` does not pay for them
    from aks_gpu_inference.planner import alternatives

EXIT_OK, EXIT_NONE_FITS, EXIT_USAGE = 0, 1, 2
SHOWN = 15
"""Rungs the table prints per model (the JSON has them all)."""


class UsageError(ValueError):
    """Input the command refuses: its message is the one line printed after ``error:``."""


def _usage(flag: str, value: str, accepted: str) -> UsageError:
    return UsageError(f"{flag}={value!r}: {accepted}")


def planned(project_dir: Path, stack_name: str) -> dict[str, dict]:
    """The stack's ``model_placements`` output: its program run offline, as ``aks-gpu plan`` runs it (secrets as
    placeholders); input the stack refuses is a ConfigError (exit 2)."""
    import pulumi

    from aks_gpu_inference.components.core.errors import ConfigError
    from aks_gpu_inference.planner.engine import program as engine
    from aks_gpu_inference.planner.inputs import stackfile

    stack = stackfile.read_stack(project_dir, stack_name)
    try:
        run = engine.run_program(project_dir, stack.project, stack.stack, stack.config, stack.secret_keys)
    except pulumi.RunError as err:
        raise ConfigError("a component of the stack program refused its arguments", [str(err)]) from None
    return run.outputs.get("model_placements") or {}


def chosen_regions(text: str | None) -> list[str] | None:
    """``--regions``: region names, each one the price snapshot covers; None when not given."""
    if text is None:
        return None
    from aks_gpu_inference.components.core import catalog
    from aks_gpu_inference.components.stack.stack_input import region_problem

    names = [part.strip() for part in text.split(",")]
    priced = catalog.price_regions()
    for name in names:
        if not name:
            raise _usage("--regions", text, "a comma-separated list of region names, e.g. eastus,westus3")
        if problem := region_problem(name):
            raise _usage("--regions", name, problem)
        if name not in priced:
            raise _usage("--regions", name, f"the price snapshot has no prices there; regions with prices: {', '.join(priced)}")
    return list(dict.fromkeys(names))


def needs(placements: dict[str, dict], only: str | None) -> list[tuple[alternatives.Need, alternatives.Current]]:
    """What each self-hosted model asks, and where it runs now (the stack's ``model_placements``, whole numbers as ints:
    ``engine.program.ProgramRun.outputs``); ``only``: one."""
    from aks_gpu_inference.components.core.models import ModelFactsArgs
    from aks_gpu_inference.planner import alternatives

    if only is not None and only not in placements:
        raise _usage("--model", only, f"not a self-hosted model of the stack; accepted: {', '.join(placements) or 'none'}")
    if not placements:
        raise UsageError("STACK: the stack has no self-hosted models (models[]) to place")
    found = []
    for name, p in placements.items():
        if only is None or name == only:
            facts, settings = ModelFactsArgs(**p["facts"]), dict(p["settings"])
            need = alternatives.Need(
                name, facts, settings, p["replicas"], p["whole_nodes"], p["decoders"], p["rdma"], p["tokens_per_second"]
            )
            found.append((need, alternatives.Current(**p["current"])))
    return found


def report(placements: dict[str, dict], stack: str, only: str | None, where: list[str] | None) -> dict[str, Any]:
    """The whole answer as the JSON prints it."""
    from aks_gpu_inference.components.core import catalog, regions
    from aks_gpu_inference.planner import alternatives

    found, wanted = [], needs(placements, only)
    for need, current in wanted:
        places = where or alternatives.default_regions(current.region, current.vm_size)
        found.append(
            {
                "model": need.name,
                "hf_id": need.facts.hf_id,
                "max_model_len": need.settings["max_model_len"],
                "replicas": need.replicas,
                "regions": places,
                "current": alternatives.current_rung(need, current).as_dict() | {"pool": current.pool},
                "rungs": [r.as_dict() for r in alternatives.rungs(need, current, places)],
            }
        )
    prices = catalog.price_snapshot(wanted[0][1].region)
    return {
        "stack": stack,
        "prices": {"date": prices["date"], "source": prices["source"].rsplit(",", 1)[0], "note": prices["note"]},
        "assumptions": {
            "usd_per_month": "nodes x the size's list price in the region x 730 h; nodes hold the model's replicas (the "
            "autoscaler's ceiling, or the prefill and decode engines)",
            "usd_per_1m_tokens": f"one replica's share of its VM at {wanted[0][0].tokens_per_second:g} output tokens/s "
            "(gateway.self_hosted_tokens_per_second; assumed the same on every size: measure yours and set it)",
            "spot": "priced at the on-demand ceiling (spotMaxPrice -1): the snapshot has no Spot prices; the market price "
            "is lower and changes, and Azure may evict",
            "zones": f"the region's availability zones ({regions.source()}); whether a size is offered in each zone to "
            "your subscription, and its quota, is what `aks-gpu preflight STACK --alternatives` asks Azure",
            "sizes": "current catalog sizes of the model's GPU vendor and CPU architecture (its image), InfiniBand ones "
            "for an RDMA model, whole GPUs (tp 1, 2, 4, 8 within a node)",
        },
        "models": found,
    }


def _money(value: float | None, digits: int = 0) -> str:
    return "n/a" if value is None else f"${value:,.{digits}f}"


def text(doc: dict[str, Any]) -> str:
    from aks_gpu_inference.components.core import catalog
    from aks_gpu_inference.planner.report.tables import table

    lines = []
    for entry in doc["models"]:
        current, rows = entry["current"], entry["rungs"]
        shown = rows[:SHOWN] + ([current] if not any(r["current"] for r in rows[:SHOWN]) else [])
        lines.append(
            f"Placements for {entry['model']} ({entry['hf_id']}, {entry['max_model_len']} tokens, {entry['replicas']} "
            f"replica(s)) in {', '.join(entry['regions'])}, cheapest first; * = the stack's own ({current['pool']})"
        )
        cells = [
            [
                "*" if r["current"] else "",
                r["vm_size"],
                r["region"],
                r["priority"],
                r["tp"],
                r["nodes"],
                _money(r["usd_per_month"]) + (" (ceiling)" if r["priority"] == "spot" else ""),
                _money(r["usd_per_1m_tokens"], 2),
                r["quota_family"] or "unknown",
                r["vcpus"],
                ",".join(r["zones"]) or "none",
            ]
            for r in shown
        ]
        headers = ["", "vm size", "region", "priority", "tp", "nodes", "$/month", "$/1M tokens", "quota", "vCPUs", "zones"]
        lines.append(table(headers, cells))
        if len(rows) > SHOWN:
            lines.append(f"  ... {len(rows) - SHOWN} more (--format json lists them all)")
        if not current["sold"]:
            lines.append(f"  note: {catalog.no_price(current['vm_size'], current['region'])}")
        lines.append("")
    notes = doc["assumptions"]
    lines.append(f"Prices: {doc['prices']['source']} (Retail Prices snapshot, {doc['prices']['date']}).")
    lines += [f"  {key}: {value}" for key, value in notes.items()]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from aks_gpu_inference.planner.inputs import stackfile

    try:
        where = chosen_regions(args.regions)
        placements = planned(stackfile.find_project_dir(Path(args.project_dir).resolve()), args.stack)
        doc = report(placements, args.stack, args.model, where)
    except UsageError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_USAGE
    print(json.dumps(doc, indent=2) if args.format == "json" else text(doc))
    return EXIT_OK if all(m["rungs"] for m in doc["models"]) else EXIT_NONE_FITS


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "alternatives",
        help="rank where each self-hosted model could run: size x region x regular/Spot x tp, cheapest first",
        description=(
            "For each self-hosted model of the stack (models[]), every placement that fits it at its context and settings\n"
            "(VM size x region x regular/Spot x tensor-parallel size), with $/month for the replicas it needs, $/1M tokens\n"
            "at the assumed throughput, the quota family and vCPUs to request, and the region's zones; cheapest first, the\n"
            "stack's own placement marked. Regions: the stack's, plus those of its geography that sell the current size\n"
            "(Microsoft's Retail Prices snapshot); --regions names others. Offline (the stack's program runs under the\n"
            "planner's mocks): `aks-gpu preflight STACK --alternatives` asks Azure for the quota of the top placements."
        ),
        epilog="exit codes:\n  0  every model has a placement\n  1  a model has none\n  2  bad input (one line on stderr)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("stack", help="stack name (reads Pulumi.<stack>.yaml)")
    parser.add_argument("--model", metavar="NAME", help="one model (its models[].name)")
    parser.add_argument("--regions", metavar="R,...", help="regions to rank in, comma-separated (default: see above)")
    parser.add_argument("--format", choices=["table", "json"], default="table", help="output format (default: table)")
    parser.add_argument("--project-dir", default=".", help="folder with Pulumi.yaml (default: the current one or a parent)")
    parser.set_defaults(func=run)
