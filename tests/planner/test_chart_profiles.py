"""The chart profiles: each cites where it was read, renders valid objects for the cluster's version,
matches the upstream chart it profiles, and (where helm exists) matches real `helm template` output."""

from __future__ import annotations

import re

import kubernetes_validate
import pytest
import yaml

from planner import charts
from planner.deploy.crds import BUILT_IN_GROUPS
from planner.upstream import missing_reason, upstream_dir
from tests.conftest import STACKS, planned_stack

PROFILES = charts.profiles()
KUBERNETES = "1.35"


def test_every_chart_a_component_pins_has_a_profile():
    pinned = {
        ("dranet", "v1.3.0"),
        ("dra-driver-nvidia-gpu", "0.4.1"),
        ("gpu-operator", "v25.10.0"),
        ("nvidia-device-plugin", "0.17.0"),
        ("gateway-helm", "v1.8.2"),
        ("ai-gateway-crds-helm", "v1.1.0"),
        ("ai-gateway-helm", "v1.1.0"),
        ("semantic-router", "0.3.0"),
        ("inferencepool", "v1.3.1"),
        ("kuberay-operator", "1.7.0"),
        ("dynamo-platform", "1.6.1"),
    }
    assert {(p["chart"], str(p["version"])) for p in PROFILES} == pinned


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p["_file"])
def test_profile_cites_the_chart_path_at_its_tag(profile):
    match = re.fullmatch(r"[\w.-]+/[\w.-]+@(v?[\w.-]+):[\w./-]+", profile["source"])
    assert match, f"source {profile['source']!r} is not owner/repo@tag:path"
    assert match[1].lstrip("v") == str(profile["version"]).lstrip("v"), "read at the pinned tag"
    assert profile["_file"] == f"{profile['chart']}@{profile['version']}.yaml"


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p["_file"])
def test_default_render_is_valid_for_the_cluster_version(profile):
    render = charts.render_profile(profile, "release", "apps", {})
    for obj in render.objects:
        group = obj["apiVersion"].rpartition("/")[0]
        if group in BUILT_IN_GROUPS:  # custom resources are checked against their CRDs (test_crd_schema.py)
            kubernetes_validate.validate(obj, KUBERNETES, strict=True)


@pytest.mark.skipif(upstream_dir() is None, reason=missing_reason() if upstream_dir() is None else "")
@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p["_file"])
def test_profile_is_of_the_chart_upstream_pins(profile):
    """The upstream copy of the pinned chart exists and names the same chart (its version is set at packaging)."""
    folder = upstream_dir() / "charts" / profile["chart"] / str(profile["version"])
    if profile.get("caveat") and not folder.is_dir():
        pytest.skip(f"{profile['_file']} is a reconstruction the upstream copy has no chart for: {profile['caveat']}")
    chart = yaml.safe_load((folder / "Chart.yaml").read_text())
    assert chart["name"] == profile["chart"]


@pytest.fixture(scope="module")
def stack_charts():
    found = []
    for stack in STACKS:
        run = planned_stack(stack)
        found += [(stack, r) for r in charts.chart_resources(run)]
    return found


def test_the_stacks_render_every_chart_from_a_profile(stack_charts):
    for _stack, resource in stack_charts:
        render = charts.render_chart(resource, use_helm=False)
        assert render.source.startswith("profile "), render.notes


@pytest.mark.skipif(
    not charts.helm_available(), reason="helm is not on the PATH: profiles cannot be compared with helm template here"
)
def test_profiles_match_helm_template(stack_charts):
    """Where helm can pull the pinned charts, the profile renders the same objects with the same pod settings."""
    for _stack, resource in stack_charts:
        profiled = charts.render_chart(resource, use_helm=False)
        rendered = charts.render_chart(resource, use_helm=True)
        if rendered.source != "helm template":
            pytest.skip(f"helm could not pull {profiled.label}: {rendered.notes}")
        key = lambda o: (o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"])  # noqa: E731
        helm_objects = {key(o): o for o in rendered.objects if o["kind"] != "CustomResourceDefinition"}
        assert set(helm_objects) == {key(o) for o in profiled.objects}, profiled.label
        for obj in profiled.objects:
            spec = (obj.get("spec") or {}).get("template", {}).get("spec")
            if spec:
                real = helm_objects[key(obj)]["spec"]["template"]["spec"]
                for field in ("tolerations", "nodeSelector", "affinity", "hostNetwork", "securityContext"):
                    assert spec.get(field) == real.get(field), f"{profiled.label} {key(obj)} {field}"
                images = lambda s: sorted(c["image"] for c in s.get("containers", []) + s.get("initContainers", []))  # noqa: E731
                assert images(spec) == images(real)
        assert {(h.kind, h.name) for h in rendered.hooks} == {(h.kind, h.name) for h in profiled.hooks}
        assert {(c.group, c.kind) for c in rendered.crds} == {(c.group, c.kind) for c in profiled.crds}


def test_value_markers_follow_helm_semantics():
    profile = {
        "chart": "demo",
        "version": "1.0.0",
        "fullname": "release-chart",
        "defaults": {"image.tag": "v1"},
        "objects": [
            {
                "when": {"path": "enabled", "default": True},
                "manifest": {
                    "kind": "ConfigMap",
                    "apiVersion": "v1",
                    "metadata": {"name": "${fullname}", "labels": {"$value": "labels", "default": {}}},
                    "data": {
                        "image": "repo:${image.tag}",
                        "mode": {"$if": {"path": "mig", "default": False}, "then": "mixed", "else": "none"},
                    },
                },
            }
        ],
    }
    (obj,) = charts.render_profile(profile, "rel", "ns", {"mig": True}).objects
    assert obj["metadata"] == {"name": "rel-demo", "namespace": "ns"}, "empty `with` values are left out"
    assert obj["data"] == {"image": "repo:v1", "mode": "mixed"}
    assert charts.render_profile(profile, "my-demo", "ns", {"enabled": False, "image": {"tag": "v2"}}).objects == []
    (obj,) = charts.render_profile(profile, "my-demo", "ns", {"image": {"tag": "v2"}}).objects
    assert obj["metadata"]["name"] == "my-demo" and obj["data"]["image"] == "repo:v2"


def test_concat_joins_two_value_lists_and_leaves_an_empty_result_out():
    """semantic-router's env then extraEnv (templates/deployment.yaml): before, extraEnv was dropped."""
    env = {"$concat": [{"$value": "env", "default": [{"name": "A", "value": "1"}]}, {"$value": "extraEnv", "default": []}]}
    profile = {
        "chart": "demo",
        "version": "1.0.0",
        "fullname": "release",
        "objects": [{"manifest": {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "x"}, "data": {"env": env}}}],
    }
    (obj,) = charts.render_profile(profile, "rel", "ns", {"extraEnv": [{"name": "B", "value": "2"}]}).objects
    assert obj["data"]["env"] == [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]
    (obj,) = charts.render_profile(profile, "rel", "ns", {"env": [], "extraEnv": []}).objects
    assert "env" not in obj["data"]
