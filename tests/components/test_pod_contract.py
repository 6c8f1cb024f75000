"""RdmaPodSpec: the seed 004 section 6 pod contract, merged into any pod spec."""

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aks_gpu_inference.components import RdmaPodSpec
from aks_gpu_inference.components.gpu.pod_contract import RDMA_CAPABILITY, RDMA_ENV

SKU_GPU = {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
NVIDIA_GPU = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
AGENTPOOL = "kubernetes.azure.com/agentpool"

CONTRACT = RdmaPodSpec(
    claims={"rdma-nics": "h100-rdma-full-node", "gpus": "h100-gpus-full-node"},
    node_selector={AGENTPOOL: "h100"},
    tolerations=[SKU_GPU],
)


def modelserver_pod() -> dict:
    """A pod spec shaped like seed 004's model server, before the contract is applied."""
    return {
        "nodeSelector": {"workload": "llm-serving"},
        "tolerations": [NVIDIA_GPU],
        "resourceClaims": [{"name": "cache", "resourceClaimTemplateName": "scratch"}],
        "containers": [
            {
                "name": "modelserver",
                "image": "vllm/vllm-openai:v0.11.0",
                "env": [
                    {"name": "UCX_TLS", "value": "tcp"},
                    {"name": "HF_HOME", "value": "/models"},
                    {"name": "NCCL_IB_DISABLE", "value": "1"},
                ],
                "securityContext": {
                    "privileged": True,
                    "runAsUser": 1000,
                    "allowPrivilegeEscalation": True,
                    "capabilities": {"add": ["SYS_PTRACE"], "drop": ["NET_RAW"]},
                },
                "resources": {"limits": {"nvidia.com/gpu": 8}, "claims": [{"name": "cache"}]},
            },
            {"name": "sidecar", "image": "busybox:1.36", "env": [{"name": "UCX_TLS", "value": "tcp"}]},
        ],
    }


def env_of(container: dict) -> dict[str, str]:
    return {e["name"]: e.get("value") for e in container.get("env") or []}


def test_contract_defaults_follow_seeds_002_and_004():
    assert RDMA_ENV == {"UCX_TLS": "rc_x,cuda_copy,cuda_ipc,self", "NCCL_IB_DISABLE": "0", "NCCL_NET_GDR_LEVEL": "5"}
    assert RDMA_CAPABILITY == "IPC_LOCK"
    assert CONTRACT.env == RDMA_ENV and CONTRACT.env is not RDMA_ENV, "each contract owns a copy of the defaults"
    assert CONTRACT.resource_claims() == [
        {"name": "rdma-nics", "resourceClaimTemplateName": "h100-rdma-full-node"},
        {"name": "gpus", "resourceClaimTemplateName": "h100-gpus-full-node"},
    ]
    assert CONTRACT.container_claims() == [{"name": "rdma-nics"}, {"name": "gpus"}]


def test_security_context_from_nothing_is_ipc_lock_without_privilege():
    assert RdmaPodSpec.security_context() == {
        "capabilities": {"drop": ["ALL"], "add": ["IPC_LOCK"]},
        "allowPrivilegeEscalation": False,
        # An added capability reaches only a root process (no ambient capabilities in Kubernetes).
        "runAsUser": 0,
        "runAsNonRoot": False,
    }
    assert RdmaPodSpec.security_context({}) == RdmaPodSpec.security_context(None)


def test_security_context_drops_privileged_and_keeps_other_settings():
    base = {
        "privileged": True,
        "allowPrivilegeEscalation": True,
        "runAsNonRoot": True,
        "readOnlyRootFilesystem": True,
        "capabilities": {"add": ["NET_ADMIN", "IPC_LOCK"], "drop": ["NET_RAW"]},
    }
    original = copy.deepcopy(base)
    context = RdmaPodSpec.security_context(base)
    assert "privileged" not in context
    assert context["allowPrivilegeEscalation"] is False
    assert context["readOnlyRootFilesystem"] is True
    assert (context["runAsUser"], context["runAsNonRoot"]) == (0, False), "IPC_LOCK needs root to take effect"
    assert context["capabilities"] == {"add": ["IPC_LOCK", "NET_ADMIN"], "drop": ["ALL"]}
    assert base == original, "the base context is not modified"


def test_apply_merges_the_whole_contract():
    pod = modelserver_pod()
    result = CONTRACT.apply(pod)

    assert result["nodeSelector"] == {"workload": "llm-serving", AGENTPOOL: "h100"}
    assert result["tolerations"] == [NVIDIA_GPU, SKU_GPU]
    assert result["resourceClaims"] == [
        {"name": "cache", "resourceClaimTemplateName": "scratch"},
        {"name": "rdma-nics", "resourceClaimTemplateName": "h100-rdma-full-node"},
        {"name": "gpus", "resourceClaimTemplateName": "h100-gpus-full-node"},
    ]
    server, sidecar = result["containers"]
    assert server["resources"] == {
        "limits": {"nvidia.com/gpu": 8},
        "claims": [{"name": "cache"}, {"name": "rdma-nics"}, {"name": "gpus"}],
    }
    assert server["securityContext"] == {
        "runAsUser": 0,
        "runAsNonRoot": False,
        "allowPrivilegeEscalation": False,
        "capabilities": {"add": ["IPC_LOCK", "SYS_PTRACE"], "drop": ["ALL"]},
    }
    # Same-name entries are replaced, not duplicated; other variables stay in order.
    assert server["env"] == [
        {"name": "HF_HOME", "value": "/models"},
        {"name": "UCX_TLS", "value": "rc_x,cuda_copy,cuda_ipc,self"},
        {"name": "NCCL_IB_DISABLE", "value": "0"},
        {"name": "NCCL_NET_GDR_LEVEL", "value": "5"},
    ]
    # Without ``containers`` every container gets the contract.
    assert env_of(sidecar) == RDMA_ENV
    assert sidecar["resources"]["claims"] == [{"name": "rdma-nics"}, {"name": "gpus"}]
    assert sidecar["securityContext"]["capabilities"] == {"drop": ["ALL"], "add": ["IPC_LOCK"]}


def test_apply_does_not_mutate_its_input():
    pod = modelserver_pod()
    CONTRACT.apply(pod)
    CONTRACT.apply(pod, containers=["sidecar"])
    assert pod == modelserver_pod()


def test_apply_touches_only_the_named_containers():
    result = CONTRACT.apply(modelserver_pod(), containers=["modelserver"])
    server, sidecar = result["containers"]
    assert env_of(server)["UCX_TLS"] == RDMA_ENV["UCX_TLS"]
    assert sidecar == modelserver_pod()["containers"][1], "the sidecar keeps its spec"
    # The pod-level parts apply regardless.
    assert {c["name"] for c in result["resourceClaims"]} == {"cache", "rdma-nics", "gpus"}
    assert result["nodeSelector"][AGENTPOOL] == "h100"

    untouched = CONTRACT.apply(modelserver_pod(), containers=[])
    assert untouched["containers"] == modelserver_pod()["containers"]


def test_apply_refuses_container_names_the_pod_lacks():
    # A typo would otherwise leave the NIC container without claims, IPC_LOCK or the UCX/NCCL env.
    with pytest.raises(ValueError) as caught:
        CONTRACT.apply(modelserver_pod(), containers=["model-server"])
    assert str(caught.value) == "no container named model-server in the pod; containers: modelserver, sidecar"
    with pytest.raises(ValueError, match=r"^no container named vllm, zz in the pod; containers: modelserver, sidecar$"):
        CONTRACT.apply(modelserver_pod(), containers=["zz", "modelserver", "vllm"])
    with pytest.raises(ValueError, match=r"^no container named c in the pod"):
        CONTRACT.apply({}, containers=["c"])


def test_apply_adds_no_duplicates():
    pod = {
        "nodeSelector": {AGENTPOOL: "other"},
        "tolerations": [SKU_GPU],
        "resourceClaims": [{"name": "rdma-nics", "resourceClaimTemplateName": "h100-rdma-full-node"}],
        "containers": [{"name": "c", "resources": {"claims": [{"name": "gpus"}]}}],
    }
    result = CONTRACT.apply(pod)
    assert result["nodeSelector"] == {AGENTPOOL: "h100"}, "the contract's pool wins"
    assert result["tolerations"] == [SKU_GPU]
    assert [c["name"] for c in result["resourceClaims"]] == ["rdma-nics", "gpus"]
    assert result["containers"][0]["resources"]["claims"] == [{"name": "gpus"}, {"name": "rdma-nics"}]


def test_apply_fills_a_bare_pod():
    result = CONTRACT.apply({"containers": [{"name": "c", "image": "x:1"}]})
    assert result["nodeSelector"] == {AGENTPOOL: "h100"}
    assert result["tolerations"] == [SKU_GPU]
    assert len(result["resourceClaims"]) == 2
    (container,) = result["containers"]
    assert env_of(container) == RDMA_ENV
    assert container["securityContext"] == {
        "capabilities": {"drop": ["ALL"], "add": ["IPC_LOCK"]},
        "allowPrivilegeEscalation": False,
        "runAsUser": 0,
        "runAsNonRoot": False,
    }
    assert CONTRACT.apply({}) == {
        "nodeSelector": {AGENTPOOL: "h100"},
        "tolerations": [SKU_GPU],
        "resourceClaims": CONTRACT.resource_claims(),
    }


@pytest.mark.parametrize(
    "container",
    [{"resources": None}, {"securityContext": None}, {"securityContext": {"capabilities": None}}, {"env": None}],
)
def test_apply_treats_null_container_fields_as_empty(container):
    # YAML such as `resources:` with no value arrives as None; it means "nothing yet", like a missing key.
    result = CONTRACT.apply({"containers": [{"name": "c", **container}]})
    (merged,) = result["containers"]
    assert merged["resources"]["claims"] == CONTRACT.container_claims()
    assert merged["securityContext"]["capabilities"] == {"drop": ["ALL"], "add": ["IPC_LOCK"]}


# ---- property: the contract is idempotent -------------------------------------------------------

names = st.sampled_from(["a", "b", "modelserver", "sidecar"])
env_names = st.sampled_from(["UCX_TLS", "NCCL_IB_DISABLE", "HF_HOME", "NCCL_DEBUG"])
tolerations = st.sampled_from(
    [
        SKU_GPU,
        NVIDIA_GPU,
        {"key": "kubernetes.azure.com/scalesetpriority", "operator": "Equal", "value": "spot", "effect": "NoSchedule"},
    ]
)
capabilities = st.lists(st.sampled_from(["IPC_LOCK", "NET_ADMIN", "SYS_PTRACE", "NET_RAW", "ALL"]), max_size=3)
claim_names = st.sampled_from(["rdma-nics", "gpus", "cache"])

security_contexts = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {},
        optional={
            "privileged": st.booleans(),
            "allowPrivilegeEscalation": st.booleans(),
            "runAsUser": st.integers(0, 65535),
            "capabilities": st.one_of(st.none(), st.fixed_dictionaries({}, optional={"add": capabilities, "drop": capabilities})),
        },
    ),
)
containers = st.fixed_dictionaries(
    {"name": names},
    optional={
        "env": st.lists(st.fixed_dictionaries({"name": env_names, "value": st.text(max_size=5)}), max_size=4),
        "securityContext": security_contexts,
        "resources": st.one_of(
            st.none(),
            st.fixed_dictionaries({}, optional={"claims": st.lists(st.builds(lambda n: {"name": n}, claim_names), max_size=3)}),
        ),
    },
)
pod_specs = st.fixed_dictionaries(
    {},
    optional={
        "nodeSelector": st.dictionaries(st.sampled_from([AGENTPOOL, "workload"]), st.sampled_from(["h100", "x"]), max_size=2),
        "tolerations": st.lists(tolerations, max_size=3),
        "resourceClaims": st.lists(
            st.builds(lambda n, t: {"name": n, "resourceClaimTemplateName": t}, claim_names, st.sampled_from(["t1", "t2"])),
            max_size=3,
        ),
        "containers": st.lists(containers, max_size=3),
    },
)
contracts = st.builds(
    RdmaPodSpec,
    claims=st.dictionaries(claim_names, st.sampled_from(["h100-rdma-full-node", "h100-rdma-1-nic", "gpu-1"]), max_size=3),
    node_selector=st.dictionaries(st.just(AGENTPOOL), st.sampled_from(["h100", "h200"]), max_size=1),
    tolerations=st.lists(tolerations, max_size=2, unique_by=lambda t: t["key"]),
)
selections = st.one_of(st.none(), st.lists(names, max_size=2))


