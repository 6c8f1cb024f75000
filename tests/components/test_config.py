import pytest

from aks_gpu_inference.components.core.errors import ConfigError
from aks_gpu_inference.components.stack.config import config_from_env, parse_stack_config
from tests.conftest import stack_config


def project_keys(config: dict) -> dict:
    return {k.split(":", 1)[1]: v for k, v in config.items() if k.startswith("aks-gpu-inference:")}


@pytest.mark.parametrize("stack", ["dev"])
def test_repo_stack_files_are_valid(stack):
    parsed = parse_stack_config(project_keys(stack_config(stack)))
    assert parsed.cluster.node_os_upgrade_channel == "NodeImage"
    assert parsed.gpu_pools


def test_engine_config_map_is_decoded():
    raw = config_from_env(
        {
            "aks-gpu-inference:location": "eastus",
            "aks-gpu-inference:cluster": '{"name": "x"}',
            "aws:region": "x",
            "aks-gpu-inference:flag": "true",
        }
    )
    assert raw == {"location": "eastus", "cluster": {"name": "x"}, "flag": True}


@pytest.mark.parametrize(
    "mutate, expected",
    [
        (lambda c: c.pop("location"), "location: required key is missing"),
        (lambda c: c.update(locaton="eastus"), "locaton='eastus': unknown key"),
        (lambda c: c["cluster"].update(tier="Gold"), "cluster.tier='Gold': Input should be 'Free', 'Standard' or 'Premium'"),
        (
            lambda c: c["gpu_pools"][0].update(vm_size="Standard_NC6s_v3"),
            "gpu_pools[0].vm_size='Standard_NC6s_v3': Standard_NC6s_v3 was retired",
        ),
        (
            lambda c: c["gpu_pools"][0].update(mig_profile="MIG1g", vm_size="Standard_NC4as_T4_v3"),
            "gpu_pools[0].mig_profile='MIG1g'",
        ),
        (lambda c: c["gpu_pools"].append(dict(c["gpu_pools"][0])), "gpu_pools[1].name='a100': pool names must be unique"),
        (lambda c: c["gpu_pools"][0].update(name="system"), "gpu_pools[0].name='system': pool names must be unique"),
        (lambda c: c["gpu_pools"][0].update(min_count=5), "gpu_pools[0].min_count=5: must be at most max_count (2)"),
        (
            lambda c: c["cluster"]["system_pool"].update(spot=True),
            "cluster.system_pool.spot=True: AKS system pools cannot use Spot VMs",
        ),
        (lambda c: c.update(location="East US"), "location='East US'"),
    ],
)
def test_bad_stack_config_names_the_key_path_value_and_fix(mutate, expected):
    config = project_keys(stack_config("dev"))
    mutate(config)
    with pytest.raises(ConfigError) as caught:
        parse_stack_config(config, "Pulumi.dev.yaml")
    assert str(caught.value).startswith("Pulumi.dev.yaml is invalid:")
    assert expected in str(caught.value)


@pytest.mark.parametrize(
    "mutate, expected",
    [
        (lambda c: c["dynamo"].update(pool="a100"), "dynamo.pool='a100': no such GPU pool; pools: h100"),
        (lambda c: c["rdma"].update(pools=[]), "dynamo.pool='h100': prefill workers hand KV caches to decode workers"),
        (
            lambda c: c["dynamo"]["decode"].update(replicas=2),
            "dynamo.prefill.replicas + dynamo.decode.replicas=3: each worker takes a whole node; pool 'h100' has room for 2",
        ),
        (
            lambda c: c["dynamo"].update(served_model_name="gpt-5.5"),
            "gateway.azure_openai.deployments[0].name='gpt-5.5': dynamo.served_model_name already serves this name",
        ),
        (lambda c: c["dynamo"].update(served_model_name="Llama 70B"), "dynamo.served_model_name='Llama 70B': routed model names"),
        (lambda c: c["dynamo"]["platform"].update(etcd=True), "dynamo.platform.etcd=True: unknown key"),
    ],
)
def test_bad_dynamo_section_names_the_key_path_value_and_fix(mutate, expected):
    """The dynamo stack file's Dynamo section against the rest of the stack, before anything is created."""
    config = project_keys(stack_config("dynamo"))
    config["dynamo"].setdefault("platform", {})
    mutate(config)
    with pytest.raises(ConfigError) as caught:
        parse_stack_config(config, "Pulumi.dynamo.yaml")
    assert expected in str(caught.value), str(caught.value)


def test_a_gateway_may_route_to_dynamo_alone():
    parsed = parse_stack_config(project_keys(stack_config("dynamo")))
    assert parsed.models == [] and parsed.dynamo.pool == "h100" and parsed.gateway is not None
    config = project_keys(stack_config("dynamo"))
    del config["dynamo"]
    with pytest.raises(ConfigError) as caught:
        parse_stack_config(config, "Pulumi.dynamo.yaml")
    assert "add at least one entry to models, or a dynamo section" in str(caught.value)


