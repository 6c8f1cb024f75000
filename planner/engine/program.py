"""Runs a Pulumi Python program offline, under the SDK's mocks, and records what it registers.

No Pulumi CLI, no provider plugins, no cloud: the mocks (``mocks``) echo each resource's inputs as its
outputs and fill the fields a provider would compute with marked placeholders (``<computed:...>``), so
nothing here can be mistaken for a real ID. Uses SDK internals (mock monitor, ``run_pulumi_func``),
which is why ``requirements.txt`` pins ``pulumi`` exactly.
"""

from __future__ import annotations

import contextlib
import json
import os
import runpy
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
import pulumi.config
import pulumi.resource
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import resource as pulumi_resource_runtime
from pulumi.runtime import rpc, settings
from pulumi.runtime.proto import resource_pb2, source_pb2
from pulumi.runtime.stack import run_in_stack
from pulumi.runtime.sync_await import _sync_await

from aks_gpu_inference.planner.engine.mocks import PlaceholderMocks, placeholder
from aks_gpu_inference.planner.engine.values import plain

SECRET = "<secret>"


@dataclass
class Registered:
    """One resource as the program registered it."""

    urn: str
    type: str
    name: str
    parent: str | None
    custom: bool
    inputs: dict[str, Any]
    """Secrets masked, whole numbers as ints (``values.plain``): readers never normalise them again."""
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def is_kubernetes(self) -> bool:
        # A helm.sh/v3 Release is a custom resource too, but no Kubernetes object.
        return self.custom and self.type.startswith("kubernetes:") and not self.type.startswith("kubernetes:helm.sh/")

    @property
    def is_azure(self) -> bool:
        return self.custom and self.type.startswith("azure-native:")


@dataclass
class ProgramRun:
    project: str
    stack: str
    resources: list[Registered]
    outputs: dict[str, Any]
    """The stack's outputs, masked and normalised as ``Registered.inputs`` are."""
    config_read: frozenset[str] = frozenset()
    """Full config keys the program asked for (``pulumi.Config().get``/``require``/secret forms alike)."""
    warnings: tuple[str, ...] = ()
    """What the program and its components said with ``pulumi.log.warn`` (``pulumi up`` shows these as warnings)."""


def mask_secrets(value: Any) -> Any:
    """Replace every secret-wrapped value with ``<secret>`` so it never reaches a file."""
    if rpc.is_rpc_secret(value):
        # Keep the shape (a Secret's keys are not secret) so rendered manifests stay valid.
        inner = value.get("value")
        if isinstance(inner, dict):
            return dict.fromkeys(inner, SECRET)
        return SECRET
    if isinstance(value, dict):
        return {k: mask_secrets(v) for k, v in value.items()}
    if isinstance(value, list):
        return [mask_secrets(v) for v in value]
    if value == rpc.UNKNOWN or isinstance(value, pulumi.output.Unknown):
        return placeholder("unknown")
    return value


class RecordingMonitor(pulumi_mocks.MockMonitor):
    """The SDK's mock monitor, also keeping what it drops: parent, options and stack outputs."""

    def __init__(self, mocks: pulumi.runtime.Mocks):
        super().__init__(mocks)
        self.registered: list[Registered] = []
        self.stack_outputs: dict[str, Any] = {}

    def RegisterResource(self, request):
        response = super().RegisterResource(request)
        if request.type != "pulumi:pulumi:Stack":
            options = {}
            if request.ignoreChanges:
                options["ignoreChanges"] = list(request.ignoreChanges)
            if request.HasField("customTimeouts"):
                timeouts = request.customTimeouts
                options["customTimeouts"] = {
                    k: v for k, v in (("create", timeouts.create), ("update", timeouts.update), ("delete", timeouts.delete)) if v
                }
            if request.dependencies:
                options["dependsOn"] = list(request.dependencies)
            if request.provider:
                options["provider"] = request.provider.rsplit("::", 1)[0]
            aliases = [a.spec.name or a.urn for a in request.aliases] + list(request.aliasURNs)
            if aliases:
                options["aliases"] = aliases
            self.registered.append(
                Registered(
                    urn=response.urn,
                    type=request.type,
                    name=request.name,
                    parent=request.parent or None,
                    custom=bool(request.custom),
                    inputs=plain(mask_secrets(rpc.deserialize_properties(request.object, keep_unknowns=True))),
                    options=options,
                )
            )
        return response

    def RegisterResourceOutputs(self, request):
        if request.urn.endswith(f"::pulumi:pulumi:Stack::{pulumi.get_project()}-{pulumi.get_stack()}"):
            self.stack_outputs = plain(mask_secrets(rpc.deserialize_properties(request.outputs, keep_unknowns=True)))
        return super().RegisterResourceOutputs(request)


@contextlib.contextmanager
def _engine_environment(project_dir: Path, config: dict[str, str], secret_keys: list[str]):
    """Set what the Pulumi language host sets for a program: config env vars, cwd, import path."""
    saved_env = {k: os.environ.get(k) for k in ("PULUMI_CONFIG", "PULUMI_CONFIG_SECRET_KEYS")}
    saved_cwd, saved_path = os.getcwd(), list(sys.path)
    os.environ["PULUMI_CONFIG"] = json.dumps(config)
    os.environ["PULUMI_CONFIG_SECRET_KEYS"] = json.dumps(secret_keys)
    os.chdir(project_dir)
    sys.path.insert(0, str(project_dir))
    try:
        yield
    finally:
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        os.chdir(saved_cwd)
        sys.path[:] = saved_path


