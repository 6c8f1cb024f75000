"""The ``aks-gpu`` command line: offline planning (and, as the project grows, scanning and fitting).

Each command imports what it needs when it runs, so ``aks-gpu --help`` and the light commands do
not pay for the Pulumi SDKs.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from datetime import date
from pathlib import Path

from components.errors import ConfigError

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _progress(message: str, quiet: bool) -> None:
    if not quiet:
        print(f"» {message}", file=sys.stderr, flush=True)


def load_policy_config(path: str | None) -> dict:
    """A ``--policy-pack-config`` style JSON file: rule -> {enforcementLevel, knobs...}."""
    if not path:
        return {}
    from policies.rules import check_pack_config

    try:
        config = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise ConfigError(f"cannot read policy config {path}", [str(err)]) from None
    problems = check_pack_config(config)
    if problems:
        raise ConfigError(f"policy config {path} is invalid", problems)
    return {name: ({"enforcementLevel": v} if isinstance(v, str) else v) for name, v in config.items()}


def parse_as_of(text: str | None) -> date:
    """The plan date: today, or ``--as-of YYYY-MM-DD`` (lifecycle checks judge retirements on it)."""
    if not text:
        return date.today()
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise ConfigError("--as-of is invalid", [f"--as-of={text!r}: expected a date as YYYY-MM-DD"]) from None


def findings_table(rows: list[tuple[str, str, str, str]]) -> str:
    from .tables import table

    return table(["level", "rule", "where", "finding"], [list(r) for r in rows])


def cmd_plan(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    from . import stackfile

    project_dir = stackfile.find_project_dir(Path(args.project_dir).resolve())
    stack = stackfile.read_stack(project_dir, args.stack)
    as_of = parse_as_of(args.as_of)
    policy_config = load_policy_config(args.policy_config)
    _progress(f"planning stack {stack.stack!r} of {stack.project!r} offline (Pulumi SDK mocks; no CLI, no cloud)", args.quiet)
    if stack.placeholder_secrets:
        _progress(
            f"secrets not in {stack.path.name}, planned with placeholders: {', '.join(stack.placeholder_secrets)}", args.quiet
        )

    import pulumi

    from . import analyzer, claims, engine, render, report
    from .tables import table

    try:
        run = engine.run_program(project_dir, stack.project, stack.stack, stack.config, stack.secret_keys)
    except pulumi.RunError as err:
        # Components raise RunError subclasses for bad input: the message is the whole story.
        raise ConfigError(f"{stack.path.name}: the stack program refused its input", [str(err)]) from None
    from . import charts

    _progress("rendering the stack's Helm charts (helm template where available, else the project's chart profiles)", args.quiet)
    run, renders = charts.expand(run, use_helm=not args.no_helm)
    out_dir = Path(args.out or project_dir / "out" / stack.stack)
    _progress(f"registered {len(run.resources)} resources; writing {out_dir}", args.quiet)
    counts = render.write_plan(run, out_dir)
    _progress("running the aks-gpu-guardrails policy pack through the pulumi_policy analyzer", args.quiet)
    verdicts = analyzer.analyze(run, policy_config)
    (out_dir / "policy.json").write_text(json.dumps([v.__dict__ for v in verdicts], indent=2) + "\n")
    names = {r.urn: f"{r.type.rsplit(':', 1)[-1]} {r.name}" for r in run.resources}

    print(f"Plan of stack '{stack.stack}' ({stack.path.name}) — offline, not a diff against live state\n")
    print(report.resources_by_type(run), end="\n\n")
    print("GPU pools")
    print(report.gpu_pools(run), end="\n\n")
    print("Monthly cost estimate")
    print(report.cost_estimate(run), end="\n\n")
    fits = render.plain(run.outputs.get("model_fits") or {})
    if fits:
        endpoints = run.outputs.get("model_endpoints") or {}
        print("Models (vLLM memory fit per GPU, see `aks-gpu fit`)")
        rows = [
            [
                name,
                f["model"],
                f["gpu"],
                f["tp"],
                f["max_model_len"],
                f"{f['weights_gib_per_gpu']:.1f} GiB",
                f["kv_tokens"],
                f["full_length_sequences"],
                endpoints.get(name, ""),
            ]
            for name, f in sorted(fits.items())
        ]
        print(
            table(["name", "model", "gpu", "tp", "context", "weights/gpu", "kv tokens", "full seqs", "endpoint"], rows),
            end="\n\n",
        )
    routes = render.plain(run.outputs.get("gateway_routes") or {})
    if routes:
        costs = render.plain(run.outputs.get("gateway_cost_per_million") or {})
        endpoint = run.outputs.get("gateway_endpoint") or f"(after deploy: {run.outputs.get('gateway_address_command')})"
        from components.router_config import auto_model_names

        auto = " or ".join(f'"{m}"' for m in auto_model_names())
        print(f"Gateway: {endpoint}  (clients send model {auto} or a model below; authentication required)")
        rows = [
            [
                model,
                backend,
                f"${costs.get(model, {}).get('prompt', 0):,.2f}",
                f"${costs.get(model, {}).get('completion', 0):,.2f}",
            ]
            for model, backend in sorted(routes.items())
        ]
        print(table(["model", "backend", "$/1M prompt", "$/1M completion"], rows))
        print("  note: self-hosted cost = the replica's share of its VM's list price at the assumed throughput; Azure OpenAI")
        print("  prices are unverified third-party list prices. Estimates, not quotes.", end="\n\n")
    claim_verdicts = claims.check(run)
    (out_dir / "claims.json").write_text(json.dumps([v.__dict__ for v in claim_verdicts], indent=2) + "\n")
    from . import deploy
    from .deploy import model as deploy_model
    from .upstream import upstream_dir

    upstream = Path(args.upstream) if args.upstream else upstream_dir()
    planned = deploy_model.build(run, renders, claim_verdicts)
    findings = deploy.run(planned, as_of, upstream)
    from . import gateway_report

    gateway = gateway_report.build(planned, upstream)
    (out_dir / "gateway.json").write_text(json.dumps(gateway, indent=2) + "\n")
    (out_dir / "deployability.json").write_text(
        json.dumps({"as_of": as_of.isoformat(), "findings": [f.as_dict() for f in findings]}, indent=2) + "\n"
    )
    unsatisfiable = [v for v in claim_verdicts if not v.satisfiable]
    if claim_verdicts:
        print(
            f"Claim satisfiability (simulated ResourceSlices, CEL evaluated with cel-python): {len(unsatisfiable)} unsatisfiable"
        )
        rows = [
            [
                f"{v.namespace}/{v.template}",
                v.request,
                v.device_class,
                v.pool,
                v.needed,
                "yes" if v.satisfiable else "NO",
                v.reason,
            ]
            for v in claim_verdicts
        ]
        print(table(["claim template", "request", "device class", "pool", "needs", "ok", "why"], rows), end="\n\n")
    print(report.deployability(findings, renders, as_of, upstream), end="\n\n")
    print(gateway_report.text(gateway), end="\n\n")
    exempted = analyzer.exemptions(run, policy_config)
    blockers = [f for f in findings if f.level == "blocker"]
    mandatory = [v for v in verdicts if v.mandatory]
    print(
        f"Policy verdicts (aks-gpu-guardrails): {len(mandatory)} mandatory, {len(verdicts) - len(mandatory)} advisory, "
        f"{len(exempted)} exempted (node agents the pack config accepts)"
    )
    rows = [(v.enforcement, v.policy, names.get(v.urn, v.urn or "stack"), v.message) for v in verdicts]
    rows += [("exempted", e.rule, names.get(e.urn, e.urn), f"{e.message}: {e.why}") for e in exempted]
    if rows:
        print(findings_table(rows))
    print()
    print(
        f"Wrote {out_dir}: resources.json, outputs.json, policy.json, claims.json, {counts['kubernetes']} Kubernetes manifests, "
        f"{counts['azure']} Azure resources, graph.mmd/graph.dot ({time.perf_counter() - started:.1f}s)"
    )
    return EXIT_FAILED if mandatory or unsatisfiable or blockers else EXIT_OK


def cmd_scan(args: argparse.Namespace) -> int:
    from . import scan

    config = load_policy_config(args.policy_config)
    located, findings, exempted = scan.scan_all(args.paths, config)
    mandatory = sum(f.level == "mandatory" for f in findings)
    if args.format == "json":
        print(scan.as_json(located, findings, exempted))
    elif args.format == "sarif":
        print(scan.as_sarif(findings))
    else:
        rows = [(f.level, f.rule.name, f.violation.urn, f.violation.message) for f in findings]
        rows += [("exempted", e.rule, e.urn, f"{e.message}: {e.why}") for e in exempted]
        if rows:
            print(findings_table(rows))
        print(
            f"{len(located)} objects scanned: {mandatory} mandatory, {len(findings) - mandatory} advisory findings, "
            f"{len(exempted)} exempted"
        )
    return EXIT_FAILED if mandatory else EXIT_OK


def cmd_fit(args: argparse.Namespace) -> int:
    from . import fit

    return fit.run(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="aks-gpu",
        description="Plan and check GPU inference stacks on AKS without a cloud account or the Pulumi CLI.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    plan = commands.add_parser(
        "plan",
        help="run a stack's program offline and write what it would create to out/<stack>/",
        description=(
            "Run the stack program under Pulumi's mocks with the config of Pulumi.<STACK>.yaml, then write "
            "out/<STACK>/ (resources.json, outputs.json, kubernetes/*.yaml, azure/*.json, graph.mmd, graph.dot) "
            "and print resources by type, GPU pools and a monthly list-price estimate. Values only the cloud "
            "knows are written as <computed:...>; stack secrets as <secret:...>."
        ),
    )
    plan.add_argument("stack", nargs="?", default="dev", help="stack name, i.e. Pulumi.<stack>.yaml (default: dev)")
    plan.add_argument("--project-dir", default=".", help="folder with Pulumi.yaml, or below it (default: current folder)")
    plan.add_argument("--out", help="output folder (default: <project>/out/<stack>)")
    plan.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    plan.add_argument("--policy-config", metavar="FILE", help="policy pack config JSON, as for --policy-pack-config")
    plan.add_argument(
        "--as-of",
        metavar="YYYY-MM-DD",
        help="judge versions, models and VM sizes as retired or not on this date (default: today)",
    )
    plan.add_argument(
        "--no-helm", action="store_true", help="render charts from the project's chart profiles even when helm is on the PATH"
    )
    plan.add_argument(
        "--upstream",
        metavar="DIR",
        help="pinned upstream chart values and CRDs to check against (default: $AKS_GPU_UPSTREAM, else ../shared/upstream)",
    )
    plan.set_defaults(func=cmd_plan)

    scan = commands.add_parser(
        "scan",
        help="check plain Kubernetes YAML (helm template output, manifests) against the guardrail rules",
        description=(
            "Run the aks-gpu-guardrails rules over Kubernetes YAML files or folders (searched for *.yaml and *.yml). "
            "Exit code 1 when a mandatory rule is violated, 2 for unreadable input, 0 otherwise."
        ),
    )
    scan.add_argument("paths", nargs="+", metavar="PATH", help="YAML files or folders")
    scan.add_argument("--format", choices=["table", "json", "sarif"], default="table", help="output format (default: table)")
    scan.add_argument("--policy-config", metavar="FILE", help="policy pack config JSON, as for --policy-pack-config")
    scan.set_defaults(func=cmd_scan)

    fit = commands.add_parser(
        "fit",
        help="list every catalog size and tensor-parallel size that serves a model under vLLM, cheapest first",
        description=(
            "Estimate GPU memory for a model under vLLM on every current catalog size, tp 1/2/4/8 and MIG slice: "
            "weights, runtime overhead and KV cache per GPU (formula: components/models.py FORMULA). "
            "MODEL is a Hugging Face id from components/models.json, a KAITO preset name, or a JSON file of "
            "ModelFactsArgs keys. Exit code 0 when an option fits, 1 when none does, 2 for an unknown model."
        ),
    )
    fit.add_argument("model", metavar="MODEL", help="Hugging Face id (e.g. meta-llama/Llama-3.1-8B-Instruct) or facts JSON file")
    fit.add_argument("--context", type=int, metavar="N", help="max model length in tokens (default: the model's maximum)")
    fit.add_argument("--gpu-memory-utilization", type=float, default=0.9, metavar="F", help="as vLLM's (default: 0.9)")
    fit.add_argument("--dtype", choices=["auto", "bfloat16", "fp8", "int4"], default="auto", help="weights (default: auto)")
    fit.add_argument("--kv-cache-dtype", choices=["auto", "fp8"], default="auto", help="KV cache (default: auto)")
    fit.add_argument("--format", choices=["table", "json"], default="table", help="output format (default: table)")
    fit.add_argument("--all", action="store_true", help="also list the options that do not fit, with the reason")
    fit.set_defaults(func=cmd_fit)
    return parser


def main(argv: list[str] | None = None) -> int:
    # `aks-gpu plan | head` should stop quietly, not with a BrokenPipeError traceback.
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
