"""What the plan knows of the stack's gateways, as data: each listener's HTTP filter chain and request paths
(``request_path.walk``) and every image the cluster pulls (``images.pulled``). ``report/gateway.py`` prints it;
``gateway.json`` and ``summary.json`` carry it."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from aks_gpu_inference.planner.deploy import images, request_path
from aks_gpu_inference.planner.deploy.model import DeployModel


def build(model: DeployModel, upstream: Path | None) -> dict:
    paths, _ = request_path.walk(model, upstream)
    return {
        "gateways": [asdict(p) for p in paths],
        "images": [asdict(i) for i in images.pulled(model)],
    }
