"""The cost estimate's lower end counts what must run: an autoscaled GPU pool cannot shrink below the nodes its
models keep up (``min_replicas``, KEDA's ``minReplicaCount``), so those nodes are in the floor, and the note says
which workloads keep which nodes (issue 30.3).

Before: dev's floor was $329.96 (the system and platform nodes) while ``llama-8b`` keeps one A100 node: about
$3,011 at eastus's list prices."""

from __future__ import annotations

import pytest

from aks_gpu_inference.components.core import catalog
from aks_gpu_inference.planner.report import cost
from tests.conftest import planned_stack, run_stack, stack_config

HOURS = catalog.HOURS_PER_MONTH
A100 = "Standard_NC24ads_A100_v4"
MODELS = "aks-gpu-inference:models"


def monthly(vm_size: str, region: str = "eastus") -> float:
    return catalog.vm_price(vm_size, region) * HOURS


def row(estimate, item: str):
    (found,) = [r for r in estimate.rows if r.item == item]
    return found


def floor_without(estimate, item: str) -> float:
    return estimate.low - row(estimate, item).monthly_low


def test_dev_floor_counts_the_a100_node_its_model_keeps_up():
    estimate = cost.cost_rows(planned_stack("dev"))
    a100 = row(estimate, "a100")
    assert (a100.nodes, a100.monthly_low, a100.monthly_high) == (
        "1-2",
        pytest.approx(monthly(A100)),
        pytest.approx(2 * monthly(A100)),
    )
    assert estimate.low == pytest.approx(3011.25)
    (note,) = [n for n in estimate.notes if "keep up" in n]
    assert "a100 1 of 2 node(s) (Deployment gpu-inference/llama-8b)" in note


def test_more_minimum_replicas_keep_more_nodes():
    config = stack_config("dev")
    config[MODELS][0]["autoscaling"]["min_replicas"] = 2
    estimate = cost.cost_rows(run_stack(config))
    assert row(estimate, "a100").monthly_low == pytest.approx(2 * monthly(A100))
    assert any("a100 2 of 2 node(s)" in n for n in estimate.notes)


def test_a_model_that_scales_to_zero_keeps_no_node():
    config = stack_config("dev")
    config[MODELS][0]["autoscaling"] = {
        "min_replicas": 0,
        "max_replicas": 2,
        "scale_to_zero": True,
        "active_hours": {"start": "0 8 * * 1-5", "end": "0 20 * * 1-5"},
    }
    estimate = cost.cost_rows(run_stack(config))
    assert row(estimate, "a100").monthly_low == 0
    assert not any("keep up" in n for n in estimate.notes)
    dev = cost.cost_rows(planned_stack("dev"))
    assert floor_without(estimate, "a100") == pytest.approx(floor_without(dev, "a100"))


def test_the_floor_never_exceeds_the_pool():
    """More replicas than the pool's nodes: the floor stops at the pool's maximum (the capacity check blames the rest)."""
    config = stack_config("dev")
    config[MODELS][0]["autoscaling"] = {"min_replicas": 5, "max_replicas": 5}
    estimate = cost.cost_rows(run_stack(config))
    a100 = row(estimate, "a100")
    assert a100.monthly_low == pytest.approx(a100.monthly_high) == pytest.approx(2 * monthly(A100))


def test_the_floor_is_priced_in_the_stacks_region():
    config = stack_config("dev")
    config["aks-gpu-inference:location"] = config["azure-native:location"] = "westeurope"
    estimate = cost.cost_rows(run_stack(config))
    assert row(estimate, "a100").monthly_low == pytest.approx(monthly(A100, "westeurope"))
    assert monthly(A100, "westeurope") != monthly(A100)
    assert any("region westeurope" in n for n in estimate.notes)


def test_the_printed_plan_and_its_summary_show_the_same_floor():
    from datetime import date

    from aks_gpu_inference.planner.plan import PlanOptions, plan
    from aks_gpu_inference.planner.report import summary
    from aks_gpu_inference.planner.report.plan_text import plan_text
    from tests.conftest import REPO

    result = plan(REPO, "dev", PlanOptions(as_of=date(2026, 12, 1)), [].append)
    assert "$3,011.25 - $6,022.50" in plan_text(result) and "a100 1 of 2 node(s)" in plan_text(result)
    assert summary.build(result)["cost"]["total"] == {"usd_per_month_min": 3011.25, "usd_per_month_max": 6022.5}
