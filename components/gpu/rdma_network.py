"""RdmaNetwork: InfiniBand NICs as DRA devices (DRANET) on RDMA-capable ND pools, the way seed 004
qualified it: a pinned DRANET release, the ``dranet.net`` DeviceClass, one full-node NIC claim
template per pool, and the namespace RDMA workloads run in."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s
from pydantic import Field, field_validator

from .._base import PACKAGE, StrictModel, fail, validate_args
from ..azure.gpu_node_pool import AGENTPOOL_LABEL, GpuNodePool
from .pod_contract import RdmaPodSpec

DRANET_CHART = "oci://registry.k8s.io/networking/charts/dranet"
DEVICE_CLASS = "dranet.net"
# Seed 004 section 4: only RDMA-capable devices that the dra.net driver publishes.
DEVICE_CLASS_CEL = 'device.driver == "dra.net" && device.attributes["dra.net"].rdma == true'
POOL_ANNOTATION = "aks-gpu-inference/pool"
"""Which pool a claim template is written for; the planner's satisfiability check reads it."""


def min_kubernetes(version: str | None, component: str, name: str) -> None:
    """DRA's resource.k8s.io/v1 API (DeviceClass, ResourceClaimTemplate) needs Kubernetes 1.34."""
    if version is None:
        return
    major, minor = (int(part) for part in version.split(".")[:2])
    if (major, minor) < (1, 34):
        fail(
            component,
            name,
            "kubernetes_version",
            version,
            "DRA with resource.k8s.io/v1 needs Kubernetes 1.34 or later; set cluster.kubernetes_version to 1.34",
        )


