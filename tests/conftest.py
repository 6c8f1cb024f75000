"""Shared helpers: run components or whole stacks under the planner's mocks."""

from __future__ import annotations

import copy
import functools
import json
import sys
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import configuration, settings

from aks_gpu_inference.components._base import ComponentInputError
from aks_gpu_inference.components.context import ClusterContext
from aks_gpu_inference.planner.charts import ChartRender, ChartSources, render_chart
from aks_gpu_inference.planner.charts.sources import default_cache
from aks_gpu_inference.planner.engine.program import (
    PlaceholderMocks,
    ProgramRun,
    RecordingMonitor,
    Registered,
    run_function,
    run_program,
)
from aks_gpu_inference.planner.inputs.stackfile import add_secret_placeholders
from aks_gpu_inference.planner.inputs.upstream import missing_reason, upstream_dir

# The suite writes nothing into the checkout: Hypothesis keeps its example database and constants
# cache under the system temp folder instead of ./.hypothesis (pytest's cache is off in pyproject.toml).
configuration.set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "aks-gpu-inference-hypothesis")
settings.register_profile("suite", database=None)
settings.load_profile("suite")

REPO = Path(__file__).resolve().parent.parent


class _BareImportGuard:
    """The repo's folders are importable only as ``aks_gpu_inference.*`` once installed; pytest puts the checkout on
    ``sys.path``, where ``import policies`` would find the folder and pass here while failing for every user."""

    BARE = frozenset({"components", "planner", "policies"})

    def find_spec(self, name, path=None, _target=None):
        if path is None and name in self.BARE:
            raise ImportError(f"import aks_gpu_inference.{name}, not the bare {name!r} (the wheel has no top-level {name})")
        return None


sys.meta_path.insert(0, _BareImportGuard())
PROJECT = "aks-gpu-inference"
STACKS = sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in REPO.glob("Pulumi.*.yaml"))


ISSUER = "https://eastus.oic.prod-aks.azure.com/tenant/issuer/"
"""The OIDC issuer URL of the tests' cluster."""


def cluster_context(
    cluster_name="aks-test", resource_group_name="rg-test", location="eastus", oidc_issuer_url=ISSUER, **more
) -> ClusterContext:
    """The cluster a component test deploys into (``provider`` and the rest through ``more``)."""
    return ClusterContext(
        cluster_name=cluster_name,
        resource_group_name=resource_group_name,
        location=location,
        oidc_issuer_url=oidc_issuer_url,
        **more,
    )


def run_components(build, stack: str = "test", monitor: RecordingMonitor | None = None) -> ProgramRun:
    """Run ``build()`` as a stack program under mocks; return the registered resources."""
    return run_function(build, PROJECT, stack, monitor=monitor)


def registered_before_error(build, error: type[Exception]) -> list[str]:
    """Run ``build()`` expecting ``error``; return the resource types registered before it."""
    monitor = RecordingMonitor(PlaceholderMocks())
    with pytest.raises(error):
        run_components(build, monitor=monitor)
    return [r.type for r in monitor.registered]


def of_type(run: ProgramRun, suffix: str):
    return [r for r in run.resources if r.type.endswith(suffix)]


def one(run: ProgramRun, suffix: str):
    found = of_type(run, suffix)
    assert len(found) == 1, f"expected one {suffix}, got {[r.name for r in found]}"
    return found[0]


def stack_config(stack: str = "dev") -> dict:
    """The `config:` mapping of a stack file in the repo, as plain data to mutate."""
    return copy.deepcopy(yaml.safe_load((REPO / f"Pulumi.{stack}.yaml").read_text())["config"])


def engine_config(config: dict) -> dict[str, str]:
    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in config.items()}


def run_stack(config: dict, stack: str = "test") -> ProgramRun:
    """Run the repo's real stack program with the given stack-file config (secrets as the planner fills them)."""
    engine, secret_keys = engine_config(config), []
    add_secret_placeholders(PROJECT, engine, secret_keys)
    return run_program(REPO, PROJECT, stack, engine, secret_keys)


@functools.cache
def planned_stack(stack: str) -> ProgramRun:
    """The repo's stack file ``stack`` run once per test session; tests must not mutate the result.

    Tests that need a variant call ``run_stack`` with a modified ``stack_config``."""
    return run_stack(stack_config(stack), stack)


def chart_sources() -> ChartSources:
    """The pinned chart archives of ``shared/upstream/chart-archives``, then the local chart cache for a pin the shared
    copy does not hold yet (a pin just bumped; never shadowing a shared archive), no pull; skips without them."""
    upstream = upstream_dir()
    if upstream is None or not (upstream / "chart-archives").is_dir():
        pytest.skip(f"no pinned chart archives: {missing_reason()}")
    return ChartSources(folders=[], cache=upstream / "chart-archives", upstream_archives=default_cache(), upstream=upstream)


def skip_without_archives(run: ProgramRun) -> None:
    """Skip a test that renders ``run``'s charts when one of their pinned archives is nowhere at hand: the plan would
    then differ only by what it could not render (pinned upstream data absent: skip with the reason)."""
    from aks_gpu_inference.planner.charts.expand import CHART_TYPES, chart_ref

    sources = chart_sources()
    missing = []
    for record in (r for r in run.resources if r.type in CHART_TYPES):
        ref = chart_ref(record.inputs)
        if sources.find(ref) is None:
            missing.append(f"{ref.name}-{ref.version.removeprefix('v')}.tgz")
    if missing:
        pytest.skip(
            f"pinned chart archive {', '.join(sorted(set(missing)))} is in neither shared/upstream/chart-archives nor "
            f"the chart cache {default_cache()} (`aks-gpu plan <stack> --pull` fetches it)"
        )


