"""mig-resource-request: workloads on MIG pools request the pool's nvidia.com/mig-<slice>, not whole GPUs."""

from aks_gpu_inference.components.core.labels import GPU_TAINT
from aks_gpu_inference.policies.manifests import UNKNOWN
from aks_gpu_inference.policies.rules.mig_resource_request import RULE

from ._fixtures import (
    GPU_TOLERATION,
    POOL_STYLES,
    WORKLOAD_KINDS,
    Case,
    agent_pool,
    container,
    managed_cluster,
    pool_stack,
    table_tests,
    workload,
)

A100 = "Standard_NC24ads_A100_v4"


def requests(name, container_name="vllm"):
    return container(container_name, resources={"limits": {name: 1}})


def spec(*containers, pool="mig", **fields):
    return {
        "nodeSelector": {"kubernetes.azure.com/agentpool": pool},
        "tolerations": [GPU_TOLERATION],
        "containers": list(containers),
        **fields,
    }


def mig(*containers, vm_size=A100, profile="MIG1g", **fields):
    """A MIG pool (``profile`` on ``vm_size``) and a workload of each kind that selects it."""
    return lambda kind: [
        managed_cluster(),
        agent_pool("mig", vm_size, profile=profile, taints=[GPU_TAINT]),
        workload(kind, spec(*containers, **fields)),
    ]


def on_pool_style(style):
    """The pool under test standalone or inline, with and without an API version."""
    return [
        *pool_stack(style, "gpu", A100, profile="MIG2g", taints=[GPU_TAINT]),
        workload("Deployment", spec(requests("nvidia.com/gpu"), pool="gpu")),
    ]


def wrong(asked, where="containers[0] vllm", pool="'mig' (MIG1g)", expected="nvidia.com/mig-1g.10gb"):
    return (
        f"{{label}} {{tpl}}{where} requests {asked} on MIG pool {pool}, which only advertises {expected}; "
        f"request {expected} or the pod stays Pending"
    )


CASES = [
    Case("the pool's slice", mig(requests("nvidia.com/mig-1g.10gb")), over=WORKLOAD_KINDS),
    Case("a whole GPU", mig(requests("nvidia.com/gpu")), per_template=(wrong("nvidia.com/gpu"),), over=WORKLOAD_KINDS),
    Case(
        "another slice",
        mig(requests("nvidia.com/mig-3g.40gb")),
        per_template=(wrong("nvidia.com/mig-3g.40gb"),),
        over=WORKLOAD_KINDS,
    ),
    Case("an AMD GPU", mig(requests("amd.com/gpu")), per_template=(wrong("amd.com/gpu"),), over=WORKLOAD_KINDS),
    Case(
        "a whole GPU in an initContainer",
        mig(requests("nvidia.com/mig-1g.10gb"), initContainers=[requests("nvidia.com/gpu", "warmup")]),
        per_template=(wrong("nvidia.com/gpu", "initContainers[0] warmup"),),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "each wrong container once",
        mig(requests("nvidia.com/mig-1g.10gb"), requests("nvidia.com/gpu", "b"), requests("nvidia.com/gpu", "c")),
        per_template=(wrong("nvidia.com/gpu", "containers[1] b"), wrong("nvidia.com/gpu", "containers[2] c")),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "H100 MIG7g slice",
        mig(requests("nvidia.com/gpu"), vm_size="Standard_NC40ads_H100_v5", profile="MIG7g"),
        per_template=(wrong("nvidia.com/gpu", pool="'mig' (MIG7g)", expected="nvidia.com/mig-7g.94gb"),),
        over=("Deployment",),
    ),
    Case(
        "pool of any style",
        on_pool_style,
        once=(
            "Deployment llm/engine spec.template.spec.containers[0] vllm requests nvidia.com/gpu on MIG pool 'gpu' (MIG2g), which only advertises nvidia.com/mig-2g.20gb",
        ),
        over=POOL_STYLES,
    ),
    Case("pool without gpuInstanceProfile", mig(requests("nvidia.com/gpu"), profile=None), over=WORKLOAD_KINDS),
    Case("size without MIG support", mig(requests("nvidia.com/gpu"), vm_size="Standard_NC16as_T4_v3"), over=("Deployment",)),
    Case("workload that selects no pool", mig(requests("nvidia.com/gpu"), nodeSelector={}), over=WORKLOAD_KINDS),
    Case("workload on a pool outside the stack", mig(requests("nvidia.com/gpu"), pool="elsewhere"), over=("Deployment",)),
    Case(
        "mandatory override",
        mig(requests("nvidia.com/gpu")),
        per_template=(wrong("nvidia.com/gpu"),),
        level="mandatory",
        over=("Deployment",),
    ),
    Case("disabled", mig(requests("nvidia.com/gpu")), level="disabled", over=("Deployment",)),
    # unknown values are skipped
    Case("unknown gpuInstanceProfile", mig(requests("nvidia.com/gpu"), profile=UNKNOWN), over=WORKLOAD_KINDS),
    Case("unknown vmSize", mig(requests("nvidia.com/gpu"), vm_size=UNKNOWN), over=("Deployment",)),
    Case(
        "unknown pool selector",
        mig(requests("nvidia.com/gpu"), nodeSelector={"kubernetes.azure.com/agentpool": UNKNOWN}),
        over=WORKLOAD_KINDS,
    ),
    Case("unknown resources", mig(container(resources=UNKNOWN)), over=WORKLOAD_KINDS),
    Case("unknown pod spec", lambda kind: [*mig()(kind)[:2], workload(kind, UNKNOWN)], over=WORKLOAD_KINDS),
    # an invalid gpuInstanceProfile (AKS rejects it at deploy) is skipped, not a crash
    Case("invalid gpuInstanceProfile is skipped", mig(requests("nvidia.com/gpu"), profile="MIG5g"), over=WORKLOAD_KINDS),
    Case(
        "gpuInstanceProfile in the wrong case is skipped", mig(requests("nvidia.com/gpu"), profile="mig1g"), over=("Deployment",)
    ),
    Case("non-string gpuInstanceProfile is skipped", mig(requests("nvidia.com/gpu"), profile=1), over=("Deployment",)),
]


test_rule, test_through_analyzer, test_table_covers_the_rule = table_tests(RULE, CASES)
