"""The planner imports shared facts from ``components.core`` only, plus the few Pulumi-free modules of the
stacks it plans (the gateway's router config and its key table, the stack's config): never a component."""

import subprocess
import sys

from tests.planner.imports import REPO, component_imports, cycles, is_core, module_graph

ALLOWED = {
    "components.gateway.router_config": "the router config the request-path check and the plan report read",
    "components.gateway.router_fields": "the vSR config-key table the router check reads",
    "components.stack.stack_input": "the stack's secret keys, which stack files are read with",
    "components.serving.llmd_registry": "llm-d's picker and sidecar rules, generated from their source",
    "components.serving.picker_check": "the picker config and flags read as the pinned llm-d release reads them",
    "components.serving.dynamo_runtime": "Dynamo's runtime hops and the variables that fix their ports, which the "
    "request-path check follows through the NetworkPolicies (one home: the graph's pods are given the same facts)",
    "components.gpu.compute_domain": "the ComputeDomain's channel class and driver, which the claim simulation publishes "
    "and evaluates (one home: the DRA component renders the same domain)",
}


def test_the_planner_imports_core_and_its_allow_list_only():
    found = component_imports("planner")
    outside = {module: sorted(files) for module, files in found.items() if not is_core(module) and module not in ALLOWED}
    assert outside == {}, "import shared facts from components.core (or add a Pulumi-free module to ALLOWED, with why)"


def test_the_allow_list_is_used():
    assert set(ALLOWED) <= set(component_imports("planner")), "drop what the planner no longer imports"


CEL_FREE = """
import sys
from pathlib import Path
from aks_gpu_inference.planner import scan
report = scan.run([str(Path("tests/fixtures/scan_mixed/good.yaml"))])
assert report.located and not any(item.resource.type.endswith(":DeviceClass") for item in report.located)
print(sorted(m for m in ("celpy", "lark") if m in sys.modules))
"""


def test_a_scan_without_cel_does_not_load_cel_python():
    """cel-python's import and parser cost most of a second: only a DeviceClass selector or a claim needs them."""
    result = subprocess.run([sys.executable, "-c", CEL_FREE], cwd=REPO, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_the_allowed_modules_are_pulumi_free():
    code = f"import importlib, sys\nfor m in {sorted(ALLOWED)!r}: importlib.import_module('aks_gpu_inference.' + m)\nprint(sorted(m for m in sys.modules if m.split('.')[0] == 'pulumi'))"
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_no_import_cycle_anywhere():
    """Not in the components, the planner or the pack, and not even one hidden by a function-level or a
    ``TYPE_CHECKING`` import: a package's ``__init__`` importing its modules counts."""
    graph = module_graph("components", "planner", "policies")
    assert len(graph) > 200 and "planner.deploy.model" in graph["planner.deploy"], "the graph was read"
    assert "components.azure.interconnect" in graph["components.azure.gpu_node_pool_args"], "the components were read"
    assert cycles(graph) == []


def test_a_cycle_is_found_when_there_is_one():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_command_line_only_calls_the_plan_and_prints_it():
    """Planning lives in planner.plan; the CLI parses arguments, calls ``plan`` and prints and writes the result."""
    planning = {"planner.analyzer", "planner.charts", "planner.claims", "planner.deploy", "planner.engine"}
    imported = module_graph("planner")["planner.cli"]
    assert "planner.plan" in imported
    assert {m for m in imported if m.split(".")[:2] and ".".join(m.split(".")[:2]) in planning} == set()