def expand_charts(run: ProgramRun) -> tuple[ProgramRun, list[ChartRender]]:
    """``run`` with its charts rendered by Helm from the pinned archives, as ``aks-gpu plan`` renders them."""
    from aks_gpu_inference.planner.charts import expand

    skip_without_archives(run)
    return expand(run, chart_sources())


@functools.cache
def _expanded(stack: str) -> tuple[ProgramRun, list[ChartRender]]:
    from aks_gpu_inference.planner.charts import expand

    return expand(planned_stack(stack), chart_sources())


def expanded_stack(stack: str) -> tuple[ProgramRun, list[ChartRender]]:
    """``planned_stack(stack)`` with its charts rendered, once per session; tests must not mutate the result."""
    skip_without_archives(planned_stack(stack))  # skips before anything is cached
    return _expanded(stack)


CHART_V4 = "kubernetes:helm.sh/v4:Chart"


def render_pinned(chart: str, version: str, values: dict, release: str, namespace: str, kind: str = CHART_V4) -> ChartRender:
    """One pinned chart rendered by Helm as a ``kind`` resource named ``release`` in ``namespace``."""
    urn = f"urn:pulumi:test::{PROJECT}::{kind}::{release}"
    inputs = {"chart": chart, "version": version, "values": values, "namespace": namespace}
    return render_chart(Registered(urn, kind, release, None, True, inputs), chart_sources(), namespace)


SLOW_MODULES = {
    # Whole stacks planned through the command line, every chart of every stack rendered by Helm, or the wheel built.
    "tests/test_snapshots.py",
    "tests/test_fuzz.py",
    "tests/test_consumer_example.py",
    "tests/test_pack_install.py",
    "tests/test_stack_input_errors.py",
    "tests/test_seed004_stack.py",
    "tests/test_gb300_stack.py",
    "tests/planner/test_architecture.py",
    "tests/planner/test_plan_cli.py",
    "tests/planner/test_policy_verdicts.py",
    "tests/planner/test_charts.py",
    "tests/planner/test_deployability.py",
    "tests/planner/test_inference_pool_path.py",
    "tests/planner/test_placeholder_secrets.py",
    "tests/planner/test_cost_and_quota.py",
    "tests/planner/test_plan_summary.py",
    "tests/components/test_component_checks.py",
    "tests/test_docs_examples.py",
    "tests/test_key_effects.py",
    "tests/planner/test_request_path.py",
    "tests/planner/test_crd_schema.py",
    "tests/components/test_custom_resources.py",
    "tests/components/test_distributed_training.py",
    "tests/components/test_training_run.py",
    "tests/components/test_checkpoint_storage.py",
    "tests/planner/test_dynamo_graph_path.py",
    "tests/test_component_identity.py",
    "tests/planner/test_capacity.py",
    "tests/planner/test_fallback_path.py",
    "tests/planner/test_regional_prices.py",
    "tests/planner/test_cost_floor.py",
}
"""Modules ``make test-fast`` leaves out (``-m "not slow"``): the fast lane keeps the pure functions, the components
under mocks and the policies; ``make test`` runs everything. Single tests that take seconds (a stack planned, a CRD of
megabytes validated, the generator run at its tag) carry ``@pytest.mark.slow`` themselves."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if Path(str(item.path)).relative_to(REPO).as_posix() in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def dev_config() -> dict:
    return stack_config("dev")


CUSTOM_RESOURCE_GROUPS = {
    "nvidia.com",
    "resource.nvidia.com",
    "keda.sh",
    "azmonitoring.coreos.com",
    "kaito.sh",
    "inference.networking.k8s.io",
    "gateway.networking.k8s.io",
    "gateway.envoyproxy.io",
    "aigateway.envoyproxy.io",
    "ray.io",
}
"""API groups of the custom resources the project renders; kubernetes-validate has no schema for them."""


def is_custom_resource(obj: dict) -> bool:
    return obj["apiVersion"].split("/")[0] in CUSTOM_RESOURCE_GROUPS


def secret_config() -> dict[str, str]:
    """Placeholders for the program's secrets, as the planner fills them for the dev stack."""
    config = engine_config(stack_config("dev"))
    added = add_secret_placeholders(PROJECT, config, [])
    return {f"{PROJECT}:{key}": config[f"{PROJECT}:{key}"] for key in added}


def refusal_message(program, component: str, name: str, leaked) -> str:
    """Run a program that ``component`` must refuse; return its message, checking no type ``leaked(type)`` was registered."""
    caught = {}

    def recording():
        try:
            program()
        except ComponentInputError as err:
            caught["message"] = str(err)
            raise

    created = [t for t in registered_before_error(recording, ComponentInputError) if leaked(t) or t.endswith(f":{component}")]
    assert created == [], f"registered before the refusal: {created}"
    assert caught["message"].startswith(f"{component} {name!r}: invalid arguments")
    return caught["message"]
