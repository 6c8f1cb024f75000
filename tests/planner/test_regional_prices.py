"""Prices and zones per region: tools/azure_region_data.py reads them from karpenter-provider-azure's snapshot (on a
synthetic module, and on the pinned commit where a mirror is at hand, where it must reproduce the committed files),
and a stack is priced for its own region: a westeurope dev at westeurope's list prices, a size a region does not
sell said so, never priced at another region's."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from aks_gpu_inference.components.core import catalog, regions
from aks_gpu_inference.planner.report import cost
from tests.conftest import REPO, run_stack, stack_config
from tests.go_module import git_module, tool

MIRROR = Path(os.environ.get("KARPENTER_AZURE_MIRROR", "/work/.mirror/Azure+karpenter-provider-azure/repo"))
PRICES = json.loads((REPO / "components" / "core" / "vm_prices.json").read_text())
A100 = "Standard_NC24ads_A100_v4"

PRICING_GO = """package pricing

import "time"

// generated at 2026-01-02T03:04:05Z

var InitialPriceUpdate, _ = time.Parse(time.RFC3339, "2026-01-02T03:04:05Z")
var initialOnDemandPrices = map[string]map[string]float64{}

func init() {
\t// eastus
\tinitialOnDemandPrices["eastus"] = map[string]float64{
\t\t"Standard_D4ds_v5":         0.226000,
\t\t"Standard_E4s_v5":          0.252000,
\t\t"Standard_NC24ads_A100_v4": 3.673000,
\t\t"Standard_NM16ads_MA35D  ": 1.000000,
\t}
\t// westeurope
\tinitialOnDemandPrices["westeurope"] = map[string]float64{
\t\t"Standard_NC24ads_A100_v4": 4.775000,
\t}
}
"""
KNOWN_SKUS = """# This file is auto-generated. DO NOT EDIT.
- name: Standard_D4ds_v5
  family: standardDDSv5Family
  discoveredOn: "2025-05-15"
- name: Standard_E4s_v5
  family: standardESv5Family
  discoveredOn: "2025-05-15"
- name: Standard_NC24ads_A100_v4
  family: StandardNCADSA100v4Family
  discoveredOn: "2025-05-15"