@settings(max_examples=150, deadline=None, database=None)
@given(pod=pod_specs, contract=contracts, selected=selections)
def test_applying_twice_equals_applying_once(pod, contract, selected):
    before = copy.deepcopy(pod)
    present = {c["name"] for c in pod.get("containers") or []}
    missing = sorted(set(selected or []) - present)
    if missing:
        # Naming a container the pod lacks is refused; the pod is left alone.
        with pytest.raises(ValueError, match=f"^no container named {', '.join(missing)} in the pod; "):
            contract.apply(pod, containers=selected)
        assert pod == before
        selected = [name for name in selected if name in present]
    once = contract.apply(pod, containers=selected)
    assert contract.apply(once, containers=selected) == once
    assert pod == before, "apply never mutates its input"

    for original, merged in zip(pod.get("containers") or [], once["containers"] if "containers" in pod else [], strict=True):
        if selected is not None and original["name"] not in selected:
            assert merged == original
            continue
        context = merged["securityContext"]
        assert "privileged" not in context and context["allowPrivilegeEscalation"] is False
        assert context["capabilities"]["drop"] == ["ALL"] and RDMA_CAPABILITY in context["capabilities"]["add"]
        env = [e["name"] for e in merged["env"]]
        for name, value in contract.env.items():
            assert env.count(name) == 1 and env_of(merged)[name] == value
        assert {c["name"] for c in contract.container_claims()} <= {c["name"] for c in merged["resources"]["claims"]}
    assert once["nodeSelector"].items() >= contract.node_selector.items()
    assert all(once["tolerations"].count(t) >= 1 for t in contract.tolerations)
    for t in contract.tolerations:
        assert once["tolerations"].count(t) == max(1, (pod.get("tolerations") or []).count(t))
