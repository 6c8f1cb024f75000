"""No container is privileged; containers that claim RDMA NICs get exactly what RDMA needs.

Seed 004: RDMA pods add ``IPC_LOCK`` (to pin memory for the NIC), drop ``ALL``, set
``allowPrivilegeEscalation: false`` and never ``privileged: true`` — a privileged container owns
the node. Pod Security "baseline" forbids IPC_LOCK, so RDMA namespaces run under "privileged"
admission and this rule is the compensating control. Unknown values fail closed.
"""

from __future__ import annotations

from . import Rule
from ._model import StackIndex, Violation, get, is_unknown, items, pod_templates, rdma_containers

NAME = "ipc-lock-without-privileged"


def _check(index: StackIndex, config: dict):
    allowed = set(config["allowed_capabilities"]) | {"IPC_LOCK"}
    for r in index.resources:
        for template in pod_templates(r):
            for where, container in template.containers():
                privileged = get(container, "securityContext", "privileged")
                if privileged is True or is_unknown(privileged):
                    state = "is unknown during preview (fails closed)" if is_unknown(privileged) else "is true"
                    yield Violation(
                        NAME, r, f"{template.where(where)}: securityContext.privileged {state}; grant single capabilities instead"
                    )
            for where, container in rdma_containers(index, template):
                context = get(container, "securityContext", default={})
                added = get(context, "capabilities", "add")
                dropped = get(context, "capabilities", "drop")
                escalation = get(context, "allowPrivilegeEscalation")
                problems = []
                if is_unknown(added) or "IPC_LOCK" not in items(added):
                    problems.append("add capability IPC_LOCK (RDMA pins memory)")
                extra = sorted(set(map(str, items(added))) - allowed)
                if extra:
                    problems.append(f"remove capabilities {extra} (allowed: {sorted(allowed)})")
                if is_unknown(dropped) or "ALL" not in items(dropped):
                    problems.append("drop ALL capabilities")
                if escalation is not False:
                    problems.append("set allowPrivilegeEscalation: false")
                if problems:
                    yield Violation(NAME, r, f"{template.where(where)} claims RDMA NICs: " + "; ".join(problems))


RULE = Rule(
    name=NAME,
    description="No privileged containers; containers claiming RDMA NICs add IPC_LOCK, drop ALL and forbid privilege escalation.",
    enforcement="mandatory",
    scope="stack",
    unknowns="fails closed",
    config={
        "allowed_capabilities": {
            "type": "array",
            "items": {"type": "string"},
            "default": [],
            "description": "Capabilities RDMA containers may add besides IPC_LOCK.",
        }
    },
    check=_check,
)
