"""ipc-lock-without-privileged: no privileged container; RDMA containers add IPC_LOCK, drop ALL, no escalation."""

from aks_gpu_inference.policies.manifests import UNKNOWN
from aks_gpu_inference.policies.rules.ipc_lock_without_privileged import RULE

from ._device_class_fixtures import BY_NAME, FAST_NICS, GPU_CEL, class_stack
from ._fixtures import (
    HARDENED,
    NS,
    WORKLOAD_KINDS,
    Case,
    container,
    rdma_container,
    rdma_spec,
    rdma_stack,
    resource_claim,
    table_tests,
)


def privileged(**security):
    return container("sidecar", securityContext={"privileged": True, **security})


def rdma(security):
    """The RDMA stack with the RDMA container's securityContext replaced."""
    return lambda kind: rdma_stack(kind, rdma_spec(rdma_container(security=security)))


def with_containers(**lists):
    """The RDMA stack with extra container lists (initContainers, ephemeralContainers, ...) in the pod."""
    return lambda kind: rdma_stack(kind, rdma_spec(**lists))


def via_resource_claim(kind):
    """RDMA NICs claimed through a ResourceClaim instead of a template; the container is not hardened."""
    spec = rdma_spec(rdma_container(security=None), resourceClaims=[{"name": "rdma", "resourceClaimName": "shared-nics"}])
    return [*rdma_stack(kind, spec), resource_claim("shared-nics", "dranet.net")]


def gpu_only(kind):
    """A GPU container that claims no RDMA NICs needs no IPC_LOCK."""
    spec = rdma_spec(container(resources={"limits": {"nvidia.com/gpu": 1}}), resourceClaims=[])
    return rdma_stack(kind, spec)


PRIV = "{label} {tpl}%s: securityContext.privileged is true; grant single capabilities instead"
RDMA = "{label} {tpl}containers[0] vllm claims RDMA NICs" + BY_NAME + ": "
RESOLVED = "{label} {tpl}containers[0] vllm claims RDMA NICs: "
MAY_RDMA = "{label} {tpl}containers[0] vllm may claim RDMA NICs (its claims are unknown during preview; fails closed): "
ADD_UNKNOWN = "capabilities.add is unknown during preview (fails closed)"
DROP_UNKNOWN = "capabilities.drop is unknown during preview (fails closed)"
ESCALATION_UNKNOWN = "allowPrivilegeEscalation is unknown during preview (fails closed)"
ALL_PROBLEMS = "add capability IPC_LOCK (RDMA pins memory); drop ALL capabilities; set allowPrivilegeEscalation: false"
EXTRA = {"capabilities": {"add": ["IPC_LOCK", "NET_ADMIN"], "drop": ["ALL"]}, "allowPrivilegeEscalation": False}

AGENT_IMAGE = "example.azurecr.io/node-agent"
AGENT = container("agent", image=f"{AGENT_IMAGE}:v1.0.0", securityContext={"privileged": True})
ACCEPTED = {"namespace": NS, "image": AGENT_IMAGE, "why": "moves devices on the host"}

