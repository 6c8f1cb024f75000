"""The plan's cost and quota tables count every node that costs money: the system and platform pools, the GPU
pools (AKS-managed ones too), Spot pools at their ceiling, and the nodes KAITO provisions for its workspaces;
the totals add the rows up, and a pool whose GPUs only DRA publishes says so."""

from __future__ import annotations

import pytest

from aks_gpu_inference.components.core import catalog
from aks_gpu_inference.planner.azure import quota as demand
from aks_gpu_inference.planner.report import cost, sections
from tests.conftest import STACKS, planned_stack
from tests.planner.test_request_path import planned

HOURS = catalog.HOURS_PER_MONTH


def pools_and_workspaces(stack: str) -> set[str]:
    """What the stack asks Azure to run: every pool of the cluster and each KAITO workspace's nodes."""
    run = planned_stack(stack)
    names = set()
    for r in run.resources:
        if r.type == "azure-native:containerservice:ManagedCluster":
            names |= {p["name"] for p in r.inputs.get("agentPoolProfiles") or []}
        elif r.type == "azure-native:containerservice:AgentPool":
            names.add(r.inputs["agentPoolName"])
        elif r.type == "azure-native:resources:Resource" and r.inputs.get("resourceType") == "agentPools":
            names.add(r.inputs["resourceName"])
        elif r.type == demand.KAITO_WORKSPACE:
            names.add(f"kaito {r.inputs['metadata']['name']}")
    return names


UNPRICED = {"gb300": "gb300 (Standard_ND128isr_GB300_v6: the Azure Retail Prices API has no meter for it"}
"""Stacks with a size no list price exists for, and how the estimate says so."""


@pytest.mark.parametrize("stack", [s for s in STACKS if s not in UNPRICED])
def test_every_node_is_priced_and_the_total_adds_up(stack):
    estimate = cost.cost_rows(planned_stack(stack))
    nodes = [row for row in estimate.rows if row.vm_size != "-"]
    assert {row.item for row in nodes} == pools_and_workspaces(stack)
    assert all(row.hourly is not None for row in estimate.rows), [r.item for r in estimate.rows if r.hourly is None]
    assert estimate.low == pytest.approx(sum(r.monthly_low for r in estimate.rows))
    assert estimate.high == pytest.approx(sum(r.monthly_high for r in estimate.rows))
    assert not any("Not in the total" in note for note in estimate.notes)


@pytest.mark.parametrize("stack", STACKS)
def test_every_node_draws_on_the_quota(stack):
    pools = {d.pool for d in demand.pool_demands(planned_stack(stack).resources)}
    assert pools == pools_and_workspaces(stack)


def test_kaito_nodes_are_costed_and_counted_in_their_family():
    """Before: prod's KAITO A100 node was in neither table (seed 002's gotcha 1 is exactly that surprise)."""
    run = planned_stack("prod")
    (row,) = [r for r in cost.cost_rows(run).rows if r.item.startswith("kaito ")]
    assert (row.vm_size, row.hourly, row.monthly_high) == ("Standard_NC24ads_A100_v4", 3.673, pytest.approx(3.673 * HOURS))
    needs = {n.name: n for n in demand.needs(run.resources, "eastus")}
    assert needs["StandardNCADSA100v4Family"].vcpus == 24 and needs["StandardNCADSA100v4Family"].pools == [row.item]


def test_system_and_platform_pools_are_in_the_total():
    """Before: train printed "total $73.00" beside four H100 nodes and two system nodes."""
    rows = {r.item: r for r in cost.cost_rows(planned_stack("train")).rows}
    assert rows["system"].hourly == catalog.vm_price("Standard_D4ds_v5", "eastus") == 0.226
    assert rows["platform"].monthly_low == pytest.approx(0.226 * HOURS) and rows["platform"].monthly_high == pytest.approx(
        3 * 0.226 * HOURS
    )


def test_a_spot_pool_counts_at_most_its_ceiling():
    estimate = cost.cost_rows(planned_stack("train"))
    (spot,) = [r for r in estimate.rows if r.spot]
    assert spot.hourly == catalog.vm_price("Standard_ND96isr_H100_v5", "eastus"), "spotMaxPrice -1: up to the on-demand price"
    assert (spot.monthly_low, spot.monthly_high) == (0.0, pytest.approx(4 * 98.32 * HOURS))
    assert any(note.startswith("Spot (h100spot): at most the ceiling") for note in estimate.notes)
    assert "Spot <= $98.320" in cost.cost_estimate(planned_stack("train"))


def test_a_pool_whose_gpus_only_dra_publishes_says_so():
    prod = planned(planned_stack("prod"))
    served = sections.advertised(prod, prod.claims)
    assert served["h100"].startswith("DRA only (") and "gpu.nvidia.com" in served["h100"]
    assert "DRA only" in sections.gpu_pools(prod.run, served)
    llmd = planned(planned_stack("llmd"))
    assert sections.advertised(llmd, llmd.claims)["h100"] == "nvidia.com/gpu x8", "AKS runs the device plugin there"


def test_every_catalog_gpu_size_has_microsofts_list_price_or_says_none():
    prices = catalog.price_snapshot()
    assert prices["region"] == "eastus" and "zz_generated.pricing.go" in prices["source"]
    # Azure prices NC A100 v4 linearly per GPU; the third-party snapshot used before did not.
    assert catalog.get_sku("Standard_NC48ads_A100_v4").price_usd_per_hour == 2 * catalog.vm_price(
        "Standard_NC24ads_A100_v4", "eastus"
    )


def test_a_size_without_a_list_price_is_left_out_of_the_total_saying_why():
    estimate = cost.cost_rows(planned_stack("gb300"))
    (gb300,) = [row for row in estimate.rows if row.vm_size == "Standard_ND128isr_GB300_v6"]
    assert gb300.hourly is None
    assert estimate.high == pytest.approx(sum(r.monthly_high for r in estimate.rows if r.hourly is not None))
    assert any(UNPRICED["gb300"] in note and note.startswith("Not in the total") for note in estimate.notes)
