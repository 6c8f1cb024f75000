"""GPU and RDMA on the nodes: DRA device classes and drivers, DRANET's RDMA network, the NVIDIA device
plugin, the qualification gates, and the RDMA pod-spec contract every multi-GPU workload uses."""

from .._lazy import exporter

_EXPORTS = {
    "NvidiaDevicePlugin": ".device_plugin",
    "NvidiaDevicePluginArgs": ".device_plugin",
    "DraDeviceClasses": ".dra_device_classes",
    "DraDeviceClassesArgs": ".dra_device_classes_args",
    "GpuOperatorArgs": ".dra_device_classes_args",
    "GpuPool": ".pools",
    "RdmaNetwork": ".rdma_network",
    "RdmaNetworkArgs": ".rdma_network",
    "RdmaPodSpec": ".pod_contract",
    "QualificationGates": ".qualification_gates",
    "QualificationGatesArgs": ".qualification_gates",
}

__all__ = sorted(_EXPORTS)
__getattr__ = exporter(__name__, _EXPORTS)
