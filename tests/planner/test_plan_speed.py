"""What keeps an offline plan fast must not change what it registers or checks."""

import contextlib

import pulumi
import pulumi.resource
from pulumi_azure_native import containerservice

from aks_gpu_inference.planner.engine import program as engine
from tests.conftest import PROJECT


def aliased_program():
    """A component with an alias of its own, and an AgentPool (110 type aliases from the SDK) inside it."""
    parent = pulumi.ComponentResource(
        "aks-gpu:index:Pools", "pools", None, pulumi.ResourceOptions(aliases=[pulumi.Alias(name="old")])
    )
    containerservice.AgentPool(
        "pool",
        agent_pool_name="gpu",
        resource_name_="aks",
        resource_group_name="rg",
        opts=pulumi.ResourceOptions(parent=parent, aliases=[pulumi.Alias(name="pool-before")]),
    )


def canonical(run: engine.ProgramRun) -> list:
    return sorted(
        (r.urn, r.parent, repr(r.inputs), repr({k: sorted(v) if k == "dependsOn" else v for k, v in r.options.items()}))
        for r in run.resources
    )


def test_mock_runs_register_the_same_aliases_without_collapsing_them(monkeypatch):
    collapse = pulumi.resource.collapse_alias_to_urn
    fast = engine.run_function(aliased_program, PROJECT, "test")
    assert pulumi.resource.collapse_alias_to_urn is collapse, "the SDK is left as it was"
    monkeypatch.setattr(engine, "_alias_specs_only", contextlib.nullcontext)
    eager = engine.run_function(aliased_program, PROJECT, "test")
    assert canonical(fast) == canonical(eager)
    pool = next(r for r in fast.resources if r.type.endswith(":AgentPool"))
    assert pool.options["aliases"][0] == "pool-before" and len(pool.options["aliases"]) > 100


def test_mock_runs_register_the_same_without_capturing_stack_traces(monkeypatch):
    from pulumi.runtime import resource as runtime

    capture = runtime._get_stack_trace
    fast = engine.run_function(aliased_program, PROJECT, "test")
    assert runtime._get_stack_trace is capture, "the SDK is left as it was"
    monkeypatch.setattr(engine, "_no_stack_traces", contextlib.nullcontext)
    captured = engine.run_function(aliased_program, PROJECT, "test")
    assert canonical(fast) == canonical(captured) and len(fast.resources) == 2
