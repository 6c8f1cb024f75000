import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aks_gpu_inference.components.core import catalog

SKUS = catalog.skus()


def test_catalog_covers_the_current_gpu_families():
    families = {sku.family for sku in SKUS.values()}
    for family in [
        "NCasT4_v3",
        "NC_A100_v4",
        "NC_H100_v5",
        "NDasrA100_v4",
        "NDamsrA100_v4",
        "ND_H100_v5",
        "ND_H200_v5",
        "ND_MI300X_v5",
        "NVadsA10_v5",
        "ND_GB200_v6",
        "ND_GB300_v6",
    ]:
        assert family in families
    assert {"Standard_NC40ads_H100_v5", "Standard_NC80adis_H100_v5", "Standard_ND96asr_v4", "Standard_ND96amsr_A100_v4"} <= set(
        SKUS
    )


@pytest.mark.parametrize("name", sorted(SKUS))
def test_every_row_is_sourced_and_consistent(name):
    sku = SKUS[name]
    assert sku.source, "every row carries its source"
    assert sku.gpus >= 1 and sku.gpu_memory_gb > 0 and sku.vcpus == catalog.parse_vm_size(name).vcpus
    assert sku.resource_name == ("amd.com/gpu" if sku.gpu_vendor == "amd" else "nvidia.com/gpu")
    assert bool(sku.infiniband_nics) == sku.rdma
    if sku.price_usd_per_hour is not None:
        assert sku.price_date and "zz_generated.pricing.go" in sku.price_source and '["eastus"]' in sku.price_source


@pytest.mark.parametrize("name", sorted(SKUS))
def test_rdma_parse_agrees_with_the_catalog_for_every_row(name):
    assert ("r" in catalog.parse_vm_size(name).capabilities) == SKUS[name].rdma
    assert catalog.is_rdma_capable(name) == SKUS[name].rdma


def test_naive_r_in_name_would_be_wrong():
    # "Standard" contains an r: a substring check would call every size RDMA-capable.
    assert catalog.parse_vm_size("Standard_NC24ads_A100_v4").capabilities == "ads"
    assert not catalog.is_rdma_capable("Standard_NC24ads_A100_v4")
    assert catalog.is_rdma_capable("Standard_ND96isr_H100_v5")
    assert catalog.is_rdma_capable("Standard_ND96amsr_A100_v4")
    assert not catalog.is_rdma_capable("Standard_NC80adis_H100_v5")


@pytest.mark.parametrize(
    "name, rdma",
    [
        ("Standard_NC24rs_v3", True),
        ("Standard_HB120rs_v3", True),
        ("Standard_D4ds_v5", False),
        ("Standard_ND40rs_v2", True),
        ("garbage", False),
    ],
)
def test_rdma_parse_for_sizes_outside_the_catalog(name, rdma):
    assert catalog.is_rdma_capable(name) is rdma


def test_parse_splits_the_name():
    parsed = catalog.parse_vm_size("Standard_ND128isr_NDR_GB200_v6")
    assert (parsed.family, parsed.vcpus, parsed.capabilities, parsed.accelerator, parsed.version) == (
        "ND",
        128,
        "isr",
        "NDR_GB200",
        "v6",
    )
    assert catalog.parse_vm_size("Standard_ND96asr_v4").accelerator == ""
    assert catalog.parse_vm_size("Standard_ND128isrG5_GB300_v6").capabilities == "isr"
    with pytest.raises(ValueError, match="not an Azure VM size name"):
        catalog.parse_vm_size("nd96isr")


@given(
    family=st.sampled_from(["NC", "ND", "NV", "HB", "D", "E", "M"]),
    vcpus=st.integers(1, 999),
    caps=st.text(alphabet="adilmprst", max_size=5),
    accelerator=st.sampled_from(["", "_A100", "_H100", "_MI300X", "_NDR_GB200"]),
    version=st.integers(1, 9),
)
def test_rdma_is_exactly_the_r_among_capability_letters(family, vcpus, caps, accelerator, version):
    name = f"Standard_{family}{vcpus}{caps}{accelerator}_v{version}"
    assert catalog.parse_vm_size(name).capabilities == caps
    if name not in SKUS:
        assert catalog.is_rdma_capable(name) == ("r" in caps)


def test_unknown_sizes_get_a_clear_error():
    with pytest.raises(catalog.UnknownVmSizeError, match=r"'Standard_D4s_v5' is not a GPU VM size"):
        catalog.get_sku("Standard_D4s_v5")
    with pytest.raises(catalog.UnknownVmSizeError, match=r"did you mean 'Standard_NC24ads_A100_v4'"):
        catalog.get_sku("Standard_NC24ads_A100_v5")
    with pytest.raises(catalog.UnknownVmSizeError, match=r"case-sensitive"):
        catalog.get_sku("standard_nc24ads_a100_v4")
    with pytest.raises(catalog.UnknownVmSizeError, match=r"known sizes: .*Standard_ND96isr_H100_v5"):
        catalog.get_sku("Standard_ND96asr_A100_v4")  # KAITO's non-existent name


@pytest.mark.parametrize(
    "size, profile, resource, per_node",
    [
        ("Standard_ND96asr_v4", "MIG1g", "nvidia.com/mig-1g.5gb", 56),
        ("Standard_NC24ads_A100_v4", "MIG2g", "nvidia.com/mig-2g.20gb", 3),
        ("Standard_NC40ads_H100_v5", "MIG3g", "nvidia.com/mig-3g.47gb", 2),
        ("Standard_ND96isr_H100_v5", "MIG4g", "nvidia.com/mig-4g.40gb", 8),
        ("Standard_ND96isr_H200_v5", "MIG7g", "nvidia.com/mig-7g.141gb", 8),
    ],
)
def test_mig_resources_follow_the_aks_and_mig_parted_tables(size, profile, resource, per_node):
    assert SKUS[size].gpu_resource(profile) == (resource, per_node)
    assert catalog.mig_resource_name(size, profile) == resource


def test_mig_is_refused_where_the_gpu_has_none():
    with pytest.raises(ValueError, match="does not support MIG"):
        catalog.mig_resource_name("Standard_NC4as_T4_v3", "MIG1g")
    with pytest.raises(ValueError, match="accepted: MIG1g, MIG2g, MIG3g, MIG4g, MIG7g"):
        catalog.mig_slices_per_gpu("MIG5g")
    assert not any(SKUS[s].mig_capable for s in SKUS if re.search("T4|A10_|MI300X", s))


def test_retired_and_prices():
    assert SKUS["Standard_NC6s_v3"].retired == "2025-09-30"
    assert "Standard_NC6s_v3" not in catalog.current_sizes()
    assert SKUS["Standard_NC24ads_A100_v4"].monthly_price_usd() == pytest.approx(3.673 * 730)
    assert SKUS["Standard_ND96isr_H200_v5"].monthly_price_usd() is None
    assert catalog.control_plane_usd_per_hour("Standard") * 730 == pytest.approx(73.0)  # seed 002
    with pytest.raises(ValueError, match="accepted: Free, Standard, Premium"):
        catalog.control_plane_usd_per_hour("Gold")


def test_vgpu_fractions_and_amd():
    assert SKUS["Standard_NV6ads_A10_v5"].gpu_fraction == pytest.approx(1 / 6, abs=1e-3)
    assert SKUS["Standard_NV6ads_A10_v5"].gpu_resource() == ("nvidia.com/gpu", 1)
    assert SKUS["Standard_ND96isr_MI300X_v5"].gpu_resource() == ("amd.com/gpu", 8)
