"""What DraDeviceClasses renders, as plain dicts: the CEL of its per-model DeviceClasses, its GPU
claim templates, and the values of the NVIDIA DRA driver and GPU Operator charts."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..core import pins
from ..core.labels import (
    GPU_DEVICE_CLASS,
    MIG_DEVICE_CLASS,
    NVIDIA_DRA_DRIVER,
    NVIDIA_GPU,
    NVIDIA_GPU_TOLERATION,
    POOL_ANNOTATION,
    is_mig_resource,
    mig_slice,
)
from .compute_domain import channel_template
from .dra_device_classes_args import GpuOperatorArgs
from .pod_contract import full_node_gpu_template
from .pools import GpuPool, pool_affinity, pool_tolerations


def model_class_name(gpu_model: str) -> str:
    """DeviceClass for one GPU model, e.g. ``gpu-h100-80gb``."""
    return f"gpu-{gpu_model.lower()}"


def model_class_cel(product_names: list[str]) -> str:
    """Whole GPUs (not MIG slices) of the NVML product names of one model."""
    names = ", ".join(f'"{n}"' for n in product_names)
    return (
        f'device.driver == "{NVIDIA_DRA_DRIVER}" && device.attributes["{NVIDIA_DRA_DRIVER}"].type == "gpu" '
        f'&& device.attributes["{NVIDIA_DRA_DRIVER}"].productName in [{names}]'
    )


def mig_profile_cel(profile: str) -> str:
    """MIG slices of one profile, e.g. ``1g.10gb``."""
    return f'device.attributes["{NVIDIA_DRA_DRIVER}"].profile == "{profile}"'


@dataclass(frozen=True)
class GpuClaim:
    """One GPU ResourceClaimTemplate: ``count`` devices of ``device_class``, narrowed by ``cel``."""

    template: str
    """The template's name, e.g. ``gpu-1`` or ``h100-gpus-full-node``."""
    device_class: str
    """The DeviceClass its request names."""
    count: int
    """How many devices it asks for."""
    pool: str | None = None
    """The pool it is written for (annotated, for the planner), or None when any pool fits."""
    cel: str | None = None
    """A CEL selector that narrows the class (a MIG profile), or None."""

    @property
    def description(self) -> str:
        """What it asks for, e.g. ``8 x gpu-h100-80gb``."""
        return f"{self.count} x {self.device_class}" + (f" ({self.cel})" if self.cel else "")

    def metadata(self, namespace: str) -> dict[str, Any]:
        metadata: dict[str, Any] = {"name": self.template, "namespace": namespace}
        if self.pool:
            metadata["annotations"] = {POOL_ANNOTATION: self.pool}
        return metadata

    def spec(self) -> dict[str, Any]:
        request: dict[str, Any] = {"deviceClassName": self.device_class, "count": self.count}
        if self.cel:
            request["selectors"] = [{"cel": {"expression": self.cel}}]
        return {"spec": {"devices": {"requests": [{"name": "gpus", "exactly": request}]}}}


def full_node_claim(pool: GpuPool, device_class: str) -> GpuClaim:
    """Every whole GPU of one node of ``pool``, of its model's class."""
    return GpuClaim(full_node_gpu_template(pool.pool_name), device_class, pool.gpus_per_node, pool.pool_name)


def count_claim(count: int) -> GpuClaim:
    """``count`` whole GPUs of any model."""
    return GpuClaim(f"gpu-{count}", GPU_DEVICE_CLASS, count)


def mig_claim(pool: GpuPool) -> GpuClaim:
    """One MIG slice of ``pool``'s profile."""
    profile = mig_slice(pool.gpu_resource_name)
    template = f"{pool.pool_name}-mig-{profile.replace('.', '-')}"
    return GpuClaim(template, MIG_DEVICE_CLASS, 1, pool.pool_name, mig_profile_cel(profile))


