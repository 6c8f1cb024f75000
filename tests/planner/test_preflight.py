"""aks-gpu preflight on recorded Azure responses: the verdicts for enough quota, too little, a size
the subscription may not use in the region, a Kubernetes version not offered and a preview feature
not registered; and the plan's own quota table, from the resources the stack registers."""

from __future__ import annotations

import argparse
from urllib.parse import parse_qs, urlparse

import pytest

from aks_gpu_inference.components.core import quota
from aks_gpu_inference.planner.azure import facts as azure_facts
from aks_gpu_inference.planner.azure import preflight, preflight_cmd
from aks_gpu_inference.planner.azure import quota as demand
from tests.azure_replay import SUBSCRIPTION, FakeCredential, transport
from tests.conftest import REPO, planned_stack

ALL_GOOD = ("usages_enough", "skus", "kubernetes_versions")


def run_preflight(stack: str, *files: str, capsys) -> tuple[int, str]:
    """Exit code and output (stdout, then stderr) of the command on recorded responses."""
    replay, _ = transport(*files)
    args = argparse.Namespace(stack=stack, subscription=SUBSCRIPTION, project_dir=str(REPO), alternatives=False)
    code = preflight_cmd.run(args, credential=FakeCredential(), transport=replay)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def facts(*files: str, features=()) -> azure_facts.AzureFacts:
    replay, _ = transport(*files)
    return azure_facts.fetch(
        FakeCredential(),
        SUBSCRIPTION,
        "eastus",
        {"Standard_ND96isr_H100_v5", "Standard_D8ds_v5", "Standard_D4ds_v5", "Standard_NC24ads_A100_v4"},
        list(features),
        replay,
    )


def test_the_plan_counts_every_pool_at_its_maximum_with_surge():
    rows = {n.name: n for n in demand.needs(planned_stack("prod").resources, "eastus")}
    # h100: 2 nodes, no surge (GPU pools upgrade with maxSurge 0); system: 3 + 1 surge x 8 (prod has no platform
    # pool); the KAITO workspace's one NC24ads A100 v4 node (24 vCPUs).
    assert rows["standardNDSH100v5Family"].vcpus == 192
    assert rows["standardDDSv5Family"].vcpus == 4 * 8
    assert rows["StandardNCADSA100v4Family"].vcpus == 24
    assert rows[quota.REGIONAL].vcpus == 192 + 32 + 24 and list(rows)[-1] == quota.REGIONAL


def test_spot_pools_draw_on_the_spot_quota_only():
    class R:
        type, name = "azure-native:containerservice:AgentPool", "spot-pool"
        inputs = {
            "agentPoolName": "spot",
            "vmSize": "Standard_ND96isr_H100_v5",
            "count": 0,
            "enableAutoScaling": True,
            "maxCount": 4,
            "scaleSetPriority": "Spot",
            "upgradeSettings": {"maxSurge": "0"},
        }

    rows = {n.name: n.vcpus for n in demand.needs([R()], "eastus")}
    assert rows == {quota.SPOT: 4 * 96}


def test_enough_quota_passes_every_item(capsys):
    code, out = run_preflight("prod", *ALL_GOOD, capsys=capsys)
    assert code == 0, out
    assert "FAIL" not in out and "quota standardNDSH100v5Family (h100)" in out and "Kubernetes 1.35" in out
    assert "needs 192 vCPUs; limit 192, in use 0, free 192" in out


def test_too_little_quota_fails_with_the_request_to_file(capsys):
    code, out = run_preflight("prod", "usages_short", "skus", "kubernetes_versions", capsys=capsys)
    assert code == preflight_cmd.EXIT_SHORTFALL
    line = next(line for line in out.splitlines() if "standardNDSH100v5Family" in line)
    assert "FAIL" in line and "limit 0" in line
    assert f"--scope /subscriptions/{SUBSCRIPTION}/providers/Microsoft.Compute/locations/eastus" in line
    assert "--limit-object value=192 --resource-type dedicated" in line


def test_a_size_restricted_for_the_subscription_and_a_blocked_zone_fail(capsys):
    code, out = run_preflight("prod", "usages_enough", "skus_restricted", "kubernetes_versions", capsys=capsys)
    assert code == 1
    h100 = next(line for line in out.splitlines() if line.startswith("size Standard_ND96isr_H100_v5"))
    assert "FAIL" in h100 and "NotAvailableForSubscription" in h100
    system = next(line for line in out.splitlines() if line.startswith("size Standard_D8ds_v5 (system)"))
    assert "zones 3 not available (usable: 1, 2)" in system


