"""Node labels, taints, resource names and device classes that components, the planner and the policy
pack must agree on: one home each, so a rename cannot leave one side behind."""

from __future__ import annotations

import re

AGENTPOOL_LABEL = "kubernetes.azure.com/agentpool"
"""The label AKS puts on every node with its agent pool's name; workloads pin a pool with it."""

GPU_TAINT = "sku=gpu:NoSchedule"
"""The taint GPU pools carry (seeds 002 and 004), so only pods that tolerate it land on GPU nodes."""
GPU_TOLERATION = {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
"""The toleration of ``GPU_TAINT``."""

SPOT_TAINT = "kubernetes.azure.com/scalesetpriority=spot:NoSchedule"
"""The taint AKS adds to every Spot pool (it cannot be removed)."""
SPOT_LABEL = ("kubernetes.azure.com/scalesetpriority", "spot")
"""The label AKS puts on Spot nodes."""

NVIDIA_GPU = "nvidia.com/gpu"
"""The NVIDIA device plugin's whole-GPU resource."""
AMD_GPU = "amd.com/gpu"
"""The AMD device plugin's whole-GPU resource."""
NVIDIA_PASSTHROUGH_GPU = "nvidia.com/pgpu"
"""A whole GPU passed through to a Kata sandbox VM: the default resource of the NVIDIA Kata sandbox device plugin
(GPU Operator's P_GPU_ALIAS; NVIDIA/k8s-nim-operator@v3.1.2
config/samples/nim/serving/standalone/confidential-computing/llm-kata-sandbox.yaml requests it)."""
NVIDIA_GPU_TOLERATION = {"key": NVIDIA_GPU, "operator": "Exists", "effect": "NoSchedule"}
"""The toleration of the ``nvidia.com/gpu`` taint the GPU Operator and AKS-managed pools may add."""

MIG_PREFIX = "nvidia.com/mig-"
"""The device plugin's MIG resources under the mixed strategy: ``nvidia.com/mig-<slice>``."""

RDMA_DEVICE_CLASS = "dranet.net"
"""DRANET's DeviceClass for RDMA NICs."""
GPU_DEVICE_CLASS = "gpu.nvidia.com"
"""The NVIDIA DRA driver's DeviceClass for whole GPUs."""
MIG_DEVICE_CLASS = "mig.nvidia.com"
"""The NVIDIA DRA driver's DeviceClass for MIG slices."""
VFIO_GPU_DEVICE_CLASS = "vfio.gpu.nvidia.com"
"""The NVIDIA DRA driver's DeviceClass for whole GPUs passed through to a VM (vfio-pci), type ``vfio``
(kubernetes-sigs/dra-driver-nvidia-gpu@v0.4.1 deployments/helm/dra-driver-nvidia-gpu/templates/deviceclass-vfio-gpu.yaml)."""
GPU_DEVICE_CLASSES = (GPU_DEVICE_CLASS, MIG_DEVICE_CLASS, VFIO_GPU_DEVICE_CLASS)
"""The NVIDIA DRA driver's GPU classes (whole, MIG, passthrough): GPU classes by name when their DeviceClass is not at hand."""

POOL_ANNOTATION = "aks-gpu-inference/pool"
"""Annotation on the project's claim templates naming the pool they were made for."""


def is_mig_resource(name: str) -> bool:
    """Whether ``name`` is a MIG slice resource (``nvidia.com/mig-1g.10gb``)."""
    return name.startswith(MIG_PREFIX)


def mig_slice(name: str) -> str:
    """The slice of a MIG resource name: ``nvidia.com/mig-1g.10gb`` -> ``1g.10gb``."""
    return name.removeprefix(MIG_PREFIX)


SHARED_SUFFIX = ".shared"
"""The suffix the NVIDIA device plugin gives a time-sliced or MPS-shared resource with ``renameByDefault``
(NVIDIA/k8s-device-plugin@v0.17.0 api/config/v1/consts.go DefaultSharedResourceNameSuffix)."""


def is_gpu_resource(name: object) -> bool:
    """Whether a container resource name allocates GPUs through a device plugin (whole, MIG, shared, or passed through
    to a sandbox VM)."""
    if not isinstance(name, str):
        return False
    name = name.removesuffix(SHARED_SUFFIX)
    return name in (NVIDIA_GPU, AMD_GPU, NVIDIA_PASSTHROUGH_GPU) or is_mig_resource(name)


RDMA_RESOURCE_PREFIX = "rdma/"
"""The default resource prefix of Mellanox/k8s-rdma-shared-dev-plugin (v1.5.3 README: ``resourcePrefix`` defaults to
``rdma``), which AKS's InfiniBand guide also gives the SR-IOV device plugin (Azure/aks-rdma-infiniband
configs/nicclusterpolicy/sriov-device-plugin/sriov.yaml: ``rdma/ib``; rdma-shared-device-plugin: ``rdma/shared_ib``)."""
NVIDIA_HOSTDEV = "nvidia.com/hostdev"
"""NVIDIA Network Operator's host-device resource: whole RDMA NICs (or VFs) handed to a pod."""
_RDMA_WORDS = re.compile(r"rdma|infiniband|roce|(^|[-_.])(ib|hca)($|[-_.])", re.I)


def is_rdma_resource(name: object) -> bool:
    """Whether a container resource name (or a device plugin's resource name without its prefix) allocates RDMA NICs:
    the ``rdma/`` prefix, ``nvidia.com/hostdev``, or a name that says so (``mellanox.com/mlnx_rdma``,
    ``nvidia.com/sriov-rdma-vf``, ``example_prefix/hca_shared_devices_a``, ``openshift.io/ib_vfs``). The SR-IOV device
    plugin's names are chosen by its config (k8snetworkplumbingwg/sriov-network-device-plugin@v3.11.0 README:
    ``resourcePrefix`` defaults to ``intel.com``, ``isRdma`` per selector), so a name that says nothing is not read as
    RDMA."""
    if not isinstance(name, str):
        return False
    prefix, _, rest = name.rpartition("/")
    return prefix == RDMA_RESOURCE_PREFIX.rstrip("/") or name == NVIDIA_HOSTDEV or bool(_RDMA_WORDS.search(rest))


NVIDIA_DRA_DRIVER = "gpu.nvidia.com"
"""The NVIDIA GPU DRA driver's name: ``device.driver`` of the devices it publishes and the domain of
their attributes (it also names its whole-GPU DeviceClass after itself, ``GPU_DEVICE_CLASS``)."""

RDMA_LABEL = "aks-gpu-inference/rdma"
"""Node label (value ``true``) on GPU pools that serve RDMA work; the policy pack requires an RDMA-capable size there."""

DRANET_DRIVER = "dra.net"
"""DRANET's DRA driver name: ``device.driver`` of the NICs it publishes and the domain of their attributes
(``device.attributes["dra.net"].rdma``); ``RDMA_DEVICE_CLASS`` selects its RDMA NICs."""

ROLE_LABEL = "llm-d.ai/role"
"""The pod label naming a disaggregated vLLM engine's role (``prefill`` or ``decode``), as llm-d labels them."""

INTERCONNECT_LABEL = "aks-gpu-inference/interconnect-group"
"""Node label naming the Azure InterconnectGroup a rack-scale pool is meant to be in (documentation: AKS does not place
VMs by it; ``components/azure/interconnect.py``)."""
INTERCONNECT_GROUP_ATTRIBUTE = "interconnectGroupId"
"""DRANET's ``azure.dra.net`` attribute with the VM's interconnect group (its ``resourceGuid``; dranet v1.4.0)."""
INTERCONNECT_SUBGROUP_ATTRIBUTE = "interconnectSubgroupId"
"""DRANET's ``azure.dra.net`` attribute with the VM's subgroup (one InterconnectBlock: one rack and fabric)."""
