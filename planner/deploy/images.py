"""Every image a stack makes the cluster pull, and where from.

Images of the pods the plan renders (the stack's own and its charts'), plus those that controllers
start at run time, read from the objects and values that choose them: the Envoy proxy
(EnvoyProxy ``envoyDeployment.container.image``), its shutdown manager (the Envoy Gateway image,
gateway-helm ``global.images.envoyGateway.image``), the rate-limit service
(``global.images.ratelimit.image``) and the AI Gateway extproc sidecar (ai-gateway-helm
``extProc.image``).
"""

from __future__ import annotations

from dataclasses import dataclass

from aks_gpu_inference.components.core.images import parse
from aks_gpu_inference.planner.deploy.model import DeployModel


@dataclass(frozen=True)
class PulledImage:
    image: str
    registry: str
    used_by: str


def _dig(values: dict, *path: str):
    for key in path:
        values = values.get(key) if isinstance(values, dict) else None
    return values


def runtime_images(model: DeployModel) -> list[tuple[str, str]]:
    """(image, who starts it) for the pods controllers create after deploy."""
    found = []
    for obj in model.objects:
        if obj.kind == "EnvoyProxy":
            image = _dig(obj.manifest, "spec", "provider", "kubernetes", "envoyDeployment", "container", "image")
            found.append((image or "Envoy Gateway's built-in default", f"Envoy proxy pods ({obj.label})"))
    for chart in model.charts:
        name = chart.chart.rsplit("/", 1)[-1]
        if name == "gateway-helm":
            for key, who in (("envoyGateway", "shutdown manager in each Envoy proxy pod"), ("ratelimit", "rate-limit service")):
                image = _dig(chart.values, "global", "images", key, "image")
                found.append((image or "chart default", f"{who} (started by Envoy Gateway)"))
        if name == "ai-gateway-helm":
            repo, tag = _dig(chart.values, "extProc", "image", "repository"), _dig(chart.values, "extProc", "image", "tag")
            found.append((f"{repo}:{tag}" if repo and tag else "chart default", "extproc sidecar (injected by AI Gateway)"))
    return found


def pulled(model: DeployModel) -> list[PulledImage]:
    """One row per image, with every workload that uses it, sorted by registry and image."""
    users: dict[str, list[str]] = {}
    for obj, template in model.pods():
        for _, container in template.containers():
            image = container.get("image")
            if isinstance(image, str):
                users.setdefault(image, []).append(obj.label)
    for image, who in runtime_images(model):
        users.setdefault(image, []).append(who)
    rows = []
    for image, who in users.items():
        registry = parse(image).registry if ":" in image or "/" in image else "?"
        rows.append(PulledImage(image, registry, ", ".join(sorted(set(who)))))
    return sorted(rows, key=lambda r: (r.registry, r.image))
