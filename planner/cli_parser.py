"""The arguments of the ``aks-gpu`` command line: one subcommand each for plan, scan, fit, policy-pack-path,
alternatives and preflight, the exit codes every command shares, and ``--debug``. ``cli`` runs what they select.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping

from aks_gpu_inference.components.core.gpu_utilization import DEFAULT_GPU_MEMORY_UTILIZATION, UTILIZATION_ACCEPTED
from aks_gpu_inference.components.core.vllm_releases import PINNED_VLLM_VERSION

EXIT_CODES = """exit codes (every command):
  0  clean (plan: would work, or incomplete without --strict: its verdict says what was not checked)
  1  plan: deploy blockers, mandatory policy violations or unsatisfiable claims (with --strict, also an
     incomplete plan); scan: mandatory findings;
     fit: nothing fits; alternatives: a model no placement fits; preflight: a shortfall (quota, size, zone, version,
     feature)
  2  bad input: invalid config or arguments, a file that cannot be read or parsed
  3  internal error (a bug): one line on stderr; run with --debug for the traceback
  4  the stack program raised an exception in its own code (plan): its file, line and the exception
  5  preflight: Azure could not be asked (credentials, network, an API error)
  130  interrupted (Ctrl-C), without a traceback"""
"""The meaning of each exit code (``cli.EXIT_OK`` ...), as ``aks-gpu --help`` ends."""


def nonempty(text: str) -> str:
    """An option's text value: refused when empty, rather than silently read as "not given" (``--out ''``)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty value; give one (an option left out takes its default)")
    return text


class _Parser(argparse.ArgumentParser):
    """Every text option and argument, of every command (subparsers are made of this class too), refuses an empty
    value: ``--as-of ''`` or ``--out ''`` would otherwise fall back to the default without a word."""

    def add_argument(self, *args, **kwargs):
        if kwargs.get("action", "store") in ("store", "append") and "type" not in kwargs and "choices" not in kwargs:
            kwargs["type"] = nonempty
        return super().add_argument(*args, **kwargs)


