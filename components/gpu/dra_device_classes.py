"""DraDeviceClasses: GPUs as DRA devices. Installs the NVIDIA GPU DRA driver (or uses one that is
there), creates per-GPU-model DeviceClasses from the catalog and ResourceClaimTemplates for the
common requests, and optionally the NVIDIA GPU Operator for pools whose driver AKS does not install.

Facts (sources in the README): chart ``dra-driver-nvidia-gpu`` 0.4.1 from registry.k8s.io; it
creates the ``gpu.nvidia.com`` and ``mig.nvidia.com`` classes itself; its kubelet plugin's default
node affinity needs NFD labels AKS does not set, and it refuses to run beside the GPU device plugin.
"""

from __future__ import annotations

from typing import Literal

import pulumi
import pulumi_kubernetes as k8s
from pydantic import Field, field_validator

from .._base import PACKAGE, Children, StrictModel, fail, node_agent_namespace, validate_args
from ..azure.gpu_node_pool import AGENTPOOL_LABEL, GpuNodePool
from .rdma_network import POOL_ANNOTATION, min_kubernetes

DRA_DRIVER_CHART = "oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu"
GPU_OPERATOR_REPO = "https://helm.ngc.nvidia.com/nvidia"
DRA_DRIVER_NAMESPACE = "dra-driver-nvidia-gpu"
GPU_CLASS = "gpu.nvidia.com"
MIG_CLASS = "mig.nvidia.com"
HOST_DRIVER_ROOT = "/"
"""Where AKS (``gpuProfile.driver: Install``) puts the NVIDIA driver: on the host itself."""
OPERATOR_DRIVER_ROOT = "/run/nvidia/driver"
"""Where the GPU Operator's driver container mounts the driver."""


def model_class_name(gpu_model: str) -> str:
    """DeviceClass for one GPU model, e.g. ``gpu-h100-80gb``."""
    return f"gpu-{gpu_model.lower()}"


def model_class_cel(product_names: list[str]) -> str:
    names = ", ".join(f'"{n}"' for n in product_names)
    return (
        f'device.driver == "{GPU_CLASS}" && device.attributes["{GPU_CLASS}"].type == "gpu" '
        f'&& device.attributes["{GPU_CLASS}"].productName in [{names}]'
    )


def mig_profile_cel(profile: str) -> str:
    return f'device.attributes["{GPU_CLASS}"].profile == "{profile}"'


class GpuOperatorArgs(StrictModel):
    """The NVIDIA GPU Operator, for pools created with ``driver: none`` (seed 002 section 3)."""

    chart_version: str = "v25.10.0"
    """``gpu-operator`` chart version from helm.ngc.nvidia.com. Default ``v25.10.0`` (the AKS DRA blog's pin)."""

    driver: bool = True
    """Let the operator install the driver container. Default True: that is why a pool says ``driver: none``.
    Refused when any pool has ``driver: aks``: two drivers on one node."""

    device_plugin: bool = False
    """Deploy the NVIDIA device plugin. Default False: the DRA driver advertises the GPUs, and both at
    once would hand the same GPU to two pods. Set True only with ``install_driver: false``."""

    mig_strategy: Literal["mixed", "single"] = "mixed"
    """How the device plugin names MIG slices. Default ``mixed`` (``nvidia.com/mig-<slice>``); ``single``
    advertises slices as ``nvidia.com/gpu``, indistinguishable from whole GPUs, and is refused with MIG pools."""


