"""Bad stack input is refused point by point: the full key path, the value (cut when long, never a
secret) and what is accepted, in the project's words rather than the validation library's."""

from __future__ import annotations

import json
import shutil

import pytest
import yaml

from aks_gpu_inference.components.core import catalog
from aks_gpu_inference.components.core.errors import MAX_SHOWN, ConfigError
from aks_gpu_inference.components.stack.config import config_from_env, parse_stack_config
from aks_gpu_inference.components.stack.stack_input import azure_regions
from aks_gpu_inference.planner.cli import main
from tests.conftest import REPO, chart_sources, stack_config

P = "aks-gpu-inference:"


def project_keys(config: dict) -> dict:
    return {k.removeprefix(P): v for k, v in config.items() if k.startswith(P)}


def problems(mutate, stack: str = "dev") -> list[str]:
    config = project_keys(stack_config(stack))
    mutate(config)
    with pytest.raises(ConfigError) as caught:
        parse_stack_config(config, f"Pulumi.{stack}.yaml")
    text = str(caught.value)
    assert "input_value" not in text and "see below" not in text and "errors.pydantic.dev" not in text
    return caught.value.problems


def pool(c: dict) -> dict:
    return c["gpu_pools"][0]


@pytest.mark.parametrize(
    "mutate, expected",
    [
        (
            lambda c: pool(c).update(os_disk_type="Ephemeral", os_disk_size_gb=1000),
            "gpu_pools[0].os_disk_size_gb=1000: an ephemeral OS disk on Standard_NC24ads_A100_v4 lives on its 64 GiB "
            "local disk (components/core/vm_disks.json); use at most 64, or os_disk_type 'Managed'",
        ),
        (
            lambda c: pool(c).update(spot=True, spot_max_price=0),
            "gpu_pools[0].spot_max_price=0: expected -1 (pay up to the on-demand price) or a positive price in USD per hour",
        ),
        (lambda c: pool(c).update(spot=True, spot_max_price=-5), "gpu_pools[0].spot_max_price=-5: expected -1"),
        (lambda c: pool(c).update(spot_max_price=0.5), "gpu_pools[0].spot_max_price=0.5: applies to Spot pools only"),
        (
            lambda c: c["models"][0].update(model_path="az:/container"),
            "models[0].model_path='az:/container': as the weights' path in the model store: expected a path relative "
            "to the container, without a leading '/' or a scheme",
        ),
        (lambda c: c["models"][0].update(model_path="az://models/llama"), "models[0].model_path='az://models/llama'"),
        (
            lambda c: c["models"][0].update(tensor_parallel_size=3),
            "models[0].tensor_parallel_size=3: pool 'a100' (Standard_NC24ads_A100_v4) has 1 GPU per node",
        ),
        (
            lambda c: c["models"].append({**c["models"][0], "name": "llama-b"}),
            "models[1].served_model_name='llama-8b': models[0].served_model_name already serves this name",
        ),
        (
            lambda c: c.update(location="eastu"),
            "location='eastu': not an Azure region (components/stack/azure_regions.json); did you mean 'eastus' or 'eastus2'?",
        ),
        (lambda c: c.update(location="East US"), "location='East US': use the region's name, not its display name"),
        (
            lambda c: c["cluster"]["system_pool"].update(vm_size="Standard_D4ds_v9"),
            "cluster.system_pool.vm_size='Standard_D4ds_v9': not a VM size Azure offers in any region "
            "(components/core/azure_vm_sizes.json); did you mean 'Standard_D4ds_v7' or 'Standard_D4ds_v6' or 'Standard_D4ds_v5'?",
        ),
        (
            lambda c: c["cluster"]["system_pool"].update(vm_size="Standard_D2ds_v5"),
            "cluster.system_pool.vm_size='Standard_D2ds_v5': AKS system pools need at least 4 vCPUs",
        ),
        (
            lambda c: c["cluster"]["system_pool"].update(vm_size="Standard_B4ms"),
            "cluster.system_pool.vm_size='Standard_B4ms': AKS does not support B-series",
        ),
        (
            lambda c: c["models"][0].update(tensor_paralel_size=1),
            "models[0].tensor_paralel_size=1: unknown key; did you mean 'tensor_parallel_size'?",
        ),
        (lambda c: pool(c).update(vmsize="x"), "gpu_pools[0].vmsize='x': unknown key; did you mean 'vm_size'?"),
        (lambda c: c.update(locaton="eastus"), "locaton='eastus': unknown key; did you mean 'location'?"),
        (
            lambda c: c["gateway"].update(default_model="nope"),
            "gateway.default_model='nope': not a model the gateway serves (gpt-5.5, llama-8b)",
        ),
        (
            lambda c: c["gateway"]["azure_openai"]["deployments"][0].update(name="llama-8b"),
            "gateway.azure_openai.deployments[0].name='llama-8b': models[0].served_model_name already serves this name",
        ),
        (
            lambda c: c["models"][0].update(served_model_name="auto"),
            "models[0].served_model_name='auto': reserved: clients send this name to let the router choose",
        ),
    ],
)
def test_each_bad_input_names_its_full_path_value_and_what_is_accepted(mutate, expected):
    assert any(p.startswith(expected) for p in problems(mutate)), problems(mutate)