def build_parser(handlers: Mapping[str, Callable[[argparse.Namespace], int]]) -> argparse.ArgumentParser:
    """The ``aks-gpu`` parser. ``handlers`` holds the function that runs each command defined here (``plan``,
    ``scan``, ``fit``, ``policy-pack-path``); ``alternatives`` and ``preflight`` bring their own."""
    parser = _Parser(
        prog="aks-gpu",
        description="Plan and check GPU inference stacks on AKS without a cloud account or the Pulumi CLI.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    plan = commands.add_parser(
        "plan",
        help="run a stack's program offline and write what it would create to out/<stack>/",
        description=(
            "Run the stack program under Pulumi's mocks with the config of Pulumi.<STACK>.yaml, render its Helm "
            "charts with Helm, run the policy pack and simulate the apply, then write out/<STACK>/ (plan.html: the "
            "request path and the node pools with what runs on them as one self-contained picture; plan.md and "
            "summary.json: the verdict, cost, quota, checks and what was not checked, as Markdown tables and as "
            "JSON; resources.json, outputs.json, policy.json, claims.json, gateway.json, deployability.json, "
            "kubernetes/*.yaml, azure/*.json, graph.mmd, graph.dot) and print resources by type, GPU pools, a monthly list-price "
            "estimate, quota, claims, deployability and the policy verdicts. Values only the cloud knows are "
            "written as <computed:...>; secrets as <secret>."
        ),
    )
    outdir_help = (  # planner/outdir.py
        "output folder (default: <project>/out/<stack>), written beside it and moved in when complete, marked by a "
        ".aks-gpu-plan file; a non-empty folder without that marker is refused (exit 2), never deleted. A refused or "
        'failed plan deletes the previous plan there, leaving STALE and deployability.json {"stale": true, "reason": ...}'
    )
    plan.add_argument("stack", nargs="?", default="dev", help="stack name, i.e. Pulumi.<stack>.yaml (default: dev)")
    plan.add_argument("--project-dir", default=".", help="folder with Pulumi.yaml, or below it (default: current folder)")
    plan.add_argument("--out", metavar="DIR", help=outdir_help)
    plan.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    plan.add_argument("--policy-config", metavar="FILE", help="policy pack config JSON, as for --policy-pack-config")
    plan.add_argument(
        "--as-of",
        metavar="YYYY-MM-DD",
        help="judge versions, models and VM sizes as retired or not on this date (default: today)",
    )
    plan.add_argument(
        "--charts",
        metavar="DIR",
        action="append",
        help="a folder of chart archives (<chart>-<version>.tgz) to render from, before $AKS_GPU_CHARTS, the chart cache "
        "($AKS_GPU_CHART_CACHE, else ~/.cache/aks-gpu/charts) and <upstream>/chart-archives; repeatable",
    )
    plan.add_argument(
        "--pull",
        action="store_true",
        help="pull a chart found nowhere offline, at its exact version, from its HTTP repository or OCI registry into the cache",
    )
    plan.add_argument(
        "--strict",
        action="store_true",
        help="exit 1 when the plan is incomplete (a chart not rendered, a check that could not run), as for a blocker: for CI",
    )
    plan.add_argument(
        "--upstream",
        metavar="DIR",
        help="pinned upstream CRDs and chart archives to check against (default: $AKS_GPU_UPSTREAM, else ../shared/upstream)",
    )
    plan.set_defaults(func=handlers["plan"])

    scan = commands.add_parser(
        "scan",
        help="check plain Kubernetes YAML (helm template output, manifests) against the guardrail rules",
        description=(
            "Run the aks-gpu-guardrails rules over Kubernetes YAML files or folders (searched for *.yaml and *.yml;\n"
            "kind: List and typed lists such as PodList are expanded; a kustomization's patches, inline or in files,\n"
            "strategic-merge or JSON 6902, are checked as fragments of the objects they patch). Each finding names the\n"
            "file and the line of the field it is about. The scan goes on past what it cannot scan and reports it as\n"
            "an error: a missing path, an unreadable or non-UTF-8 file, git conflict markers, an unrendered Helm\n"
            "template (render it with `helm template` first), invalid YAML, invalid metadata, a name the API server\n"
            "refuses for the object's kind. It warns about what it scanned but could not judge: a file with no\n"
            "Kubernetes objects (a Helm values file?), a document that is not an object, an object of a kind whose pod\n"
            "templates the rules do not know that asks for GPUs, RDMA NICs or DRA claims (the warning names the JSON\n"
            "paths), a ResourceClaimTemplate, ResourceClaim or runtime (of a TrainJob, an OME InferenceService) that\n"
            "is not among the scanned files, a kustomize patch that cannot be read."
        ),
        epilog=(
            "exit codes:\n"
            "  0  no mandatory finding and every file scanned (advisory findings and warnings allowed)\n"
            "  1  a mandatory finding, even when some files could not be scanned (1 wins over 2)\n"
            "  2  bad input: a file or path that could not be scanned, an invalid --policy-config\n"
            "  3  internal error (a bug); run with --debug for the traceback\n\n"
            'Errors and warnings go to stderr with the table format, into "errors" and "warnings" with '
            "--format json,\nand into the invocation's toolExecutionNotifications (the policy config's into\n"
            "toolConfigurationNotifications) with --format sarif. JSON and SARIF always print a whole document."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    scan.add_argument("paths", nargs="+", metavar="PATH", help="YAML files or folders")
    scan.add_argument("--format", choices=["table", "json", "sarif"], default="table", help="output format (default: table)")
    scan.add_argument("--policy-config", metavar="FILE", help="policy pack config JSON, as for --policy-pack-config")
    scan.set_defaults(func=handlers["scan"])

    fit = commands.add_parser(
        "fit",
        help="list every catalog size and tensor-parallel size that serves a model under vLLM, or check one",
        description=(
            "Estimate GPU memory for a model under vLLM on every current catalog size, tp 1/2/4/8 and MIG slice: "
            "weights, runtime overhead and KV cache per GPU (formula: components/core/models.py FORMULA). With "
            "--vm-size or --gpu, one configuration and what vLLM would print for it: 'Available KV cache memory', "
            "'GPU KV cache size', 'Maximum concurrency', and whether it starts. MODEL is a Hugging Face id from "
            "components/core/models.json, a KAITO preset name, a JSON file of ModelFactsArgs keys, or a Hugging Face "
            "config.json (or its folder; model.safetensors.index.json beside it gives the checkpoint's size). "
            "Exit code 0 when it fits, 1 when not, 2 for bad input."
        ),
    )
    fit.add_argument("model", metavar="MODEL", help="Hugging Face id, facts JSON file, or config.json / model folder")
    fit.add_argument("--context", type=int, metavar="N", help="max model length in tokens (default: the model's maximum)")
    fit.add_argument(
        "--gpu-memory-utilization",
        type=float,
        default=DEFAULT_GPU_MEMORY_UTILIZATION,
        metavar="F",
        help=f"as vLLM's, {UTILIZATION_ACCEPTED} (default: {DEFAULT_GPU_MEMORY_UTILIZATION})",
    )
    fit.add_argument("--dtype", choices=["auto", "bfloat16", "fp8", "int4"], default="auto", help="weights (default: auto)")
    fit.add_argument("--kv-cache-dtype", choices=["auto", "fp8"], default="auto", help="KV cache (default: auto)")
    fit.add_argument(
        "--vllm-version", default=PINNED_VLLM_VERSION, metavar="X.Y.Z", help=f"vLLM release (default: {PINNED_VLLM_VERSION})"
    )
    fit.add_argument("--enforce-eager", action="store_true", help="no CUDA graphs, as vLLM's --enforce-eager")
    fit.add_argument("--max-num-seqs", type=int, metavar="N", help="as vLLM's (default: the release's for the GPU)")
    fit.add_argument("--max-num-batched-tokens", type=int, metavar="N", help="as vLLM's (default: the release's)")
    fit.add_argument("--vm-size", metavar="SIZE", help="fit one catalog size (with --tp, --nodes)")
    fit.add_argument("--gpu", metavar="GPU", help="fit one GPU of components/core/gpu_memory.json (e.g. H200-141GB)")
    fit.add_argument("--gpu-memory-gib", type=float, metavar="GIB", help="with --gpu: the GiB the device reports")
    fit.add_argument("--tp", type=int, metavar="N", help="with --vm-size or --gpu: tensor-parallel size (default: 1)")
    fit.add_argument("--nodes", type=int, metavar="N", help="with --vm-size or --gpu: nodes/pods the tp ranks span")
    fit.add_argument("--disable-custom-all-reduce", action="store_true", help="as vLLM's (implied when tp spans nodes or pods)")
    fit.add_argument("--format", choices=["table", "json"], default="table", help="output format (default: table)")
    fit.add_argument("--all", action="store_true", help="also list the options that do not fit, with the reason")
    fit.set_defaults(func=handlers["fit"])

    policy_pack_path = commands.add_parser(
        "policy-pack-path",
        help="print the folder of the installed policy pack, for pulumi preview --policy-pack",
        description=(
            "Print the folder that holds the aks-gpu-guardrails pack (PulumiPolicy.yaml, __main__.py and\n"
            "config.example.json): site-packages/policies when installed with pip, the checkout's policies/ in an\n"
            "editable install.\n\n"
            '  pulumi preview --policy-pack "$(aks-gpu policy-pack-path)"\n\n'
            "Pulumi runs an installed pack with python3 from the PATH, or $PULUMI_PYTHON_CMD: a note on stderr says\n"
            "when that is not the Python the pack is installed in. Exit code 0; 2 when the install has no\n"
            "PulumiPolicy.yaml."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    policy_pack_path.set_defaults(func=handlers["policy-pack-path"])
    from aks_gpu_inference.planner import alternatives_cmd
    from aks_gpu_inference.planner.azure import preflight_cmd

    alternatives_cmd.add_parser(commands)
    preflight_cmd.add_parser(commands)
    debug_help = "print the traceback of an internal error (exit code 3)"
    parser.add_argument("--debug", action="store_true", help=debug_help)
    for command in commands.choices.values():  # also accepted after the command, without resetting it
        command.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=debug_help)
    parser.epilog, parser.formatter_class = EXIT_CODES, argparse.RawDescriptionHelpFormatter
    return parser
