"""Deployment simulation: would a real ``pulumi up`` of this plan work?

Each check module looks at the planned objects (the stack's own and what its charts render) the
way the cluster and ARM would, and returns findings that name the object and the fix. A
``blocker`` is something a real apply fails on; a ``warning`` deploys but deserves a look.
``NOT_CHECKED`` says plainly what no offline plan can know.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import date
from pathlib import Path
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
    level: Literal["blocker", "warning"]
    object: str
    message: str
    fix: str

    def as_dict(self) -> dict:
        return asdict(self)


def run(model, as_of: date, upstream: Path | None) -> list[Finding]:
    """Every deployability finding of a plan, blockers first."""
    from planner.deploy import (
        arm,
        capacity,
        chart_checks,
        crds,
        lifecycle,
        namespaces,
        pod_security,
        request_path,
        router,
        scheduling,
    )

    findings = [
        *namespaces.check(model),
        *scheduling.check(model),
        *capacity.check(model),
        *crds.check(model),
        *crds.schemas(model, upstream),
        *pod_security.check(model),
        *chart_checks.rendered(model),
        *chart_checks.hooks(model),
        *chart_checks.values(model),
        *router.check(model, upstream),
        *request_path.check(model, upstream),
        *lifecycle.check(model, as_of),
        *arm.check(model),
    ]
    return sorted(findings, key=lambda f: (f.level != "blocker", CHECKS.index(f.check)))