@pytest.mark.parametrize(
    ("tags", "expected"),
    [
        ({f"t{i}": "v" for i in range(50)}, "50 tags: Azure takes at most 50 per resource, and the stack adds managed-by"),
        ({"cost/center": "x"}, "tag 'cost/center': Azure refuses tag names with any of '/'"),
        ({"owner": "x" * 257}, "tag 'owner': its value has 257 characters, Azure takes at most 256"),
        ({"n" * 129: "x"}, "names are at most 128 characters on storage accounts"),
    ],
)
def test_tags_azure_would_refuse_are_refused_with_their_key_path(tags, expected):
    config = project_keys(stack_config("dev"))
    config["tags"] = tags
    with pytest.raises(ConfigError) as caught:
        parse_stack_config(config, "Pulumi.dev.yaml")
    assert "tags" in str(caught.value) and expected in str(caught.value)


def test_forty_nine_short_tags_are_accepted():
    config = project_keys(stack_config("dev"))
    config["tags"] = {f"t{i}": "v" * 256 for i in range(49)}
    assert len(parse_stack_config(config).tags) == 49


def test_a_zone_named_twice_is_refused_with_its_key_path():
    config = project_keys(stack_config("prod"))
    config["cluster"]["system_pool"]["availability_zones"] = ["1", "1", "2"]
    with pytest.raises(ConfigError, match=r"cluster.system_pool.availability_zones=\['1', '1', '2'\]: zone 1 is listed more"):
        parse_stack_config(config, "Pulumi.prod.yaml")
    config["cluster"]["system_pool"]["availability_zones"] = ["1", "2", "3"]
    assert parse_stack_config(config).cluster.system_pool.availability_zones == ["1", "2", "3"]


@pytest.mark.parametrize(
    "stack, path, value, expected",
    [
        # Before: pydantic's lax mode took each of these without a word.
        ("dev", ("gpu_pools", 0, "spot"), "1", "gpu_pools[0].spot='1': expected true or false, not '1'"),
        ("dev", ("gpu_pools", 0, "spot"), 1, "gpu_pools[0].spot=1: expected true or false, not 1"),
        ("dev", ("gpu_pools", 0, "max_count"), True, "gpu_pools[0].max_count=True: expected a number, not true"),
        ("train", ("training", "backoff_limit"), True, "training.backoff_limit=True: expected a number, not true"),
    ],
)
def test_booleans_are_true_or_false_and_never_numbers(stack, path, value, expected):
    import copy

    config = copy.deepcopy(project_keys(stack_config(stack)))
    node = config
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    with pytest.raises(ConfigError) as err:
        parse_stack_config(config, f"Pulumi.{stack}.yaml")
    assert expected in str(err.value)


def test_pulumi_configs_true_and_false_strings_are_booleans():
    """`pulumi config set --path gpu_pools[0].spot true` stores the string "true"."""
    import copy

    config = copy.deepcopy(project_keys(stack_config("dev")))
    config["cluster"]["kaito"] = "true"
    assert parse_stack_config(config, "Pulumi.dev.yaml").cluster.kaito is True


def test_a_size_without_infiniband_is_named_as_the_root_cause_whatever_rdma_says():
    """Before: with rdma: false the refusal said "set gpu_pools[].rdma: true", whose own refusal then said the size has
    no InfiniBand: an advice that could not work."""
    import copy

    for rdma in (True, False):
        config = copy.deepcopy(project_keys(stack_config("train")))
        config["gpu_pools"][0].update(vm_size="Standard_NC80adis_H100_v5", rdma=rdma)
        with pytest.raises(ConfigError) as err:
            parse_stack_config(config, "Pulumi.train.yaml")
        assert "Standard_NC80adis_H100_v5" in str(err.value) and "set gpu_pools[].rdma: true" not in str(err.value)
        assert ("no InfiniBand" in str(err.value)) or ("is not RDMA-capable" in str(err.value))


@pytest.mark.parametrize(
    "stack, field",
    [
        ("train", "training.pool='h100spot': the workers talk over InfiniBand, and pool 'h100spot' is Standard_NC80adis_H100_v5"),
        ("dynamo", "dynamo.pool='h100': prefill workers hand KV caches to decode workers over InfiniBand (NIXL), and pool"),
        ("llmd", "models[0].rdma=True: RDMA serving needs InfiniBand, and pool 'h100' is Standard_NC80adis_H100_v5"),
    ],
)
def test_the_first_refusal_names_the_size_without_infiniband(stack, field):
    """Before: "list the pool in rdma.pools", then "set rdma: true", then at last "has no InfiniBand"."""
    import copy

    config = copy.deepcopy(project_keys(stack_config(stack)))
    config["gpu_pools"][0].update(vm_size="Standard_NC80adis_H100_v5", rdma=False)
    config.pop("rdma", None)
    with pytest.raises(ConfigError) as err:
        parse_stack_config(config, f"Pulumi.{stack}.yaml")
    assert field in str(err.value) and "which has no InfiniBand" in str(err.value)
    assert "list the pool in rdma.pools" not in str(err.value) and "is not in rdma.pools" not in str(err.value)
