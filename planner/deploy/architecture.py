"""Every image a pod runs exists for the CPU architecture of the nodes it can land on.

A pool's architecture is the catalog's (``catalog.node_arch``: the GB-series are NVIDIA Grace, arm64) and AKS labels
its nodes ``kubernetes.io/arch`` with it. A container whose image was not published for that architecture never
starts (``exec format error``, or no manifest for the platform), so on every pool a pod fits (``scheduling``), each
image is looked up in the pins table's ``architectures``: one published without the pool's architecture is a blocker;
one the table holds no verified list for, or that is not a pin at all, cannot be checked offline (the plan is then
incomplete, naming the image). amd64 pools are not checked: every image the project runs is built for amd64 first.
"""

from __future__ import annotations

from aks_gpu_inference.components.core import pins
from aks_gpu_inference.planner.deploy.finding import Finding
from aks_gpu_inference.planner.deploy.model import DeployModel
from aks_gpu_inference.planner.deploy.scheduling import fitting_pools

ARCH_LABEL = "kubernetes.io/arch"


def check(model: DeployModel) -> list[Finding]:
    """One finding per image that runs on an arm64 pool without a verified arm64 variant, naming its users."""
    users: dict[str, tuple[set[str], set[str]]] = {}
    for obj, template in model.pods():
        arm = {p.name for p in fitting_pools(model, obj, template.spec)[0] if p.labels.get(ARCH_LABEL) == "arm64"}
        if not arm:
            continue
        for _, container in template.containers():
            image = container.get("image")
            if isinstance(image, str):
                pools, labels = users.setdefault(image, (set(), set()))
                pools |= arm
                labels.add(obj.label)
    findings = [_image_finding(image, sorted(pools), sorted(labels)) for image, (pools, labels) in sorted(users.items())]
    return [f for f in findings if f is not None]


def _image_finding(image: str, pools: list[str], labels: list[str]) -> Finding | None:
    pin = pins.pin_of_image(image)
    on = f"on arm64 pool{'s' if len(pools) > 1 else ''} {', '.join(pools)} ({'; '.join(labels)})"
    if pin is None:
        return Finding(
            "architecture",
            "unchecked",
            image,
            f"{image} runs {on}; the pins table does not hold it, so whether it has an arm64 variant is not known",
            "pin the image in components/core/pins.json with the architectures its release publishes, and their source",
        )
    if pin.architectures is None:
        return Finding(
            "architecture",
            "unchecked",
            image,
            f"{image} runs {on}; whether the tag has an arm64 variant is not known ({pin.architectures_source})",
            f"check the tag's manifest list (`docker manifest inspect {image}`) and record its architectures in pins.json",
        )
    if "arm64" not in pin.architectures:
        return Finding(
            "architecture",
            "blocker",
            image,
            f"{image} runs {on}, but the tag is published for {', '.join(pin.architectures)} only "
            f"({pin.architectures_source}): the container cannot start there",
            "use a tag with an arm64 variant, or keep the workload off the arm64 pool",
        )
    return None
