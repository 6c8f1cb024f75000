import json
from datetime import date, timedelta
from pathlib import Path

import pytest

from aks_gpu_inference.components.core import catalog, lifecycle

TABLE = json.loads((Path(lifecycle.__file__).with_name("lifecycle.json")).read_text())
DEC_1 = date(2026, 12, 1)


def test_table_is_dated_and_every_entry_is_sourced():
    assert lifecycle.checked_on() == date(2026, 12, 1)
    assert lifecycle.RETIRING_WINDOW_DAYS == 60
    for row in TABLE["entries"]:
        assert row["kind"] in lifecycle.KINDS
        assert row["source"].strip(), row["name"]
        assert isinstance(row["verified"], bool)
        if not row["verified"]:
            assert row.get("note"), f"{row['name']}: unverified entries say why"
        if row["retires"] is not None:
            date.fromisoformat(row["retires"])
        for old in row.get("history", []):
            date.fromisoformat(old["retires"])
            assert old["source"].strip()


def test_entries_load_and_judge():
    everything = lifecycle.entries(as_of=DEC_1)
    assert len(everything) == len(TABLE["entries"])
    assert {item.state for item in everything} <= {"supported", "retiring", "retired"}
    assert all(item.source for item in everything)


@pytest.mark.parametrize(
    ("kind", "name", "as_of", "state", "retires"),
    [
        # AKS standard support (release calendar; a month means its last day)
        ("aks_kubernetes", "1.34", date(2026, 9, 30), "supported", date(2026, 11, 30)),
        ("aks_kubernetes", "1.34", date(2026, 10, 1), "retiring", date(2026, 11, 30)),
        ("aks_kubernetes", "1.34", date(2026, 11, 29), "retiring", date(2026, 11, 30)),
        ("aks_kubernetes", "1.34", date(2026, 11, 30), "retired", date(2026, 11, 30)),
        ("aks_kubernetes", "1.34", DEC_1, "retired", date(2026, 11, 30)),
        ("aks_kubernetes", "1.34.3", DEC_1, "retired", date(2026, 11, 30)),
        ("aks_kubernetes", "1.35", DEC_1, "supported", date(2027, 3, 31)),
        ("aks_kubernetes", "1.35", date(2027, 1, 29), "supported", date(2027, 3, 31)),
        ("aks_kubernetes", "1.35", date(2027, 1, 30), "retiring", date(2027, 3, 31)),
        ("aks_kubernetes", "1.35", date(2027, 3, 31), "retired", date(2027, 3, 31)),
        ("aks_kubernetes", "1.31", DEC_1, "retired", date(2025, 11, 1)),
        ("aks_kubernetes", "1.36", DEC_1, "supported", date(2027, 6, 30)),
        ("aks_kubernetes", "1.37", DEC_1, "supported", date(2027, 10, 31)),
        # AKS long-term support
        ("aks_kubernetes_lts", "1.31", DEC_1, "retired", date(2026, 11, 30)),
        ("aks_kubernetes_lts", "1.34", DEC_1, "supported", date(2027, 11, 30)),
        ("aks_node_os", "Ubuntu2204", DEC_1, "supported", date(2027, 6, 30)),
        # Azure OpenAI (2026-09-02 schedule)
        ("azure_openai_model", "gpt-4.1@2025-04-14", DEC_1, "supported", date(2027, 4, 14)),
        ("azure_openai_model", "gpt-4.1@2025-04-14", date(2027, 2, 13), "retiring", date(2027, 4, 14)),
        ("azure_openai_model", "gpt-4o@2024-11-20", DEC_1, "supported", date(2027, 4, 14)),
        ("azure_openai_model", "gpt-4o-mini@2024-07-18", DEC_1, "supported", date(2027, 4, 14)),
        ("azure_openai_model", "o3@2025-04-16", DEC_1, "retired", date(2026, 10, 21)),
        ("azure_openai_model", "o4-mini@2025-04-16", DEC_1, "retired", date(2026, 10, 16)),
        ("azure_openai_model", "gpt-5@2025-08-07", DEC_1, "supported", date(2027, 2, 9)),
        ("azure_openai_model", "gpt-5@2025-08-07", date(2026, 12, 11), "retiring", date(2027, 2, 9)),
        ("azure_openai_model", "gpt-5.5@2026-04-24", DEC_1, "supported", date(2027, 10, 26)),
        ("azure_openai_model", "text-embedding-3-large@1", DEC_1, "supported", date(2028, 2, 9)),
        # Managed Grafana
        ("managed_grafana", "10", DEC_1, "retired", date(2025, 7, 31)),
        ("managed_grafana", "11", date(2026, 6, 14), "retiring", date(2026, 6, 15)),
        ("managed_grafana", "11", DEC_1, "retired", date(2026, 6, 15)),
        ("managed_grafana", "12", DEC_1, "supported", None),
        # VM sizes
        ("vm_size", "Standard_NC6s_v3", DEC_1, "retired", date(2025, 9, 30)),
        ("vm_size", "Standard_NC6s_v3", date(2025, 8, 1), "retiring", date(2025, 9, 30)),
        ("vm_size", "Standard_NC24ads_A100_v4", DEC_1, "supported", None),
    ],
)
def test_status_on_explicit_dates(kind, name, as_of, state, retires):
    item = lifecycle.status(kind, name, as_of)
    assert item is not None
    assert (item.state, item.retires) == (state, retires)
    if retires is not None:
        assert item.days_left == (retires - as_of).days


