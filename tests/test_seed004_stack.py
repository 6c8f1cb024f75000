"""Pulumi.llmd.yaml is seed 004: llm-d prefill/decode on two ND H100 v5 nodes with the AKS-managed GPU
experience, InfiniBand NICs through DRANET, the six gates, and the Inference Extension's CRDs."""

from __future__ import annotations

from aks_gpu_inference.components.core import models, startup
from aks_gpu_inference.planner import claims
from tests.conftest import REPO, expanded_stack, planned_stack

ENGINES = ("llama-70b-prefill", "llama-70b-decode")


def _deployments() -> dict[str, dict]:
    return {
        r.inputs["metadata"]["name"]: r.inputs
        for r in planned_stack("llmd").resources
        if r.type == "kubernetes:apps/v1:Deployment" and r.inputs["metadata"]["name"] in ENGINES
    }


def test_the_gpu_pool_is_aks_managed_with_two_nd_h100_nodes():
    (pool,) = [r for r in planned_stack("llmd").resources if r.type == "azure-native:resources:Resource"]
    props = pool.inputs["properties"]
    assert (pool.inputs["resourceType"], props["vmSize"], props["count"]) == ("agentPools", "Standard_ND96isr_H100_v5", 2)
    assert props["gpuProfile"]["nvidia"] == {"managementMode": "Managed"} and props["nodeTaints"] == ["sku=gpu:NoSchedule"]


def test_model_servers_request_gpus_from_the_device_plugin_and_all_nics_by_claim():
    deployments = _deployments()
    assert set(deployments) == set(ENGINES)
    for deployment in deployments.values():
        pod = deployment["spec"]["template"]["spec"]
        (server,) = pod["containers"]
        assert server["resources"]["limits"]["nvidia.com/gpu"] == 8 and server["resources"]["requests"]["nvidia.com/gpu"] == 8
        assert pod["resourceClaims"] == [{"name": "rdma-nics", "resourceClaimTemplateName": "h100-rdma-full-node"}]
        assert server["resources"]["claims"] == [{"name": "rdma-nics"}], "the NIC claim only, never a DRA GPU claim"
        assert server["securityContext"]["capabilities"] == {"add": ["IPC_LOCK"], "drop": ["ALL"]}
        assert server["securityContext"]["allowPrivilegeEscalation"] is False and not server["securityContext"].get("privileged")
        assert {e["name"]: e.get("value") for e in server["env"]}["UCX_TLS"] == "rc_x,cuda_copy,cuda_ipc,self"
        assert pod["nodeSelector"] == {"kubernetes.azure.com/agentpool": "h100"}


def test_prefill_and_decode_never_share_a_node():
    for deployment in _deployments().values():
        (term,) = deployment["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"
        ]
        assert term["topologyKey"] == "kubernetes.io/hostname"
        assert term["labelSelector"]["matchLabels"] == {"app.kubernetes.io/instance": "llama-70b"}


def test_the_decode_pods_run_llm_ds_routing_sidecar():
    decode = _deployments()["llama-70b-decode"]["spec"]["template"]
    (sidecar,) = decode["spec"]["initContainers"]
    assert sidecar["restartPolicy"] == "Always" and sidecar["image"].startswith("ghcr.io/llm-d/llm-d-router-disagg-sidecar:")
    assert decode["metadata"]["labels"]["llm-d.ai/role"] == "decode"


def test_the_nic_claims_are_satisfied_by_two_simulated_h100_nodes():
    run, _ = expanded_stack("llmd")
    verdicts = claims.check(run)
    nics = [v for v in verdicts if v.device_class == "dranet.net"]
    assert nics and all(v.satisfiable for v in verdicts), [(v.template, v.reason) for v in verdicts]
    assert {v.template for v in nics} >= {"h100-rdma-full-node"}
    assert all(v.pool == "h100" for v in nics)


def test_the_gateway_routes_the_model_to_llm_ds_inference_pool():
    (route,) = [r.inputs for r in planned_stack("llmd").resources if r.type.endswith(":AIGatewayRoute")]
    rules = {rule["matches"][0]["headers"][0]["value"]: rule["backendRefs"] for rule in route["spec"]["rules"]}
    assert rules["llama-3.3-70b"] == [
        {
            "group": "inference.networking.k8s.io",
            "kind": "InferencePool",
            "name": "llama-70b-inferencepool",
            "namespace": "llm-d-infra",
        }
    ]


def test_a_token_costs_both_nodes_of_the_prefill_decode_pair():
    """Before: the router priced the model at one node (tp 8 of 8 GPUs), though prefill holds a second."""
    costs = planned_stack("llmd").outputs["gateway_cost_per_million"]["llama-3.3-70b"]
    two_nodes_per_hour = 2 * 98.32
    assert costs["prompt"] == costs["completion"] == round(two_nodes_per_hour / (1500 * 3600) * 1e6, 4)


def test_the_cold_start_figures_in_the_docs_are_the_plans():
    """docs/seed004.md quotes the budget, the wait and the memory of the seed's engines: they are what the stack renders."""
    doc = (REPO / "docs" / "seed004.md").read_text()
    decode = _deployments()["llama-70b-decode"]["spec"]["template"]["spec"]
    vllm = next(c for c in decode["containers"] if c["name"] == "vllm")
    facts = models.get_model("meta-llama/Llama-3.3-70B-Instruct")
    budget = startup.cold_start(facts.weight_bytes("auto"), facts.layers, 8, "blob", "H100")
    assert budget.explain() in doc
    assert vllm["startupProbe"]["periodSeconds"] * vllm["startupProbe"]["failureThreshold"] == budget.seconds
    assert f"({budget.wait_minutes} minutes here)" in doc
    assert f"{vllm['resources']['limits']['memory']} for the seed's engines" in doc
