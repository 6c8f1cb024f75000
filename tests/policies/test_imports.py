"""The policy pack imports shared facts from ``components.core`` only: the rules run in the CrossGuard pack,
the planner and ``aks-gpu scan`` without the Pulumi components."""

from tests.planner.imports import component_imports, is_core


def test_the_policy_pack_imports_components_core_only():
    found = component_imports("policies")
    assert found, "the pack takes its facts from components.core"
    outside = {module: sorted(files) for module, files in found.items() if not is_core(module)}
    assert outside == {}
