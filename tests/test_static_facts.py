"""Static facts checked offline, each refusal naming the key path, the value and what is accepted: the NIC line rate
behind the bandwidth gate, a version the upgrade channel moves away from, names that clash in a namespace, a key
that cannot apply where it stands."""

from __future__ import annotations

import pytest

from tests.test_stack_input_errors import problems


def _kaito(**extra) -> dict:
    return {"name": "phi", "preset": "phi-4-mini-instruct", "instance_type": "Standard_NC24ads_A100_v4", **extra}


@pytest.mark.parametrize("rate", [400, 500])
def test_a_bandwidth_gate_at_or_above_the_nic_line_rate_is_refused(rate):
    (line,) = problems(lambda c: c["rdma"]["gates"].update(min_gbps_per_rail=rate), "prod")
    assert line.startswith(f"rdma.gates.min_gbps_per_rail={float(rate)}: at or above the 400 Gb/s line rate")
    assert "use less than 400" in line


def test_a_bandwidth_gate_below_the_line_rate_is_accepted():
    from aks_gpu_inference.components.stack.config import parse_stack_config
    from tests.test_stack_input_errors import project_keys, stack_config

    config = project_keys(stack_config("prod"))
    config["rdma"]["gates"]["min_gbps_per_rail"] = 380
    assert parse_stack_config(config).rdma.gates.min_gbps_per_rail == 380


@pytest.mark.parametrize(
    "cluster, expected",
    [
        ({"kubernetes_version": "1.35.0"}, "cluster.kubernetes_version='1.35.0': a patch version under upgrade_channel 'patch'"),
        ({"kubernetes_version": "1.35.2", "upgrade_channel": "stable"}, "a patch version under upgrade_channel 'stable'"),
        ({"kubernetes_version": "1.35", "upgrade_channel": "rapid"}, "a version under upgrade_channel 'rapid'"),
    ],
)
def test_a_version_the_upgrade_channel_moves_away_from_is_refused(cluster, expected):
    (line,) = problems(lambda c: c["cluster"].update(cluster))
    assert expected in line and "which AKS refuses" in line


@pytest.mark.parametrize(
    "cluster",
    [{"kubernetes_version": "1.35.0", "upgrade_channel": "none"}, {"upgrade_channel": "stable"}, {"kubernetes_version": "1.35"}],
)
def test_versions_the_channel_keeps_are_accepted(cluster):
    from aks_gpu_inference.components.stack.config import parse_stack_config
    from tests.test_stack_input_errors import project_keys, stack_config

    config = project_keys(stack_config("dev"))
    config["cluster"] = {k: v for k, v in config["cluster"].items() if k != "kubernetes_version"} | cluster
    parse_stack_config(config)


def test_the_same_kaito_entry_twice_is_refused():
    found = problems(lambda c: (c.update(kaito=[_kaito(), _kaito()]), c["cluster"].update(kaito=True)))
    assert "kaito[1].name='phi': kaito[0] already makes 'phi' in namespace 'default'" in found[0]


def test_a_kaito_workspace_named_like_a_model_in_its_namespace_is_refused():
    def clash(c):
        c["cluster"]["kaito"] = True
        c["kaito"] = [_kaito(name="llama-8b", namespace="gpu-inference")]

    (line,) = problems(clash)
    assert line.startswith("kaito[0].name='llama-8b': models[0] already makes 'llama-8b' in namespace 'gpu-inference'")


def test_a_model_named_like_a_dynamo_service_in_the_rdma_namespace_is_refused():
    def clash(c):
        c["models"] = [
            {
                "name": "llama-70b-frontend",
                "namespace": "llm-d-infra",
                "pool": "h100",
                "model": "meta-llama/Llama-3.1-8B-Instruct",
            }
        ]

    found = problems(clash, "dynamo")
    assert any("dynamo.name='llama-70b': models[0] already makes 'llama-70b-frontend'" in p for p in found), found


def test_a_mig_strategy_on_a_managed_pool_of_whole_gpus_is_refused():
    def managed(c):
        c["gpu_pools"][0].update(gpu_management="managed", mig_strategy="single", count=1, min_count=None, max_count=None)
        c["models"][0].pop("autoscaling", None)

    found = problems(managed)
    assert any(p.startswith("gpu_pools[0].mig_strategy='single': a pool of whole GPUs has no MIG slices") for p in found), found


def _in(region: str, **pools):
    """A dev stack moved to ``region``, with zones set where ``pools`` says (``system``, ``platform``, ``gpu``)."""

    def mutate(c: dict) -> None:
        c["location"] = region
        cluster = c.setdefault("cluster", {})
        for where, zones in pools.items():
            if where == "gpu":
                c["gpu_pools"][0]["availability_zones"] = zones
            else:
                cluster.setdefault(f"{where}_pool", {})["availability_zones"] = zones

    return mutate


def test_zones_in_a_region_without_zones_are_refused_for_every_pool():
    found = problems(_in("westus", system=["1"], platform=["2"], gpu=["1", "2"]))
    assert [line.split(":", 1)[0] for line in found] == [
        "cluster.system_pool.availability_zones=['1']",
        "cluster.platform_pool.availability_zones=['2']",
        "gpu_pools[0].availability_zones=['1', '2']",
    ]
    assert all("westus has no availability zones: leave availability_zones out" in line for line in found)
    assert all("karpenter-provider-azure" in line for line in found), "the data's source is named"


def test_a_zone_the_region_lacks_is_refused_naming_the_ones_it_has():
    (line,) = problems(_in("centraluseuap", gpu=["2", "3"]))
    assert line.startswith("gpu_pools[0].availability_zones=['3']: centraluseuap has zones 1, 2")


def test_zones_the_region_has_are_accepted():
    from aks_gpu_inference.components.stack.config import parse_stack_config
    from tests.test_stack_input_errors import project_keys, stack_config

    config = project_keys(stack_config("dev"))
    _in("westeurope", system=["1", "2", "3"], gpu=["1"])(config)
    assert parse_stack_config(config).gpu_pools[0].availability_zones == ["1"]
    config = project_keys(stack_config("dev"))
    _in("westus")(config)  # no zones asked for: any region will do
    assert parse_stack_config(config).location == "westus"
