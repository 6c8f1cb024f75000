"""Pulumi.gb300.yaml is seed 004's rack-scale path: a GB300 pool in an InterconnectGroup the stack creates, DRANET at
the release with the interconnect attributes, NIC claims held to the group and one subgroup, a ComputeDomain for
NVLink across nodes, an NVLink gate, and no image without arm64 on the pool (issue 34, "Checked by")."""

from __future__ import annotations

import pytest

from aks_gpu_inference.components.azure.interconnect import INTERCONNECT_LABEL
from aks_gpu_inference.components.core import pins
from aks_gpu_inference.planner import claims
from aks_gpu_inference.planner.engine.mocks import interconnect_attributes
from tests.conftest import expanded_stack, planned_stack

GB300 = "Standard_ND128isr_GB300_v6"


def _resources(suffix: str) -> list[dict]:
    return [r.inputs for r in planned_stack("gb300").resources if r.type.endswith(suffix)]


def _group():
    (record,) = [r for r in planned_stack("gb300").resources if r.type == "azure-native:network:InterconnectGroup"]
    return record


def test_the_stack_creates_an_infiniband_interconnect_group_of_one_gb300_rack():
    group = _group().inputs
    assert group["interconnectGroupName"] == "icg-aks-gpu-gb300" and group["scope"] == "InfiniBand"
    assert group["subgroupProfile"] == {"vmSize": GB300, "scope": "VerticalConnect", "size": 18}
    assert group["location"] == "eastus"


def test_the_pool_is_gb300_labelled_with_its_group_and_not_aks_managed():
    (pool,) = [p for p in _resources("containerservice:AgentPool") if p["agentPoolName"] == "gb300"]
    assert (pool["vmSize"], pool["count"], pool["osSKU"]) == (GB300, 2, "Ubuntu")
    assert pool["nodeLabels"][INTERCONNECT_LABEL] == "icg-aks-gpu-gb300"
    assert pool["gpuProfile"] == {"driver": "Install"}


def test_dranet_is_the_release_that_publishes_the_interconnect_attributes():
    (chart,) = [c for c in _resources("helm.sh/v4:Chart") if c["chart"].endswith("/dranet")]
    assert chart["version"] == pins.chart("dranet-interconnect").version == "v1.4.0"
    assert chart["values"]["image"]["tag"] == pins.image_pin("dranet-interconnect").tag == "v1.4.0"
    assert pins.chart("dranet").version == "v1.3.0", "the H100 stacks keep the release seed 004 qualified"


def test_every_nic_claim_selects_the_group_and_its_subgroup():
    attributes = interconnect_attributes(_group().name)
    templates = {t["metadata"]["name"]: t for t in _resources("resource.k8s.io/v1:ResourceClaimTemplate")}
    nic_templates = [t for name, t in templates.items() if "-rdma-" in name]
    assert {t["metadata"]["name"] for t in nic_templates} == {"gb300-rdma-full-node", "gb300-rdma-1-nic"}
    for template in nic_templates:
        (request,) = template["spec"]["spec"]["devices"]["requests"]
        expressions = [s["cel"]["expression"] for s in request["exactly"]["selectors"]]
        assert any(attributes["resourceGuid"] in e and '"interconnectGroupId" in' in e for e in expressions)
        assert any(attributes["internalSubgroupId"] in e and '"interconnectSubgroupId" in' in e for e in expressions)
    assert templates["gb300-rdma-full-node"]["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 4


def test_a_compute_domain_serves_the_engines_and_the_nvlink_gate():
    (domain,) = _resources(":ComputeDomain")
    assert domain["metadata"] == {"name": "gb300-nvlink", "namespace": "llm-d-infra"}
    assert domain["spec"] == {"numNodes": 0, "channel": {"resourceClaimTemplate": {"name": "gb300-imex-channel"}}}
    (driver,) = [c for c in _resources("helm.sh/v4:Chart") if "dra-driver-nvidia-gpu" in c["chart"]]
    assert driver["values"]["resources"]["computeDomains"] == {"enabled": True}
    pods = {d["metadata"]["name"]: d["spec"]["template"]["spec"] for d in _resources("apps/v1:Deployment")}
    pods |= {j["metadata"]["name"]: j["spec"]["template"]["spec"] for j in _resources("batch/v1:Job")}
    for name in ("llama-70b-prefill", "llama-70b-decode", "qualify-7-nvlink-1"):
        assert {"name": "imex-channel", "resourceClaimTemplateName": "gb300-imex-channel"} in pods[name]["resourceClaims"]
    nvlink = pods["qualify-7-nvlink-1"]
    assert [c["name"] for c in nvlink["resourceClaims"]] == ["gpus", "imex-channel"], "the NVLink gate claims no NIC"
    env = {e["name"]: e["value"] for e in nvlink["containers"][0]["env"]}
    assert float(env["MIN_NVLINK_GBPS"]) == 0.75 * 834.6 and env["GPUS_PER_NODE"] == "4"
    ib = {e["name"]: e["value"] for e in pods["qualify-3-ib-write-bw-1"]["containers"][0]["env"]}
    assert float(ib["MIN_GBPS"]) == pytest.approx(0.75 * 449.43, rel=1e-5), (
        "75% of what GB300's NICs were measured at on AKS, not of 800 Gb/s"
    )


def test_the_claims_are_satisfied_on_simulated_gb300_nodes_of_the_group():
    run, _ = expanded_stack("gb300")
    verdicts = claims.check(run)
    assert verdicts and all(v.satisfiable for v in verdicts), [(v.template, v.reason) for v in verdicts if not v.satisfiable]
    by_template = {v.template: v for v in verdicts}
    assert by_template["gb300-rdma-full-node"].matched == 4 and by_template["gb300-imex-channel"].satisfiable


def test_the_subgroup_advisory_is_quiet_here_and_speaks_without_the_group():
    """The rack-subgroup-placement rule through the analyzer: the stack's NIC claims name a subgroup; the same stack
    without ``interconnect`` has RDMA engines and gates on GB300 whose NIC claims name none."""
    from aks_gpu_inference.planner.analyzer import analyze
    from tests.conftest import run_stack, stack_config

    assert [v for v in analyze(planned_stack("gb300")) if v.policy == "rack-subgroup-placement"] == []
    config = stack_config("gb300")
    del config["aks-gpu-inference:gpu_pools"][0]["interconnect"]
    found = [v for v in analyze(run_stack(config, "gb300")) if v.policy == "rack-subgroup-placement"]
    assert found and all(v.enforcement == "advisory" and "selects no interconnect subgroup" in v.message for v in found)
    assert any("llama-70b-decode" in v.message for v in found) and any("qualify-4-nccl" in v.message for v in found)
