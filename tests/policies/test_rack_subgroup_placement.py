"""rack-subgroup-placement: RDMA pods on a rack-scale pool claim NICs of one interconnect subgroup."""

from aks_gpu_inference.components.core.labels import RDMA_DEVICE_CLASS
from aks_gpu_inference.policies.manifests import UNKNOWN
from aks_gpu_inference.policies.rules.rack_subgroup_placement import RULE

from ._fixtures import (
    NS,
    RDMA_TEMPLATE,
    WORKLOAD_KINDS,
    Case,
    container,
    rdma_container,
    rdma_spec,
    rdma_stack,
    resource,
    table_tests,
)

GB300 = "Standard_ND128isr_GB300_v6"
SUBGROUP = 'device.attributes["azure.dra.net"]["interconnectSubgroupId"] == "0b0c0d0e-0000-4000-8000-000000000001"'
GROUP = 'device.attributes["azure.dra.net"]["interconnectGroupId"] == "0b0c0d0e-0000-4000-8000-000000000002"'


def nic_template(*expressions, name=RDMA_TEMPLATE):
    """The NIC claim template with these CEL selectors on its request."""
    exactly = {"deviceClassName": RDMA_DEVICE_CLASS, "count": 4}
    if expressions:
        exactly["selectors"] = [{"cel": {"expression": e}} for e in expressions]
    return resource(
        "kubernetes:resource.k8s.io/v1:ResourceClaimTemplate",
        name,
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"spec": {"devices": {"requests": [{"name": "nics", "exactly": exactly}]}}},
        },
    )


def stack(*expressions, vm_size=GB300, spec=None):
    """An RDMA stack on a pool of ``vm_size`` whose NIC claim template has these selectors."""

    def build(kind):
        cluster, pool, _, work = rdma_stack(kind, spec, vm_size=vm_size)
        return [cluster, pool, nic_template(*expressions), work]

    return build


def infiniband_by_env(kind):
    """A pod that reaches InfiniBand through NCCL's variables only: no DRA claim could select a subgroup."""
    spec = {"nodeSelector": rdma_spec()["nodeSelector"], "tolerations": rdma_spec()["tolerations"]}
    spec["containers"] = [container(env=[{"name": "NCCL_IB_HCA", "value": "mlx5"}])]
    cluster, pool, _, work = rdma_stack(kind, spec, vm_size=GB300)
    return [cluster, pool, work]


NO_SUBGROUP = (
    "{pod}",
    "on rack-scale pool ndh100",
    "its claim 'rdma' selects no interconnect subgroup",
    "interconnectSubgroupId",
)
CASES = [
    Case("subgroup selected", stack(GROUP, SUBGROUP), over=WORKLOAD_KINDS),
    Case("group only", stack(GROUP), per_template=(NO_SUBGROUP,), over=WORKLOAD_KINDS),
    Case("no selector", stack(), per_template=(NO_SUBGROUP,), over=("Deployment", "Job", "LeaderWorkerSet")),
    Case("an H100 pool is not rack-scale", stack(vm_size="Standard_ND96isr_H100_v5"), over=WORKLOAD_KINDS),
    Case(
        "InfiniBand without a DRA claim",
        infiniband_by_env,
        per_template=(("{pod}", "on rack-scale pool ndh100 without a DRA NIC claim, so nothing keeps it in one subgroup"),),
        over=("Deployment", "Job"),
    ),
    Case("a selector unknown during preview is skipped", stack(UNKNOWN), over=("Deployment",)),
    Case(
        "a pod that does not use RDMA is not checked",
        stack(spec={"nodeSelector": rdma_spec()["nodeSelector"], "containers": [container()]}),
        over=("Deployment",),
    ),
    Case(
        "a pod pinned to no pool is left to rdma-capable-sku",
        stack(spec=rdma_spec(rdma_container(), pool=None)),
        over=("Deployment",),
    ),
    Case("mandatory override", stack(), per_template=(NO_SUBGROUP,), level="mandatory", over=("Deployment",)),
    Case("disabled", stack(), level="disabled", over=("Deployment",)),
]

test_rule, test_through_analyzer, test_table_covers_the_rule = table_tests(RULE, CASES)
