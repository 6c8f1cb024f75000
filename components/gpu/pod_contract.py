"""The pod-spec contract for RDMA workloads (seed 004 section 6), in one place.

VllmService, the qualification gates and user workloads all get their DRA claims, security
context, environment, node selector and tolerations from ``RdmaPodSpec``, so a fix here reaches
every RDMA pod. Plain data, no Pulumi: the same dicts go into Pulumi resources and YAML.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import FieldProblem

RDMA_ENV = {
    # RC verbs over InfiniBand plus CUDA copy/IPC for GPU memory (seed 004, NIXL over UCX).
    "UCX_TLS": "rc_x,cuda_copy,cuda_ipc,self",
    # Seed 002 gotcha 2 for every multi-node NCCL workload: InfiniBand on (NCCL's own default, so this alone does
    # not stop a fall back to sockets; NCCL_IB_ONLY does) and GPUDirect RDMA between GPU and NIC at any PCI distance.
    "NCCL_IB_DISABLE": "0",
    "NCCL_NET_GDR_LEVEL": "5",
}
NCCL_IB_ONLY = {"NCCL_NET": "IB"}
"""For a workload that must cross nodes over InfiniBand (training workers, the NCCL gates): NCCL then fails to create
a communicator ("Failed to initialize any NET plugin", ncclInvalidUsage) instead of silently running over TCP sockets,
about 80x slower (seed 002 gotcha 2). NVIDIA/nccl@v2.27.7-1 and @v2.30.7-1: ``NCCL_NET`` becomes
``comm->config.netName`` (src/init.cc), only the net plugin of that name (case-insensitive; the internal ones are
"IB", then "Socket") may serve the communicator (src/plugin/net.cc ``ncclNetPluginAssignToComm``), and an IB plugin
with no usable device is disabled ("NET/IB : No device found.", src/transport/net_ib/init.cc). Without it a failed
IB plugin falls through to Socket, and ``NCCL_IB_DISABLE=0`` changes nothing (0 is its default,
src/transport/net_ib/init.cc ``NCCL_PARAM(IbDisable, "IB_DISABLE", 0)``). Not in ``RDMA_ENV``: a serving engine
whose NCCL stays inside one node (tensor parallel over NVLink) should not refuse to start because a NIC is down."""


def full_node_gpu_template(pool: str) -> str:
    """The DRA claim template for every GPU of one node of ``pool`` (DraDeviceClasses makes it)."""
    return f"{pool}-gpus-full-node"


def full_node_gpu_problems(where: str, claims: Any, pool: str, namespace: str) -> list[FieldProblem]:
    """An RDMA workload's DRA GPU claims (``templates`` and ``namespace``, as DraDeviceClasses has them), if
    given: a full-node template for ``pool``, in the RDMA ``namespace`` beside the NIC templates."""
    if claims is None:
        return []
    problems, template = [], full_node_gpu_template(pool)
    if template not in claims.templates:
        problems.append(FieldProblem(where, sorted(claims.templates), f"has no full-node template {template!r}"))
    if claims.namespace != namespace:
        why = f"claim templates are namespaced: the GPU templates must live in the RDMA namespace {namespace!r}"
        problems.append(FieldProblem(where, claims.namespace, why))
    return problems


RDMA_CAPABILITY = "IPC_LOCK"
"""Lets the process pin memory for the NICs. The default 8 MiB RLIMIT_MEMLOCK stays: seed 004 ran
with it and no explicit memlock override."""


@dataclass(frozen=True)
class RdmaPodSpec:
    """What an RDMA pod needs. ``claims`` maps each pod-level claim name to its ResourceClaimTemplate."""

    claims: dict[str, str]
    node_selector: dict[str, str]
    tolerations: list[dict[str, str]]
    env: dict[str, str] = field(default_factory=lambda: dict(RDMA_ENV))

    def resource_claims(self) -> list[dict[str, str]]:
        """``spec.resourceClaims`` entries."""
        return [{"name": name, "resourceClaimTemplateName": template} for name, template in self.claims.items()]

    def container_claims(self) -> list[dict[str, str]]:
        """``resources.claims`` entries of the container that uses the devices."""
        return [{"name": name} for name in self.claims]

    @staticmethod
    def security_context(base: dict[str, Any] | None = None) -> dict[str, Any]:
        """IPC_LOCK without privileged: drop ALL, add IPC_LOCK, no escalation, never privileged, as root.

        Root because an added capability reaches only a root process: Kubernetes sets no ambient
        capabilities (kubernetes/kubernetes#56374), so under a non-root user IPC_LOCK would be in the
        bounding set only and memory registration would stop at RLIMIT_MEMLOCK (8 MiB). Seed 004's
        qualified pod ran the image's default user, root. Everything else stays dropped.
        """
        context = copy.deepcopy(base or {})
        context.pop("privileged", None)
        capabilities = context["capabilities"] = dict(context.get("capabilities") or {})
        capabilities["drop"] = ["ALL"]
        capabilities["add"] = sorted(set(capabilities.get("add") or []) | {RDMA_CAPABILITY})
        context["allowPrivilegeEscalation"] = False
        context.update(runAsUser=0, runAsNonRoot=False)
        return context

    def apply(self, pod_spec: dict[str, Any], containers: list[str] | None = None) -> dict[str, Any]:
        """A copy of ``pod_spec`` with the contract merged in.

        ``containers`` names the containers that use the NICs (default: every container of the
        pod); others keep their spec. Existing env values of the same names are replaced.
        """
        spec = copy.deepcopy(pod_spec)
        names = {c.get("name") for c in spec.get("containers") or []}
        missing = sorted(set(containers or []) - names)
        if missing:
            raise ValueError(
                f"no container named {', '.join(missing)} in the pod; containers: {', '.join(sorted(map(str, names)))}"
            )
        spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), **self.node_selector}
        tolerations = list(spec.get("tolerations") or [])
        spec["tolerations"] = tolerations + [t for t in self.tolerations if t not in tolerations]
        existing = {c["name"] for c in spec.get("resourceClaims") or []}
        spec["resourceClaims"] = list(spec.get("resourceClaims") or []) + [
            c for c in self.resource_claims() if c["name"] not in existing
        ]
        for container in spec.get("containers") or []:
            if containers is not None and container.get("name") not in containers:
                continue
            resources = container["resources"] = dict(container.get("resources") or {})
            names = {c["name"] for c in resources.get("claims") or []}
            resources["claims"] = list(resources.get("claims") or []) + [
                c for c in self.container_claims() if c["name"] not in names
            ]
            container["securityContext"] = self.security_context(container.get("securityContext"))
            env = [e for e in container.get("env") or [] if e.get("name") not in self.env]
            container["env"] = env + [{"name": k, "value": v} for k, v in self.env.items()]
        return spec
