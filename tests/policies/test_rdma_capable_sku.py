"""rdma-capable-sku: pools labelled for RDMA, and pools that RDMA pods select, are RDMA-capable ND sizes."""

from aks_gpu_inference.components.core.labels import AGENTPOOL_LABEL, GPU_TAINT, RDMA_LABEL
from aks_gpu_inference.policies.manifests import UNKNOWN
from aks_gpu_inference.policies.rules.rdma_capable_sku import RULE

from ._device_class_fixtures import BY_NAME, FAST_NICS, GPU_CEL, class_stack, node_affinity, pool_affinity
from ._fixtures import (
    POOL_STYLES,
    RDMA_POOL,
    RDMA_TEMPLATE,
    WORKLOAD_KINDS,
    Case,
    agent_pool,
    claim_template,
    container,
    pool_stack,
    rdma_container,
    rdma_spec,
    rdma_stack,
    table_tests,
    workload,
)

NC = "Standard_NC24ads_A100_v4"
LABELLED = {RDMA_LABEL: "true"}
NO_RDMA_BACKEND = "which has no RDMA back end; use an ND size with 'r' in its capability letters"


def labelled_pool(vm_size, labels=LABELLED):
    return lambda style: pool_stack(style, "gpu", vm_size, labels=labels, taints=["sku=gpu:NoSchedule"])


def rdma_pod(**spec_fields):
    """The RDMA stack with fields of the pod spec replaced."""
    return lambda kind: rdma_stack(kind, rdma_spec(**spec_fields))


def pod_on_pool(style):
    """A Deployment claiming RDMA NICs on the pool under test, standalone or inline, of an NC size."""
    return [
        *pool_stack(style, "gpu", NC, taints=["sku=gpu:NoSchedule"]),
        claim_template(RDMA_TEMPLATE, "dranet.net"),
        workload("Deployment", rdma_spec(pool="gpu")),
    ]


ON_NC_POOL = (
    "{pod}: claims RDMA NICs" + BY_NAME + " on pool 'ndh100', whose vmSize is 'Standard_NC24ads_A100_v4', " + NO_RDMA_BACKEND
)
PIN = "; set nodeSelector kubernetes.azure.com/agentpool: <rdma pool> (or a required node affinity kubernetes.azure.com/agentpool In [<rdma pools>])"
UNPINNED = "{pod}: claims RDMA NICs" + BY_NAME + " but does not pin an RDMA pool" + PIN
LABELLED_POOL = "{pool}: pool labelled aks-gpu-inference/rdma=true has a vmSize that is "
MAY_CLAIM = "{pod}: may claim RDMA NICs (claims unknown during preview; fails closed)"


def with_nc_pool(kind, spec):
    """The RDMA stack plus a second, NC pool ``nc``, with the pod spec replaced."""
    return [*rdma_stack(kind, spec), agent_pool("nc", NC, taints=[GPU_TAINT])]


RESOLVED_ON_NC = "{pod}: claims RDMA NICs on pool 'ndh100', whose vmSize is 'Standard_NC24ads_A100_v4', " + NO_RDMA_BACKEND

