"""A fragment (a kustomize patch, a TrainJob or OME service whose runtime is not at hand) is held to what it sets, not
to what it leaves to the object it patches: each rule that reports something missing stays quiet on a fragment, and
each that reports something present still reports it. Only ``aks-gpu scan`` makes fragments (the engine registers
whole objects), so these run the rules' functions alone."""

from __future__ import annotations

import pytest

from aks_gpu_inference.policies.rules import evaluate

from ._fixtures import container, rdma_container, rdma_spec, rdma_stack, workload

PATCH = "Deployment"


def findings(resources, fragment: bool) -> set[str]:
    for r in resources:
        r.fragment = fragment and r.type.endswith(f":{PATCH}")
    return {f.rule.name for f in evaluate(resources)}


@pytest.mark.parametrize(
    ("_case", "spec", "rules"),
    [
        (
            "no toleration",
            {"containers": [container(resources={"limits": {"nvidia.com/gpu": 1}})]},
            {"gpu-taints-and-tolerations"},
        ),
        ("rdma pod pinning no pool", rdma_spec(pool=None), {"rdma-capable-sku"}),
        ("rdma container without IPC_LOCK", rdma_spec(rdma_container(security={})), {"ipc-lock-without-privileged"}),
        ("rdma container without NCCL_IB_DISABLE", rdma_spec(rdma_container(nccl=None)), {"nccl-infiniband-enabled"}),
    ],
)
def test_what_a_fragment_leaves_out_is_not_reported(_case, spec, rules):
    assert findings(rdma_stack(PATCH, spec), fragment=False) == rules
    assert findings(rdma_stack(PATCH, spec), fragment=True) == set()


def test_prefill_role_without_anti_affinity():
    stack = [workload(PATCH, {"containers": [container()]}, labels={"llm-d.ai/role": "prefill"})]
    assert findings(stack, fragment=False) == {"prefill-decode-anti-affinity"}
    assert findings(stack, fragment=True) == set()


@pytest.mark.parametrize(
    ("_case", "spec", "rule"),
    [
        ("privileged", rdma_spec(rdma_container(security={"privileged": True})), "ipc-lock-without-privileged"),
        (
            "SYS_ADMIN on an rdma container",
            rdma_spec(rdma_container(security={"capabilities": {"add": ["IPC_LOCK", "CAP_SYS_ADMIN"]}})),
            "ipc-lock-without-privileged",
        ),
        ("NCCL_IB_DISABLE=1", rdma_spec(rdma_container(nccl="1")), "nccl-infiniband-enabled"),
        ("floating image tag", rdma_spec(rdma_container(image="vllm/vllm-openai:nightly")), "image-pinned"),
        ("memlock override", rdma_spec(rdma_container(command=["sh", "-c", "ulimit -l unlimited"])), "no-memlock-override"),
    ],
)
def test_what_a_fragment_sets_is_reported(_case, spec, rule):
    assert rule in findings(rdma_stack(PATCH, spec), fragment=True)
