"""Every pod against the Pod Security Standard its namespace enforces, chart pods included.

The levels are Kubernetes' Pod Security Standards (kubernetes.io/docs/concepts/security/
pod-security-standards, v1.35). A namespace without an ``enforce`` label runs at the cluster
default, which on AKS is ``privileged``. A Deployment whose pods are refused never becomes ready.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from aks_gpu_inference.components.core.security import ENFORCE_LABEL
from aks_gpu_inference.planner.deploy.finding import Finding
from aks_gpu_inference.planner.deploy.model import DeployModel
from aks_gpu_inference.policies.manifests import CONTAINER_LISTS, get, items

BASELINE_CAPABILITIES = frozenset(
    {
        "AUDIT_WRITE",
        "CHOWN",
        "DAC_OVERRIDE",
        "FOWNER",
        "FSETID",
        "KILL",
        "MKNOD",
        "NET_BIND_SERVICE",
        "SETFCAP",
        "SETGID",
        "SETPCAP",
        "SETUID",
        "SYS_CHROOT",
    }
)
SAFE_SYSCTLS = frozenset(
    {
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.ip_unprivileged_port_start",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range",
        "net.ipv4.ip_local_reserved_ports",
        "net.ipv4.tcp_keepalive_time",
        "net.ipv4.tcp_fin_timeout",
        "net.ipv4.tcp_keepalive_intvl",
        "net.ipv4.tcp_keepalive_probes",
    }
)
RESTRICTED_VOLUMES = frozenset(
    {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret", "image"}
)


def _containers(spec: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for list_name in CONTAINER_LISTS:
        for container in items(spec.get(list_name)):
            if isinstance(container, Mapping):
                yield f"{list_name} {container.get('name', '?')}", container


def baseline(spec: Mapping[str, Any]) -> list[str]:
    """Violations of the baseline level."""
    problems = [f"{field}: true" for field in ("hostNetwork", "hostPID", "hostIPC") if spec.get(field) is True]
    problems += [
        f"hostPath volume {v.get('name')}" for v in items(spec.get("volumes")) if isinstance(v, Mapping) and "hostPath" in v
    ]
    for sysctl in items(get(spec, "securityContext", "sysctls")):
        if get(sysctl, "name") not in SAFE_SYSCTLS:
            problems.append(f"sysctl {get(sysctl, 'name')}")
    if get(spec, "securityContext", "seccompProfile", "type") == "Unconfined":
        problems.append("pod seccompProfile Unconfined")
    for where, container in _containers(spec):
        context = container.get("securityContext") or {}
        if context.get("privileged") is True:
            problems.append(f"{where}: privileged")
        added = {str(c) for c in items(get(context, "capabilities", "add"))} - BASELINE_CAPABILITIES
        if added:
            problems.append(f"{where}: adds capabilities {sorted(added)}")
        if any(get(port, "hostPort") for port in items(container.get("ports"))):
            problems.append(f"{where}: hostPort")
        if get(context, "seccompProfile", "type") == "Unconfined":
            problems.append(f"{where}: seccompProfile Unconfined")
        if context.get("procMount") not in (None, "Default"):
            problems.append(f"{where}: procMount {context['procMount']}")
    return problems


def restricted(spec: Mapping[str, Any]) -> list[str]:
    """Violations of the restricted level (baseline's included)."""
    problems = baseline(spec)
    for volume in items(spec.get("volumes")):
        if isinstance(volume, Mapping):
            kinds = set(volume) - {"name"}
            if kinds - RESTRICTED_VOLUMES and "hostPath" not in kinds:
                problems.append(f"volume {volume.get('name')} of type {sorted(kinds)[0]}")
    pod = spec.get("securityContext") or {}
    if pod.get("runAsUser") == 0:
        problems.append("pod runAsUser: 0")
    for where, container in _containers(spec):
        problems += [f"{where}: {problem}" for problem in _restricted_container(container.get("securityContext") or {}, pod)]
    return problems


def _restricted_container(context: Mapping[str, Any], pod: Mapping[str, Any]) -> list[str]:
    """What the restricted level refuses in one container's securityContext, beside its pod's."""
    problems = []
    if context.get("allowPrivilegeEscalation") is not False:
        problems.append("allowPrivilegeEscalation must be false")
    if context.get("runAsNonRoot", pod.get("runAsNonRoot")) is not True:
        problems.append("runAsNonRoot must be true")
    if context.get("runAsUser") == 0:
        problems.append("runAsUser: 0")
    seccomp = get(context, "seccompProfile", "type") or get(pod, "seccompProfile", "type")
    if seccomp not in ("RuntimeDefault", "Localhost"):
        problems.append("seccompProfile must be RuntimeDefault or Localhost")
    if "ALL" not in items(get(context, "capabilities", "drop")):
        problems.append("must drop ALL capabilities")
    # Capabilities baseline forbids are reported by baseline(); restricted allows NET_BIND_SERVICE alone.
    added = ({str(c) for c in items(get(context, "capabilities", "add"))} & BASELINE_CAPABILITIES) - {"NET_BIND_SERVICE"}
    if added:
        problems.append(f"adds capabilities {sorted(added)} (restricted allows NET_BIND_SERVICE only)")
    return problems


def privileged(_spec: Mapping[str, Any]) -> list[str]:
    """Violations of the privileged level: none."""
    return []


LEVELS = {"privileged": privileged, "baseline": baseline, "restricted": restricted}


def namespace_level(model: DeployModel, namespace: str | None) -> str:
    ns = model.namespaces.get(namespace or "default")
    if ns is None:
        return "privileged"
    labels = (ns.manifest.get("metadata") or {}).get("labels") or {}
    return str(labels.get(ENFORCE_LABEL, "privileged"))


def check(model: DeployModel) -> list[Finding]:
    findings = []
    for obj, template in model.pods():
        level = namespace_level(model, obj.namespace)
        problems = LEVELS.get(level, restricted)(template.spec)
        if problems:
            findings.append(
                Finding(
                    "pod-security",
                    "blocker",
                    obj.label,
                    f"namespace {obj.namespace!r} enforces Pod Security {level!r}, which refuses its pods: {'; '.join(problems)}",
                    "set the chart's or component's securityContext to meet the level, or document why the namespace needs a lower one",
                )
            )
    return findings
