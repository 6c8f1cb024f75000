"""Capacity counted: every GPU workload's pods packed onto its pools at their maximum size, at steady state, at the
autoscaler's ceiling and during a rollout under its update strategy."""

from __future__ import annotations

from aks_gpu_inference.planner import claims, deploy
from aks_gpu_inference.planner.deploy import capacity
from aks_gpu_inference.planner.inputs.upstream import upstream_dir
from tests.conftest import expand_charts, run_stack, stack_config
from tests.planner.test_deployability import AS_OF


def model_of(config: dict):
    run, renders = expand_charts(run_stack(config))
    return deploy.build(run, renders, claims.check(run))


def capacity_findings(config: dict) -> list[tuple[str, str, str]]:
    found = deploy.run(model_of(config), AS_OF, upstream_dir())
    return [(f.level, f.object, f.message) for f in found if f.check == "capacity"]


def prod_model(**changes) -> dict:
    config = stack_config("prod")
    config["aks-gpu-inference:models"][0].update(changes)
    return config


def test_a_hundred_whole_node_replicas_on_a_two_node_pool_is_a_blocker():
    found = capacity_findings(prod_model(replicas=100))
    blockers = [(o, m) for level, o, m in found if level == "blocker"]
    assert blockers == [
        (
            "Deployment llm-d-infra/llama-70b",
            "100 pod(s) of a whole node on pool h100 (2 x 8 GPUs): only 2 fit at the pools' maximum size; 98 stay Pending",
        )
    ]


def test_what_fits_is_no_finding_and_its_rollout_surges():
    assert capacity_findings(stack_config("prod")) == []
    rollouts = dict(capacity.rollouts(model_of(stack_config("prod"))))
    assert rollouts["Deployment llm-d-infra/llama-70b"].startswith("a rollout starts 1 new pod(s) beside the 1 running")


def test_two_replicas_filling_the_pool_roll_one_at_a_time():
    config = prod_model(replicas=2)
    assert capacity_findings(config) == [], "two whole-node replicas fit two nodes; one stays up while the other reloads"
    rollouts = dict(capacity.rollouts(model_of(config)))
    assert rollouts["Deployment llm-d-infra/llama-70b"].startswith("a rollout replaces 1 of 2 replica(s) at a time")


def test_a_single_replica_on_a_full_pool_is_down_for_its_load_on_every_rollout():
    found = capacity_findings(stack_config("llmd"))
    assert [level for level, _, _ in found] == ["warning", "warning"]
    assert all("a rollout takes all 1 replica(s) down at once" in m and "up to 15 minutes" in m for _, _, m in found)


def test_a_surge_the_autoscaler_must_add_a_node_for_names_its_quota():
    rollouts = dict(capacity.rollouts(model_of(stack_config("dev"))))
    llama = rollouts["Deployment gpu-inference/llama-8b"]
    assert "no downtime" in llama
    assert (
        "the autoscaler adds 1 Standard_NC24ads_A100_v4 node(s) in pool a100: 24 vCPUs of StandardNCADSA100v4Family quota in eastus"
        in llama
    )
    fixed = dict(capacity.rollouts(model_of(stack_config("prod"))))["Deployment llm-d-infra/llama-70b"]
    assert "autoscaler" not in fixed, "prod's second node exists already: no node, no new quota"


def test_a_prefill_decode_model_is_not_told_to_fall_back():
    found = deploy.run(model_of(stack_config("llmd")), AS_OF, upstream_dir())
    fixes = [f.fix for f in found if f.check == "capacity"]
    assert fixes and all("not a fallback" in fix and "models[].fallback" not in fix for fix in fixes)
    dev_single = stack_config("dev")
    dev_single["aks-gpu-inference:gpu_pools"][0].update(min_count=1, max_count=1)
    dev_single["aks-gpu-inference:models"][0].pop("autoscaling")
    (single,) = [f for f in deploy.run(model_of(dev_single), AS_OF, upstream_dir()) if f.check == "capacity"]
    assert "models[].fallback" in single.fix
