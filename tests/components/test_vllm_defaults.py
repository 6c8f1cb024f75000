"""Defaults that compose: a VllmService creates its namespace (unless the RDMA network or DRA driver owns it, or it is
told not to), asks for a Hugging Face token only for a gated model, warns for a model whose gating is unknown, and
the plan says what the platform pool the cluster adds by default runs and how to opt out."""

from __future__ import annotations

import pytest

from aks_gpu_inference.components.core import hub_access, models
from tests.components.test_vllm_service import DISAGGREGATED, DRA_H100, RDMA_H100, build
from tests.conftest import of_type

QWEN = "Qwen/Qwen2.5-7B-Instruct"


def _namespaces(run) -> list[str]:
    return [r.inputs["metadata"]["name"] for r in of_type(run, "core/v1:Namespace")]


def test_a_service_creates_its_default_namespace_restricted():
    _, run = build({"source": "huggingface", "model": QWEN}, blob=False)
    (namespace,) = of_type(run, "core/v1:Namespace")
    assert namespace.inputs["metadata"]["name"] == "gpu-inference"
    assert namespace.inputs["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    deployment = next(r for r in run.resources if r.type.endswith("apps/v1:Deployment"))
    assert namespace.urn in deployment.options["dependsOn"], "everything in the namespace waits for it"


def test_no_namespace_when_told_not_to_or_when_the_rdma_network_owns_it():
    _, run = build({"source": "huggingface", "model": QWEN, "create_namespace": False}, blob=False)
    assert _namespaces(run) == []
    _, run = build(DISAGGREGATED, pool="h100", dra=DRA_H100, rdma=RDMA_H100)
    assert "llm-d-infra" in _namespaces(run) and _namespaces(run).count("llm-d-infra") == 1, "the network's own"


def test_an_open_hub_model_needs_no_token_and_warns_nothing():
    holder, run = build({"source": "huggingface", "model": QWEN}, blob=False)
    assert "error" not in holder and run.warnings == ()
    assert of_type(run, "core/v1:Secret"), "the API key's Secret"


def test_a_gated_hub_model_without_a_token_is_refused_before_anything_exists():
    with pytest.raises(Exception, match="gated Hugging Face repository"):
        build({"source": "huggingface"}, blob=False)


def test_a_model_of_unknown_gating_without_a_token_plans_with_a_warning():
    facts = models.get_model(QWEN).model_copy(update={"hf_id": "acme/private-7b", "gated": None})
    holder, run = build({"source": "huggingface", "model": "acme/private-7b", "model_facts": facts.model_dump()}, blob=False)
    assert "error" not in holder
    (warning,) = run.warnings
    assert warning.startswith("VllmService 'llama': no hf_token") and "model_facts.gated" in warning
    assert "pulumi config set --secret hf_token" in warning


def test_the_catalog_says_which_models_are_gated_and_why():
    catalog = models.models()
    assert all(facts.gated is not None for facts in catalog.values()), "every catalog model is settled"
    assert {hf_id for hf_id, f in catalog.items() if f.gated} == {
        hf_id for hf_id in catalog if hf_id.startswith(("meta-llama/", "mistralai/"))
    }
    assert hub_access.token_need(catalog[QWEN]) == "open"
    assert hub_access.missing_token_problem(QWEN, catalog[QWEN]) is None