def test_a_kubernetes_version_the_region_does_not_offer_fails(capsys):
    code, out = run_preflight("dev", "usages_enough", "skus", "kubernetes_versions_without_135", capsys=capsys)
    assert code == 1
    line = next(line for line in out.splitlines() if line.startswith("Kubernetes 1.35"))
    assert "not offered in eastus (offered: 1.34, 1.36 (preview))" in line


@pytest.mark.parametrize(("recorded", "ok"), [("feature_registered", True), ("feature_not_registered", False)])
def test_a_preview_feature_must_be_registered(recorded, ok):
    asks = preflight.StackAsks("eastus", [], features=[preflight.MANAGED_GPU_FEATURE])
    (verdict,) = preflight.feature_verdicts(asks, facts(*ALL_GOOD, recorded, features=[preflight.MANAGED_GPU_FEATURE]))
    assert verdict.ok is ok
    if not ok:
        assert verdict.fix.startswith(
            "az feature register --namespace Microsoft.ContainerService --name ManagedGPUExperiencePreview"
        )


def test_the_family_azure_reports_wins_over_the_offline_table():
    found = facts(*ALL_GOOD)
    assert found.skus["Standard_ND96isr_H100_v5"].family == "standardNDSH100v5Family"
    assert found.skus["Standard_ND96isr_H100_v5"].zones == ("2",)
    assert "premium_lrs" not in {s.lower() for s in found.skus}


def test_azure_errors_exit_3_and_ask_to_sign_in(capsys):
    code, out = run_preflight("prod", "skus", "kubernetes_versions", capsys=capsys)  # usages not recorded: 404
    assert code == preflight_cmd.EXIT_AZURE
    assert "could not ask Azure: ResourceNotFoundError" in out and "az login" in out


def test_every_request_goes_to_the_replay_with_a_bearer_token():
    replay, adapter = transport(*ALL_GOOD)
    azure_facts.fetch(FakeCredential(), SUBSCRIPTION, "eastus", {"Standard_D4ds_v5"}, [], replay)
    assert adapter.seen and all(m == "GET" and "api-version=" in u for m, u in adapter.seen)


def test_normalised_family_names_match_across_spellings():
    assert quota.normalise("Standard NCASv3_T4 Family") == quota.normalise("standardNCASv3T4Family")


def test_without_credentials_it_fails_before_planning_in_one_paragraph(capsys, monkeypatch):
    from azure.core.exceptions import ClientAuthenticationError

    class NoCredential:
        def get_token(self, *_scopes, **_options):
            chain = "\n".join(f"Attempt {i}: credential {i} unavailable, " + "details " * 40 for i in range(8))
            raise ClientAuthenticationError("DefaultAzureCredential failed to retrieve a token.\n" + chain)

    monkeypatch.setattr(preflight_cmd, "plan_asks", lambda *_: pytest.fail("planned before signing in"))
    args = argparse.Namespace(stack="prod", subscription=SUBSCRIPTION, project_dir=str(REPO))
    assert preflight_cmd.run(args, credential=NoCredential()) == preflight_cmd.EXIT_AZURE
    err = capsys.readouterr().err
    assert err.startswith(f"error: could not sign in to Azure for subscription {SUBSCRIPTION}: ClientAuthenticationError:")
    assert "az login" in err and len(err) < 500 and "Attempt 3" not in err


def test_without_a_subscription_it_fails_before_signing_in(monkeypatch):
    monkeypatch.delenv("AZURE_SUBSCRIPTION_ID", raising=False)

    class Unused:
        def get_token(self, *_scopes, **_options):
            pytest.fail("signed in before the subscription was known")

    args = argparse.Namespace(stack="prod", subscription=None, project_dir=str(REPO))
    with pytest.raises(preflight_cmd.ConfigError, match="preflight needs the subscription"):
        preflight_cmd.run(args, credential=Unused())


