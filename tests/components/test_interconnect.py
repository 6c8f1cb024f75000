"""Rack-scale pools: what a GB pool with an interconnect group refuses, and the NIC selectors that keep its RDMA work in
the group and one subgroup, evaluated with cel-python on ResourceSlices shaped like DRANET v1.4.0's on AKS GB300 nodes
(kubernetes-sigs/dranet@v1.4.0:examples/azure_aks_examples/gb300/resourceslice-dranet.yaml, plus the two interconnect
attributes v1.4.0 adds: pkg/cloudprovider/azure/azure.go)."""

from __future__ import annotations

import kubernetes_validate
import pytest
from pydantic import ValidationError

from aks_gpu_inference.components import GpuNodePoolArgs
from aks_gpu_inference.components.azure.interconnect import GROUP_ATTRIBUTE, SUBGROUP_ATTRIBUTE, attribute_cel
from aks_gpu_inference.components.core import catalog
from aks_gpu_inference.components.gpu.rdma_network import DEVICE_CLASS_CEL
from aks_gpu_inference.planner.claims import Selector, cel_devices, nic_slice

GB300 = "Standard_ND128isr_GB300_v6"
GROUP = "2deed8b4-0000-4000-8000-00000000000a"
RACK_A = "0f0ba375-0000-4000-8000-00000000000a"
RACK_B = "0f0ba375-0000-4000-8000-00000000000b"


def gb_pool(**fields):
    return GpuNodePoolArgs(**{"name": "gb300", "vm_size": GB300, "count": 2, "rdma": True, **fields})


def refusal(**fields) -> str:
    with pytest.raises(ValidationError) as err:
        gb_pool(**fields)
    return str(err.value)


def test_a_gb300_pool_in_a_group_is_accepted_and_labelled():
    pool = gb_pool(interconnect={"name": "icg-rack1"})
    assert pool.node_labels()["aks-gpu-inference/interconnect-group"] == "icg-rack1"
    assert catalog.get_sku(GB300).rack_size == 18 and catalog.node_arch(GB300) == "arm64"


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"count": 19, "interconnect": {"name": "icg"}}, "one subgroup (a rack) holds 18"),
        ({"rdma": False, "interconnect": {"name": "icg"}}, "set rdma: true"),
        ({"vm_size": "Standard_ND96isr_H100_v5", "interconnect": {"name": "icg"}}, "has no rack-scale NVLink"),
        ({"interconnect": {"name": "icg", "subgroup_id": "rack-a"}}, "subgroup_id"),
        ({"interconnect": {"name": "-icg"}}, "interconnect.name"),
        ({"gpu_management": "managed"}, "arm64 (Grace) size"),
        ({"os_sku": "AzureLinux"}, "Ubuntu 24.04 arm64 only"),
    ],
    ids=["more than a rack", "no rdma", "not rack-scale", "subgroup not a GUID", "bad name", "managed GPU", "os"],
)
def test_what_a_rack_scale_pool_refuses(fields, expected):
    assert expected in refusal(**fields)


def node(name: str, group: str | None, subgroup: str | None) -> dict:
    attributes = {GROUP_ATTRIBUTE: group, SUBGROUP_ATTRIBUTE: subgroup} if group else None
    slice_ = nic_slice(catalog.get_sku(GB300), name, attributes)
    kubernetes_validate.validate(slice_, "1.35", strict=True)
    return slice_


NODES = {
    "rack-a": node("aks-gb300-0-vmss000000", GROUP, RACK_A),
    "rack-b": node("aks-gb300-0-vmss000001", GROUP, RACK_B),
    "no-group": node("aks-gb300-0-vmss000002", None, None),
}


def chosen(expressions: list[str]) -> dict[str, int]:
    """NICs each node's slice offers the DRANET class and then ``expressions``; a CEL error fails the test (Kubernetes
    aborts the allocation on one)."""
    result = {}
    selectors = [Selector(DEVICE_CLASS_CEL), *(Selector(e) for e in expressions)]
    for name, slice_ in NODES.items():
        count = 0
        for device in cel_devices([slice_]):
            ok = True
            for selector in selectors:
                ok, error = selector.match(device)
                assert error is None, error
                if not ok:
                    break
            count += ok
        result[name] = count
    return result


def test_the_group_and_subgroup_selectors_keep_the_nics_in_one_rack():
    group, subgroup = attribute_cel(GROUP_ATTRIBUTE, GROUP), attribute_cel(SUBGROUP_ATTRIBUTE, RACK_A)
    assert chosen([]) == {"rack-a": 4, "rack-b": 4, "no-group": 4}, "the class alone takes every InfiniBand NIC"
    assert chosen([group]) == {"rack-a": 4, "rack-b": 4, "no-group": 0}, "the group alone spans both racks"
    assert chosen([group, subgroup]) == {"rack-a": 4, "rack-b": 0, "no-group": 0}


def test_without_the_in_test_a_node_outside_every_group_is_an_evaluation_error():
    """Why the selector tests the key first: a missing attribute is an error, and an error aborts the allocation."""
    bare = 'device.attributes["azure.dra.net"]["interconnectSubgroupId"] == "' + RACK_A + '"'
    errors = [Selector(bare).match(d)[1] for d in cel_devices([NODES["no-group"]])]
    assert all(errors)


def test_a_rack_scale_rdma_pool_needs_the_dra_section_for_its_compute_domain():
    from aks_gpu_inference.components.core.errors import ConfigError
    from aks_gpu_inference.components.stack.config import parse_stack_config
    from tests.conftest import stack_config

    raw = {k.split(":", 1)[1]: v for k, v in stack_config("gb300").items() if k.startswith("aks-gpu-inference:")}
    assert parse_stack_config(raw).rdma.pools == ["gb300"]
    raw.pop("dra")
    for model in raw["models"]:
        model["gpu_access"] = "device-plugin"
    with pytest.raises(ConfigError) as err:
        parse_stack_config(raw)
    assert any("rdma.pools" in p and "ComputeDomain of the NVIDIA DRA driver" in p for p in map(str, err.value.problems))
