"""Builders for DeviceClass objects and pinned pod specs, shared by the RDMA rule tables and test_device_classes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aks_gpu_inference.components.core.labels import AGENTPOOL_LABEL
from aks_gpu_inference.policies.manifests import Resource

from ._fixtures import RDMA_SKU, RDMA_TEMPLATE, claim_template, rdma_stack, resource

RDMA_CEL = 'device.driver == "dra.net" && device.attributes["dra.net"].rdma == true'
"""Seed 004's dranet.net selector, as components/gpu/rdma_network.py renders it."""
GPU_CEL = "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"
"""The NVIDIA DRA driver chart's gpu.nvidia.com selector."""
FAST_NICS = "fast-nics"
BY_NAME = " (class dranet.net judged by its name: its DeviceClass is not among the checked resources)"
"""What the RDMA rules add when the claim's class has no DeviceClass object to judge."""


def dra_class(name: str, *expressions: Any) -> Resource:
    """A resource.k8s.io/v1 DeviceClass with one CEL selector per expression (none: selects every device)."""
    return resource(
        "kubernetes:resource.k8s.io/v1:DeviceClass",
        name,
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": e}} for e in expressions]},
        },
    )


def class_stack(
    kind: str,
    spec: Any = None,
    *,
    device_class: str = FAST_NICS,
    expressions: Sequence[Any] = (RDMA_CEL,),
    vm_size: Any = RDMA_SKU,
    **pool_fields: Any,
) -> list[Resource]:
    """``rdma_stack`` whose NIC template names ``device_class``, with that DeviceClass in the stack."""
    stack = [
        claim_template(RDMA_TEMPLATE, device_class) if r.type.endswith(":ResourceClaimTemplate") else r
        for r in rdma_stack(kind, spec, vm_size=vm_size, **pool_fields)
    ]
    return [*stack, dra_class(device_class, *expressions)]


def node_affinity(*terms: Sequence[tuple[str, str, Any]]) -> dict[str, Any]:
    """A pod ``affinity`` with required node affinity: one nodeSelectorTerm per argument, each a list of
    (key, operator, values) match expressions."""
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": k, "operator": o, "values": v} for k, o, v in term]} for term in terms
                ]
            }
        }
    }


def pool_affinity(*pools: str) -> dict[str, Any]:
    """Required node affinity pinning ``kubernetes.azure.com/agentpool In [pools]``."""
    return node_affinity([(AGENTPOOL_LABEL, "In", list(pools))])
