"""Every check of the stack's input before the first resource is registered, components' own validators included.

Under ``pulumi up`` a registered resource is being created, and some refusals live only inside a component that
the program reaches after it has registered dozens of others (the resource group, the cluster, its pools,
identities). So before the real program registers anything, ``refuse_early`` runs the same program in a child
process under Pulumi's mocks, with the same config (the engine passes it in ``PULUMI_CONFIG``): if a component
refuses its arguments there, the real run stops with that refusal, named by the stack file's key path
(``training.checkpoint_prefix``), and nothing was created. Under mocks (``aks-gpu plan``, tests) the run itself is
the check, so it is skipped; ``AKS_GPU_PRECHECK=1`` forces it, ``0`` turns it off.

The child costs a few seconds per preview and update: the SDKs' import and one mock run."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from typing import Any

from ..core.errors import FieldProblem

REFUSED = 10
"""The child's exit code for "a component refused its arguments" (its JSON on stdout)."""
ENV = "AKS_GPU_PRECHECK"
CONTEXT = re.compile(r"^(?P<component>\w+) '(?P<name>[^']*)': invalid arguments$")


def section_of(component: str, name: str, config: Any) -> str | None:
    """The stack file's key path of the config section a component of ``build_stack`` is made from."""
    fixed = {
        "AksCluster": "cluster",
        "RdmaNetwork": "rdma",
        "DraDeviceClasses": "dra",
        "QualificationGates": "rdma.gates",
        "NvidiaDevicePlugin": "device_plugin",
        "ModelStore": "model_store",
        "ManagedPrometheus": "prometheus",
        "DistributedTraining": "training",
        "DynamoInference": "dynamo",
        "SemanticRouterGateway": "gateway",
        "AiGateway": "gateway.gateway",
    }
    if component in fixed:
        return fixed[component]
    lists = {"GpuNodePool": "gpu_pools", "VllmService": "models", "KaitoWorkspace": "kaito"}
    key = lists.get(component)
    if key is None:
        return None
    for index, entry in enumerate(getattr(config, key, None) or []):
        if entry.name == name:
            return f"{key}[{index}]"
    return None


def as_stack_file_error(source: str, err: Any, config: Any) -> Exception:
    """A component's refusal (a ``ComponentInputError``), blamed on the stack file's keys where the component is made
    from one section of it; ``err`` unchanged when its component is not one of those."""
    from .._base import StackFileError

    found = CONTEXT.match(err.context)
    section = section_of(found["component"], found["name"], config) if found else None
    if section is None or not err.field_problems:
        return err
    lines = [str(FieldProblem(f"{section}.{p.field}", p.value, p.problem)) for p in err.field_problems]
    return StackFileError(f"{source} is invalid", lines)


def wanted() -> bool:
    """Whether to run the child: under a real engine, unless turned off; under mocks only when forced."""
    setting = os.environ.get(ENV)
    if setting in ("0", "1"):
        return setting == "1"
    from pulumi.runtime import mocks, settings

    return not isinstance(settings.SETTINGS.monitor, mocks.MockMonitor)


def refuse_early() -> None:
    """Raise the refusal the stack program would meet, before anything is registered; nothing if none."""
    if not wanted():
        return
    import pulumi

    from .._base import StackFileError

    child = subprocess.run(
        [sys.executable, "-m", __name__, pulumi.get_project(), pulumi.get_stack()],
        capture_output=True,
        text=True,
        env={**os.environ, ENV: "0"},
        check=False,
    )
    if child.returncode != REFUSED:
        return  # accepted, or failed for a reason the real run meets and reports itself
    lines = child.stdout.strip().splitlines()
    try:
        refusal = json.loads(lines[-1])  # the last line: whatever else the program printed comes before it
        context, problems = refusal["context"], list(refusal["problems"])
    except (IndexError, ValueError, KeyError, TypeError):
        return  # unreadable: the real run meets the same refusal itself
    raise StackFileError(context, problems)


def _dry_run(project: str, stack: str) -> int:
    """The child: the stack program under mocks; a refusal of its input is printed as JSON."""
    import pulumi
    from pulumi.runtime import settings
    from pulumi.runtime.stack import run_in_stack
    from pulumi.runtime.sync_await import _sync_await

    from .._base import StackFileError
    from .program import run_stack

    class _Echo(pulumi.runtime.Mocks):
        def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict]:
            return f"{args.name}-id", dict(args.inputs)

        def call(self, _args: pulumi.runtime.MockCallArgs) -> tuple[dict, list]:
            return {}, []

    pulumi.runtime.set_mocks(_Echo(), project=project, stack=stack, preview=True)
    settings.set_root_resource(None)
    try:
        _sync_await(run_in_stack(run_stack))
    except StackFileError as err:
        print(json.dumps({"context": err.context, "problems": err.problems}))
        return REFUSED
    return 0


if __name__ == "__main__":
    raise SystemExit(_dry_run(sys.argv[1], sys.argv[2]))