class DraDeviceClassesArgs(StrictModel):
    """The NVIDIA DRA driver, per-model DeviceClasses and ResourceClaimTemplates."""

    namespace: str = Field("gpu-inference", pattern=r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
    """Namespace of the ResourceClaimTemplates (claims are namespaced; pods use templates in their own
    namespace). Default ``gpu-inference``."""

    create_namespace: bool = True
    """Create the namespace (Pod Security ``baseline``). Default True; False when another component
    (such as RdmaNetwork) owns it."""

    install_driver: bool = True
    """Install the NVIDIA GPU DRA driver. Default True; False when the cluster already runs it."""

    chart_version: str = "0.4.1"
    """``dra-driver-nvidia-gpu`` chart version (no ``v`` prefix). Default ``0.4.1``."""

    gpu_counts: list[int] = Field(default_factory=lambda: [1])
    """Claim templates ``gpu-<n>`` for n GPUs of any model. Default ``[1]``."""

    gpu_operator: GpuOperatorArgs | None = None
    """Also install the NVIDIA GPU Operator. Default None (AKS installs the driver)."""

    @field_validator("gpu_counts")
    @classmethod
    def _positive(cls, value: list[int]) -> list[int]:
        if any(n < 1 for n in value):
            raise ValueError("GPU counts are whole numbers of at least 1")
        return sorted(set(value))


class DraDeviceClasses(pulumi.ComponentResource):
    """GPU DeviceClasses and claim templates for the given pools, plus the drivers behind them.

    Outputs: ``device_classes`` (GPU model -> class name), ``templates`` (template name -> what it
    asks for), ``namespace``.
    """

    namespace: str
    device_classes: dict[str, str]
    templates: dict[str, str]

    def __init__(
        self,
        name: str,
        args: DraDeviceClassesArgs | dict,
        pools: list[GpuNodePool],
        provider: k8s.Provider,
        kubernetes_version: str | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ):
        """
        :param name: Logical name; children are named ``<name>-driver``, ``<name>-<class>`` and so on.
        :param args: Settings, a ``DraDeviceClassesArgs`` or a dict of its fields.
        :param pools: The GPU pools whose GPUs DRA allocates (NVIDIA sizes only).
        :param provider: Kubernetes provider of the cluster (``AksCluster.provider``).
        :param kubernetes_version: The cluster's Kubernetes version, if known; DRA needs 1.34.
        :param opts: Standard Pulumi resource options.
        """
        args = validate_args(DraDeviceClassesArgs, args, "DraDeviceClasses", name)
        min_kubernetes(kubernetes_version, "DraDeviceClasses", name)
        driver_root = self._check(name, args, pools)
        super().__init__(f"{PACKAGE}:index:DraDeviceClasses", name, None, opts)
        # Children wait for what the component waits for (the RDMA network that owns the namespace).
        child = Children(self, opts, provider).opts()
        self.namespace = args.namespace
        depends: list[pulumi.Resource] = []
        if args.create_namespace:
            depends.append(
                k8s.core.v1.Namespace(
                    f"{name}-namespace",
                    metadata={
                        "name": args.namespace,
                        "labels": {
                            "pod-security.kubernetes.io/enforce": "baseline",
                            "pod-security.kubernetes.io/warn": "restricted",
                        },
                    },
                    opts=child,
                )
            )
        tolerations = _tolerations(pools)
        if args.gpu_operator:
            depends.append(self._gpu_operator(name, args.gpu_operator, pools, tolerations, child))
        if args.install_driver:
            driver_namespace = node_agent_namespace(
                f"{name}-driver-namespace",
                DRA_DRIVER_NAMESPACE,
                child,
                "the DRA kubelet plugin manages CDI specs and driver files on the host",
            )
            depends.append(
                self._dra_driver(
                    name, args.chart_version, driver_root, pools, tolerations, driver_namespace.metadata["name"], child
                )
            )

        after = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=depends))
        self.device_classes, self.templates = {}, {}
        whole_gpu_pools = [p for p in pools if p.gpu_resource_name == "nvidia.com/gpu"]
        for pool in whole_gpu_pools:
            model = pool.sku.gpu_model
            if model not in self.device_classes:
                class_name = model_class_name(model)
                k8s.resource.v1.DeviceClass(
                    f"{name}-{class_name}",
                    metadata={"name": class_name},
                    spec={"selectors": [{"cel": {"expression": model_class_cel(pool.sku.product_names)}}]},
                    opts=after,
                )
                self.device_classes[model] = class_name
            self._template(
                name,
                f"{pool.pool_name}-gpus-full-node",
                self.device_classes[model],
                pool.gpus_per_node,
                pool.pool_name,
                None,
                after,
            )
        for count in args.gpu_counts:
            self._template(name, f"gpu-{count}", GPU_CLASS, count, None, None, after)
        for pool in pools:
            if pool.gpu_resource_name.startswith("nvidia.com/mig-"):
                profile = pool.gpu_resource_name.removeprefix("nvidia.com/mig-")
                self._template(
                    name,
                    f"{pool.pool_name}-mig-{profile.replace('.', '-')}",
                    MIG_CLASS,
                    1,
                    pool.pool_name,
                    mig_profile_cel(profile),
                    after,
                )
        self.register_outputs({"namespace": self.namespace, "device_classes": self.device_classes, "templates": self.templates})

    @staticmethod
    def _check(name: str, args: DraDeviceClassesArgs, pools: list[GpuNodePool]) -> str:
        """Refuse combinations that double-install or never work; return the driver root for the chart."""
        if not pools:
            fail("DraDeviceClasses", name, "pools", [], "give at least one NVIDIA GPU pool")
        roots = {OPERATOR_DRIVER_ROOT if p.driver == "none" else HOST_DRIVER_ROOT for p in pools}
        if len(roots) > 1:
            fail(
                "DraDeviceClasses",
                name,
                "pools",
                sorted(p.pool_name for p in pools),
                "mixes AKS-installed and operator-installed drivers; the DRA driver has one driver root, and no single gpu_operator setting suits both. Use one driver strategy for DRA pools",
            )
        operator = args.gpu_operator
        for pool in pools:
            if pool.sku.gpu_vendor != "nvidia":
                fail(
                    "DraDeviceClasses",
                    name,
                    "pools",
                    pool.pool_name,
                    f"{pool.sku.name} has {pool.sku.gpu_vendor.upper()} GPUs; the NVIDIA DRA driver serves NVIDIA GPUs only",
                )
            if pool.driver == "aks" and operator and operator.driver:
                fail(
                    "DraDeviceClasses",
                    name,
                    "gpu_operator.driver",
                    True,
                    f"pool {pool.pool_name} already gets its driver from AKS (driver 'aks'); two drivers on one node break both. Set gpu_operator.driver false, or create the pool with driver 'none'",
                )
            if pool.driver == "none" and not (operator and operator.driver):
                fail(
                    "DraDeviceClasses",
                    name,
                    "gpu_operator",
                    None if not operator else operator.driver,
                    f"pool {pool.pool_name} has driver 'none', so nothing installs its NVIDIA driver; add gpu_operator (driver true)",
                )
            if pool.gpu_resource_name.startswith("nvidia.com/mig-") and operator and operator.mig_strategy == "single":
                fail(
                    "DraDeviceClasses",
                    name,
                    "gpu_operator.mig_strategy",
                    "single",
                    f"pool {pool.pool_name} is MIG-partitioned; 'single' advertises its slices as nvidia.com/gpu, next to whole GPUs elsewhere. Use 'mixed'",
                )
        if operator and operator.device_plugin and args.install_driver:
            fail(
                "DraDeviceClasses",
                name,
                "gpu_operator.device_plugin",
                True,
                "the DRA driver already advertises these GPUs; the device plugin beside it would hand one GPU to two pods. Keep device_plugin false, or set install_driver false",
            )
        whole = [p.gpus_per_node for p in pools if p.gpu_resource_name == "nvidia.com/gpu"]
        too_many = [n for n in args.gpu_counts if n > max(whole, default=0)]
        if too_many:
            fail(
                "DraDeviceClasses",
                name,
                "gpu_counts",
                too_many,
                f"no pool has that many whole GPUs per node (largest: {max(whole, default=0)})",
            )
        return roots.pop()

    def _template(self, name: str, template: str, device_class: str, count: int, pool: str | None, cel: str | None, opts) -> None:
        request: dict = {"deviceClassName": device_class, "count": count}
        if cel:
            request["selectors"] = [{"cel": {"expression": cel}}]
        metadata: dict = {"name": template, "namespace": self.namespace}
        if pool:
            metadata["annotations"] = {POOL_ANNOTATION: pool}
        k8s.resource.v1.ResourceClaimTemplate(
            f"{name}-{template}",
            metadata=metadata,
            spec={"spec": {"devices": {"requests": [{"name": "gpus", "exactly": request}]}}},
            opts=opts,
        )
        self.templates[template] = f"{count} x {device_class}" + (f" ({cel})" if cel else "")

    @staticmethod
    def _dra_driver(name, version, driver_root, pools, tolerations, namespace, opts) -> pulumi.Resource:
        return k8s.helm.v4.Chart(
            f"{name}-driver",
            chart=DRA_DRIVER_CHART,
            version=version,
            namespace=namespace,
            values={
                "nvidiaDriverRoot": driver_root,
                "resourceApiVersion": "resource.k8s.io/v1",
                # GPUs only: ComputeDomains need multi-node NVLink, which these sizes do not have.
                "resources": {"gpus": {"enabled": True}, "computeDomains": {"enabled": False}},
                # The chart refuses to start unless told no device plugin runs on these nodes; this
                # component never installs one next to it (see GpuOperatorArgs.device_plugin).
                "gpuResourcesEnabledOverride": True,
                "webhook": {"enabled": False},
                "kubeletPlugin": {
                    # The default affinity wants NFD labels that AKS does not set; Helm replaces lists
                    # wholesale, so these terms pin the plugin to exactly the DRA pools.
                    "affinity": {
                        "nodeAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [_pool_term(pools)]}
                        }
                    },
                    "tolerations": tolerations,
                },
            },
            opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(custom_timeouts=pulumi.CustomTimeouts(create="20m"))),
        )

    @staticmethod
    def _gpu_operator(name, operator: GpuOperatorArgs, pools, tolerations, opts) -> pulumi.Resource:
        has_mig = any(p.gpu_resource_name.startswith("nvidia.com/mig-") for p in pools)
        namespace = node_agent_namespace(
            f"{name}-gpu-operator-namespace",
            "gpu-operator",
            opts,
            "the operator's driver, toolkit and validator DaemonSets run privileged on GPU nodes",
        )
        return k8s.helm.v4.Chart(
            f"{name}-gpu-operator",
            chart="gpu-operator",
            repository_opts={"repo": GPU_OPERATOR_REPO},
            version=operator.chart_version,
            namespace=namespace.metadata["name"],
            values={
                "driver": {"enabled": operator.driver},
                "toolkit": {"enabled": operator.driver},
                "devicePlugin": {"enabled": operator.device_plugin},
                "mig": {"strategy": operator.mig_strategy},
                "migManager": {"enabled": has_mig},
                "dcgmExporter": {"enabled": True},
                "daemonsets": {"tolerations": tolerations},
                # NFD's worker labels GPU nodes (pci-10de) so that the operator deploys its driver there; it
                # reads its own tolerations, not daemonsets.tolerations (gpu-operator v25.10.0 values.yaml).
                "node-feature-discovery": {"worker": {"tolerations": tolerations}},
            },
            opts=opts,
        )


def _pool_term(pools: list[GpuNodePool]) -> dict:
    return {"matchExpressions": [{"key": AGENTPOOL_LABEL, "operator": "In", "values": sorted(p.pool_name for p in pools)}]}


def _tolerations(pools: list[GpuNodePool]) -> list[dict]:
    """Every taint of the DRA pools, plus NVIDIA's own ``nvidia.com/gpu`` taint."""
    result = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    for pool in pools:
        result += [t for t in pool.tolerations if t not in result]
    return result
