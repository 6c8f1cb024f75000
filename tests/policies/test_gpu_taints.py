"""gpu-taints-and-tolerations: GPU pools carry the GPU taint; workloads that request GPUs tolerate it."""

from aks_gpu_inference.components.core.labels import GPU_TAINT
from aks_gpu_inference.policies.manifests import UNKNOWN
from aks_gpu_inference.policies.rules.gpu_taints import RULE

from ._fixtures import (
    GPU_TOLERATION,
    POOL_STYLES,
    WORKLOAD_KINDS,
    Case,
    agent_pool,
    claim_template,
    container,
    device_class,
    managed_cluster,
    pool_stack,
    table_tests,
    workload,
)

NC = "Standard_NC24ads_A100_v4"
OTHER_TAINT = "nvidia.com/gpu=present:NoSchedule"
LACKS = "{pool}: GPU pool 'gpu' (%s) lacks the taint %r; nodeTaints: %s"
ADD_TOLERATION = "add tolerations: [{{key: sku, operator: Equal, value: gpu, effect: NoSchedule}}]"


def pool(vm_size=NC, **fields):
    return lambda style: pool_stack(style, "gpu", vm_size, **fields)


def gpu_stack(kind, *containers, tolerations=(GPU_TOLERATION,), taint=GPU_TAINT, extra=(), **spec_fields):
    """A GPU pool tainted ``taint`` and a workload of ``kind`` whose containers ask for GPUs."""
    spec = {
        "nodeSelector": {"kubernetes.azure.com/agentpool": "gpu"},
        "containers": list(containers) or [container(resources={"limits": {"nvidia.com/gpu": 1}})],
        **(
            {"tolerations": list(tolerations) if isinstance(tolerations, tuple) else tolerations}
            if tolerations is not None
            else {}
        ),
        **spec_fields,
    }
    return [managed_cluster(), agent_pool("gpu", NC, taints=[taint]), *extra, workload(kind, spec)]


def pod(*containers, **fields):
    return lambda kind: gpu_stack(kind, *containers, **fields)


def requests(name, count=1):
    return container(resources={"limits": {name: count}})


def claims(device_class_name, *extra):
    """A pod that claims devices of ``device_class_name`` through a template, without tolerations."""
    return pod(
        container(resources={"claims": [{"name": "gpu"}]}),
        tolerations=None,
        resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "gpus"}],
        extra=(claim_template("gpus", device_class_name), *extra),
    )


NOT_TOLERATED = "{pod}: requests GPUs (%s) but does not tolerate 'sku=gpu:NoSchedule'; " + ADD_TOLERATION

