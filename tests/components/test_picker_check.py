"""llm-d's picker config and flags judged by the table generated from llm-d-router's source at the pinned tag:
the config the project builds loads and disaggregates, and each way upstream's picker would refuse a config (or
never use the prefill pods) is caught, naming the plugin."""

from __future__ import annotations

import copy

import pytest
import yaml

from aks_gpu_inference.components.core import pins
from aks_gpu_inference.components.serving import llmd_registry
from aks_gpu_inference.components.serving.picker_check import check_args, check_config
from aks_gpu_inference.components.serving.vllm_disaggregation import PICKER_RELEASE, picker_config, sidecar_args
from aks_gpu_inference.components.serving.vllm_service_args import VllmServiceArgs

TAG = PICKER_RELEASE
TABLE = llmd_registry.load(TAG)

V080_CONFIG = """\
apiVersion: inference.networking.x-k8s.io/v1alpha1
kind: EndpointPickerConfig
plugins:
- type: prefill-header-handler
- type: prefill-filter
- type: decode-filter
- type: max-score-picker
- type: queue-scorer
- type: pd-profile-handler
schedulingProfiles:
- name: prefill
  plugins: [{pluginRef: prefill-filter}, {pluginRef: queue-scorer}, {pluginRef: max-score-picker}]
- name: decode
  plugins: [{pluginRef: decode-filter}, {pluginRef: queue-scorer}, {pluginRef: max-score-picker}]
"""
"""What the project rendered with llm-d v0.8.0: pd-profile-handler with its default decider, never declared."""


def args(**disaggregation) -> VllmServiceArgs:
    return VllmServiceArgs.model_validate(
        {
            "name": "llama",
            "model": "meta-llama/Llama-3.3-70B-Instruct",
            "tensor_parallel_size": 8,
            "max_model_len": 32768,
            "rdma": True,
            "disaggregation": {"prefill_replicas": 1, "decode_replicas": 1, **disaggregation},
        }
    )


def ours(**disaggregation) -> dict:
    return copy.deepcopy(picker_config(args(**disaggregation)))


def levels(problems) -> list[tuple[str, str]]:
    return [(p.level, p.message) for p in problems]


def test_the_table_is_the_pinned_picker_release():
    assert TAG == pins.image_pin("llm-d-router-endpoint-picker").tag == pins.image_pin("llm-d-router-disagg-sidecar").tag
    assert TABLE["source"].startswith(f"llm-d/llm-d-router@{TAG} (commit ")
    assert TABLE["generated_by"] == "tools/llmd_registry.py"
    used = {p["type"] for p in ours()["plugins"]}
    assert all(TABLE["plugins"][t]["parameters"]["mode"] in ("schema", "ignored") for t in used), (
        "every plugin we use is readable"
    )


@pytest.mark.parametrize("decider", ["prefix", "always"])
def test_the_config_the_project_builds_loads_and_disaggregates(decider):
    config = ours(decider=decider)
    assert check_config(config, TAG) == []
    declared = {p["type"] for p in config["plugins"]}
    assert {"always-disagg-pd-decider" if decider == "always" else "prefix-based-pd-decider"} <= declared


def test_the_v080_config_stops_the_picker_at_start():
    blockers = [m for level, m in levels(check_config(V080_CONFIG, TAG)) if level == "blocker"]
    assert blockers == [
        "plugin 'pd-profile-handler' refers to plugin 'prefix-based-pd-decider' through deciderPluginName (its default), "
        "which is not declared"
    ]


def test_a_missing_decider_is_a_blocker():
    config = ours()
    config["plugins"] = [p for p in config["plugins"] if p["type"] != "prefix-based-pd-decider"]
    assert (
        "blocker",
        "plugin 'disagg-profile-handler' refers to plugin 'prefix-based-pd-decider' through deciders.prefill, which is not declared",
    ) in levels(check_config(config, TAG))


def test_an_unknown_plugin_type_is_a_blocker_with_the_close_names():
    config = ours()
    config["plugins"].append({"type": "prefix-cache-scorrer"})
    (problem,) = [p for p in check_config(config, TAG) if p.level == "blocker"]
    assert problem.message.startswith(
        "plugin 'prefix-cache-scorrer': type 'prefix-cache-scorrer' is not registered in this picker; did you mean"
    )
    assert "prefix-cache-scorer" in problem.message


