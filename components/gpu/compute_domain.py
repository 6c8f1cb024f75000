"""NVLink across nodes: the NVIDIA DRA driver's ComputeDomain, one per rack-scale pool.

On an NVL72 rack (ND GB200/GB300 v6) GPUs of different VMs reach each other over NVLink through IMEX channels. A
ComputeDomain (``resource.nvidia.com/v1beta1``, kubernetes-sigs/dra-driver-nvidia-gpu@v0.4.1:
api/nvidia.com/resource/v1beta1/computedomain.go) makes the driver run an IMEX daemon on every node its workload pods
land on and create a ResourceClaimTemplate named ``spec.channel.resourceClaimTemplate.name`` in the domain's namespace;
a pod that claims it gets an IMEX channel (``/dev/nvidia-caps-imex-channels``) from the
``compute-domain-default-channel.nvidia.com`` DeviceClass (templates/deviceclass-compute-domain-default-channel.yaml).
``numNodes`` is 0: with ``IMEXDaemonsWithDNSNames`` on (the default at v0.4.1, pkg/featuregates/featuregates.go) the
field is deprecated and "recommended to be set to zero", so pods start without waiting for a fixed node count.

Prerequisites the plan cannot see (docs/prerequisites.md at the tag): the host's ``nvidia-imex.service`` disabled (the
AKS GB node image installs the nvidia-imex package), driver 570.158.01 or later. GPU Feature Discovery's
``nvidia.com/gpu.clique`` labels are named there too, but the driver reads the clique from NVML (its kubelet plugin's
nvlib.go), not from the label, and the kubelet plugin here is placed by agent pool, not by NFD labels.
"""

from __future__ import annotations

from typing import Any

from ..core import pins

CHANNEL_DEVICE_CLASS = "compute-domain-default-channel.nvidia.com"
COMPUTE_DOMAIN_DRIVER = "compute-domain.nvidia.com"
CHANNEL_CLASS_CEL = (
    f"device.driver == '{COMPUTE_DOMAIN_DRIVER}' && device.attributes['{COMPUTE_DOMAIN_DRIVER}'].type == 'channel' "
    f"&& device.attributes['{COMPUTE_DOMAIN_DRIVER}'].id == 0"
)
"""The chart's default-channel DeviceClass selector (deviceclass-compute-domain-default-channel.yaml at v0.4.1)."""
CHANNEL_CLAIM = "imex-channel"
"""The pod-level claim name of the IMEX channel."""


def domain_name(pool: str) -> str:
    return f"{pool}-nvlink"


def channel_template(pool: str) -> str:
    """The ResourceClaimTemplate the pool's ComputeDomain makes its driver create."""
    return f"{pool}-imex-channel"


def compute_domain(pool: str, namespace: str) -> dict[str, Any]:
    """The pool's ComputeDomain, whose channel template the pool's multi-node workloads claim."""
    return {
        "apiVersion": pins.api_version("ComputeDomain"),
        "kind": "ComputeDomain",
        "metadata": {"name": domain_name(pool), "namespace": namespace},
        "spec": {"numNodes": 0, "channel": {"resourceClaimTemplate": {"name": channel_template(pool)}}},
    }
