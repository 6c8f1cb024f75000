"""No container is privileged; containers that use RDMA get exactly what RDMA needs.

Seed 004: RDMA pods add ``IPC_LOCK`` (to pin memory for the NIC), drop ``ALL``, set
``allowPrivilegeEscalation: false`` and never ``privileged: true`` — a privileged container owns
the node — nor ``SYS_ADMIN`` or any other capability. Pod Security "baseline" forbids IPC_LOCK, so RDMA
namespaces run under "privileged" admission and this rule is the compensating control. Which containers use
RDMA is ``_rdma``'s notion (an IP-over-InfiniBand network alone needs no IPC_LOCK). A fragment (a patch) is
held to what it sets, not to what it leaves out. Capabilities are compared without their ``CAP_`` prefix, as
container runtimes read them. Unknown values fail closed.
"""

from __future__ import annotations

from aks_gpu_inference.policies.manifests import Exemption, StackIndex, Violation, get, is_unknown, items, pod_templates
from aks_gpu_inference.policies.rules._rdma import context, describe, rdma_uses
from aks_gpu_inference.policies.rules._rule import Rule

NAME = "ipc-lock-without-privileged"

NODE_AGENTS = [
    {
        "namespace": "kube-system",
        "image": "registry.k8s.io/networking/dranet",
        "why": "DRANET moves RDMA network devices into pod network namespaces (kubernetes-sigs/dranet v1.4.0 chart: privileged, hostNetwork)",
    },
    {
        "namespace": "dra-driver-nvidia-gpu",
        "image": "registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu",
        "why": "the NVIDIA DRA kubelet plugin creates GPU device nodes and writes CDI specs on the host with Bidirectional mounts (chart 0.4.1: privileged)",
    },
]
"""The node agents the project's own components install, each by namespace and image repository:
the only privileged containers the default configuration accepts."""


def exempting(agents: list[dict], namespace: object, image: object) -> dict | None:
    """The node-agent entry that accepts a privileged container of ``image`` in ``namespace``, if any."""
    if not isinstance(namespace, str) or not isinstance(image, str):
        return None
    repository = image.split("@", 1)[0]
    if repository.rfind(":") > repository.rfind("/"):
        repository = repository[: repository.rfind(":")]  # the tag, not a registry port
    for agent in agents:
        if agent["namespace"] == namespace and repository == agent["image"]:
            return agent
    return None


def _check(index: StackIndex, config: dict):
    allowed = {_capability(c) for c in config["allowed_capabilities"]} | {"IPC_LOCK"}
    ctx = context(index)
    for r in index.resources:
        namespace = get(r.props, "metadata", "namespace")
        for template in pod_templates(r):
            for part in template.unknown_parts():
                yield Violation(
                    NAME,
                    r,
                    f"{r.label}: {part} is unknown during preview, so privileged containers cannot be ruled out (fails closed)",
                )
            for where, container in template.containers():
                privileged = get(container, "securityContext", "privileged")
                agent = exempting(config["node_agents"], namespace, container.get("image")) if privileged is True else None
                if agent:
                    yield Exemption(NAME, r, f"{template.where(where)}: privileged node agent {agent['image']}", agent["why"])
                    continue
                if privileged is True or is_unknown(privileged):
                    state = "is unknown during preview (fails closed)" if is_unknown(privileged) else "is true"
                    yield Violation(
                        NAME, r, f"{template.where(where)}: securityContext.privileged {state}; grant single capabilities instead"
                    )
            for use in rdma_uses(index, template, possibly=True, ctx=ctx):
                if not use.verbs:
                    continue
                problems = _rdma_problems(get(use.container, "securityContext", default={}), allowed, template.fragment)
                if problems:
                    how = (
                        describe([use])
                        if use.certain
                        else "may claim RDMA NICs (its claims are unknown during preview; fails closed)"
                    )
                    yield Violation(NAME, r, f"{template.where(use.where)} {how}: " + "; ".join(problems))


def _capability(name: object) -> str:
    """A capability as the kernel names it without ``CAP_`` (containerd and CRI-O accept both spellings)."""
    return str(name).upper().removeprefix("CAP_")


def _rdma_problems(context, allowed: set[str], fragment: bool) -> list[str]:
    """What an RDMA container's security context lacks or has too much of; for a fragment only what it has too much of."""
    added = get(context, "capabilities", "add")
    dropped = get(context, "capabilities", "drop")
    problems = []
    extra = sorted({_capability(c) for c in items(added) if not is_unknown(c)} - allowed)
    if fragment:
        return [f"remove capabilities {extra} (allowed: {sorted(allowed)})"] if extra else []
    if is_unknown(added) or any(is_unknown(c) for c in items(added)):
        problems.append("capabilities.add is unknown during preview (fails closed)")
    elif "IPC_LOCK" not in {_capability(c) for c in items(added)}:
        problems.append("add capability IPC_LOCK (RDMA pins memory)")
    if extra:
        problems.append(f"remove capabilities {extra} (allowed: {sorted(allowed)})")
    if "ALL" not in {_capability(c) for c in items(dropped) if not is_unknown(c)}:
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
    description="No privileged containers; containers that use RDMA add IPC_LOCK, drop ALL and forbid privilege escalation.",
    why="No container is `privileged`; containers that use RDMA (as `rdma-capable-sku` reads it; an IPoIB network alone excepted) add `IPC_LOCK`, drop `ALL`, set `allowPrivilegeEscalation: false`, and add nothing else, `SYS_ADMIN` least of all (seed 004). A patch is held to what it sets.",
    fix="replace `privileged` with the capability set",
    enforcement="mandatory",
    scope="stack",
    unknowns="fails closed",
    config={
        "allowed_capabilities": {
            "type": "array",
            "items": {"type": "string"},
            "default": [],
            "description": "Capabilities RDMA containers may add besides IPC_LOCK.",
        },
        "node_agents": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"namespace": {"type": "string"}, "image": {"type": "string"}, "why": {"type": "string"}},
                "required": ["namespace", "image", "why"],
            },
            "default": NODE_AGENTS,
            "description": "Privileged node agents accepted on purpose: namespace, image repository (no tag) and why it needs privileges.",
        },
    },
    check=_check,
)
