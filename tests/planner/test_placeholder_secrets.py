"""The plan says which secrets it planned with placeholders: only those the stack's program reads."""

from __future__ import annotations

from datetime import date

import pytest

from aks_gpu_inference.planner.plan import PlanOptions, plan
from tests.conftest import REPO


def placeholder_line(stack: str) -> str | None:
    lines: list[str] = []
    plan(REPO, stack, PlanOptions(as_of=date(2026, 12, 1)), lines.append)
    return next((line for line in lines if "planned with placeholders" in line), None)


@pytest.mark.parametrize(
    "stack, expected",
    [
        # Before: every stack listed vllm_api_key, hf_token and gateway_client_keys.
        ("train", None),
        ("prod", "secrets not in Pulumi.prod.yaml, planned with placeholders: vllm_api_key"),
        # Dynamo's frontend and the gateway take no vLLM key; its workers read the hub token.
        ("dynamo", "secrets not in Pulumi.dynamo.yaml, planned with placeholders: hf_token, gateway_client_keys"),
    ],
)
def test_only_the_secrets_the_program_reads_are_listed(stack, expected):
    assert placeholder_line(stack) == expected