CASES = [
    Case("compliant", rdma(HARDENED), over=WORKLOAD_KINDS),
    Case(
        "a privileged node agent the config accepts by namespace and image is exempted, not a violation",
        with_containers(containers=[rdma_container(), AGENT]),
        config={"node_agents": [ACCEPTED]},
        over=WORKLOAD_KINDS,
    ),
    Case(
        "the same agent image in another namespace is not exempted",
        with_containers(containers=[rdma_container(), AGENT]),
        per_template=(PRIV % "containers[1] agent",),
        config={"node_agents": [{**ACCEPTED, "namespace": "kube-system"}]},
        over=WORKLOAD_KINDS,
    ),
    Case(
        "another image in the accepted namespace is not exempted (repository match, not prefix)",
        with_containers(containers=[rdma_container(), {**AGENT, "image": f"{AGENT_IMAGE}-evil:v1"}]),
        per_template=(PRIV % "containers[1] agent",),
        config={"node_agents": [ACCEPTED]},
        over=WORKLOAD_KINDS,
    ),
    Case(
        "the default accepts DRANET only in kube-system",
        with_containers(containers=[rdma_container(), {**AGENT, "image": "registry.k8s.io/networking/dranet:v1.3.0"}]),
        per_template=(PRIV % "containers[1] agent",),
        over=WORKLOAD_KINDS,
    ),
    Case("gpu container without rdma claim needs nothing", gpu_only, over=WORKLOAD_KINDS),
    Case(
        "privileged container",
        with_containers(containers=[rdma_container(), privileged()]),
        per_template=(PRIV % "containers[1] sidecar",),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "privileged initContainer",
        with_containers(initContainers=[privileged()], containers=[rdma_container()]),
        per_template=(PRIV % "initContainers[0] sidecar",),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "privileged ephemeralContainer",
        with_containers(containers=[rdma_container()], ephemeralContainers=[privileged()]),
        per_template=(PRIV % "ephemeralContainers[0] sidecar",),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "privileged rdma container",
        rdma({**HARDENED, "privileged": True}),
        per_template=(PRIV % "containers[0] vllm",),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "rdma container without IPC_LOCK",
        rdma({**HARDENED, "capabilities": {"drop": ["ALL"]}}),
        per_template=(RDMA + "add capability IPC_LOCK (RDMA pins memory)",),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "rdma container without drop ALL",
        rdma({**HARDENED, "capabilities": {"add": ["IPC_LOCK"], "drop": ["NET_RAW"]}}),
        per_template=(RDMA + "drop ALL capabilities",),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "rdma container allowPrivilegeEscalation missing",
        rdma({"capabilities": HARDENED["capabilities"]}),
        per_template=(RDMA + "set allowPrivilegeEscalation: false",),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "rdma container allowPrivilegeEscalation true",
        rdma({**HARDENED, "allowPrivilegeEscalation": True}),
        per_template=(RDMA + "set allowPrivilegeEscalation: false",),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "rdma container adds a capability not allowed",
        rdma(EXTRA),
        per_template=(RDMA + "remove capabilities ['NET_ADMIN'] (allowed: ['IPC_LOCK'])",),
        over=WORKLOAD_KINDS,
    ),
    Case("allowed_capabilities admits it", rdma(EXTRA), config={"allowed_capabilities": ["NET_ADMIN"]}, over=WORKLOAD_KINDS),
    Case(
        "allowed_capabilities admits only what it lists",
        rdma({**EXTRA, "capabilities": {"add": ["IPC_LOCK", "NET_ADMIN", "SYS_ADMIN"], "drop": ["ALL"]}}),
        per_template=(RDMA + "remove capabilities ['SYS_ADMIN'] (allowed: ['IPC_LOCK', 'NET_ADMIN'])",),
        config={"allowed_capabilities": ["NET_ADMIN"]},
        over=WORKLOAD_KINDS,
    ),
    Case(
        "rdma container without securityContext: every problem in one violation",
        rdma(None),
        per_template=(RDMA + ALL_PROBLEMS,),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "rdma claimed through a ResourceClaim",
        via_resource_claim,
        per_template=(RDMA + "add capability IPC_LOCK",),
        over=WORKLOAD_KINDS,
    ),
    # config reaches the rule: enforcement level overrides
    Case("disabled", with_containers(containers=[rdma_container(), privileged()]), level="disabled", over=("Deployment",)),
    Case(
        "advisory override",
        with_containers(containers=[rdma_container(), privileged()]),
        per_template=(PRIV % "containers[1] sidecar",),
        level="advisory",
        over=("Deployment",),
    ),
    # unknown values fail closed
    Case(
        "unknown privileged",
        with_containers(containers=[rdma_container(), container("sidecar", securityContext={"privileged": UNKNOWN})]),
        per_template=("{label} {tpl}containers[1] sidecar: securityContext.privileged is unknown during preview (fails closed)",),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "unknown securityContext",
        with_containers(containers=[rdma_container(), container("sidecar", securityContext=UNKNOWN)]),
        per_template=("{tpl}containers[1] sidecar: securityContext.privileged is unknown during preview (fails closed)",),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "unknown securityContext of the rdma container",
        rdma(UNKNOWN),
        per_template=(
            "{tpl}containers[0] vllm: securityContext.privileged is unknown during preview (fails closed)",
            RDMA + f"{ADD_UNKNOWN}; {DROP_UNKNOWN}; {ESCALATION_UNKNOWN}",
        ),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "unknown capabilities.add",
        rdma({**HARDENED, "capabilities": {"add": UNKNOWN, "drop": ["ALL"]}}),
        per_template=(RDMA + ADD_UNKNOWN,),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "unknown capability in the add list",
        rdma({**HARDENED, "capabilities": {"add": ["IPC_LOCK", UNKNOWN], "drop": ["ALL"]}}),
        per_template=(RDMA + ADD_UNKNOWN,),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "unknown drop list and escalation fail closed",
        rdma({"capabilities": {"add": ["IPC_LOCK"], "drop": UNKNOWN}, "allowPrivilegeEscalation": UNKNOWN}),
        per_template=(RDMA + f"{DROP_UNKNOWN}; {ESCALATION_UNKNOWN}",),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "unknown drop list and escalation: the message says they are unknown",
        rdma({"capabilities": {"add": ["IPC_LOCK"], "drop": UNKNOWN}, "allowPrivilegeEscalation": UNKNOWN}),
        per_template=((RDMA, "drop", "unknown"),),
        over=("Deployment",),
    ),
    Case(
        "unknown drop list",
        rdma({**HARDENED, "capabilities": {"add": ["IPC_LOCK"], "drop": UNKNOWN}}),
        per_template=(RDMA + DROP_UNKNOWN,),
        over=("Deployment",),
    ),
    Case(
        "unknown capability in the drop list without ALL",
        rdma({**HARDENED, "capabilities": {"add": ["IPC_LOCK"], "drop": [UNKNOWN]}}),
        per_template=(RDMA + DROP_UNKNOWN,),
        over=("Deployment",),
    ),
    Case(
        "unknown capability next to ALL in the drop list passes",
        rdma({**HARDENED, "capabilities": {"add": ["IPC_LOCK"], "drop": ["ALL", UNKNOWN]}}),
        over=("Deployment",),
    ),
    Case(
        "unknown allowPrivilegeEscalation",
        rdma({**HARDENED, "allowPrivilegeEscalation": UNKNOWN}),
        per_template=(RDMA + ESCALATION_UNKNOWN,),
        over=("Deployment",),
    ),
    Case(
        "unknown container list",
        with_containers(containers=UNKNOWN),
        per_template=(
            "{label}: {tpl}containers is unknown during preview, so privileged containers cannot be ruled out (fails closed)",
        ),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "unknown pod spec",
        lambda kind: rdma_stack(kind, UNKNOWN),
        per_template=("{label}: {spec} is unknown during preview, so privileged containers cannot be ruled out (fails closed)",),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "unknown pod claims: a container that may claim RDMA NICs fails closed",
        lambda kind: rdma_stack(kind, rdma_spec(rdma_container(security=None), resourceClaims=UNKNOWN)),
        per_template=(MAY_RDMA + ALL_PROBLEMS,),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "rdma container whose claims are unknown fails closed",
        lambda kind: rdma_stack(kind, rdma_spec(rdma_container(security=None, resources={"claims": UNKNOWN}))),
        per_template=(MAY_RDMA + ALL_PROBLEMS,),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "hardened rdma container whose claims are unknown passes",
        lambda kind: rdma_stack(kind, rdma_spec(rdma_container(resources={"claims": UNKNOWN}))),
        over=("Deployment",),
    ),
    Case(
        "container whose claims are unknown in a pod without RDMA claims needs nothing",
        lambda kind: rdma_stack(kind, rdma_spec(container(resources={"claims": UNKNOWN}), resourceClaims=[])),
        over=("Deployment",),
    ),
    # device classes are judged by their selectors, not their names
    Case(
        f"custom-named class {FAST_NICS} selecting dra.net RDMA NICs: hardened passes",
        lambda kind: class_stack(kind, rdma_spec(rdma_container())),
        over=WORKLOAD_KINDS,
    ),
    Case(
        f"custom-named class {FAST_NICS} selecting dra.net RDMA NICs: no IPC_LOCK fails",
        lambda kind: class_stack(kind, rdma_spec(rdma_container(security=None))),
        per_template=(RESOLVED + ALL_PROBLEMS,),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "DeviceClass dranet.net in the stack: the message has no by-name note",
        lambda kind: class_stack(kind, rdma_spec(rdma_container(security=None)), device_class="dranet.net"),
        per_template=(RESOLVED + ALL_PROBLEMS,),
        over=("Deployment",),
    ),
    Case(
        "a class named dranet.net that selects GPUs is not RDMA: no IPC_LOCK needed",
        lambda kind: class_stack(
            kind, rdma_spec(rdma_container(security=None)), device_class="dranet.net", expressions=(GPU_CEL,)
        ),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "a DeviceClass whose selector is unknown during preview may select RDMA NICs (fails closed)",
        lambda kind: class_stack(kind, rdma_spec(rdma_container(security=None)), expressions=(UNKNOWN,)),
        per_template=(MAY_RDMA + ALL_PROBLEMS,),
        over=("Deployment",),
    ),
]


test_rule, test_through_analyzer, test_table_covers_the_rule = table_tests(RULE, CASES)


def test_exemptions_are_reported_with_why():
    from aks_gpu_inference.policies.rules import evaluate_all

    resources = with_containers(containers=[rdma_container(), AGENT])("Deployment")
    findings, exempted = evaluate_all(resources, {RULE.name: {"node_agents": [ACCEPTED]}})
    assert [f.rule.name for f in findings if f.rule is RULE] == []
    assert [(e.rule, e.why) for e in exempted] == [(RULE.name, "moves devices on the host")]
    assert "privileged node agent example.azurecr.io/node-agent" in exempted[0].message


def test_default_node_agents_are_the_ones_the_components_install():
    from aks_gpu_inference.components.gpu.dra_device_classes import DRA_DRIVER_NAMESPACE
    from aks_gpu_inference.policies.rules.ipc_lock_without_privileged import NODE_AGENTS

    assert {(a["namespace"], a["image"]) for a in NODE_AGENTS} == {
        ("kube-system", "registry.k8s.io/networking/dranet"),
        (DRA_DRIVER_NAMESPACE, "registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu"),
    }
    assert all(len(a["why"]) > 40 for a in NODE_AGENTS), "each says why it needs privileges"
