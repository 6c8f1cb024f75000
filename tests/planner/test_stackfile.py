"""Secret placeholders the offline planner fills in for secrets the stack file lacks."""

import json

import pytest

from planner.inputs.stackfile import add_secret_placeholders

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
