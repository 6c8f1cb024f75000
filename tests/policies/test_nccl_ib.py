"""nccl-infiniband-enabled: containers that claim RDMA NICs set NCCL_IB_DISABLE=0, never 1."""

from aks_gpu_inference.policies.manifests import UNKNOWN
from aks_gpu_inference.policies.rules.nccl_ib import RULE

from ._device_class_fixtures import BY_NAME, FAST_NICS, GPU_CEL, class_stack
from ._fixtures import WORKLOAD_KINDS, Case, container, rdma_container, rdma_spec, rdma_stack, table_tests


def nccl(value, **fields):
    """The RDMA stack whose container sets NCCL_IB_DISABLE to ``value`` (None: not set)."""
    return lambda kind: rdma_stack(kind, rdma_spec(rdma_container(nccl=value, **fields)))


def env(*entries):
    return lambda kind: rdma_stack(kind, rdma_spec(rdma_container(nccl=None, env=list(entries))))


RDMA = "{label} {tpl}containers[0] vllm claims RDMA NICs" + BY_NAME + " but "
FIX = "; set NCCL_IB_DISABLE=0"
CASES = [
    Case("NCCL_IB_DISABLE=0", nccl("0"), over=WORKLOAD_KINDS),
    Case(
        "NCCL_IB_DISABLE=1",
        nccl("1"),
        per_template=(RDMA + "sets NCCL_IB_DISABLE=1, which forces TCP" + FIX,),
        over=WORKLOAD_KINDS,
    ),
    Case("not set", nccl(None), per_template=(RDMA + "does not set NCCL_IB_DISABLE=0" + FIX,), over=WORKLOAD_KINDS),
    Case("empty value", nccl(""), per_template=(RDMA + "does not set NCCL_IB_DISABLE=0",), over=WORKLOAD_KINDS),
    Case("another value", nccl("true"), per_template=(RDMA + "sets NCCL_IB_DISABLE='true'" + FIX,), over=WORKLOAD_KINDS),
    Case(
        "other env only",
        env({"name": "NCCL_DEBUG", "value": "INFO"}),
        per_template=(RDMA + "does not set NCCL_IB_DISABLE=0",),
        over=WORKLOAD_KINDS,
    ),
    # Kubernetes gives a container the last of duplicate env entries (the API server warns that a later entry
    # "hides previous definition"), so the last NCCL_IB_DISABLE is the one NCCL sees.
    Case(
        "the last NCCL_IB_DISABLE entry counts: 1 then 0",
        env({"name": "NCCL_IB_DISABLE", "value": "1"}, {"name": "NCCL_IB_DISABLE", "value": "0"}),
        over=("Deployment",),
    ),
    Case(
        "the last NCCL_IB_DISABLE entry counts: 0 then 1",
        env({"name": "NCCL_IB_DISABLE", "value": "0"}, {"name": "NCCL_IB_DISABLE", "value": "1"}),
        per_template=(RDMA + "sets NCCL_IB_DISABLE=1, which forces TCP" + FIX,),
        over=("Deployment",),
    ),
    Case(
        "a container without the RDMA claim is not checked",
        lambda kind: rdma_stack(
            kind, rdma_spec(rdma_container(), container("sidecar", env=[{"name": "NCCL_IB_DISABLE", "value": "1"}]))
        ),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "an RDMA initContainer is checked",
        lambda kind: rdma_stack(kind, rdma_spec(rdma_container(), initContainers=[rdma_container("init", nccl="1")])),
        per_template=("{label} {tpl}initContainers[0] init claims RDMA NICs" + BY_NAME + " but sets NCCL_IB_DISABLE=1",),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "mandatory override", nccl("1"), per_template=(RDMA + "sets NCCL_IB_DISABLE=1",), level="mandatory", over=("Deployment",)
    ),
    Case("disabled", nccl("1"), level="disabled", over=("Deployment",)),
    # unknown values are skipped
    Case(
        "value from a ConfigMap",
        env({"name": "NCCL_IB_DISABLE", "valueFrom": {"configMapKeyRef": {"name": "nccl", "key": "ib"}}}),
        over=WORKLOAD_KINDS,
    ),
    Case("unknown value", nccl(UNKNOWN), over=WORKLOAD_KINDS),
    Case(
        "unknown env list is skipped",
        lambda kind: rdma_stack(kind, rdma_spec(rdma_container(nccl=None, env=UNKNOWN))),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "unknown env entry is skipped",
        env({"name": "NCCL_DEBUG", "value": "INFO"}, UNKNOWN),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "unknown env entry next to NCCL_IB_DISABLE=1 is still reported",
        env(UNKNOWN, {"name": "NCCL_IB_DISABLE", "value": "1"}),
        per_template=(RDMA + "sets NCCL_IB_DISABLE=1, which forces TCP" + FIX,),
        over=("Deployment",),
    ),
    Case(
        "an RDMA container whose claims are unknown is skipped",
        lambda kind: rdma_stack(kind, rdma_spec(rdma_container(nccl="1", resources={"claims": UNKNOWN}))),
        over=("Deployment",),
    ),
    Case(
        "unknown pod claims are skipped",
        lambda kind: rdma_stack(kind, rdma_spec(rdma_container(nccl="1"), resourceClaims=UNKNOWN)),
        over=WORKLOAD_KINDS,
    ),
    # device classes are judged by their selectors, not their names
    Case(
        f"custom-named class {FAST_NICS} selecting RDMA NICs: NCCL_IB_DISABLE=0",
        lambda kind: class_stack(kind),
        over=WORKLOAD_KINDS,
    ),
    Case(
        f"custom-named class {FAST_NICS} selecting RDMA NICs: NCCL_IB_DISABLE=1",
        lambda kind: class_stack(kind, rdma_spec(rdma_container(nccl="1"))),
        per_template=("{label} {tpl}containers[0] vllm claims RDMA NICs but sets NCCL_IB_DISABLE=1, which forces TCP" + FIX,),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "a class named dranet.net that selects GPUs is not RDMA",
        lambda kind: class_stack(kind, rdma_spec(rdma_container(nccl="1")), device_class="dranet.net", expressions=(GPU_CEL,)),
        over=WORKLOAD_KINDS,
    ),
]


test_rule, test_through_analyzer, test_table_covers_the_rule = table_tests(RULE, CASES)
