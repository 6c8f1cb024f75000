"""The ``aks-gpu`` command line: offline planning (and, as the project grows, scanning and fitting).

Each command imports what it needs when it runs, so ``aks-gpu --help`` and the light commands do
not pay for the Pulumi SDKs.
"""

from __future__ import annotations

import argparse
import gc
import json
import re
import signal
import sys
import traceback
from datetime import date
from pathlib import Path

from aks_gpu_inference.components.core.errors import ConfigError
from aks_gpu_inference.components.core.secrets import redact
from aks_gpu_inference.planner.cli_parser import build_parser

# One meaning for every command: 0 clean; 1 mandatory violations, unsatisfiable claims or blockers (plan),
# mandatory findings (scan), nothing fits (fit); 2 bad input (ConfigError, an unreadable file, argparse
# errors); 3 an internal error (a bug: one line on stderr, the traceback with --debug); 4 the stack program
# raised an exception in its own code (plan: file, line and the exception). ``cli_parser.EXIT_CODES`` says so in --help.
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERNAL, EXIT_PROGRAM, EXIT_INTERRUPTED = 0, 1, 2, 3, 4, 130


def _progress(message: str, quiet: bool) -> None:
    if not quiet:
        print(f"» {message}", file=sys.stderr, flush=True)


def load_policy_config(path: str | None) -> dict:
    """A ``--policy-pack-config`` style JSON file: rule -> {enforcementLevel, knobs...}."""
    if not path:
        return {}
    from aks_gpu_inference.policies.rules import check_pack_config

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
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):  # fromisoformat also takes 20261201 and 2026-W48-2
            raise ValueError(text)
        return date.fromisoformat(text)
    except ValueError:
        raise ConfigError("--as-of is invalid", [f"--as-of={text!r}: expected a date as YYYY-MM-DD"]) from None


def findings_table(rows: list[tuple[str, str, str, str]]) -> str:
    from aks_gpu_inference.planner.report.tables import table

    return table(["level", "rule", "where", "finding"], [list(r) for r in rows])


def cmd_plan(args: argparse.Namespace) -> int:
    from aks_gpu_inference.planner.inputs import stackfile
    from aks_gpu_inference.planner.report import outdir

    project_dir = stackfile.find_project_dir(Path(args.project_dir).resolve())
    out = outdir.PlanOutput(Path(args.out) if args.out else project_dir / "out" / args.stack)
    out.prepare()  # refuses (exit 2) a folder the planner did not make, before any work
    try:
        return _plan(args, project_dir, out)
    except BaseException as err:  # a refused or failed plan: no earlier plan may look current
        out.abandon(str(err) if isinstance(err, ConfigError) else f"{type(err).__name__}: {err}")
        raise


def _plan(args: argparse.Namespace, project_dir: Path, out) -> int:
    from aks_gpu_inference.planner.plan import PlanOptions, plan
    from aks_gpu_inference.planner.report import artifacts
    from aks_gpu_inference.planner.report.plan_text import plan_text

    options = PlanOptions(
        as_of=parse_as_of(args.as_of),
        policy_config=load_policy_config(args.policy_config),
        upstream=Path(args.upstream) if args.upstream else None,
        charts=tuple(args.charts or ()),
        pull=args.pull,
    )
    result = plan(project_dir, args.stack, options, lambda message: _progress(message, args.quiet))
    _progress(f"writing {out.target}", args.quiet)
    counts = artifacts.write(result, out.staging)
    print(plan_text(result))
    out.commit()
    print(
        f"Wrote {out.target}: plan.html (the picture), plan.md, summary.json, resources.json, outputs.json, "
        f"policy.json, claims.json, gateway.json, deployability.json, {counts['kubernetes']} Kubernetes manifests, "
        f"{counts['azure']} Azure resources, graph.mmd/graph.dot ({result.seconds:.1f}s)"
    )
    return EXIT_FAILED if result.failed or (args.strict and result.state == "incomplete") else EXIT_OK


