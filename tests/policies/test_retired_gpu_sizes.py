"""retired-gpu-size: agent pools do not use GPU sizes Azure has retired."""

from aks_gpu_inference.policies.manifests import UNKNOWN
from aks_gpu_inference.policies.rules.retired_gpu_sizes import RULE

from ._fixtures import POOL_STYLES, Case, pool_stack, table_tests


def pool(vm_size, **fields):
    return lambda style: pool_stack(style, "gpu", vm_size, taints=["sku=gpu:NoSchedule"], **fields)


CASES = [
    Case("current size", pool("Standard_NC24ads_A100_v4"), over=POOL_STYLES),
    Case(
        "retired NCv3",
        pool("Standard_NC6s_v3"),
        once=(("{pool}: Standard_NC6s_v3 was retired on 2025-09-30 (NCv3 retired", "; move to a current size"),),
        over=POOL_STYLES,
    ),
    Case(
        "retired size in a system pool",
        pool("Standard_NC6s_v3", mode="System"),
        once=("{pool}: Standard_NC6s_v3 was retired",),
        over=POOL_STYLES,
    ),
    Case("size outside the catalog", pool("Standard_D8s_v5"), over=POOL_STYLES),
    Case(
        "mandatory override",
        pool("Standard_NC6s_v3"),
        once=("{pool}: Standard_NC6s_v3 was retired",),
        level="mandatory",
        over=("AgentPool",),
    ),
    Case("disabled", pool("Standard_NC6s_v3"), level="disabled", over=("AgentPool",)),
    Case("unknown size is skipped", pool(UNKNOWN), over=POOL_STYLES),
]


test_rule, test_through_analyzer, test_table_covers_the_rule = table_tests(RULE, CASES)
