"""aks-gpu alternatives: the placements that fit each self-hosted model, cheapest first, each priced for its region with
its quota family; the JSON schema pinned; bad input refused in one line naming the flag, the value and what is
accepted."""

from __future__ import annotations

import json

import pytest

from aks_gpu_inference.components.core import catalog, quota
from aks_gpu_inference.planner import alternatives_cmd
from aks_gpu_inference.planner.cli import main
from tests.conftest import REPO, run_stack, stack_config

RUNG_KEYS = {
    # The keys.
    "vm_size", "region", "priority", "tp", "fits", "usd_per_month", "usd_per_1m_tokens", "quota_family", "vcpus", "zones",
    # Added.
    "gpu", "nodes", "replicas_per_node", "usd_per_hour", "price_basis", "quota_regional", "sold", "current", "kv_tokens",
    "full_length_sequences",
}  # fmt: skip


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["alternatives", *argv, "--project-dir", str(REPO)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def dev_json() -> dict:
    return json.loads(json.dumps(alternatives_cmd.report(alternatives_cmd.planned(REPO, "dev"), "dev", None, None)))


def test_dev_ranks_fitting_placements_of_llama_8b_cheapest_first_each_priced_for_its_region(dev_json):
    (model,) = dev_json["models"]
    rungs = model["rungs"]
    assert model["model"] == "llama-8b" and len(rungs) >= 3 and all(r["fits"] for r in rungs)
    assert [r["usd_per_month"] for r in rungs] == sorted(r["usd_per_month"] for r in rungs)
    assert len({r["region"] for r in rungs}) >= 2 and len({r["vm_size"] for r in rungs}) >= 2
    for r in rungs:
        hourly = catalog.vm_price(r["vm_size"], r["region"])
        assert r["usd_per_hour"] == hourly and r["usd_per_month"] == pytest.approx(r["nodes"] * hourly * 730, abs=0.01)
        family = quota.SPOT if r["priority"] == "spot" else quota.family_of(r["vm_size"])
        assert r["quota_family"] == family and r["vcpus"] == r["nodes"] * catalog.get_sku(r["vm_size"]).vcpus
    # Two replicas at the autoscaler's ceiling: two NC24ads A100 v4 nodes in eastus, the stack's own placement.
    current = model["current"]
    assert (current["vm_size"], current["region"], current["nodes"], current["pool"]) == (
        "Standard_NC24ads_A100_v4",
        "eastus",
        2,
        "a100",
    )
    assert current["usd_per_1m_tokens"] == pytest.approx(3.673 / (1500 * 3600) * 1e6, abs=1e-4)
    assert [r for r in rungs if r["current"]] == [{k: v for k, v in current.items() if k != "pool"}]


def test_the_json_schema_is_what_the_docs_say(dev_json):
    assert set(dev_json) == {"stack", "prices", "assumptions", "models"}
    (model,) = dev_json["models"]
    assert set(model) == {"model", "hf_id", "max_model_len", "replicas", "regions", "current", "rungs"}
    assert all(set(r) == RUNG_KEYS for r in model["rungs"]) and set(model["current"]) == RUNG_KEYS | {"pool"}
    documented = (REPO / "docs" / "capacity.md").read_text()
    assert all(f"`{key}`" in documented for key in RUNG_KEYS | set(model) | set(dev_json))


def test_spot_is_priced_at_its_ceiling_never_at_a_guessed_discount(dev_json):
    rungs = dev_json["models"][0]["rungs"]
    spot = next(r for r in rungs if r["priority"] == "spot")
    regular = next(
        r
        for r in rungs
        if r["priority"] == "regular" and (r["vm_size"], r["region"], r["tp"]) == (spot["vm_size"], spot["region"], spot["tp"])
    )
    assert spot["usd_per_month"] == regular["usd_per_month"] and spot["price_basis"] == "on-demand ceiling"
    assert spot["quota_regional"] is None and regular["quota_regional"] == quota.REGIONAL


def test_the_default_regions_are_the_stacks_and_those_of_its_geography_selling_the_size(dev_json):
    regions = dev_json["models"][0]["regions"]
    assert regions[0] == "eastus" and set(regions[1:]) <= set(catalog.regions_selling("Standard_NC24ads_A100_v4"))
    assert "westeurope" not in regions and "centralus" in regions


def test_a_westeurope_stack_ranks_in_europe_at_europes_prices():
    config = stack_config("dev")
    config["aks-gpu-inference:location"] = config["azure-native:location"] = "westeurope"
    placements = run_stack(config).outputs["model_placements"]
    (model,) = alternatives_cmd.report(placements, "dev", None, None)["models"]
    assert model["regions"] == ["westeurope", "northeurope"]
    assert model["current"]["usd_per_hour"] == catalog.vm_price("Standard_NC24ads_A100_v4", "westeurope")


def test_an_rdma_model_ranks_infiniband_sizes_only():
    (model,) = alternatives_cmd.report(alternatives_cmd.planned(REPO, "prod"), "prod", None, ["eastus"])["models"]
    assert model["rungs"] and all(catalog.get_sku(r["vm_size"]).rdma for r in model["rungs"])
    assert model["current"]["tp"] == 8 and model["current"]["vm_size"] == "Standard_ND96isr_H100_v5"


def test_the_table_marks_the_current_placement(capsys):
    code, out, _ = run(capsys, "dev", "--regions", "eastus,westus3")
    assert code == 0
    assert out.startswith(
        "Placements for llama-8b (meta-llama/Llama-3.1-8B-Instruct, 8192 tokens, 2 replica(s)) in eastus, westus3"
    )
    (mine,) = [line for line in out.splitlines() if line.startswith("*")]
    assert "Standard_NC24ads_A100_v4  eastus" in mine and "StandardNCADSA100v4Family" in mine


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["dev", "--model", "llama-70b"], "error: --model='llama-70b': not a self-hosted model of the stack; accepted: llama-8b"),
        (["dev", "--regions", "westeu"], "error: --regions='westeu': not an Azure region"),
        (["dev", "--regions", "eastus,,westus"], "error: --regions='eastus,,westus': a comma-separated list of region names"),
        (["dev", "--regions", "belgiumcentral"], "error: --regions='belgiumcentral': the price snapshot has no prices there"),
        (["train"], "error: STACK: the stack has no self-hosted models (models[]) to place"),
    ],
)
def test_bad_input_is_refused_in_one_line(capsys, argv, expected):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and err.startswith(expected) and err.count("\n") == 1


def test_the_worked_example_quotes_the_commands_figures(dev_json):
    documented = (REPO / "docs" / "capacity.md").read_text()
    (model,) = dev_json["models"]
    first, mine = model["rungs"][0], model["current"]
    assert (first["vm_size"], first["region"], first["tp"], first["nodes"]) == ("Standard_NC64as_T4_v3", "eastus", 2, 1)
    for value in (first["usd_per_month"], mine["usd_per_month"]):
        assert f"${value:,.0f}" in documented
    prod = alternatives_cmd.report(alternatives_cmd.planned(REPO, "prod"), "prod", None, None)["models"][0]
    a100 = next(r for r in prod["rungs"] if r["vm_size"] == "Standard_ND96asr_v4" and r["region"] == "eastus")
    assert prod["rungs"][0] == a100 and f"${a100['usd_per_month']:,.0f} a month in eastus" in documented
    assert f"(${prod['current']['usd_per_month']:,.0f})" in documented