CASES = [
    # pools, standalone and inline, with and without an API version in the type token
    Case("tainted gpu pool", pool(taints=[GPU_TAINT]), over=POOL_STYLES),
    Case("gpu pool without taints", pool(), once=(LACKS % (NC, GPU_TAINT, "none"),), over=POOL_STYLES),
    Case(
        "gpu pool with another taint",
        pool(taints=[OTHER_TAINT]),
        once=(LACKS % (NC, GPU_TAINT, [OTHER_TAINT]),),
        over=POOL_STYLES,
    ),
    Case(
        "gpu size outside the catalog (name parsed)",
        pool("Standard_NV12s_v3"),
        once=(LACKS % ("Standard_NV12s_v3", GPU_TAINT, "none"),),
        over=POOL_STYLES,
    ),
    Case("system gpu pool is exempt", pool(mode="System"), over=POOL_STYLES),
    Case("cpu pool needs no taint", pool("Standard_D8s_v5"), over=POOL_STYLES),
    Case(
        "taint knob: pool with the configured taint", pool(taints=[OTHER_TAINT]), config={"taint": OTHER_TAINT}, over=POOL_STYLES
    ),
    Case(
        "taint knob: pool with the default taint",
        pool(taints=[GPU_TAINT]),
        once=(LACKS % (NC, OTHER_TAINT, [GPU_TAINT]),),
        config={"taint": OTHER_TAINT},
        over=("AgentPool",),
    ),
    # workloads of every kind
    Case("gpu workload with toleration", pod(), over=WORKLOAD_KINDS),
    Case("Exists toleration on the key", pod(tolerations=[{"key": "sku", "operator": "Exists"}]), over=WORKLOAD_KINDS),
    Case("Exists toleration without key tolerates everything", pod(tolerations=[{"operator": "Exists"}]), over=WORKLOAD_KINDS),
    Case("cpu workload needs no toleration", pod(container(), tolerations=None), over=WORKLOAD_KINDS),
    Case(
        "gpu workload without tolerations",
        pod(tolerations=None),
        per_template=(NOT_TOLERATED % "nvidia.com/gpu",),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "toleration with another value",
        pod(tolerations=[{**GPU_TOLERATION, "value": "cpu"}]),
        per_template=(NOT_TOLERATED % "nvidia.com/gpu",),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "toleration with another effect",
        pod(tolerations=[{**GPU_TOLERATION, "effect": "NoExecute"}]),
        per_template=(NOT_TOLERATED % "nvidia.com/gpu",),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "gpu request in an initContainer",
        pod(container(), tolerations=None, initContainers=[requests("nvidia.com/gpu")]),
        per_template=(NOT_TOLERATED % "nvidia.com/gpu",),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "amd and mig requests",
        pod(requests("amd.com/gpu"), container("mig", resources={"requests": {"nvidia.com/mig-1g.10gb": 1}}), tolerations=None),
        per_template=(NOT_TOLERATED % "amd.com/gpu, nvidia.com/mig-1g.10gb",),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "DRA claim on gpu.nvidia.com", claims("gpu.nvidia.com"), per_template=(NOT_TOLERATED % "claim gpu",), over=WORKLOAD_KINDS
    ),
    Case(
        "DRA claim on a DeviceClass of the NVIDIA driver",
        claims("big-gpus", device_class("big-gpus", "gpu.nvidia.com")),
        per_template=(NOT_TOLERATED % "claim gpu",),
        over=WORKLOAD_KINDS,
    ),
    Case("DRA claim on RDMA NICs only", claims("dranet.net"), over=WORKLOAD_KINDS),
    Case(
        "taint knob reaches the toleration check",
        pod(taint=OTHER_TAINT),
        per_template=("{pod}: requests GPUs (nvidia.com/gpu) but does not tolerate 'nvidia.com/gpu=present:NoSchedule'",),
        config={"taint": OTHER_TAINT},
        over=WORKLOAD_KINDS,
    ),
    Case(
        "taint knob: the configured toleration",
        pod(tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}], taint=OTHER_TAINT),
        config={"taint": OTHER_TAINT},
        over=("Deployment",),
    ),
    # enforcement level overrides
    Case("disabled", pod(tolerations=None), level="disabled", over=("Deployment",)),
    Case(
        "advisory override",
        pod(tolerations=None),
        per_template=(NOT_TOLERATED % "nvidia.com/gpu",),
        level="advisory",
        over=("Deployment",),
    ),
    # unknown taints and tolerations fail closed; an unknown vmSize is skipped
    Case(
        "unknown nodeTaints",
        pool(taints=UNKNOWN),
        once=(LACKS % (NC, GPU_TAINT, "unknown during preview (fails closed)"),),
        over=POOL_STYLES,
    ),
    Case(
        "unknown taint in the list",
        pool(taints=[UNKNOWN]),
        once=(LACKS % (NC, GPU_TAINT, "[<unknown during preview>]"),),
        over=POOL_STYLES,
    ),
    Case("unknown vmSize is skipped", pool(UNKNOWN), over=POOL_STYLES),
    Case(
        "unknown tolerations",
        pod(tolerations=UNKNOWN),
        per_template=("{pod}: tolerations are unknown during preview (fails closed)",),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "unknown toleration",
        pod(tolerations=[UNKNOWN]),
        per_template=("{pod}: tolerations are unknown during preview (fails closed)",),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "unknown toleration value",
        pod(tolerations=[{**GPU_TOLERATION, "value": UNKNOWN}]),
        per_template=("{pod}: tolerations are unknown during preview (fails closed)",),
        over=WORKLOAD_KINDS,
    ),
]


test_rule, test_through_analyzer, test_table_covers_the_rule = table_tests(RULE, CASES)
