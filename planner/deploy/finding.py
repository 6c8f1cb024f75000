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
    "subscription quota and regional capacity for each VM size (new subscriptions have 0 N-family vCPUs)",
    "that each image can be pulled from the cluster (registry reachability, credentials)",
    "CPU and memory requests against node allocatable",
    "admission webhooks and Azure Policy for AKS other than Pod Security",
    "Azure role-assignment propagation delay (a first apply can see 403s for a minute or two)",
    "the pods Envoy Gateway and AI Gateway start after deploy (Envoy proxies with the extproc sidecar, the rate-limit "
    "service): their images and ports are read from the objects and values that choose them, not rendered",
    "the gateway's filter chain runs as simulated from Envoy Gateway v1.8.2 and AI Gateway v1.1.0 sources, not by Envoy",
    "that the router's model directories were uploaded to the model store (the copy Job fails, naming what is missing)",
)


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
