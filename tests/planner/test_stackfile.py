"""Secret placeholders the offline planner fills in for secrets the stack file lacks."""

import json

import pytest

from aks_gpu_inference.planner.inputs.stackfile import add_secret_placeholders

PROJECT = "aks-gpu-inference"


def test_client_keys_get_one_placeholder_per_configured_client():
    config = {f"{PROJECT}:gateway": json.dumps({"gateway": {"client_ids": ["agent", "batch"]}})}
    add_secret_placeholders(PROJECT, config, [])
    placeholder = f"<secret:{PROJECT}:gateway_client_keys>"
    assert json.loads(config[f"{PROJECT}:gateway_client_keys"]) == {"agent": placeholder, "batch": placeholder}


@pytest.mark.parametrize("gateway", [None, "not json", json.dumps([1]), json.dumps({"gateway": {"client_ids": "agent"}})])
def test_a_missing_or_malformed_gateway_leaves_the_config_check_to_report_it(gateway):
    config = {} if gateway is None else {f"{PROJECT}:gateway": gateway}
    secret_keys: list[str] = []
    added = add_secret_placeholders(PROJECT, config, secret_keys)
    assert "gateway_client_keys" in added and json.loads(config[f"{PROJECT}:gateway_client_keys"]) == {}
    assert f"{PROJECT}:gateway_client_keys" in secret_keys


def test_a_misspelt_config_namespace_is_a_warning_with_the_likely_name():
    from aks_gpu_inference.planner.inputs.stackfile import namespace_warnings

    config = {"aks-gpu-inferance:gateway": "{}", "azure-native:location": "eastus", "aks-gpu-inference:models": "[]"}
    (warning,) = namespace_warnings("aks-gpu-inference", config, "Pulumi.dev.yaml")
    assert warning.startswith("Pulumi.dev.yaml: aks-gpu-inferance:gateway is in namespace 'aks-gpu-inferance'")
    assert warning.endswith("(did you mean 'aks-gpu-inference'?)")
    other = namespace_warnings("aks-gpu-inference", {"vault:a": "1", "vault:b": "2"}, "Pulumi.dev.yaml")
    assert other == [
        "Pulumi.dev.yaml: vault:a, vault:b are in namespace 'vault', neither the project's ('aks-gpu-inference') nor a "
        "provider's: the program never reads them"
    ]
    assert namespace_warnings("aks-gpu-inference", {"kubernetes:context": "x", "pulumi:tags": "{}"}, "f") == []