def _alias_kept(alias: Any, *_: Any) -> Any:
    """Stands in for ``collapse_alias_to_urn`` in ``Resource.__init__``: keeps the alias as given."""
    return alias


@contextlib.contextmanager
def _alias_specs_only():
    """Skip the SDK's eager alias-to-URN collapse while a monitor that takes alias specs is set.

    ``Resource.__init__`` (pulumi 3.272.0, pulumi/resource.py) turns every alias of every resource into
    a URN ``Output`` up front and keeps them as ``Resource._aliases``; azure-native resources carry one
    alias per older API version (an ``AgentPool`` about 110), which was most of the cost of each GPU pool
    under the mocks. The only reader of ``_aliases`` is ``all_aliases``, which ``prepare_aliases`` calls
    for a monitor without alias specs; with alias specs (the SDK's mock monitor reports them) the request
    carries ``Alias.Spec``s built from ``opts.aliases`` instead, so what the monitor receives does not
    change (tests/planner/test_plan_speed.py). ``requirements.txt`` pins pulumi exactly; ``pulumi up``
    never runs this code.
    """
    if not settings.monitor_supports_feature(resource_pb2.RESOURCE_MONITOR_FEATURE_ALIAS_SPECS):
        yield
        return
    collapse = pulumi.resource.collapse_alias_to_urn
    pulumi.resource.collapse_alias_to_urn = _alias_kept
    try:
        yield
    finally:
        pulumi.resource.collapse_alias_to_urn = collapse


@contextlib.contextmanager
def _no_stack_traces():
    """Skip the SDK's capture of the Python stack for every resource while the mock monitor runs the program.

    ``register_resource`` (pulumi 3.272.0, pulumi/runtime/resource.py ``_get_stack_trace``) walks the whole stack
    with ``traceback.extract_stack`` for each resource, about a tenth of a mock run, only to send it as the request's
    ``stackTrace`` and ``sourcePosition``, which the engine shows next to diagnostics; the mock monitor reads neither
    (tests/planner/test_plan_speed.py). ``requirements.txt`` pins pulumi exactly; ``pulumi up`` never runs this code.
    """
    capture = pulumi_resource_runtime._get_stack_trace
    pulumi_resource_runtime._get_stack_trace = source_pb2.StackTrace
    try:
        yield
    finally:
        pulumi_resource_runtime._get_stack_trace = capture


def run_function(
    program: Callable[[], Any],
    project: str,
    stack: str,
    config: dict[str, str] | None = None,
    secret_keys: list[str] | None = None,
    project_dir: Path | None = None,
    monitor: RecordingMonitor | None = None,
) -> ProgramRun:
    """Run ``program`` as the body of stack ``stack`` under mocks and return what it registered.

    Exceptions from the program (including bad config) propagate unchanged; pass your own
    ``monitor`` (with your own mocks) to see what was registered before one was raised.
    """
    monitor = monitor or RecordingMonitor(PlaceholderMocks())
    pulumi.runtime.set_mocks(monitor.mocks, project=project, stack=stack, preview=True, monitor=monitor)
    # set_mocks made a finished root stack; the program gets a fresh one so that its exports land.
    settings.set_root_resource(None)
    read: set[str] = set()
    warned: list[str] = []
    with (
        _engine_environment(project_dir or Path.cwd(), config or {}, secret_keys or []),
        _alias_specs_only(),
        _no_stack_traces(),
        _recording_config_reads(read),
        _recording_warnings(warned),
    ):
        _sync_await(run_in_stack(program))
    return ProgramRun(project, stack, monitor.registered, monitor.stack_outputs, frozenset(read), tuple(warned))


@contextlib.contextmanager
def _recording_warnings(warned: list[str]) -> Iterator[None]:
    """Keeps what the program says with ``pulumi.log.warn`` (printed to stderr under mocks, where no engine listens),
    so the plan reports it as ``pulumi up`` would."""
    original = pulumi.log.warn

    def recording(msg: str, *_args: Any, **_kwargs: Any) -> None:
        if msg not in warned:
            warned.append(msg)

    pulumi.log.warn = recording
    try:
        yield
    finally:
        pulumi.log.warn = original


@contextlib.contextmanager
def _recording_config_reads(read: set[str]) -> Iterator[None]:
    """Notes every key the program reads through ``pulumi.Config`` (which calls ``pulumi.config.get_config``)."""
    original = pulumi.config.get_config

    def recording(key: str) -> Any:
        read.add(key)
        return original(key)

    pulumi.config.get_config = recording
    try:
        yield
    finally:
        pulumi.config.get_config = original


def run_program(
    project_dir: Path,
    project: str,
    stack: str,
    config: dict[str, str],
    secret_keys: list[str] | None = None,
    mocks: pulumi.runtime.Mocks | None = None,
    main: str = "__main__.py",
) -> ProgramRun:
    """Run the program file ``project_dir/main`` the way the Pulumi language host would."""
    path = str(project_dir / main)
    monitor = RecordingMonitor(mocks or PlaceholderMocks())
    return run_function(
        lambda: runpy.run_path(path, run_name="__main__"), project, stack, config, secret_keys, project_dir, monitor
    )