"""
LOCATIONS = [
    {
        "name": "eastus",
        "displayName": "East US",
        "availabilityZoneMappings": [{"logicalZone": z, "physicalZone": f"eastus-az{z}"} for z in "312"],
        "metadata": {"regionType": "Physical", "geography": "United States", "geographyGroup": "US", "pairedRegion": []},
    },
    {"name": "europe", "displayName": "Europe", "metadata": {"regionType": "Logical", "geography": "Europe"}},
]


def test_the_tool_reads_prices_and_zones_and_keeps_only_the_sizes_the_project_prices(tmp_path):
    files = {
        "pkg/providers/pricing/zz_generated.pricing.go": PRICING_GO,
        "pkg/fake/locations.json": json.dumps(LOCATIONS),
        "pkg/providers/instancetype/known_skus.yaml": KNOWN_SKUS,
    }
    repo = git_module(tmp_path, files)
    prices, locations, families = tool("azure_region_data").build(repo, "v1", REPO)
    assert prices["date"] == "2026-01-02" and prices["source"].endswith("@v1:pkg/providers/pricing/zz_generated.pricing.go")
    assert prices["usd_per_hour"] == {"eastus": {"Standard_D4ds_v5": 0.226, A100: 3.673}, "westeurope": {A100: 4.775}}
    assert "Standard_E4s_v5" not in prices["sizes"], "neither a GPU size nor one a stack names"
    assert "Standard_ND128isr_GB300_v6" in prices["sizes"], "a catalog size priced nowhere is listed, not dropped"
    assert locations["regions"] == {
        "eastus": {
            "display_name": "East US",
            "zones": ["1", "2", "3"],
            "geography": "United States",
            "geography_group": "US",
            "paired": [],
            "category": "",
        }
    }, "logical regions are aliases, left out"
    assert families["families"] == {"StandardNCADSA100v4Family": [A100], "standardDDSv5Family": ["Standard_D4ds_v5"]}
    assert families["source"].startswith("Azure/karpenter-provider-azure@v1:pkg/providers/instancetype/known_skus.yaml")
    assert (
        families["new_subscriptions"]
        == json.loads((REPO / "components/core/quota_families.json").read_text())["new_subscriptions"]
    )


def test_a_layout_the_tool_does_not_know_is_an_error_not_a_guess():
    with pytest.raises(ValueError, match="not a price entry"):
        tool("azure_region_data").parse_prices(PRICING_GO.replace('"Standard_D4ds_v5":', "Standard_D4ds_v5 ="))


def test_the_committed_files_are_what_the_tool_makes_of_the_pinned_commit():
    commit = re.search(r"@([0-9a-f]{40}):", PRICES["source"])[1]
    if not (MIRROR / "HEAD").is_file():
        pytest.skip(f"no karpenter-provider-azure mirror at {MIRROR} (set KARPENTER_AZURE_MIRROR)")
    prices, locations, families = tool("azure_region_data").build(MIRROR, commit, REPO)
    assert prices == PRICES
    assert locations == json.loads((REPO / "components" / "core" / "azure_locations.json").read_text())
    assert families == json.loads((REPO / "components" / "core" / "quota_families.json").read_text())
    assert set(catalog.skus()) <= {size for sizes in families["families"].values() for size in sizes}


def test_every_size_the_catalog_and_the_stacks_name_is_in_the_file():
    named = {s for p in REPO.glob("Pulumi.*.yaml") for s in re.findall(r"Standard_[A-Za-z0-9_]+", p.read_text())}
    assert set(catalog.skus()) | named <= set(PRICES["sizes"])
    assert catalog.no_price("Standard_ND96isr_H200_v5", "eastus").startswith("no price known for Standard_ND96isr_H200_v5 in")
    assert catalog.regions_selling("Standard_ND96isr_H200_v5") and "eastus" not in catalog.regions_selling(
        "Standard_ND96isr_H200_v5"
    )


def test_regions_know_their_zones_and_geography():
    assert regions.get("eastus").zones == ("1", "2", "3") and regions.get("westus").zones == ()
    assert regions.same_geography("westeurope") == ["westeurope", "northeurope"]
    assert regions.same_geography("nowhere") == ["nowhere"]


def westeurope_dev() -> dict:
    config = stack_config("dev")
    config["azure-native:location"] = config["aks-gpu-inference:location"] = "westeurope"
    return config


def test_a_westeurope_stack_is_priced_for_westeurope():
    run = run_stack(westeurope_dev())
    estimate = cost.cost_rows(run)
    rows = {r.item: r for r in estimate.rows}
    assert rows["a100"].hourly == catalog.vm_price(A100, "westeurope") == 4.775 != catalog.vm_price(A100, "eastus")
    assert rows["system"].hourly == catalog.vm_price("Standard_D4ds_v5", "westeurope")
    assert any('initialOnDemandPrices["westeurope"]' in note and "region westeurope" in note for note in estimate.notes)
    # The gateway's cost per token: the replica's share of the westeurope price at 1,500 tokens/s.
    costs = run.outputs["gateway_cost_per_million"]
    assert costs["llama-8b"]["completion"] == pytest.approx(4.775 / (1500 * 3600) * 1e6, abs=1e-4)


def test_a_size_the_region_does_not_sell_is_said_so_not_priced_elsewhere():
    config = stack_config("dev")
    config["aks-gpu-inference:gpu_pools"].append({"name": "h200", "vm_size": "Standard_ND96isr_H200_v5", "count": 1})
    estimate = cost.cost_rows(run_stack(config))
    (row,) = [r for r in estimate.rows if r.item == "h200"]
    assert row.hourly is None and row.monthly_high is None
    assert any("h200 (no price known for Standard_ND96isr_H200_v5 in eastus" in note for note in estimate.notes), estimate.notes
