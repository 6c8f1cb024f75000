"""no-memlock-override: containers do not raise the memlock limit themselves."""

from aks_gpu_inference.policies.manifests import UNKNOWN
from aks_gpu_inference.policies.rules.no_memlock_override import RULE

from ._fixtures import WORKLOAD_KINDS, Case, container, table_tests, workload


def pod(*containers, **fields):
    return lambda kind: [workload(kind, {"containers": list(containers) or [container()], **fields})]


def shell(script, name="vllm"):
    return container(name, command=["/bin/sh", "-c"], args=[script])


SERVE = "exec vllm serve /models/llama --tensor-parallel-size 8"
OVERRIDE = "{label} {tpl}containers[0] vllm overrides the memlock limit (%r); add IPC_LOCK instead"

CASES = [
    Case("no override", pod(shell(SERVE)), over=WORKLOAD_KINDS),
    Case("no command at all", pod(), over=WORKLOAD_KINDS),
    Case(
        "ulimit -l unlimited",
        pod(shell(f"ulimit -l unlimited && {SERVE}")),
        per_template=(OVERRIDE % "ulimit -l",),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "ulimit -Hl", pod(shell(f"ulimit -Hl unlimited; {SERVE}")), per_template=(OVERRIDE % "ulimit -Hl",), over=WORKLOAD_KINDS
    ),
    Case(
        "ulimit --max-locked-memory",
        pod(shell(f"ulimit --max-locked-memory unlimited; {SERVE}")),
        per_template=(OVERRIDE % "ulimit --max-locked-memory",),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "prlimit --memlock in command",
        pod(container(command=["prlimit", "--pid", "1", "--memlock=unlimited:unlimited"])),
        per_template=(OVERRIDE % "prlimit --pid 1 --memlock",),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "memlock in limits.conf",
        pod(shell(f"echo '* hard memlock unlimited' >> /etc/security/limits.conf; {SERVE}")),
        per_template=(OVERRIDE % "memlock",),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "in an initContainer",
        pod(initContainers=[shell("ulimit -l unlimited", "init")]),
        per_template=("{label} {tpl}initContainers[0] init overrides the memlock limit ('ulimit -l')",),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "in an ephemeralContainer",
        pod(ephemeralContainers=[shell("ulimit -l unlimited", "debug")]),
        per_template=("{label} {tpl}ephemeralContainers[0] debug overrides the memlock limit",),
        over=WORKLOAD_KINDS,
    ),
    Case("other ulimits are fine", pod(shell(f"ulimit -n 65536 && {SERVE}")), over=WORKLOAD_KINDS),
    Case(
        "mandatory override",
        pod(shell("ulimit -l unlimited")),
        per_template=(OVERRIDE % "ulimit -l",),
        level="mandatory",
        over=("Deployment",),
    ),
    Case("disabled", pod(shell("ulimit -l unlimited")), level="disabled", over=("Deployment",)),
    # unknown commands are skipped
    Case("unknown args", pod(container(command=["/bin/sh", "-c"], args=UNKNOWN)), over=WORKLOAD_KINDS),
    Case("unknown argument", pod(container(command=["/bin/sh", "-c"], args=[UNKNOWN])), over=WORKLOAD_KINDS),
    Case("unknown pod spec", lambda kind: [workload(kind, UNKNOWN)], over=WORKLOAD_KINDS),
]


test_rule, test_through_analyzer, test_table_covers_the_rule = table_tests(RULE, CASES)
