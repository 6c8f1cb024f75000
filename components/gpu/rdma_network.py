"""RdmaNetwork: InfiniBand NICs as DRA devices (DRANET) on RDMA-capable ND pools, the way seed 004
qualified it: a pinned DRANET release, the ``dranet.net`` DeviceClass, one full-node NIC claim
template per pool, and the namespace RDMA workloads run in."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pulumi
import pulumi_kubernetes as k8s
from pydantic import Field, field_validator

from .._base import PACKAGE, Children, StrictModel, kubernetes_provider, raise_problems, validate_args
from ..core import pins
from ..core.errors import FieldProblem
from ..core.labels import AGENTPOOL_LABEL, DRANET_DRIVER, POOL_ANNOTATION
from ..core.labels import RDMA_DEVICE_CLASS as DEVICE_CLASS
from ..core.names import DNS_LABEL
from ..core.security import NODE_AGENT_LABELS
from .dra_api import kubernetes_version_problems
from .pod_contract import RdmaPodSpec
from .pools import GpuPool, pool_affinity, pool_tolerations

if TYPE_CHECKING:
    from ..azure.gpu_node_pool import GpuNodePool
    from ..azure.interconnect import InterconnectPlacement
    from ..context import ClusterContext

DRANET_CHART = pins.chart("dranet").ref
# Seed 004 section 4: only RDMA-capable devices that the dra.net driver publishes.
DEVICE_CLASS_CEL = f'device.driver == "{DRANET_DRIVER}" && device.attributes["{DRANET_DRIVER}"].rdma == true'
NO_SCHEDULE = {"operator": "Exists", "effect": "NoSchedule"}
"""The DRANET chart's own toleration: every NoSchedule taint."""


class RdmaNetworkArgs(StrictModel):
    """DRANET and the NIC claims for RDMA pools."""

    namespace: str = Field("llm-d-infra", pattern=DNS_LABEL.pattern)
    """Namespace for RDMA workloads and their NIC claim templates. Default ``llm-d-infra`` (seed 004).
    It is labelled Pod Security ``privileged`` because "baseline" forbids IPC_LOCK; the policy pack's
    ipc-lock-without-privileged rule is the compensating control."""

    chart_version: str | None = None
    """DRANET Helm chart version (tags carry a ``v``). Default: the pins table's ``dranet`` (v1.3.0, the release
    seed 004 qualified), or ``dranet-interconnect`` (v1.4.0) when a pool is rack-scale: its NIC claims select the
    interconnect attributes only v1.4.0 publishes."""

    image_tag: str | None = None
    """DRANET image tag. Default: the pinned image of the chart's release (as ``chart_version``)."""

    partial_node_nics: list[int] = Field(default_factory=list)
    """Extra claim templates for fewer NICs than a full node, e.g. ``[2]``, made for every pool of the
    network. Default none: partial placement needs PCI/NUMA topology validation first (seed 004). A
    component that needs one more count asks ``RdmaNetwork.nic_template`` for it (the qualification
    gates get their 1-NIC template that way), so it need not be listed here."""

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


def rdma_network_problems(args: RdmaNetworkArgs, pools: Sequence[GpuPool], kubernetes_version: str | None) -> list[FieldProblem]:
    """Every reason the network cannot serve ``pools`` on a cluster of ``kubernetes_version``; empty if none."""
    problems = kubernetes_version_problems(kubernetes_version)
    if not pools:
        problems.append(FieldProblem("pools", [], "give at least one RDMA pool"))
    for pool in pools:
        problems += _pool_problems(args, pool)
    rack = [pool.pool_name for pool in pools if pool.sku.rack_size]
    release = _release(args.chart_version) if args.chart_version else None
    if rack and release is not None and release < INTERCONNECT_SINCE:
        why = (
            f"{', '.join(rack)} is rack-scale: its NIC claims select the interconnect group and subgroup, which DRANET "
            "publishes from v1.4.0; leave chart_version out (the pins table's dranet-interconnect) or give v1.4.0 or later"
        )
        problems.append(FieldProblem("chart_version", args.chart_version, why))
    names = [pool.pool_name for pool in pools]
    unknown = sorted(set(args.nics_per_node) - set(names))
    if pools and unknown:
        problems.append(FieldProblem("nics_per_node", unknown, f"not RDMA pools of this network; pools: {', '.join(names)}"))
    return problems