def cmd_scan(args: argparse.Namespace) -> int:
    from aks_gpu_inference.planner import scan
    from aks_gpu_inference.planner.report import scan as scan_report

    report = scan.Report()
    try:
        report = scan.run(args.paths, load_policy_config(args.policy_config))
    except Exception as err:  # a JSON or SARIF reader still gets a whole document; main reports the error
        if args.format != "table":
            if isinstance(err, ConfigError):
                check, where, code = "policy-config", args.policy_config, EXIT_USAGE
            elif isinstance(err, OSError):
                check, where, code = "unreadable", err.filename, EXIT_USAGE
            else:
                check, where, code = "internal-error", None, EXIT_INTERNAL
            message = _one_line(err, with_type=code == EXIT_INTERNAL)
            report.problems.append(scan.Problem("error", check, where, None, message))
            print((scan_report.as_json if args.format == "json" else scan_report.as_sarif)(report, code))
        raise
    mandatory = report.mandatory
    code = EXIT_FAILED if mandatory else EXIT_USAGE if report.errors else EXIT_OK
    if args.format == "json":
        print(scan_report.as_json(report, code))
    elif args.format == "sarif":
        print(scan_report.as_sarif(report, code))
    else:
        for problem in report.problems:
            print(f"{problem.level}: {problem.where}: {problem.message}", file=sys.stderr)
        at = {id(o): f"{(w := report.place(o)).file}:{w.line}" for o in [*report.findings, *report.exempted]}
        rows = [(f.level, f.rule.name, at[id(f)], f.violation.message) for f in report.findings]
        rows += [("exempted", e.rule, at[id(e)], f"{e.message}: {e.why}") for e in report.exempted]
        if rows:
            print(findings_table(rows))
        summary = (
            f"{len(report.located)} objects scanned: {mandatory} mandatory, {len(report.findings) - mandatory} advisory "
            f"findings, {len(report.exempted)} exempted"
        )
        if report.problems:
            errors, warnings = len(report.errors), len(report.warnings)
            summary += f"; {errors} input error{'s' * (errors != 1)}, {warnings} warning{'s' * (warnings != 1)} (on stderr)"
        print(summary)
    return code


def cmd_fit(args: argparse.Namespace) -> int:
    from aks_gpu_inference.planner import fit

    return fit.run(args)


def cmd_policy_pack_path(_args: argparse.Namespace) -> int:
    from aks_gpu_inference.planner import pack_path

    folder = pack_path.pack_dir()
    note = pack_path.interpreter_note(folder)  # reads PulumiPolicy.yaml: an install without it stops here, exit 2
    print(folder)
    if note:
        print(f"note: {note}", file=sys.stderr)
    return EXIT_OK


class _Redacting:
    """A text stream whose writes pass through ``secrets.redact``: every message and table the command prints,
    its own and its libraries', shows a credential-shaped value as ``<secret, not shown>``."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(redact(text))
        return len(text)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def main(argv: list[str] | None = None) -> int:
    """Run a command; its exit code, or 2 for bad input and 3 for an internal error, never a traceback unless --debug."""
    # `aks-gpu plan | head` should stop quietly, not with a BrokenPipeError traceback.
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    handlers = {"plan": cmd_plan, "scan": cmd_scan, "fit": cmd_fit, "policy-pack-path": cmd_policy_pack_path}
    args = build_parser(handlers).parse_args(argv)
    own_process = argv is None  # this process's command line (aks-gpu, python -m aks_gpu_inference.planner), not a caller's list
    if own_process and args.command in ("plan", "scan"):
        # A plan imports ~1,600 SDK modules whose objects live until exit; with the cyclic collector on, its
        # full collections rescan them as they pile up (about 0.5 s of a cold plan). The process is short and
        # its cyclic garbage small (peak RSS +2-5 MB on dev, prod and 16 pools), so it runs without it. A scan
        # keeps every file's YAML nodes until it reports (their lines): the same, a fifth of a 500-object scan
        # and a quarter of one over the stacks' 200 rendered files, for +0.3 MB peak RSS.
        gc.disable()
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Redacting(out), _Redacting(err)  # no secret reaches a terminal or a CI log
    try:
        return _run(args)
    finally:
        sys.stdout, sys.stderr = out, err
        if own_process:
            # Interpreter shutdown would run full collections over everything still alive (about 0.6 s);
            # frozen objects are skipped, and the OS reclaims the memory. Output files are closed by now.
            gc.freeze()


def _run(args: argparse.Namespace) -> int:
    try:
        return args.func(args)
    except KeyboardInterrupt:  # Ctrl-C: a plan's staging folder is abandoned by cmd_plan, never half-moved in
        print("error: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except ConfigError as err:  # its problems are redacted as they are made
        print(f"error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as err:  # a file named on the command line or in the config cannot be read or written
        where = f"{err.filename}: " if err.filename else ""
        print(f"error: {where}{err.strerror or err}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as err:
        if type(err).__name__ == "ProgramError":  # planner.plan.ProgramError, not imported for the light commands
            if args.debug:
                traceback.print_exception(err.__cause__ or err)
            hint = "" if args.debug else " (run with --debug for the traceback)"
            print(f"error: the stack program raised an exception at {err}{hint}", file=sys.stderr)
            return EXIT_PROGRAM
        if args.debug:
            traceback.print_exc()
        hint = "" if args.debug else " (run with --debug for the traceback)"
        print(f"error: internal error: {_one_line(err, with_type=True)}{hint}", file=sys.stderr)
        return EXIT_INTERNAL


def _one_line(err: Exception, with_type: bool = False) -> str:
    """The message of an exception on one line, after its type name when asked (a bug's report)."""
    message = " ".join(str(err).split())
    return message if not with_type else f"{type(err).__name__}: {message}" if message else type(err).__name__


if __name__ == "__main__":
    sys.exit(main())
