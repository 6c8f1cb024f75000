"""Deployment simulation: would a real ``pulumi up`` of this plan work?

Each check module looks at the planned objects (the stack's own and what its charts render) the
way the cluster and ARM would, and returns findings that name the object and the fix. A
``blocker`` is something a real apply fails on; a ``warning`` deploys but deserves a look.
``NOT_CHECKED`` says plainly what no offline plan can know.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

from aks_gpu_inference.planner.charts import ChartRender
from aks_gpu_inference.planner.deploy import (
    architecture,
    arm,
    capacity,
    chart_checks,
    crds,
    default_pools,
    devices,
    generated_routes,
    interconnect,
    lifecycle,
    namespaces,
    pod_security,
    program_warnings,
    request_path,
    router,
    scheduling,
)
from aks_gpu_inference.planner.deploy.finding import (
    CHECKS,
    GATEWAY_NOT_CHECKED,
    NOT_CHECKED,
    ROUTER_NOT_CHECKED,
    Finding,
)
from aks_gpu_inference.planner.deploy.model import DeployModel, assemble
from aks_gpu_inference.planner.engine.program import ProgramRun

__all__ = ["CHECKS", "NOT_CHECKED", "DeployModel", "Finding", "build", "limits", "run"]


def build(run: ProgramRun, charts: list[ChartRender], claims: list[Any] | None = None) -> DeployModel:
    """The planned cluster of an expanded run (chart children in ``run``), each pool advertising the devices
    the device plugins that would run there advertise."""
    model = assemble(run, charts, claims)
    devices.advertise(model)
    return model


def run(model: DeployModel, as_of: date, upstream: Path | None) -> list[Finding]:
    """Every deployability finding of a plan, blockers first."""
    findings = [
        *namespaces.check(model),
        *scheduling.check(model),
        *capacity.check(model),
        *crds.check(model),
        *crds.schemas(model, upstream),
        *generated_routes.check(model, upstream),
        *pod_security.check(model),
        *chart_checks.rendered(model),
        *chart_checks.hooks(model),
        *chart_checks.values(model),
        *router.check(model, upstream),
        *request_path.check(model, upstream),
        *lifecycle.check(model, as_of),
        *arm.check(model),
        *architecture.check(model),
        *interconnect.check(model),
        *default_pools.check(model),
        *program_warnings.check(model),
    ]
    return sorted(findings, key=lambda f: (f.level != "blocker", CHECKS.index(f.check)))


def limits(model: DeployModel, stack: str) -> list[str]:
    """What no offline plan of this stack can check, for what the stack has: Azure's own answers (``aks-gpu
    preflight`` asks for them), what the cluster alone knows, and, with a gateway or the router, what they create or
    need at run time."""
    found = [
        "the subscription's quota limits and usage, the sizes and zones it may use, the Kubernetes versions AKS offers, "
        f"feature registration: `aks-gpu preflight {stack}` reads them from Azure",
        *NOT_CHECKED,
    ]
    if any(o.kind == "AIGatewayRoute" for o in model.objects):
        found += GATEWAY_NOT_CHECKED
    if any(c.chart == router.CHART for c in model.charts):
        found += ROUTER_NOT_CHECKED
    return found
