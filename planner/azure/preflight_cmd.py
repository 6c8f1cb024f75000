"""The ``aks-gpu preflight`` command: find the subscription, sign in, plan the stack offline, ask Azure, print a
verdict per item.

Exit codes: 0 every item passes; 1 a shortfall (quota, size, zone, version or feature); 2 bad input
(stack file, no subscription); 5 Azure could not be asked (no credentials, no network, an API error).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from aks_gpu_inference.components.core.errors import ConfigError

EXIT_SHORTFALL = 1
EXIT_AZURE = 5
"""Azure could not be asked (sign-in, network, an API error): the environment, never a bug (3) or a shortfall (1)."""


def _subscription(args: argparse.Namespace, config: dict[str, str]) -> str:
    found = args.subscription or os.environ.get("AZURE_SUBSCRIPTION_ID") or config.get("azure-native:subscriptionId")
    if not found:
        raise ConfigError(
            "preflight needs the subscription to ask about",
            ["pass --subscription ID, set AZURE_SUBSCRIPTION_ID, or set azure-native:subscriptionId in the stack file"],
        )
    return found


def _region(run: Any, config: dict[str, str], project: str) -> str:
    from aks_gpu_inference.planner.azure.quota import region_of

    region = region_of(run.resources, config.get(f"{project}:location") or config.get("azure-native:location"))
    if not region:
        raise ConfigError("preflight cannot tell the stack's region", ["set location in the stack file"])
    return region


def plan_asks(project_dir: Path, stack_name: str):
    """Run the stack program offline and read what it asks Azure for; also the config (the subscription's source) and
    the stack's ``model_placements`` output (what ``--alternatives`` ranks)."""
    import pulumi

    from aks_gpu_inference.planner.azure import preflight
    from aks_gpu_inference.planner.engine import program as engine
    from aks_gpu_inference.planner.inputs import stackfile

    stack = stackfile.read_stack(project_dir, stack_name)
    try:
        run = engine.run_program(project_dir, stack.project, stack.stack, stack.config, stack.secret_keys)
    except pulumi.RunError as err:
        raise ConfigError("a component of the stack program refused its arguments", [str(err)]) from None
    asks = preflight.stack_asks(run.resources, _region(run, stack.config, stack.project))
    return asks, stack.config, run.outputs.get("model_placements") or {}


def _cannot_ask(err: Exception, what: str) -> str:
    """One paragraph: what failed, the error's first line (DefaultAzureCredential's own runs to kilobytes, one
    attempt per credential in its chain), and how to sign in."""
    first = next((line.strip() for line in str(err).splitlines() if line.strip()), "")
    first = first if len(first) <= 200 else first[:197] + "..."
    return (
        f"error: {what}: {type(err).__name__}: {first}\n"
        "sign in with `az login` (or set the AZURE_* variables DefaultAzureCredential reads) and try again"
    )


def render(verdicts: list, facts: Any) -> str:
    from aks_gpu_inference.planner.report.tables import table

    rows = [[v.item, "pass" if v.ok else "FAIL", v.detail, v.fix] for v in verdicts]
    return f"Preflight of subscription {facts.subscription} in {facts.region}\n" + table(
        ["item", "verdict", "detail", "fix"], rows
    )


def run(args: argparse.Namespace, credential: Any = None, transport: Any = None) -> int:
    """The command; ``credential`` and ``transport`` are for tests (recorded responses)."""
    from aks_gpu_inference.planner.azure import facts as azure_facts
    from aks_gpu_inference.planner.azure import preflight
    from aks_gpu_inference.planner.inputs import stackfile

    project_dir = stackfile.find_project_dir(Path(args.project_dir).resolve())
    # What costs nothing first: the subscription, then a token, and only then the plan (tens of seconds).
    subscription = _subscription(args, stackfile.read_stack(project_dir, args.stack).config)
    if credential is None:
        from azure.identity import DefaultAzureCredential

        credential = DefaultAzureCredential()
    try:
        credential.get_token("https://management.azure.com/.default")
    except Exception as err:
        if type(err).__module__.split(".")[0] != "azure":
            raise
        print(_cannot_ask(err, f"could not sign in to Azure for subscription {subscription}"), file=sys.stderr)
        return EXIT_AZURE
    print(f"planning stack {args.stack!r} offline to see what it asks for", file=sys.stderr)
    asks, _config, placements = plan_asks(project_dir, args.stack)
    print(f"asking Azure about subscription {subscription} in {asks.region}", file=sys.stderr)
    sizes = {p.vm_size for p in asks.pools}
    try:
        facts = azure_facts.fetch(credential, subscription, asks.region, sizes, asks.features, transport)
    except Exception as err:  # azure-core and azure-identity errors: credentials, network, API
        if type(err).__module__.split(".")[0] != "azure":
            raise
        print(_cannot_ask(err, "could not ask Azure"), file=sys.stderr)
        return EXIT_AZURE
    verdicts = preflight.verdicts(asks, facts)
    print(render(verdicts, facts))
    failed = [v for v in verdicts if not v.ok]
    print(f"\n{len(verdicts) - len(failed)} passed, {len(failed)} failed")
    if args.alternatives:
        code = _alternatives(args.stack, placements, credential, subscription, transport, facts)
        if code:
            return code
    return EXIT_SHORTFALL if failed else 0


def _alternatives(stack: str, placements: dict, credential: Any, subscription: str, transport: Any, known) -> int:
    """The quota headroom of each model's top placements (``headroom``), the stack's region answered already (``known``);
    0, or ``EXIT_AZURE`` when Azure could not be asked."""
    from aks_gpu_inference.planner import alternatives_cmd
    from aks_gpu_inference.planner.azure import facts as azure_facts
    from aks_gpu_inference.planner.azure import headroom

    if not placements:
        print("\nno self-hosted models (models[]): no placements to ask about", file=sys.stderr)
        return 0
    top = headroom.top(alternatives_cmd.report(placements, stack, None, None))
    wanted = headroom.wanted(top)
    print(f"asking Azure about {len(wanted)} regions for the top placements: {', '.join(wanted)}", file=sys.stderr)
    try:
        more = {r: s for r, s in wanted.items() if r != known.region or not s <= set(known.skus)}
        by_region = azure_facts.fetch_regions(credential, subscription, more, transport) | (
            {} if known.region in more else {known.region: known}
        )
    except Exception as err:
        if type(err).__module__.split(".")[0] != "azure":
            raise
        print(_cannot_ask(err, "could not ask Azure about the alternatives"), file=sys.stderr)
        return EXIT_AZURE
    print("\n" + headroom.render(headroom.verdicts(top, by_region), subscription))
    return 0


def add_parser(commands: Any) -> None:
    preflight = commands.add_parser(
        "preflight",
        help="ask Azure whether the stack can be created: quota, sizes, zones, Kubernetes version, preview features",
        description=(
            "Plan the stack offline, then ask Azure (signed in with DefaultAzureCredential: az login, a managed\n"
            "identity or the AZURE_* variables) about the stack's subscription and region: vCPU usage and limit\n"
            "per VM family and region, whether each VM size and zone is offered to the subscription, the Kubernetes\n"
            "versions AKS offers there, and the registration of each preview feature the stack needs. One verdict\n"
            "per item, with the fix (the quota request to file) when it fails. With --alternatives, also the quota\n"
            "headroom of each model's top placements (aks-gpu alternatives: other sizes, regions, Spot), region by\n"
            "region, so a region without quota shows where there is; advice, which does not change the exit code.\n"
            "Nothing is created."
        ),
        epilog=(
            "exit codes:\n"
            "  0  every item passes\n"
            "  1  a shortfall: quota, size, zone, Kubernetes version or preview feature\n"
            "  2  bad input: the stack file, no subscription ID\n"
            "  3  internal error (a bug); run with --debug for the traceback\n"
            "  5  Azure could not be asked: credentials, network, an API error"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    preflight.add_argument("stack", help="stack name (reads Pulumi.<stack>.yaml)")
    preflight.add_argument(
        "--subscription", help="subscription ID (default: AZURE_SUBSCRIPTION_ID, or azure-native:subscriptionId)"
    )
    preflight.add_argument("--project-dir", default=".", help="folder with Pulumi.yaml (default: the current one or a parent)")
    preflight.add_argument(
        "--alternatives",
        action="store_true",
        help="also ask the quota headroom of each model's top placements (aks-gpu alternatives), region by region",
    )
    preflight.set_defaults(func=run)
