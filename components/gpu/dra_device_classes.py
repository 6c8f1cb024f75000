"""DraDeviceClasses: GPUs as DRA devices. Installs the NVIDIA GPU DRA driver (or uses one that is
there), creates per-GPU-model DeviceClasses from the catalog and ResourceClaimTemplates for the
common requests, and optionally the NVIDIA GPU Operator for pools whose driver AKS does not install.

Facts (sources in the README): chart ``dra-driver-nvidia-gpu`` 0.4.1 from registry.k8s.io; it
creates the ``gpu.nvidia.com`` and ``mig.nvidia.com`` classes itself; its kubelet plugin's default
node affinity needs NFD labels AKS does not set, and it refuses to run beside the GPU device plugin.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pulumi
import pulumi_kubernetes as k8s

from .._base import PACKAGE, Children, kubernetes_provider, node_agent_namespace, raise_problems, validate_args
from ..core import pins
from ..core.labels import GPU_DEVICE_CLASS as GPU_CLASS
from ..core.labels import MIG_DEVICE_CLASS as MIG_CLASS
from ..core.labels import NVIDIA_GPU
from .compute_domain import compute_domain
from .dra_device_classes_args import DraDeviceClassesArgs, GpuOperatorArgs, dra_device_classes_problems, driver_root
from .dra_manifests import (
    GpuClaim,
    dra_claims,
    dra_driver_values,
    dra_facts,
    gpu_operator_values,
    mig_profile_cel,
    model_class_cel,
    model_class_name,
)
from .pools import GpuPool

if TYPE_CHECKING:
    from ..azure.gpu_node_pool import GpuNodePool
    from ..context import ClusterContext

# The class names and CEL builders stay importable from here too, where planner/claims.py and the
# planner and policy tests look for them (their one home is core.labels and dra_manifests).
__all__ = [
    "GPU_CLASS",
    "MIG_CLASS",
    "DraDeviceClasses",
    "DraDeviceClassesArgs",
    "GpuOperatorArgs",
    "mig_profile_cel",
    "model_class_cel",
]

DRA_DRIVER_CHART = pins.chart("dra-driver-nvidia-gpu").ref
GPU_OPERATOR_REPO = pins.chart("gpu-operator").repository
DRA_DRIVER_NAMESPACE = "dra-driver-nvidia-gpu"


class DraDeviceClasses(pulumi.ComponentResource):
    """GPU DeviceClasses and claim templates for the given pools, plus the drivers behind them.

    Outputs: ``device_classes`` (GPU model -> class name), ``templates`` (template name -> what it
    asks for), ``namespace``, ``channel_templates`` (rack-scale pool -> the IMEX channel template of its ComputeDomain).
    """

    namespace: str
    device_classes: dict[str, str]
    templates: dict[str, str]
    channel_templates: dict[str, str]

    def __init__(
        self,
        name: str,
        args: DraDeviceClassesArgs | dict,
        opts: pulumi.ResourceOptions | None = None,
        *,
        pools: list[GpuNodePool],
        cluster: ClusterContext,
    ):
        """
        :param name: Logical name; children are named ``<name>-driver``, ``<name>-<class>`` and so on.
        :param args: Settings, a ``DraDeviceClassesArgs`` or a dict of its fields.
        :param opts: Standard Pulumi resource options; a Kubernetes ``provider`` here wins over the cluster's.
            Children wait for its ``depends_on`` too (the RDMA network that owns the namespace).
        :param pools: The GPU pools whose GPUs DRA allocates (NVIDIA sizes only).
        :param cluster: The cluster: its Kubernetes provider, and its version (DRA needs the pins table's minimum minor).
        """
        args = validate_args(DraDeviceClassesArgs, args, "DraDeviceClasses", name)
        raise_problems("DraDeviceClasses", name, dra_device_classes_problems(args, pools, cluster.kubernetes_version))
        super().__init__(f"{PACKAGE}:index:DraDeviceClasses", name, None, opts)
        child = Children(self, opts, kubernetes_provider(opts, cluster.provider)).opts()
        self._name = name
        self.namespace = args.namespace
        self.device_classes, self.templates = {}, {}
        after = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=self._drivers(args, pools, child)))
        for pool in (p for p in pools if p.gpu_resource_name == NVIDIA_GPU):
            self._model_class(pool, after)
        for claim in dra_claims(args.gpu_counts, pools):
            self._template(claim, after)
        self.channel_templates = dra_facts(args.namespace, args.gpu_counts, pools).channel_templates
        for pool_name in self.channel_templates:
            # NVLink across the rack's nodes; its driver creates the channel template the pool's workloads claim.
            domain = compute_domain(pool_name, self.namespace)
            k8s.apiextensions.CustomResource(
                f"{name}-{domain['metadata']['name']}",
                api_version=domain["apiVersion"],
                kind=domain["kind"],
                metadata=domain["metadata"],
                spec=domain["spec"],
                opts=after,
            )
        self.register_outputs(
            {
                "namespace": self.namespace,
                "device_classes": self.device_classes,
                "templates": self.templates,
                "channel_templates": self.channel_templates,
            }
        )

    def _drivers(
        self, args: DraDeviceClassesArgs, pools: list[GpuNodePool], child: pulumi.ResourceOptions
    ) -> list[pulumi.Resource]:
        """The namespace, operator and driver that the classes and templates come after."""
        name, depends = self._name, []
        if args.create_namespace:
            labels = {"pod-security.kubernetes.io/enforce": "baseline", "pod-security.kubernetes.io/warn": "restricted"}
            depends.append(
                k8s.core.v1.Namespace(f"{name}-namespace", metadata={"name": args.namespace, "labels": labels}, opts=child)
            )
        if args.gpu_operator:
            depends.append(_gpu_operator(name, args.gpu_operator, pools, child))
        if args.install_driver:
            depends.append(_dra_driver(name, args.chart_version, pools, child))
        return depends

    def _model_class(self, pool: GpuPool, opts: pulumi.ResourceOptions) -> str:
        """The DeviceClass of the pool's GPU model, created with the first pool of that model."""
        model = pool.sku.gpu_model
        if model not in self.device_classes:
            class_name = model_class_name(model)
            k8s.resource.v1.DeviceClass(
                f"{self._name}-{class_name}",
                metadata={"name": class_name},
                spec={"selectors": [{"cel": {"expression": model_class_cel(pool.sku.product_names)}}]},
                opts=opts,
            )
            self.device_classes[model] = class_name
        return self.device_classes[model]

    def _template(self, claim: GpuClaim, opts: pulumi.ResourceOptions) -> None:
        k8s.resource.v1.ResourceClaimTemplate(
            f"{self._name}-{claim.template}", metadata=claim.metadata(self.namespace), spec=claim.spec(), opts=opts
        )
        self.templates[claim.template] = claim.description


def _dra_driver(name: str, version: str, pools: list[GpuNodePool], opts: pulumi.ResourceOptions) -> pulumi.Resource:
    namespace = node_agent_namespace(
        f"{name}-driver-namespace",
        DRA_DRIVER_NAMESPACE,
        opts,
        "the DRA kubelet plugin manages CDI specs and driver files on the host",
    )
    return k8s.helm.v4.Chart(
        f"{name}-driver",
        chart=DRA_DRIVER_CHART,
        version=version,
        namespace=namespace.metadata["name"],
        # One driver root for every pool: dra_device_classes_problems refuses a mix.
        values=dra_driver_values(driver_root(pools[0]), pools),
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(custom_timeouts=pulumi.CustomTimeouts(create="20m"))),
    )


def _gpu_operator(
    name: str, operator: GpuOperatorArgs, pools: list[GpuNodePool], opts: pulumi.ResourceOptions
) -> pulumi.Resource:
    namespace = node_agent_namespace(
        f"{name}-gpu-operator-namespace",
        "gpu-operator",
        opts,
        "the operator's driver, toolkit and validator DaemonSets run privileged on GPU nodes",
    )
    return k8s.helm.v4.Chart(
        f"{name}-gpu-operator",
        chart=pins.chart("gpu-operator").name,
        repository_opts={"repo": GPU_OPERATOR_REPO},
        version=operator.chart_version,
        namespace=namespace.metadata["name"],
        values=gpu_operator_values(operator, pools),
        opts=opts,
    )
