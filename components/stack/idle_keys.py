"""Settings that the rest of the stack leaves without effect, refused with their key path instead of ignored: every
key a stack file accepts either reaches what it describes or is refused where it cannot apply (issue 30; like
``mig_strategy`` on a pool of whole GPUs, ``azure/managed_gpu.py``). Only what the file sets is refused: a default
that does not apply is no one's mistake."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from ..core.errors import FieldProblem

if TYPE_CHECKING:
    from ..azure.gpu_node_pool_args import GpuNodePoolArgs
    from ..gpu.device_plugin import NvidiaDevicePluginArgs
    from ..gpu.dra_device_classes_args import DraDeviceClassesArgs
    from ..gpu.rdma_network import RdmaNetworkArgs
    from ..serving.vllm_service_args import VllmServiceArgs


class StackConfig(Protocol):
    """What these checks read of a ``StackConfig`` (a protocol: the config calls them while it validates itself)."""

    gpu_pools: Sequence[GpuNodePoolArgs]
    device_plugin: NvidiaDevicePluginArgs
    dra: DraDeviceClassesArgs | None
    rdma: RdmaNetworkArgs | None
    models: Sequence[VllmServiceArgs]

    def dra_pools(self) -> list[str]: ...


def device_plugin_pools(config: StackConfig) -> list[str]:
    """The NVIDIA pools whose GPUs neither a DRA driver nor AKS (managed GPU pools) advertises: the device plugin's."""
    dra = set(config.dra_pools())
    return [
        p.name
        for p in config.gpu_pools
        if p.sku.gpu_vendor == "nvidia" and p.driver == "aks" and p.gpu_management != "managed" and p.name not in dra
    ]


def idle_key_problems(config: StackConfig) -> list[FieldProblem]:
    return _device_plugin(config) + _dra_namespace(config) + _model_namespaces(config)


def _device_plugin(config: StackConfig) -> list[FieldProblem]:
    if device_plugin_pools(config):
        return []
    why = (
        "no GPU pool runs the NVIDIA device plugin (each is served by DRA, managed by AKS, or has driver 'none'), "
        "so nothing reads it: leave device_plugin out"
    )
    plugin = config.device_plugin
    return [FieldProblem(f"device_plugin.{key}", getattr(plugin, key), why) for key in sorted(plugin.model_fields_set)]


def _dra_namespace(config: StackConfig) -> list[FieldProblem]:
    """With RDMA, GPU claim templates live beside the NIC templates, in the namespace the RDMA network creates."""
    if config.dra is None or config.rdma is None:
        return []
    dra, namespace = config.dra, config.rdma.namespace
    why = (
        f"with an rdma section the GPU claim templates live beside the NIC templates in rdma.namespace ({namespace!r}), "
        "which the RDMA network creates"
    )
    problems = []
    if "namespace" in dra.model_fields_set and dra.namespace != namespace:
        problems.append(FieldProblem("dra.namespace", dra.namespace, f"{why}: leave dra.namespace out"))
    if "create_namespace" in dra.model_fields_set:
        problems.append(FieldProblem("dra.create_namespace", dra.create_namespace, f"{why}: leave dra.create_namespace out"))
    return problems


def _model_namespaces(config: StackConfig) -> list[FieldProblem]:
    """A model in the RDMA network's namespace or the DRA claim templates': the stack leaves that namespace to them,
    whatever the model says (``program._model_namespaces``)."""
    owners = {}
    if config.dra is not None and config.rdma is None:
        owners[config.dra.namespace] = "the DRA claim templates' (dra.namespace; dra.create_namespace says whether it is created)"
    if config.rdma is not None:
        owners[config.rdma.namespace] = "the RDMA network's (rdma.namespace), which creates it"
    problems = []
    for index, model in enumerate(config.models):
        if "create_namespace" in model.model_fields_set and model.namespace in owners:
            why = f"namespace {model.namespace!r} is {owners[model.namespace]}: leave create_namespace out"
            problems.append(FieldProblem(f"models[{index}].create_namespace", model.create_namespace, why))
    return problems
