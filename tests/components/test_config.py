import pytest

from components.core.errors import ConfigError
from components.stack.config import config_from_env, parse_stack_config
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