def _pool_problems(args: RdmaNetworkArgs, pool: GpuPool) -> list[FieldProblem]:
    sku = pool.sku
    if not pool.rdma_capable:
        why = f"{sku.name} is not RDMA-capable; RDMA sizes have 'r' among the capability letters, e.g. Standard_ND96isr_H100_v5"
        return [FieldProblem("pools", pool.pool_name, why)]
    problems = []
    catalog_nics = sku.infiniband_nics
    recorded = args.nics_per_node.get(pool.pool_name, catalog_nics)
    if recorded != catalog_nics:
        why = (
            f"the catalog says {sku.name} has {catalog_nics} InfiniBand NICs; "
            f"fix the catalog row (with its source) if DRANET really publishes {recorded}"
        )
        problems.append(FieldProblem(f"nics_per_node.{pool.pool_name}", recorded, why))
    too_many = [n for n in args.partial_node_nics if n >= catalog_nics]
    if too_many:
        why = f"a partial claim on {pool.pool_name} ({sku.name}) must ask for fewer than its {catalog_nics} NICs"
        problems.append(FieldProblem("partial_node_nics", too_many, why))
    return problems


INTERCONNECT_SINCE = (1, 4, 0)
"""The first DRANET release that publishes ``interconnectGroupId`` and ``interconnectSubgroupId``, which a rack-scale
pool's NIC claims select (kubernetes-sigs/dranet@v1.4.0 pkg/cloudprovider/azure/azure.go)."""


def dranet_pin(pools: Sequence[GpuPool]) -> str:
    """The pins table's key of the DRANET release for ``pools``: the interconnect one when any pool is rack-scale."""
    return "dranet-interconnect" if any(pool.sku.rack_size for pool in pools) else "dranet"


def chart_version(args: RdmaNetworkArgs, pools: Sequence[GpuPool]) -> str:
    return args.chart_version or pins.chart(dranet_pin(pools)).version


def image_tag(args: RdmaNetworkArgs, pools: Sequence[GpuPool]) -> str:
    return args.image_tag or (args.chart_version if args.chart_version else pins.image_pin(dranet_pin(pools)).tag)


def _release(version: str) -> tuple[int, ...] | None:
    parts = version.removeprefix("v").split(".")
    return tuple(int(p) for p in parts) if len(parts) == 3 and all(p.isdigit() for p in parts) else None


def dranet_values(args: RdmaNetworkArgs, pools: Sequence[GpuPool]) -> dict[str, Any]:
    """The DRANET chart's values: pinned image, placed on exactly the RDMA pools, tolerating their taints."""
    names = sorted(pool.pool_name for pool in pools)
    placement = {"nodeSelector": {AGENTPOOL_LABEL: names[0]}} if len(names) == 1 else {"affinity": pool_affinity(names)}
    return {
        "image": {"repository": "registry.k8s.io/networking/dranet", "tag": image_tag(args, pools), "pullPolicy": "IfNotPresent"},
        **placement,
        # Keep the IPoIB interfaces on the host; DRANET injects the RDMA character devices.
        "args": {"cloudProviderHint": "AZURE", "moveIBInterfaces": False},
        "resources": {"requests": {"cpu": "100m", "memory": "50Mi"}, "limits": {"memory": "256Mi"}},
        # The chart tolerates NoSchedule taints only; list the pools' own (Spot, NoExecute) too.
        "tolerations": pool_tolerations(pools, NO_SCHEDULE),
    }


def nic_claim_spec(vm_size: str, count: int, interconnect: InterconnectPlacement | None = None) -> dict[str, Any]:
    """A ResourceClaimTemplate spec for ``count`` RDMA NICs of one VM size; on a rack-scale pool with an interconnect
    group, NICs of nodes in its group and subgroup only (one rack: a multi-node workload never spans two fabrics)."""
    # Seed 004: one template per VM size, pinned by DRANET's Azure attribute.
    expressions = [f'device.attributes["azure.dra.net"]["vmSize"] == "{vm_size}"']
    expressions += interconnect.selectors() if interconnect is not None else []
    request = {
        "deviceClassName": DEVICE_CLASS,
        "count": count,
        "selectors": [{"cel": {"expression": e}} for e in expressions],
    }
    return {"spec": {"devices": {"requests": [{"name": "rdma-nics", "exactly": request}]}}}


@dataclass(frozen=True)
class NetworkFacts:
    """What an RDMA network is, from its args and pools alone: the namespace RDMA work runs in, its pools and how many
    NICs a node of each has. ``RdmaNetwork`` has the same, and the stack checks other components against these
    before anything exists."""

    namespace: str
    pools: dict[str, GpuPool]
    nics: dict[str, int]


def network_facts(args: RdmaNetworkArgs, pools: Sequence[GpuPool]) -> NetworkFacts:
    return NetworkFacts(args.namespace, {p.pool_name: p for p in pools}, {p.pool_name: p.sku.infiniband_nics for p in pools})


