"""What a deployability check reports, the checks in report order, and what no offline plan can check."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

CHECKS = (
    "namespaces",
    "scheduling",
    "capacity",
    "crds",
    "pod-security",
    "charts",
    "helm-hooks",
    "chart-values",
    "router-config",
    "request-path",
    "lifecycle",
    "arm",
    "architecture",
    "interconnect",
    "platform-pool",
    "program",
)

NOT_CHECKED = (
    "that each image can be pulled from the cluster (registry reachability, credentials)",
    "CPU and memory requests against node allocatable",
    "admission webhooks and Azure Policy for AKS other than Pod Security",
    "Azure role-assignment propagation delay (a first apply can see 403s for a minute or two)",
)
"""What no offline plan of any stack knows (``deploy.limits`` adds what depends on the stack)."""
GATEWAY_NOT_CHECKED = (
    "the pods Envoy Gateway and AI Gateway create at run time (Envoy proxies with the extproc sidecar, the rate-limit "
    "service): the plan reads their images and ports from the objects and values that choose them",
    "the gateway's filter chain runs as simulated from Envoy Gateway v1.8.2 and AI Gateway v1.1.0 sources, not by Envoy",
)
"""What a stack with an AI gateway adds."""
ROUTER_NOT_CHECKED = (
    "that the router's model directories were uploaded to the model store (the copy Job fails, naming what is missing)",
)
"""What a stack with the semantic router adds."""


@dataclass(frozen=True)
class Finding:
    check: str
    level: Literal["blocker", "warning", "unchecked"]
    """``unchecked``: a check that could not run here; it makes the plan incomplete (``planner.verdict``)."""
    object: str
    message: str
    fix: str

    def as_dict(self) -> dict:
        return asdict(self)