def dra_claims(gpu_counts: Sequence[int], pools: Sequence[GpuPool]) -> list[GpuClaim]:
    """The claim templates the DRA section makes: every whole GPU of a node per pool (of its model's class), ``count``
    whole GPUs of any model per ``gpu_counts``, one MIG slice per MIG pool."""
    claims = [full_node_claim(p, model_class_name(p.sku.gpu_model)) for p in pools if p.gpu_resource_name == NVIDIA_GPU]
    claims += [count_claim(count) for count in gpu_counts]
    return claims + [mig_claim(p) for p in pools if is_mig_resource(p.gpu_resource_name)]


@dataclass(frozen=True)
class DraFacts:
    """What the DRA section is, from its args and pools alone: its namespace, the claim templates it makes (name -> what
    each asks for), the counts, and the IMEX channel template of each rack-scale pool. ``DraDeviceClasses`` has the
    same, and the stack checks other components against these before anything exists."""

    namespace: str
    templates: dict[str, str]
    gpu_counts: list[int]
    channel_templates: dict[str, str]


def dra_facts(namespace: str, gpu_counts: Sequence[int], pools: Sequence[GpuPool]) -> DraFacts:
    return DraFacts(
        namespace,
        {claim.template: claim.description for claim in dra_claims(gpu_counts, pools)},
        list(gpu_counts),
        {p.pool_name: channel_template(p.pool_name) for p in sorted(pools, key=lambda p: p.pool_name) if p.sku.rack_size},
    )


def dra_tolerations(pools: Sequence[GpuPool]) -> list[dict[str, str]]:
    """Every taint of the DRA pools, plus NVIDIA's own ``nvidia.com/gpu`` taint."""
    return pool_tolerations(pools, NVIDIA_GPU_TOLERATION)


def dra_driver_values(driver_root: str, pools: Sequence[GpuPool]) -> dict[str, Any]:
    """The ``dra-driver-nvidia-gpu`` chart's values: GPUs, ComputeDomains where a pool's NVLink spans a rack, its
    kubelet plugin on exactly the DRA pools, the pinned image (published for amd64 and arm64)."""
    image = pins.image_pin("dra-driver-nvidia-gpu")
    return {
        "nvidiaDriverRoot": driver_root,
        "resourceApiVersion": pins.api_version("DeviceClass"),
        "image": {"repository": image.name, "tag": image.tag},
        # ComputeDomains need multi-node NVLink: on only when a pool has it (an NVL72 rack of GB-series VMs).
        "resources": {"gpus": {"enabled": True}, "computeDomains": {"enabled": any(p.sku.rack_size for p in pools)}},
        # The chart refuses to start unless told no device plugin runs on these nodes; this
        # component never installs one next to it (see GpuOperatorArgs.device_plugin).
        "gpuResourcesEnabledOverride": True,
        "webhook": {"enabled": False},
        "kubeletPlugin": {
            # The default affinity wants NFD labels that AKS does not set; Helm replaces lists
            # wholesale, so these terms pin the plugin to exactly the DRA pools.
            "affinity": pool_affinity(sorted(p.pool_name for p in pools)),
            "tolerations": dra_tolerations(pools),
        },
    }


def gpu_operator_values(operator: GpuOperatorArgs, pools: Sequence[GpuPool]) -> dict[str, Any]:
    """The ``gpu-operator`` chart's values for the DRA pools."""
    tolerations = dra_tolerations(pools)
    return {
        "driver": {"enabled": operator.driver},
        "toolkit": {"enabled": operator.driver},
        "devicePlugin": {"enabled": operator.device_plugin},
        "mig": {"strategy": operator.mig_strategy},
        "migManager": {"enabled": any(is_mig_resource(p.gpu_resource_name) for p in pools)},
        "dcgmExporter": {"enabled": True},
        "daemonsets": {"tolerations": tolerations},
        # NFD's worker labels GPU nodes (pci-10de) so that the operator deploys its driver there; it
        # reads its own tolerations, not daemonsets.tolerations (gpu-operator v25.10.0 values.yaml).
        "node-feature-discovery": {"worker": {"tolerations": tolerations}},
    }