CASES = [
    Case("compliant", rdma_stack, over=WORKLOAD_KINDS),
    Case(
        "rdma pool of an ND size not in the catalog (name parsed)",
        lambda kind: rdma_stack(kind, vm_size="Standard_ND40rs_v2"),
        over=("Deployment",),
    ),
    Case("labelled pool of an RDMA size", labelled_pool("Standard_ND96amsr_A100_v4"), over=POOL_STYLES),
    # The rack-scale GB sizes: 4 InfiniBand NICs each (catalog), 400 and 800 Gb/s.
    Case("RDMA work on a GB300 pool", lambda kind: rdma_stack(kind, vm_size="Standard_ND128isr_GB300_v6"), over=WORKLOAD_KINDS),
    Case("labelled pool of a GB200 size", labelled_pool("Standard_ND128isr_NDR_GB200_v6"), over=POOL_STYLES),
    Case(
        "labelled pool without RDMA back end",
        labelled_pool(NC),
        once=(LABELLED_POOL + "'Standard_NC24ads_A100_v4', " + NO_RDMA_BACKEND,),
        over=POOL_STYLES,
    ),
    Case(
        "labelled pool of an ND size without 'r'",
        labelled_pool("Standard_ND96is_H100_v5"),
        once=(LABELLED_POOL + "'Standard_ND96is_H100_v5', " + NO_RDMA_BACKEND,),
        over=POOL_STYLES,
    ),
    Case("unlabelled NC pool serves no RDMA work", labelled_pool(NC, labels={}), over=POOL_STYLES),
    Case("pool labelled rdma=false", labelled_pool(NC, labels={RDMA_LABEL: "false"}), over=POOL_STYLES),
    Case(
        "rdma pod on an unlabelled NC pool",
        lambda kind: rdma_stack(kind, vm_size=NC, labels={}),
        per_template=(ON_NC_POOL,),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "rdma pod on a labelled NC pool: the pool and the pod",
        lambda kind: rdma_stack(kind, vm_size=NC),
        once=(
            "AgentPool ndh100: pool labelled aks-gpu-inference/rdma=true has a vmSize that is 'Standard_NC24ads_A100_v4', "
            + NO_RDMA_BACKEND,
        ),
        per_template=(ON_NC_POOL,),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "rdma pod on a pool of any style",
        pod_on_pool,
        once=("Deployment llm/engine: claims RDMA NICs" + BY_NAME + " on pool 'gpu'",),
        over=POOL_STYLES,
    ),
    Case("rdma pod without nodeSelector", rdma_pod(pool=None), per_template=(UNPINNED,), over=WORKLOAD_KINDS),
    Case("rdma pod on a pool outside the stack is skipped", rdma_pod(pool="elsewhere"), over=WORKLOAD_KINDS),
    Case(
        "gpu pod without rdma claim on an NC pool",
        lambda kind: rdma_stack(
            kind, rdma_spec(container(resources={"limits": {"nvidia.com/gpu": 1}}), resourceClaims=[]), vm_size=NC, labels={}
        ),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "pod-level rdma claim no container lists: DRANET puts the NICs in the pod's network namespace",
        lambda kind: rdma_stack(kind, rdma_spec(container()), vm_size=NC, labels={}),
        per_template=(ON_NC_POOL,),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "pod-level rdma claim beside a container that lists another claim",
        lambda kind: rdma_stack(
            kind,
            rdma_spec(
                container(resources={"claims": [{"name": "gpu"}]}),
                resourceClaims=[
                    {"name": "nics", "resourceClaimTemplateName": RDMA_TEMPLATE},
                    {"name": "gpu", "resourceClaimTemplateName": "gpus"},
                ],
            ),
            vm_size=NC,
            labels={},
        ),
        per_template=(ON_NC_POOL,),
        over=("Deployment",),
    ),
    Case(
        "claim template in another namespace is not the pod's",
        lambda kind: [
            *rdma_stack(kind, vm_size=NC, labels={})[:2],
            claim_template(RDMA_TEMPLATE, "dranet.net", namespace="other"),
            rdma_stack(kind)[-1],
        ],
        over=("Deployment",),
    ),
    # config reaches the rule
    Case("disabled", rdma_pod(pool=None), level="disabled", over=("Deployment",)),
    Case("advisory override", rdma_pod(pool=None), per_template=(UNPINNED,), level="advisory", over=("Deployment",)),
    # unknown values fail closed
    Case(
        "labelled pool with unknown vmSize",
        labelled_pool(UNKNOWN),
        once=(LABELLED_POOL + "unknown during preview (fails closed)",),
        over=POOL_STYLES,
    ),
    Case(
        "pool with unknown rdma label is checked",
        labelled_pool(NC, labels={RDMA_LABEL: UNKNOWN}),
        once=(
            "{pool}: pool whose aks-gpu-inference/rdma label is unknown during preview has a vmSize that is "
            "'Standard_NC24ads_A100_v4', " + NO_RDMA_BACKEND,
        ),
        over=POOL_STYLES,
    ),
    Case(
        "pool with unknown nodeLabels is checked",
        labelled_pool(NC, labels=UNKNOWN),
        once=(
            "{pool}: pool whose aks-gpu-inference/rdma label is unknown during preview has a vmSize that is "
            "'Standard_NC24ads_A100_v4'",
        ),
        over=POOL_STYLES,
    ),
    Case(
        "pool with unknown rdma label and unknown vmSize",
        labelled_pool(UNKNOWN, labels={RDMA_LABEL: UNKNOWN}),
        once=(
            "{pool}: pool whose aks-gpu-inference/rdma label is unknown during preview has a vmSize that is "
            "unknown during preview (fails closed)",
        ),
        over=POOL_STYLES,
    ),
    Case(
        "pool with unknown rdma label: the message says it is unknown",
        labelled_pool(NC, labels={RDMA_LABEL: UNKNOWN}),
        once=(("{pool}: ", "unknown"),),
        over=("AgentPool",),
    ),
    Case(
        "rdma pod on a pool with unknown vmSize",
        lambda kind: rdma_stack(kind, vm_size=UNKNOWN, labels={}),
        per_template=(
            "{pod}: claims RDMA NICs" + BY_NAME + " on pool 'ndh100', whose vmSize is unknown during preview (fails closed)",
        ),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "rdma pod with unknown pool selector",
        rdma_pod(nodeSelector={"kubernetes.azure.com/agentpool": UNKNOWN}),
        per_template=(
            "{pod}: claims RDMA NICs" + BY_NAME + " but its pool selector is unknown during preview (fails closed)" + PIN,
        ),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "rdma pod with unknown nodeSelector",
        rdma_pod(nodeSelector=UNKNOWN),
        per_template=(
            "{pod}: claims RDMA NICs" + BY_NAME + " but its pool selector is unknown during preview (fails closed)" + PIN,
        ),
        over=("Deployment",),
    ),
    Case(
        "rdma pod with unknown pool selector: the message says it is unknown",
        rdma_pod(nodeSelector={"kubernetes.azure.com/agentpool": UNKNOWN}),
        per_template=(("{pod}: ", "unknown"),),
        over=("Deployment",),
    ),
    Case(
        "unknown pod spec",
        lambda kind: rdma_stack(kind, UNKNOWN),
        per_template=(
            "{label}: the pod spec is unknown during preview, so its RDMA claims and pool cannot be checked (fails closed)",
        ),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "unknown pod claims on an unpinned pod",
        rdma_pod(pool=None, resourceClaims=UNKNOWN),
        per_template=(MAY_CLAIM + " but does not pin an RDMA pool" + PIN,),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "unknown claim template name on an NC pool",
        lambda kind: rdma_stack(
            kind, rdma_spec(resourceClaims=[{"name": "rdma", "resourceClaimTemplateName": UNKNOWN}]), vm_size=NC, labels={}
        ),
        per_template=(MAY_CLAIM + " on pool 'ndh100', whose vmSize is 'Standard_NC24ads_A100_v4', " + NO_RDMA_BACKEND,),
        over=WORKLOAD_KINDS,
    ),
    Case("unknown pod claims on an RDMA pool pass", rdma_pod(resourceClaims=UNKNOWN), over=("Deployment",)),
    Case(
        "rdma pod whose container claims are unknown",
        lambda kind: rdma_stack(
            kind, rdma_spec(rdma_container(resources={"limits": {"nvidia.com/gpu": 8}, "claims": UNKNOWN})), vm_size=NC, labels={}
        ),
        per_template=(MAY_CLAIM + " on pool 'ndh100', whose vmSize is 'Standard_NC24ads_A100_v4', " + NO_RDMA_BACKEND,),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "rdma pod whose container claims are unknown on an RDMA pool passes",
        lambda kind: rdma_stack(kind, rdma_spec(rdma_container(resources={"limits": {"nvidia.com/gpu": 8}, "claims": UNKNOWN}))),
        over=("Deployment",),
    ),
    # device classes are judged by their selectors, not their names
    Case(f"custom-named class {FAST_NICS} selecting RDMA NICs on an RDMA pool", class_stack, over=WORKLOAD_KINDS),
    Case(
        f"custom-named class {FAST_NICS} selecting RDMA NICs on an NC pool",
        lambda kind: class_stack(kind, vm_size=NC, labels={}),
        per_template=(RESOLVED_ON_NC,),
        over=WORKLOAD_KINDS,
    ),
    Case(
        f"custom-named class {FAST_NICS} selecting RDMA NICs, unpinned",
        lambda kind: class_stack(kind, rdma_spec(pool=None)),
        per_template=("{pod}: claims RDMA NICs but does not pin an RDMA pool" + PIN,),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "DeviceClass dranet.net in the stack: the message has no by-name note",
        lambda kind: class_stack(kind, device_class="dranet.net", vm_size=NC, labels={}),
        per_template=(RESOLVED_ON_NC,),
        over=("Deployment",),
    ),
    Case(
        "a class named dranet.net that selects GPUs is not RDMA",
        lambda kind: class_stack(kind, device_class="dranet.net", expressions=(GPU_CEL,), vm_size=NC, labels={}),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "a DeviceClass whose selector is unknown during preview may select RDMA NICs (fails closed)",
        lambda kind: class_stack(kind, expressions=(UNKNOWN,), vm_size=NC, labels={}),
        per_template=(MAY_CLAIM + " on pool 'ndh100', whose vmSize is 'Standard_NC24ads_A100_v4', " + NO_RDMA_BACKEND,),
        over=("Deployment",),
    ),
    # pinned by required node affinity on kubernetes.azure.com/agentpool
    Case("agentpool affinity pins an RDMA pool", rdma_pod(pool=None, affinity=pool_affinity(RDMA_POOL)), over=WORKLOAD_KINDS),
    Case(
        "agentpool affinity pins an NC pool",
        lambda kind: rdma_stack(kind, rdma_spec(pool=None, affinity=pool_affinity(RDMA_POOL)), vm_size=NC, labels={}),
        per_template=(ON_NC_POOL,),
        over=WORKLOAD_KINDS,
    ),
    Case(
        f"custom-named class {FAST_NICS} pinned by agentpool affinity to an RDMA pool",
        lambda kind: class_stack(kind, rdma_spec(pool=None, affinity=pool_affinity(RDMA_POOL))),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "agentpool affinity over two pools checks each: the NC one fails",
        lambda kind: with_nc_pool(kind, rdma_spec(pool=None, affinity=pool_affinity(RDMA_POOL, "nc"))),
        per_template=("{pod}: claims RDMA NICs" + BY_NAME + " on pool 'nc', whose vmSize is 'Standard_NC24ads_A100_v4'",),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "agentpool affinity in two terms (ORed) checks each pool",
        lambda kind: with_nc_pool(
            kind,
            rdma_spec(
                pool=None, affinity=node_affinity([(AGENTPOOL_LABEL, "In", [RDMA_POOL])], [(AGENTPOOL_LABEL, "In", ["nc"])])
            ),
        ),
        per_template=("{pod}: claims RDMA NICs" + BY_NAME + " on pool 'nc'",),
        over=("Deployment",),
    ),
    Case(
        "two agentpool expressions in one term (ANDed) narrow to the RDMA pool",
        lambda kind: with_nc_pool(
            kind,
            rdma_spec(
                pool=None,
                affinity=node_affinity([(AGENTPOOL_LABEL, "In", [RDMA_POOL, "nc"]), (AGENTPOOL_LABEL, "In", [RDMA_POOL])]),
            ),
        ),
        over=("Deployment",),
    ),
    Case(
        "nodeSelector wins over a wider agentpool affinity",
        lambda kind: with_nc_pool(kind, rdma_spec(affinity=pool_affinity(RDMA_POOL, "nc"))),
        over=("Deployment",),
    ),
    Case(
        "affinity with a non-agentpool key is not pinned",
        rdma_pod(pool=None, affinity=node_affinity([("kubernetes.io/hostname", "In", ["aks-ndh100-0"])])),
        per_template=(UNPINNED,),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "affinity where one term does not pin a pool is not pinned",
        rdma_pod(
            pool=None,
            affinity=node_affinity([(AGENTPOOL_LABEL, "In", [RDMA_POOL])], [("sku", "In", ["gpu"])]),
        ),
        per_template=(UNPINNED,),
        over=("Deployment",),
    ),
    Case(
        "agentpool affinity with NotIn is not pinned",
        rdma_pod(pool=None, affinity=node_affinity([(AGENTPOOL_LABEL, "NotIn", ["system"])])),
        per_template=(UNPINNED,),
        over=("Deployment",),
    ),
    Case(
        "unknown affinity terms fail closed",
        rdma_pod(
            pool=None,
            affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": UNKNOWN}}},
        ),
        per_template=(
            "{pod}: claims RDMA NICs" + BY_NAME + " but its pool selector is unknown during preview (fails closed)" + PIN,
        ),
        over=("Deployment",),
    ),
    Case(
        "unknown agentpool affinity values fail closed",
        rdma_pod(pool=None, affinity=node_affinity([(AGENTPOOL_LABEL, "In", UNKNOWN)])),
        per_template=(("{pod}: ", "its pool selector is unknown during preview (fails closed)"),),
        over=("Deployment",),
    ),
    Case(
        "an unknown expression beside an agentpool In still pins",
        rdma_pod(pool=None, affinity=node_affinity([(AGENTPOOL_LABEL, "In", [RDMA_POOL]), (UNKNOWN, "In", ["x"])])),
        over=("Deployment",),
    ),
]


test_rule, test_through_analyzer, test_table_covers_the_rule = table_tests(RULE, CASES)