def test_an_unknown_feature_gate_is_a_blocker():
    config = ours()
    config["featureGates"] = ["prepareDataPlugins"]  # the v0.8.0 sample's gate
    (problem,) = check_config(config, TAG)
    assert problem.level == "blocker" and "feature gate 'prepareDataPlugins' is unknown or unregistered" in problem.message
    config["featureGates"] = ["flowControl=true"]
    assert check_config(config, TAG) == []


def test_parameters_the_strict_decoder_rejects_are_blockers():
    config = ours()
    scorer = next(p for p in config["plugins"] if p["type"] == "prefix-cache-scorer")
    scorer["parameters"] = {"maxPrefixBlocksToMatch": 256}  # moved to the producer at v0.9.0
    assert levels(check_config(config, TAG)) == [
        (
            "blocker",
            "plugin 'prefix-cache-scorer': unknown parameter 'maxPrefixBlocksToMatch' (prefix.PrefixCachePluginFactory decodes strictly)",
        )
    ]


def test_an_unknown_top_level_field_and_a_duplicate_name_are_blockers():
    config = ours()
    config["schedulingProfile"] = []
    config["plugins"].append({"type": "queue-scorer"})
    messages = [m for level, m in levels(check_config(config, TAG)) if level == "blocker"]
    assert "unknown field 'schedulingProfile': the picker decodes its config strictly and exits" in messages
    assert "plugin name 'queue-scorer' is declared twice" in messages


def test_an_alpha_plugin_needs_the_experimental_flag():
    config = ours()
    config["plugins"].append({"type": "session-affinity-scorer"})
    assert (
        "blocker",
        "plugin 'session-affinity-scorer' (session-affinity-scorer) is Alpha: the picker needs --allow-experimental-plugins",
    ) in levels(check_config(config, TAG))
    assert check_config(config, TAG, ["--allow-experimental-plugins"]) == []


def test_a_profile_naming_an_undeclared_plugin_is_a_blocker():
    config = ours()
    config["schedulingProfiles"][0]["plugins"].append({"pluginRef": "kv-cache-utilization-scorer"})
    assert ("blocker", "profile 'prefill' refers to plugin 'kv-cache-utilization-scorer', which is not declared") in levels(
        check_config(config, TAG)
    )


def test_configs_that_load_but_never_use_prefill_are_warnings():
    never = ours()
    next(p for p in never["plugins"] if p["type"] == "prefix-based-pd-decider")["parameters"] = {}
    assert levels(check_config(never, TAG)) == [
        ("warning", "prefix-based-pd-decider: nonCachedTokens is 0, which never splits prefill off (set it above 0)")
    ]
    blind = ours()
    blind["schedulingProfiles"][1]["plugins"] = [
        r for r in blind["schedulingProfiles"][1]["plugins"] if r["pluginRef"] != "prefix-cache-scorer"
    ]
    assert levels(check_config(blind, TAG)) == [
        ("warning", "prefix-based-pd-decider needs a prefix-cache-scorer in profile 'decode' to judge what is cached")
    ]
    off = ours()
    next(p for p in off["plugins"] if p["type"] == "disagg-profile-handler").pop("parameters")
    assert (
        "warning",
        "disagg-profile-handler names no prefill decider: P/D is disabled and every request runs on decode",
    ) in levels(check_config(off, TAG))


def test_the_deprecated_api_group_loads_with_a_warning():
    config = ours()
    config["apiVersion"] = "inference.networking.x-k8s.io/v1alpha1"
    assert levels(check_config(yaml.safe_dump(config), TAG)) == [
        ("warning", "apiVersion inference.networking.x-k8s.io/v1alpha1 is deprecated at this release; write llm-d.ai/v1alpha1")
    ]


def test_the_sidecar_flags_are_the_pinned_sidecars():
    flags = TABLE["sidecar_flags"]
    assert check_args(sidecar_args(), flags, "sidecar", "x") == []
    assert flags["kv-connector"]["choices"] == ["nixlv2", "shared-storage", "sglang", "mooncake", "offloading"]
    problems = check_args(["--secure-serving=false", "--kv-connector=nixl", "--data-parallel-size=two"], flags, "sidecar", "x")
    assert [p.message for p in problems] == [
        "sidecar defines no flag --secure-serving; it exits at start",
        "sidecar: --kv-connector=nixl is not one of nixlv2, shared-storage, sglang, mooncake, offloading",
        "sidecar: --data-parallel-size takes a number, not 'two'",
    ]


def test_zero_is_not_a_threshold():
    with pytest.raises(ValueError, match="greater than or equal to 1"):
        args(prefill_threshold_tokens=0)