def test_prod_refuses_a_tp_that_does_not_divide_the_heads_and_disaggregation_without_nodes():
    (tp,) = problems(lambda c: c["models"][0].update(tensor_parallel_size=3, gpu_access="device-plugin"), "prod")
    assert tp == (
        "models[0].tensor_parallel_size=3: tp 3 does not divide the 64 attention heads (vLLM requires it); accepted for "
        "meta-llama/Llama-3.3-70B-Instruct on pool 'h100' (Standard_ND96isr_H100_v5): 1, 2, 4 or 8"
    )
    (split,) = problems(lambda c: c["models"][0].update(disaggregation={"prefill_replicas": 2, "decode_replicas": 1}), "prod")
    assert split.startswith(
        "models[0].disaggregation.prefill_replicas + models[0].disaggregation.decode_replicas=3: each engine takes a whole "
        "node of pool 'h100'"
    )
    assert "the pool has at most 2 (count 2): raise it to 3" in split


def test_several_problems_are_reported_together():
    def mutate(c):
        c["models"][0].update(tensor_parallel_size=2, model_path="az:/x")
        c["models"].append({**c["models"][0], "name": "llama-b", "tensor_parallel_size": 1, "model_path": None})

    found = problems(mutate)
    assert [p.split("=", 1)[0] for p in found] == [
        "models[0].model_path",
        "models[0].tensor_parallel_size",
        "models[1].served_model_name",
    ]


def test_long_values_are_cut():
    (problem,) = problems(lambda c: c.update(location="x" * 300))
    shown = problem.split(": ", 1)[0].removeprefix("location=")
    assert len(shown) == MAX_SHOWN and shown.endswith("…")


def test_did_you_mean_never_suggests_a_retired_size():
    retired = [name for name, sku in catalog.skus().items() if catalog.is_retired(sku)]
    assert retired == ["Standard_NC6s_v3"]
    for typo in ("Standard_NC6s_v4", "standard_nc6s_v3", "Standard_NC6s_v3x", "Standard_NC6_v3"):
        with pytest.raises(catalog.UnknownVmSizeError) as caught:
            catalog.get_sku(typo)
        for message in (str(caught.value), catalog.node_size_problem(typo) or ""):
            suggested = message.replace(repr(typo), "")  # the input itself is echoed
            assert "Standard_NC6s_v3'" not in suggested and "Standard_NC6s_v3," not in suggested, message
    with pytest.raises(catalog.UnknownVmSizeError, match="was retired on 2025-09-30") as caught:
        catalog.get_current_sku("Standard_NC6s_v3")
    assert "such as Standard_NC6s_v3" not in str(caught.value)


def test_the_region_list_is_sourced_and_holds_the_repo_stacks_regions():
    data = json.loads((REPO / "components" / "stack" / "azure_regions.json").read_text())
    assert "@" in data["source"] and "@" in data["sovereign"]["source"]
    regions = azure_regions()
    assert {"eastus", "swedencentral", "westus3", "usgovvirginia"} <= set(regions)
    assert not {"asia", "eastusstg", "germanycentral"} & set(regions)