def test_retiring_window_edges():
    retires = lifecycle.status("aks_kubernetes", "1.35", DEC_1).retires
    window = timedelta(days=lifecycle.RETIRING_WINDOW_DAYS)
    assert lifecycle.status("aks_kubernetes", "1.35", retires - window).state == "retiring"
    assert lifecycle.status("aks_kubernetes", "1.35", retires - window - timedelta(days=1)).state == "supported"


@pytest.mark.parametrize(
    ("as_of", "expected"),
    [
        (date(2026, 12, 1), ["1.35", "1.36", "1.37"]),
        (date(2026, 8, 1), ["1.34", "1.35", "1.36"]),
        (date(2026, 11, 30), ["1.35", "1.36", "1.37"]),
        (date(2027, 4, 1), ["1.36", "1.37"]),
    ],
)
def test_supported_aks_versions(as_of, expected):
    assert [item.name for item in lifecycle.supported("aks_kubernetes", as_of)] == expected


def test_supported_lts_versions_on_dec_1():
    names = [item.name for item in lifecycle.supported("aks_kubernetes_lts", DEC_1)]
    assert names == ["1.32", "1.33", "1.34", "1.35", "1.36", "1.37"]


def test_unknown_names_and_kinds():
    assert lifecycle.status("aks_kubernetes", "1.20", DEC_1) is None
    assert lifecycle.model_status("gpt-4.1", "2099-01-01", DEC_1) is None
    with pytest.raises(ValueError, match="unknown kind"):
        lifecycle.status("nope", "x", DEC_1)
    with pytest.raises(ValueError, match="unknown kind"):
        lifecycle.entries("nope")


def test_model_status_and_history():
    item = lifecycle.model_status("gpt-4.1", "2025-04-14", DEC_1)
    assert item.stage == "Legacy"
    history = item.extra["history"]
    # The July 2026 table is the one the issue quoted (2026-10-14).
    assert history[0]["retires"] == "2026-10-14"
    assert lifecycle.model_status("gpt-4o", "2024-11-20", DEC_1).replacement == "gpt-5.1"


def test_every_catalog_size_has_a_lifecycle_entry():
    for name, sku in catalog.skus().items():
        item = lifecycle.status("vm_size", name, DEC_1)
        assert item is not None, name
        if item.retires is not None:
            # The catalog's own retired flag agrees with the dated table.
            assert sku.retired is not None and date.fromisoformat(sku.retired) == item.retires


def test_recommendations_are_sourced_and_current():
    recs = lifecycle.recommendations()
    frontier = recs["frontier_model"]
    item = lifecycle.model_status(frontier["model"], frontier["version"], DEC_1)
    assert item is not None and item.state == "supported" and item.stage == "GA"
    assert item.retires == date.fromisoformat(frontier["retires"])
    grafana = lifecycle.status("managed_grafana", recs["grafana_major_version"]["value"], DEC_1)
    assert grafana.state == "supported"
    aks = lifecycle.status("aks_kubernetes", recs["aks_kubernetes_version"]["value"], DEC_1)
    assert aks.state == "supported"
    assert all(rec["source"] for rec in recs.values())
