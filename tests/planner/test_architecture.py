"""The architecture check: a pool's CPU architecture comes from the catalog, and an image on an arm64 pool is a blocker
without an arm64 variant, a gap where the pins table cannot vouch for one, and passes with one."""

from __future__ import annotations

import pytest

from aks_gpu_inference.components.core import catalog, pins
from aks_gpu_inference.planner import claims, deploy
from aks_gpu_inference.planner.deploy import architecture
from aks_gpu_inference.planner.deploy.model import assemble
from tests.conftest import planned_stack

POOLS = ["gb300"]
USERS = ["Deployment llm-d-infra/engine"]


def test_each_image_pin_records_its_architectures_with_a_source():
    for pin in pins.images():
        assert pin.architectures_source, pin.key
        if pin.architectures is None:
            assert pin.architectures_source.startswith("unverified"), pin.key
        else:
            assert set(pin.architectures) <= {"amd64", "arm64"} and pin.architectures, pin.key


def test_images_on_gb_nodes_with_an_arm64_variant_pass():
    for key in ("dranet", "dra-driver-nvidia-gpu", "llm-d-router-disagg-sidecar", "nvbandwidth"):
        assert architecture._image_finding(pins.image(key), POOLS, USERS) is None, key


def test_an_image_published_without_arm64_is_a_blocker(monkeypatch):
    amd64_only = pins.ImagePin("x", "docker.io", "example/tool", "1.0", "test", ("amd64",), "its release workflow")
    monkeypatch.setattr(pins, "pin_of_image", lambda _image: amd64_only)
    finding = architecture._image_finding("docker.io/example/tool:1.0", POOLS, USERS)
    assert finding.level == "blocker" and "published for amd64 only (its release workflow)" in finding.message
    assert "on arm64 pool gb300 (Deployment llm-d-infra/engine)" in finding.message


@pytest.mark.parametrize(
    ("image", "says"),
    [
        ("docker.io/vllm/vllm-openai:v0.32.0", "whether the tag has an arm64 variant is not known"),
        ("busybox:1.36", "does not hold it"),
    ],
)
def test_an_image_nobody_verified_leaves_the_plan_incomplete(image, says):
    finding = architecture._image_finding(image, POOLS, USERS)
    assert finding.level == "unchecked" and says in finding.message and image in finding.message


def test_pools_are_labelled_with_the_catalogs_architecture():
    model = assemble(planned_stack("gb300"), [])
    arch = {p.name: p.labels["kubernetes.io/arch"] for p in model.pools}
    assert arch == {"system": "amd64", "platform": "amd64", "gb300": "arm64"}, "GB300 is Grace: no 'p' in its name"
    assert catalog.node_arch("Standard_D8pds_v5") == "arm64" and catalog.node_arch("Standard_D8ds_v5") == "amd64"


def test_the_gb300_stack_runs_no_image_known_to_lack_arm64():
    run = planned_stack("gb300")
    found = architecture.check(deploy.build(run, [], claims.check(run)))
    assert [f for f in found if f.level == "blocker"] == []
    # The two tags nobody verified make the plan incomplete; every other image on the pool has a verified arm64 variant.
    assert {f.object: f.level for f in found} == {
        "docker.io/vllm/vllm-openai:v0.32.0": "unchecked",
        "nvcr.io/nvidia/pytorch:25.09-py3": "unchecked",
    }
