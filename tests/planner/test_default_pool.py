"""The pool a stack gets without asking (AksCluster's CPU `platform` pool): the plan says what runs there and how to
opt out, warns when nothing does, and reports what the program said with pulumi.log.warn."""

from __future__ import annotations

import json

import pytest

from tests.conftest import chart_sources, stack_config
from tests.test_docs_examples import PROGRAMS, SECRETS, _plan, _project


def _findings(out, check: str) -> list[dict]:
    return [f for f in json.loads((out / "deployability.json").read_text())["findings"] if f["check"] == check]


@pytest.mark.slow
def test_the_defaults_program_is_told_its_platform_pool_runs_nothing(tmp_path, capsys):
    chart_sources()
    config = {"azure-native:location": "eastus", **{f"docs-example:{s}": {"secure": "v1:x"} for s in SECRETS}}
    code, err, out = _plan(_project(tmp_path, "docs-example", "docs", config, main=PROGRAMS["defaults"]), "docs", capsys)
    assert code == 0, err
    (idle,) = _findings(out, "platform-pool")
    assert idle["level"] == "warning" and idle["object"] == "pool platform"
    assert "runs nothing of this stack" in idle["message"] and "platform_pool: None" in idle["fix"]
    summary = json.loads((out / "summary.json").read_text())
    assert "(1-3 x Standard_D4ds_v5)" in summary["platform_pool"]


@pytest.mark.slow
def test_a_stack_is_told_what_its_platform_pool_runs_and_a_program_warning_is_a_finding(tmp_path, capsys):
    chart_sources()
    config = stack_config("dev")
    config["aks-gpu-inference:models"][0]["min_full_sequences"] = 64  # more than fit: VllmService warns
    code, err, out = _plan(_project(tmp_path, "aks-gpu-inference", "dev", config), "dev", capsys)
    assert code == 0, err
    summary = json.loads((out / "summary.json").read_text())
    assert "; it runs " in summary["platform_pool"] and "Deployment envoy-gateway-system/redis" in summary["platform_pool"]
    assert _findings(out, "platform-pool") == []
    (said,) = _findings(out, "program")
    assert said["level"] == "warning" and said["object"] == "VllmService llama-8b"
    assert "fewer than 64" in said["message"]