class RdmaNetworkArgs(StrictModel):
    """DRANET and the NIC claims for RDMA pools."""

    namespace: str = Field("llm-d-infra", pattern=r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
    """Namespace for RDMA workloads and their NIC claim templates. Default ``llm-d-infra`` (seed 004).
    It is labelled Pod Security ``privileged`` because "baseline" forbids IPC_LOCK; the policy pack's
    ipc-lock-without-privileged rule is the compensating control."""

    chart_version: str = "v1.3.0"
    """DRANET Helm chart version (tags carry a ``v``). Default ``v1.3.0``, the version seed 004 qualified."""

    image_tag: str = "v1.3.0"
    """DRANET image tag. Default ``v1.3.0``, matching the chart."""

    partial_node_nics: list[int] = Field(default_factory=list)
    """Extra claim templates for fewer NICs than a full node, e.g. ``[1]`` for one-NIC isolation
    tests. Default none: partial placement needs PCI/NUMA topology validation first (seed 004)."""

    nics_per_node: dict[str, int] = Field(default_factory=dict)
    """The RDMA device count DRANET actually publishes per pool, if you recorded it (seed 004 section 4).
    Default: the catalog's InfiniBand NIC count. A recorded count that disagrees with the catalog is
    refused, because the full-node claim would never be satisfiable."""

    @field_validator("partial_node_nics")
    @classmethod
    def _positive(cls, value: list[int]) -> list[int]:
        if any(n < 1 for n in value):
            raise ValueError("NIC counts are whole numbers of at least 1")
        return sorted(set(value))


class RdmaNetwork(pulumi.ComponentResource):
    """DRANET, the ``dranet.net`` DeviceClass and NIC claim templates for one or more RDMA pools.

    ``pod_spec(pool)`` returns the pod-spec contract (claims, IPC_LOCK security context, UCX/NCCL
    environment, node selector, tolerations) that every RDMA workload applies.
    """

    namespace: str
    pools: dict[str, GpuNodePool]
    full_node_templates: dict[str, str]
    partial_templates: dict[str, dict[int, str]]
    nics: dict[str, int]

    def __init__(
        self,
        name: str,
        args: RdmaNetworkArgs | dict,
        pools: list[GpuNodePool],
        provider: k8s.Provider,
        kubernetes_version: str | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ):
        """
        :param name: Logical name; children are named ``<name>-dranet``, ``<name>-class`` and so on.
        :param args: DRANET settings, an ``RdmaNetworkArgs`` or a dict of its fields.
        :param pools: The RDMA pools; each must be an RDMA-capable size.
        :param provider: Kubernetes provider of the cluster (``AksCluster.provider``).
        :param kubernetes_version: The cluster's Kubernetes version, if known; DRA needs 1.34.
        :param opts: Standard Pulumi resource options.
        """
        args = validate_args(RdmaNetworkArgs, args, "RdmaNetwork", name)
        min_kubernetes(kubernetes_version, "RdmaNetwork", name)
        if not pools:
            fail("RdmaNetwork", name, "pools", [], "give at least one RDMA pool")
        self.nics = {}
        for pool in pools:
            if not pool.rdma_capable:
                fail(
                    "RdmaNetwork",
                    name,
                    "pools",
                    pool.pool_name,
                    f"{pool.sku.name} is not RDMA-capable; RDMA sizes have 'r' among the capability letters, e.g. Standard_ND96isr_H100_v5",
                )
            catalog_nics = pool.sku.infiniband_nics
            recorded = args.nics_per_node.get(pool.pool_name, catalog_nics)
            if recorded != catalog_nics:
                fail(
                    "RdmaNetwork",
                    name,
                    f"nics_per_node.{pool.pool_name}",
                    recorded,
                    f"the catalog says {pool.sku.name} has {catalog_nics} InfiniBand NICs; fix the catalog row (with its source) if DRANET really publishes {recorded}",
                )
            too_many = [n for n in args.partial_node_nics if n >= catalog_nics]
            if too_many:
                fail(
                    "RdmaNetwork",
                    name,
                    "partial_node_nics",
                    too_many,
                    f"a partial claim on {pool.pool_name} ({pool.sku.name}) must ask for fewer than its {catalog_nics} NICs",
                )
            self.nics[pool.pool_name] = catalog_nics
        unknown = sorted(set(args.nics_per_node) - set(self.nics))
        if unknown:
            fail("RdmaNetwork", name, "nics_per_node", unknown, f"not RDMA pools of this network; pools: {', '.join(self.nics)}")
        super().__init__(f"{PACKAGE}:index:RdmaNetwork", name, None, opts)
        child = pulumi.ResourceOptions(parent=self, provider=provider)

        self.namespace = args.namespace
        self.pools = {pool.pool_name: pool for pool in pools}
        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata={
                "name": args.namespace,
                "labels": {
                    # Baseline forbids IPC_LOCK; ipc-lock-without-privileged keeps privileged pods out.
                    "pod-security.kubernetes.io/enforce": "privileged",
                    "pod-security.kubernetes.io/warn": "baseline",
                    "aks-gpu-inference/rdma": "true",
                },
            },
            opts=child,
        )
        pool_names = sorted(self.nics)
        placement = (
            {"nodeSelector": {AGENTPOOL_LABEL: pool_names[0]}}
            if len(pool_names) == 1
            else {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {"matchExpressions": [{"key": AGENTPOOL_LABEL, "operator": "In", "values": pool_names}]}
                            ]
                        }
                    }
                }
            }
        )
        self.release = k8s.helm.v4.Chart(
            f"{name}-dranet",
            chart=DRANET_CHART,
            version=args.chart_version,
            namespace="kube-system",
            values={
                "image": {"repository": "registry.k8s.io/networking/dranet", "tag": args.image_tag, "pullPolicy": "IfNotPresent"},
                **placement,
                # Keep the IPoIB interfaces on the host; DRANET injects the RDMA character devices.
                "args": {"cloudProviderHint": "AZURE", "moveIBInterfaces": False},
                "resources": {"requests": {"cpu": "100m", "memory": "50Mi"}, "limits": {"memory": "256Mi"}},
                # The chart tolerates NoSchedule taints only; list the pools' own (Spot, NoExecute) too.
                "tolerations": _dranet_tolerations(pools),
            },
            opts=child,
        )
        self.device_class = k8s.resource.v1.DeviceClass(
            f"{name}-class",
            metadata={"name": DEVICE_CLASS},
            spec={"selectors": [{"cel": {"expression": DEVICE_CLASS_CEL}}]},
            opts=child,
        )
        templates_opts = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[namespace, self.device_class]))
        self.full_node_templates, self.partial_templates = {}, {}
        for pool_name in pool_names:
            vm_size = self.pools[pool_name].sku.name
            self.full_node_templates[pool_name] = self._template(
                name, pool_name, vm_size, self.nics[pool_name], "full-node", templates_opts
            )
            self.partial_templates[pool_name] = {
                n: self._template(name, pool_name, vm_size, n, f"{n}-nic", templates_opts) for n in args.partial_node_nics
            }
        self.register_outputs({"namespace": self.namespace, "full_node_templates": self.full_node_templates})

    def _template(self, name: str, pool: str, vm_size: str, count: int, suffix: str, opts: pulumi.ResourceOptions) -> str:
        template_name = f"{pool}-rdma-{suffix}"
        k8s.resource.v1.ResourceClaimTemplate(
            f"{name}-{template_name}",
            metadata={"name": template_name, "namespace": self.namespace, "annotations": {POOL_ANNOTATION: pool}},
            spec={
                "spec": {
                    "devices": {
                        "requests": [
                            {
                                "name": "rdma-nics",
                                "exactly": {
                                    "deviceClassName": DEVICE_CLASS,
                                    "count": count,
                                    # Seed 004: one template per VM size, pinned by DRANET's Azure attribute.
                                    "selectors": [
                                        {"cel": {"expression": f'device.attributes["azure.dra.net"]["vmSize"] == "{vm_size}"'}}
                                    ],
                                },
                            }
                        ]
                    }
                }
            },
            opts=opts,
        )
        return template_name

    def pod_spec(self, pool: str, nics: int | None = None, gpu_claim_template: str | None = None) -> RdmaPodSpec:
        """The RDMA pod contract for ``pool``: all its NICs by default, or a partial template's ``nics``."""
        if pool not in self.nics:
            raise ValueError(f"{pool!r} is not an RDMA pool of this network; pools: {', '.join(self.nics)}")
        if nics is None or nics == self.nics[pool]:
            template = self.full_node_templates[pool]
        elif nics in self.partial_templates[pool]:
            template = self.partial_templates[pool][nics]
        else:
            raise ValueError(f"no {nics}-NIC template for {pool}; add {nics} to partial_node_nics")
        claims = {"rdma-nics": template}
        if gpu_claim_template:
            claims["gpus"] = gpu_claim_template
        source = self.pools[pool]
        return RdmaPodSpec(claims=claims, node_selector=dict(source.node_selector), tolerations=list(source.tolerations))


def _dranet_tolerations(pools: list[GpuNodePool]) -> list[dict]:
    """The chart tolerates NoSchedule taints only; add the pools' others (NoExecute, PreferNoSchedule) once each."""
    result = [{"operator": "Exists", "effect": "NoSchedule"}]
    for pool in pools:
        result += [t for t in pool.tolerations if t.get("effect") != "NoSchedule" and t not in result]
    return result
