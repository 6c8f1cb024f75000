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
            for part in template.unknown_parts():
                yield Violation(
                    NAME,
                    r,
                    f"{r.label}: {part} is unknown during preview, so privileged containers cannot be ruled out (fails closed)",
                )
            for where, container in template.containers():
                privileged = get(container, "securityContext", "privileged")
                if privileged is True or is_unknown(privileged):
                    state = "is unknown during preview (fails closed)" if is_unknown(privileged) else "is true"
                    yield Violation(
                        NAME, r, f"{template.where(where)}: securityContext.privileged {state}; grant single capabilities instead"
                    )
            for where, container, certain in rdma_containers(index, template, possibly=True):
                problems = _rdma_problems(get(container, "securityContext", default={}), allowed)
                if problems:
                    claim = (
                        "claims RDMA NICs"
                        if certain
                        else "may claim RDMA NICs (its claims are unknown during preview; fails closed)"
                    )
                    yield Violation(NAME, r, f"{template.where(where)} {claim}: " + "; ".join(problems))


def _rdma_problems(context, allowed: set[str]) -> list[str]:
    added = get(context, "capabilities", "add")
    dropped = get(context, "capabilities", "drop")
    problems = []
    if is_unknown(added) or any(is_unknown(c) for c in items(added)):
        problems.append("capabilities.add is unknown during preview (fails closed)")
    elif "IPC_LOCK" not in items(added):
        problems.append("add capability IPC_LOCK (RDMA pins memory)")
    extra = sorted({str(c) for c in items(added) if not is_unknown(c)} - allowed)
    if extra:
        problems.append(f"remove capabilities {extra} (allowed: {sorted(allowed)})")
    if "ALL" not in items(dropped):
        unknown_drop = is_unknown(dropped) or any(is_unknown(c) for c in items(dropped))
        problems.append("capabilities.drop is unknown during preview (fails closed)" if unknown_drop else "drop ALL capabilities")
    escalation = get(context, "allowPrivilegeEscalation")
    if is_unknown(escalation):
        problems.append("allowPrivilegeEscalation is unknown during preview (fails closed)")
    elif escalation is not False:
        problems.append("set allowPrivilegeEscalation: false")
    return problems


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