def test_the_engine_map_refuses_plain_secrets_and_a_provider_region_that_disagrees():
    env = {f"{P}location": "eastus", "azure-native:location": "westus", f"{P}vllm_api_key": "hunter2", f"{P}hf_token": "hf_x"}
    with pytest.raises(ConfigError) as caught:
        config_from_env(env, secret_keys=[f"{P}hf_token"])
    text = str(caught.value)
    assert "hunter2" not in text and "hf_x" not in text
    assert f"{P}vllm_api_key: a secret stored in plain text in the stack file" in text
    assert 'pulumi config set --secret vllm_api_key "$(openssl rand -hex 32)"' in text
    assert "hf_token" not in text, "a key marked secret is fine"
    assert "azure-native:location='westus': disagrees with aks-gpu-inference:location='eastus'" in text
    assert config_from_env({f"{P}location": "eastus", "azure-native:location": "eastus"}) == {"location": "eastus"}


def test_a_misspelt_secret_key_is_reported_without_its_value():
    (problem,) = problems(lambda c: c.update(vllm_apikey="hunter2-secret"))
    assert problem.startswith("vllm_apikey: unknown key; did you mean the secret 'vllm_api_key'?")
    assert "hunter2" not in problem


# --- through `aks-gpu plan`, on a modified copy of Pulumi.dev.yaml -----------------------------------------------


@pytest.fixture
def plan_dev(tmp_path, capsys):
    def plan(mutate) -> tuple[int, str, str]:
        project = tmp_path / "project"
        project.mkdir(exist_ok=True)
        shutil.copy(REPO / "Pulumi.yaml", project / "Pulumi.yaml")
        shutil.copy(REPO / "__main__.py", project / "__main__.py")
        config = stack_config("dev")
        mutate(config)
        (project / "Pulumi.x.yaml").write_text(yaml.safe_dump({"config": config}, sort_keys=False))
        code = main(["plan", "x", "--project-dir", str(project), "--out", str(tmp_path / "out"), "-q"])
        out, err = capsys.readouterr()
        return code, out, err

    return plan


def test_plan_refuses_plain_text_secrets_naming_the_command(plan_dev):
    code, _, err = plan_dev(lambda c: c.update({f"{P}vllm_api_key": "hunter2", f"{P}gateway_client_keys": {"agent": "k3y"}}))
    assert code == 2 and "hunter2" not in err and "k3y" not in err
    assert 'pulumi config set --secret vllm_api_key "$(openssl rand -hex 32)"' in err
    assert 'pulumi config set --secret gateway_client_keys \'{"agent": "<key>"}\'' in err


def test_plan_accepts_secure_client_keys_and_plans_them_as_placeholders(plan_dev, tmp_path):
    code, _, err = plan_dev(lambda c: c.update({f"{P}gateway_client_keys": {"secure": "AAABAKx1c2VjcmV0"}}))
    assert code == 0, err
    everything = "".join(p.read_text() for p in (tmp_path / "out").rglob("*.yaml"))
    assert "AAABAKx1c2VjcmV0" not in everything


def test_plan_refuses_a_provider_region_that_disagrees(plan_dev):
    code, _, err = plan_dev(lambda c: c.update({"azure-native:location": "westus"}))
    assert code == 2
    assert "azure-native:location='westus': disagrees with aks-gpu-inference:location='eastus'" in err


def test_plan_warns_about_a_model_on_a_pool_with_no_nodes(plan_dev, tmp_path):
    chart_sources()  # the only finding is the capacity warning once the charts are rendered

    def empty_pool(c):
        c[f"{P}gpu_pools"][0].update(count=0, min_count=None, max_count=None)
        c[f"{P}models"][0].pop("autoscaling")

    code, out, _ = plan_dev(empty_pool)
    assert code == 0
    assert "capacity 0/1" in out
    assert "fits only pool 'a100', which has 0 nodes and no autoscaling (count 0)" in out
    findings = json.loads((tmp_path / "out" / "deployability.json").read_text())["findings"]
    assert [(f["check"], f["level"], f["object"]) for f in findings] == [
        ("capacity", "warning", "Deployment gpu-inference/llama-8b")
    ]
