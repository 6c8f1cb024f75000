"""Raw Pulumi programs for the claim-satisfiability tests: pools, DeviceClasses and claim templates written
directly, as a stack could copy them from the seeds, without the components (which refuse such input).
A module of its own, not a test module, so that a program file (``__main__.py``) can import it."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s
from pulumi_azure_native import containerservice

from aks_gpu_inference.components.core.labels import GPU_TAINT, POOL_ANNOTATION
from aks_gpu_inference.components.gpu.rdma_network import DEVICE_CLASS, DEVICE_CLASS_CEL

H100, ND_A100, NC = "Standard_ND96isr_H100_v5", "Standard_ND96asr_v4", "Standard_NC24ads_A100_v4"
H100_PRODUCT = "NVIDIA H100 80GB HBM3"


def vm_size_cel(vm_size: str) -> str:
    """The request selector RdmaNetwork renders (seed 004 section 5)."""
    return f'device.attributes["azure.dra.net"]["vmSize"] == "{vm_size}"'


def agent_pool(name: str, vm_size: str, **fields) -> None:
    containerservice.AgentPool(
        name,
        agent_pool_name=name,
        resource_name_="aks",
        resource_group_name="rg",
        vm_size=vm_size,
        mode="User",
        node_taints=[GPU_TAINT],
        **fields,
    )


def device_class(name: str, expression: str, opts: pulumi.ResourceOptions) -> None:
    k8s.resource.v1.DeviceClass(
        name, metadata={"name": name}, spec={"selectors": [{"cel": {"expression": expression}}]}, opts=opts
    )


def claim_template(
    name: str,
    device_class_name: str,
    opts: pulumi.ResourceOptions,
    *,
    count: int | None = 1,
    pool: str | None = None,
    cel: str | None = None,
    namespace: str = "llm-d-infra",
) -> None:
    exactly: dict = {"deviceClassName": device_class_name}
    if count is None:
        exactly["allocationMode"] = "All"
    else:
        exactly["count"] = count
    if cel:
        exactly["selectors"] = [{"cel": {"expression": cel}}]
    metadata: dict = {"name": name, "namespace": namespace}
    if pool:
        metadata["annotations"] = {POOL_ANNOTATION: pool}
    k8s.resource.v1.ResourceClaimTemplate(
        name, metadata=metadata, spec={"spec": {"devices": {"requests": [{"name": "devs", "exactly": exactly}]}}}, opts=opts
    )


def nc_rdma_program() -> None:
    """An NC pool (no InfiniBand) with a full-node NIC claim, as if copied from seed 004 with the size changed."""
    agent_pool("nc", NC)
    opts = pulumi.ResourceOptions(provider=k8s.Provider("k8s", kubeconfig="x"))
    device_class(DEVICE_CLASS, DEVICE_CLASS_CEL, opts)
    claim_template("nc-rdma-full-node", DEVICE_CLASS, opts, count=8, pool="nc", cel=vm_size_cel(NC))