class RdmaNetwork(pulumi.ComponentResource):
    """DRANET, the ``dranet.net`` DeviceClass and NIC claim templates for one or more RDMA pools.

    ``pod_spec(pool)`` returns the pod-spec contract (claims, IPC_LOCK security context, UCX/NCCL
    environment, node selector, tolerations) that every RDMA workload applies; ``nic_template``
    gives a component the template for a NIC count of its own.
    """

    namespace: str
    pools: dict[str, GpuPool]
    full_node_templates: dict[str, str]
    partial_templates: dict[str, dict[int, str]]
    nics: dict[str, int]

    def __init__(
        self,
        name: str,
        args: RdmaNetworkArgs | dict,
        opts: pulumi.ResourceOptions | None = None,
        *,
        pools: list[GpuNodePool],
        cluster: ClusterContext,
    ):
        """
        :param name: Logical name; children are named ``<name>-dranet``, ``<name>-class`` and so on.
        :param args: DRANET settings, an ``RdmaNetworkArgs`` or a dict of its fields.
        :param opts: Standard Pulumi resource options; a Kubernetes ``provider`` here wins over the cluster's.
        :param pools: The RDMA pools; each must be an RDMA-capable size.
        :param cluster: The cluster: its Kubernetes provider, and its version (DRA needs the pins table's minimum minor).
        """
        args = validate_args(RdmaNetworkArgs, args, "RdmaNetwork", name)
        raise_problems("RdmaNetwork", name, rdma_network_problems(args, pools, cluster.kubernetes_version))
        super().__init__(f"{PACKAGE}:index:RdmaNetwork", name, None, opts)
        child = Children(self, opts, kubernetes_provider(opts, cluster.provider)).opts()
        self._name = name
        facts = network_facts(args, pools)
        self.namespace, self.pools, self.nics = facts.namespace, facts.pools, facts.nics
        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            # Baseline forbids IPC_LOCK; ipc-lock-without-privileged keeps privileged pods out.
            metadata={"name": args.namespace, "labels": {**NODE_AGENT_LABELS, "aks-gpu-inference/rdma": "true"}},
            opts=child,
        )
        self.release = k8s.helm.v4.Chart(
            f"{name}-dranet",
            chart=DRANET_CHART,
            version=chart_version(args, pools),
            namespace="kube-system",
            values=dranet_values(args, pools),
            opts=child,
        )
        self.device_class = k8s.resource.v1.DeviceClass(
            f"{name}-class",
            metadata={"name": DEVICE_CLASS},
            spec={"selectors": [{"cel": {"expression": DEVICE_CLASS_CEL}}]},
            opts=child,
        )
        self._templates_opts = pulumi.ResourceOptions.merge(
            child, pulumi.ResourceOptions(depends_on=[namespace, self.device_class])
        )
        self.full_node_templates, self.partial_templates = {}, {}
        for pool in sorted(self.nics):
            self.full_node_templates[pool] = self._template(pool, self.nics[pool], "full-node")
            self.partial_templates[pool] = {n: self._template(pool, n, f"{n}-nic") for n in args.partial_node_nics}
        self.register_outputs({"namespace": self.namespace, "full_node_templates": self.full_node_templates})

    def _template(self, pool: str, count: int, suffix: str) -> str:
        template_name = f"{pool}-rdma-{suffix}"
        k8s.resource.v1.ResourceClaimTemplate(
            f"{self._name}-{template_name}",
            metadata={"name": template_name, "namespace": self.namespace, "annotations": {POOL_ANNOTATION: pool}},
            spec=nic_claim_spec(self.pools[pool].sku.name, count, getattr(self.pools[pool], "interconnect", None)),
            opts=self._templates_opts,
        )
        return template_name

    def _require_pool(self, pool: str) -> None:
        if pool not in self.nics:
            raise ValueError(f"{pool!r} is not an RDMA pool of this network; pools: {', '.join(self.nics)}")

    def nic_template(self, pool: str, nics: int) -> str:
        """The claim template for ``nics`` NICs of ``pool``: the full-node one, a configured partial one,
        or one made now, named and parented like those of ``partial_node_nics`` (``<pool>-rdma-<n>-nic``)."""
        self._require_pool(pool)
        if nics == self.nics[pool]:
            return self.full_node_templates[pool]
        if not 1 <= nics < self.nics[pool]:
            raise ValueError(f"a partial claim on {pool} asks for 1 to {self.nics[pool] - 1} NICs, not {nics}")
        partial = self.partial_templates[pool]
        if nics not in partial:
            partial[nics] = self._template(pool, nics, f"{nics}-nic")
            self.partial_templates[pool] = dict(sorted(partial.items()))
        return partial[nics]

    def pod_spec(self, pool: str, nics: int | None = None, gpu_claim_template: str | None = None) -> RdmaPodSpec:
        """The RDMA pod contract for ``pool``: all its NICs by default, or an existing partial template's ``nics``."""
        self._require_pool(pool)
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