def test_a_gb300_stack_asks_for_its_family_quota_and_the_size_in_the_region():
    """The rack-scale stack: the GB300 family's quota at the pool's two nodes, and the size offered to the subscription
    in the region (Azure names GB300's family standardNDISRGB300V6Family)."""
    asks = preflight.stack_asks(planned_stack("gb300").resources, "eastus")
    gb300 = "Standard_ND128isr_GB300_v6"
    family = "standardNDISRGB300V6Family"
    assert quota.family_of(gb300) == family
    short = azure_facts.AzureFacts(
        SUBSCRIPTION,
        "eastus",
        usages={quota.normalise(family): azure_facts.Usage(family, "Standard NDISR GB300 v6 Family vCPUs", 0, 128)},
    )
    (gb_quota,) = [v for v in preflight.quota_verdicts(asks, short) if v.item.startswith(f"quota {family}")]
    assert not gb_quota.ok and "needs 256 vCPUs; limit 128" in gb_quota.detail and "--limit-object value=256" in gb_quota.fix
    (size,) = [v for v in preflight.size_verdicts(asks, short) if gb300 in v.item]
    assert not size.ok and size.detail == "not offered in eastus"
    offered = azure_facts.SkuFacts(gb300, family, ("1",), False, ())
    enough = azure_facts.AzureFacts(
        SUBSCRIPTION,
        "eastus",
        usages={quota.normalise(family): azure_facts.Usage(family, "GB300", 0, 512)},
        skus={gb300: offered},
    )
    assert all(v.ok for v in preflight.quota_verdicts(asks, enough) if family in v.item)
    assert [v.ok for v in preflight.size_verdicts(asks, enough) if gb300 in v.item] == [True]


def run_alternatives(capsys, eastus: str, **elsewhere: str) -> tuple[int, str, list]:
    """preflight dev --alternatives: eastus answers from ``eastus`` (a usages file), other regions from theirs."""
    regions = {r: (usages, f"skus_gpu_{r}") for r, usages in elsewhere.items()}
    replay, adapter = transport(eastus, "skus_gpu_eastus", "kubernetes_versions", elsewhere=regions)
    args = argparse.Namespace(stack="dev", subscription=SUBSCRIPTION, project_dir=str(REPO), alternatives=True)
    code = preflight_cmd.run(args, credential=FakeCredential(), transport=replay)
    captured = capsys.readouterr()
    return code, captured.out + captured.err, adapter.seen


FIVE = {
    "eastus2": "usages_gpu_room",
    "northcentralus": "usages_gpu_room",
    "westus2": "usages_gpu_room",
    "westus3": "usages_gpu_none",
}


def test_alternatives_show_where_there_is_quota_when_the_region_has_none(capsys):
    code, out, seen = run_alternatives(capsys, "usages_gpu_none", **FIVE)
    assert code == preflight_cmd.EXIT_SHORTFALL, "the stack's own shortfall decides the exit code, not the advice"
    lines = {line.split("  ")[1].strip(): line for line in out.splitlines() if line.startswith("llama-8b  ")}
    current = lines["Standard_NC24ads_A100_v4 eastus regular tp 1, 2 node(s) (current)"]
    assert "NO ROOM" in current and "StandardNCADSA100v4Family: 48 needed, 0 free of 0" in current
    assert "room " in lines["Standard_NC64as_T4_v3 eastus2 regular tp 2, 1 node(s)"]
    assert (
        "Standard NCASv3_T4 Family: 64 needed, 128 free of 128" in lines["Standard_NC64as_T4_v3 eastus2 regular tp 2, 1 node(s)"]
    )
    restricted = lines["Standard_NC64as_T4_v3 northcentralus regular tp 2, 1 node(s)"]
    assert "NO ROOM" in restricted and "restricted for the subscription (NotAvailableForSubscription)" in restricted
    assert "lowPriorityCores: 64 needed, 0 free of 0" in lines["Standard_NC64as_T4_v3 eastus spot tp 2, 1 node(s)"]
    assert "llama-8b: no room where it is; room at Standard_NC64as_T4_v3 eastus2 regular tp 2, 1 node(s)" in out
    asked = {parse_qs(urlparse(url).query).get("$filter", [""])[0] for _, url in seen if "/skus" in url}
    assert asked == {f"location eq '{r}'" for r in ("eastus", *FIVE)}, "one location-filtered SKU list per region"


def test_alternatives_are_asked_only_when_wanted(capsys):
    code, out = run_preflight("dev", *ALL_GOOD, capsys=capsys)
    assert code == 0 and "Quota headroom" not in out


def test_an_unrecorded_region_is_an_azure_error_not_a_traceback(capsys):
    code, out, _ = run_alternatives(capsys, "usages_gpu_none", eastus2="usages_gpu_room")
    assert code == preflight_cmd.EXIT_AZURE and "could not ask Azure about the alternatives: ResourceNotFoundError" in out
