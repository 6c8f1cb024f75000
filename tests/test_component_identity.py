"""Component identity: children are named from their parent, so two instances never share a URN, and
every rename since the first release ships with aliases so that no deployed resource is replaced."""

from __future__ import annotations

import pytest

from aks_gpu_inference.components import GpuNodePool, WorkloadIdentity
from tests.conftest import STACKS, cluster_context, planned_stack, run_components


@pytest.fixture(scope="module")
def stack_runs():
    return {stack: planned_stack(stack) for stack in STACKS}


@pytest.mark.parametrize("stack", STACKS)
def test_every_child_is_named_from_its_component(stack_runs, stack):
    run = stack_runs[stack]
    by_urn = {r.urn: r for r in run.resources}
    strays = [
        f"{parent.type} {parent.name} -> {r.type} {r.name}"
        for r in run.resources
        if (parent := by_urn.get(r.parent or ""))
        and parent.type.startswith("aks-gpu:")
        and not r.name.startswith(parent.name + "-")
    ]
    assert strays == []
    urns = [r.urn for r in run.resources]
    assert len(urns) == len(set(urns))


def test_two_instances_of_a_component_share_no_urn():
    def program():
        for name in ("blue", "green"):
            GpuNodePool(name, {"name": name, "vm_size": "Standard_NC24ads_A100_v4"}, cluster=cluster_context("aks", "rg"))
            WorkloadIdentity(
                name,
                {"namespace": "apps", "service_account": name},
                cluster=cluster_context(resource_group_name="rg", location="eastus", oidc_issuer_url="https://issuer"),
            )

    urns = [r.urn for r in run_components(program).resources]
    assert len(urns) == len(set(urns)) and len(urns) > 4


def test_renamed_resources_carry_their_old_names_as_aliases(stack_runs):
    records = {r.name: r for r in stack_runs["dev"].resources}
    # Renamed since the first release: the model identity (ee83cf2), and the gateway's collector and
    # token refresher (now named after the gateway). Children follow through their parent's alias.
    identity = next(r for r in stack_runs["dev"].resources if r.name == "llama-8b" and r.type.endswith("WorkloadIdentity"))
    assert any("llama-8b-identity" in a for a in identity.options["aliases"])
    assert any("otel-collector" in a for a in records["gateway-otel-collector"].options["aliases"])
    assert any("aoai-token" in a for a in records["gateway-aoai-token"].options["aliases"])
