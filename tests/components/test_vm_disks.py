import json
from pathlib import Path

import pytest

from aks_gpu_inference.components.core import catalog, vm_disks

TABLE = json.loads((Path(vm_disks.__file__).with_name("vm_disks.json")).read_text())
GENERAL = [
    "Standard_D2ds_v5",
    "Standard_D4ds_v5",
    "Standard_D8ds_v5",
    "Standard_D16ds_v5",
    "Standard_D4s_v5",
    "Standard_D8s_v5",
    "Standard_D4ads_v5",
    "Standard_D8ads_v5",
]


def test_every_row_is_sourced_and_parses():
    assert TABLE["checked_on"] == "2026-12-01"
    assert TABLE["rules"]["source"] and TABLE["rules"]["max_gib"] == 2040
    for row in TABLE["sizes"]:
        catalog.parse_vm_size(row["name"])
        assert row["source"].strip(), row["name"]
        assert isinstance(row["verified"], bool) and isinstance(row["ephemeral_os_disk"], bool)
        if not row["verified"]:
            assert row["note"], f"{row['name']}: unverified rows say why"
        nvme = row["nvme"]
        assert nvme is None or (nvme["disks"] > 0 and nvme["total_tib"] > 0)


@pytest.mark.parametrize("name", sorted(set(catalog.skus()) | set(GENERAL)))
def test_catalog_and_general_sizes_are_covered(name):
    info = vm_disks.disks(name)
    assert info.name == name


@pytest.mark.parametrize(
    ("vm_size", "temp_gib", "placement", "max_gib"),
    [
        ("Standard_NC24ads_A100_v4", 64, "temp", 64),
        ("Standard_NC48ads_A100_v4", 128, "temp", 128),
        ("Standard_NC96ads_A100_v4", 256, "temp", 256),
        ("Standard_NC4as_T4_v3", 176, "temp", 176),
        ("Standard_NC64as_T4_v3", 2816, "temp", 2040),
        ("Standard_NC40ads_H100_v5", 3576, "temp", 2040),
        ("Standard_ND96isr_H100_v5", 1024, "temp", 1024),
        ("Standard_ND96isr_MI300X_v5", 1000, "temp", 1000),
        ("Standard_NV6ads_A10_v5", 180, "temp", 180),
        ("Standard_NC6s_v3", 736, "temp", 736),
        ("Standard_D2ds_v5", 75, "temp", 75),
        ("Standard_D4ds_v5", 150, "temp", 150),
        ("Standard_D8ds_v5", 300, "temp", 300),
        ("Standard_D16ds_v5", 600, "temp", 600),
        ("Standard_D4ads_v5", 150, "temp", 150),
        ("Standard_D8ads_v5", 300, "temp", 300),
        ("Standard_D4s_v5", None, None, None),
        ("Standard_D8s_v5", None, None, None),
    ],
)
def test_max_ephemeral_os_disk(vm_size, temp_gib, placement, max_gib):
    info = vm_disks.disks(vm_size)
    assert info.temp_gib == temp_gib
    assert info.placement == placement
    assert vm_disks.max_ephemeral_os_disk_gib(vm_size) == max_gib


def test_trusted_launch_keeps_one_gib():
    assert vm_disks.max_ephemeral_os_disk_gib("Standard_D2ds_v5", trusted_launch=True) == 74
    assert vm_disks.max_ephemeral_os_disk_gib("Standard_D4s_v5", trusted_launch=True) is None


@pytest.mark.parametrize(
    ("vm_size", "default_gib"),
    [
        ("Standard_D8ds_v5", 300),  # the AKS docs' own example
        ("Standard_D4ds_v5", 150),
        ("Standard_D2ds_v5", None),  # 75 GiB temp is under the 128 GiB threshold
        ("Standard_NC24ads_A100_v4", None),
        ("Standard_NC48ads_A100_v4", 128),
        ("Standard_D4s_v5", None),
    ],
)
def test_aks_default_ephemeral_size(vm_size, default_gib):
    assert vm_disks.default_ephemeral_os_disk_gib(vm_size) == default_gib


def test_nvme_and_unverified_rows():
    h100 = vm_disks.disks("Standard_ND96isr_H100_v5")
    assert (h100.nvme_disks, h100.nvme_total_gib) == (8, 28 * 1024)
    gb200 = vm_disks.disks("Standard_ND128isr_NDR_GB200_v6")
    assert not gb200.verified and gb200.temp_disks == 4
    assert vm_disks.max_ephemeral_os_disk_gib("Standard_ND128isr_NDR_GB200_v6") == 2040


def test_cap_never_exceeds_the_aks_api_bound():
    for name in vm_disks.sizes():
        size = vm_disks.max_ephemeral_os_disk_gib(name)
        assert size is None or 0 < size <= 2048


def test_unknown_size():
    with pytest.raises(KeyError, match=r"not in vm_disks\.json"):
        vm_disks.max_ephemeral_os_disk_gib("Standard_X1_v9")
