"""QualificationGates: seed 004's six data-path tests as Kubernetes Jobs on an RDMA pool.

Each Job's script (``gate_scripts/``) reads the tool output for the phrases the seed quotes
(RC transport, DMA-BUF, GDRDMA, rc_mlx5, zero wrong values) and exits non-zero on failure, so the
Job status is the verdict and ``pulumi up`` fails when a gate fails. Bump ``run`` to re-qualify
after a node-image update: Jobs are immutable, so a new run means new Jobs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pulumi
import pulumi_kubernetes as k8s
from pydantic import Field, field_validator

from .._base import PACKAGE, Children, StrictModel, kubernetes_provider, raise_problems, validate_args
from ..core import pins
from ..core.errors import FieldProblem
from ..core.images import pin_problem
from .compute_domain import CHANNEL_CLAIM
from .gate_jobs import GATE_LABEL, GATES, NVL72_BUSBW_GBPS, NVLINK_GATE, Gate, GatePlan, script_files
from .pod_contract import RdmaPodSpec, full_node_gpu_template
from .pools import GpuClaimTemplates, NicNetwork

if TYPE_CHECKING:
    from ..context import ClusterContext
    from ..core.catalog import GpuSku
    from .dra_device_classes import DraDeviceClasses
    from .rdma_network import RdmaNetwork


class QualificationGatesArgs(StrictModel):
    """Which pool to qualify and with which images."""

    pool: str
    """The RDMA pool to test; it needs two nodes for gates 3-6. Required."""

    tools_image: str = pins.image("gate-tools")
    """Image with perftest (``ib_write_bw``), PyTorch and NCCL for gates 1-3 (and 4 and 6 without ``nccl_image``).
    Default the pinned NGC PyTorch image (``gate-tools``); a gate whose tool is missing fails saying so."""

    nccl_image: str | None = None
    """Image with PyTorch and NCCL for gates 4 and 6. Default: ``tools_image``; a stack whose pool trains sets the
    training image here, so the gates qualify the NCCL and libibverbs the job will use."""

    nixl_image: str = pins.image("vllm")
    """Image with the ``nixl`` Python package and PyTorch for gate 5. Default the pinned vLLM engine image; a stack
    sets the image of the pool's disaggregated engines (vLLM, or Dynamo's runtime), so gate 5 qualifies the NIXL and
    UCX that move the KV cache."""

    supplemental_groups: list[int] = Field(default_factory=list)
    """Groups the gate pods' root user joins (pod ``securityContext.supplementalGroups``). The gates run as root with
    every capability dropped (the RDMA contract), so an image's permission bits apply to them: a directory only its
    group may enter hides the tools inside. Default none; a stack whose gates run the training image adds the
    rayproject images' ``users`` group, which owns ``/home/ray`` and the ``torchrun`` in it."""

    min_gbps_per_rail: float | None = Field(None, gt=0)
    """Lowest acceptable ib_write_bw average. Default: 75% of the catalog's per-NIC rate (seed 004
    measured 375.97 of 400 Gb/s), or of the catalog's measured rate where Azure's falls well short of the line rate
    (GB300: 449.43 of 800 Gb/s)."""

    min_nvlink_busbw_gbps: float | None = Field(None, gt=0)
    """Lowest acceptable all-reduce bus bandwidth across two nodes over NVLink (GB/s), for the NVLink gate of a
    rack-scale pool (refused on another, which has no NVLink gate). Default: 75% of the 834.6 GB/s measured on a GB200
    NVL72 rack (``gate_jobs.NVL72_BUSBW_GBPS``)."""

    timeout_minutes: int = Field(30, ge=5, le=240)
    """How long each gate may run before it fails. Default 30 minutes."""

    run: str = Field("1", pattern=r"^[a-z0-9]{1,8}$")
    """Run identifier in the Job names. Default ``1``; change it to run the gates again."""

    @field_validator("tools_image", "nccl_image", "nixl_image")
    @classmethod
    def _pinned(cls, image: str | None) -> str | None:
        if image is not None and pin_problem(image):
            raise ValueError("pin the image to a version tag or digest, so a gate result means the same thing next time")
        return image


def rail_rate_problem(min_gbps: float | None, sku: GpuSku | None) -> str | None:
    """Why a bandwidth threshold can never be met on ``sku``'s InfiniBand NICs: at or above their line rate (an
    ib_write_bw average stays below it: seed 004 measured 375.97 of 400 Gb/s), or above the average measured on
    Azure where that falls well short of it (``ib_write_bw_gbps``: GB300, 449.43 of 800). None when it can."""
    if min_gbps is None or sku is None or not sku.infiniband_gbps:
        return None
    measured = sku.ib_write_bw_gbps
    if measured is not None and min_gbps > measured:
        reached = (
            f"above the {measured:g} Gb/s ib_write_bw average measured on Azure for {sku.name} (line rate {sku.infiniband_gbps})"
        )
        ceiling = measured
    elif min_gbps >= sku.infiniband_gbps:
        reached = f"at or above the {sku.infiniband_gbps} Gb/s line rate of {sku.name}'s InfiniBand NICs, which a measured average never reaches (seed 004: 375.97 of 400)"
        ceiling = sku.infiniband_gbps
    else:
        return None
    return (
        f"{reached} (components/core/gpu_sizes.json), so gate 3 could never pass; use less than {ceiling:g}, or leave "
        f"it out for 75% of it ({0.75 * ceiling:g})"
    )


def qualification_gates_problems(
    args: QualificationGatesArgs, network: NicNetwork, gpu_claims: GpuClaimTemplates | None
) -> list[FieldProblem]:
    """Every reason the gates cannot run on ``args.pool`` of ``network``; empty if none."""
    if args.pool not in network.nics:
        return [FieldProblem("pool", args.pool, f"not an RDMA pool of the network; pools: {', '.join(network.nics)}")]
    problems = []
    if gpu_claims is not None:
        needed = {"gpu-1", full_node_gpu_template(args.pool)}
        if not needed <= set(gpu_claims.templates):
            why = f"needs the DRA templates gpu-1 and {args.pool}-gpus-full-node (gpu_counts must include 1)"
            problems.append(FieldProblem("gpu_claims", sorted(gpu_claims.templates), why))
        if gpu_claims.namespace != network.namespace:
            why = f"claim templates are namespaced: the GPU templates must live in the RDMA namespace {network.namespace!r}"
            problems.append(FieldProblem("gpu_claims", gpu_claims.namespace, why))
    if why := rail_rate_problem(args.min_gbps_per_rail, network.pools[args.pool].sku):
        problems.append(FieldProblem("min_gbps_per_rail", args.min_gbps_per_rail, why))
    rack = network.pools[args.pool].sku.rack_size
    channels = getattr(gpu_claims, "channel_templates", {}) if gpu_claims is not None else {}
    if rack and args.pool not in channels:
        why = (
            f"{args.pool} is a rack-scale pool: its NVLink gate claims the pool's ComputeDomain channel, which the DRA "
            "section makes for pools it serves; list the pool in dra.pools"
        )
        problems.append(FieldProblem("gpu_claims", None if gpu_claims is None else sorted(channels), why))
    if not rack and args.min_nvlink_busbw_gbps is not None:
        why = (
            f"{args.pool} ({network.pools[args.pool].sku.name}) is not a rack-scale pool, so no NVLink gate runs and "
            "nothing reads the threshold; leave it out"
        )
        problems.append(FieldProblem("min_nvlink_busbw_gbps", args.min_nvlink_busbw_gbps, why))
    if network.pools[args.pool].max_nodes < 2:
        why = "gates 3-6 run across two nodes; give the pool count (or max_count) of at least 2"
        problems.append(FieldProblem("pool", args.pool, why))
    return problems


class QualificationGates(pulumi.ComponentResource):
    """Jobs for gates 1-6 on one RDMA pool. Outputs ``jobs`` (gate -> Job name) and ``verdict_command``."""

    jobs: dict[str, str]
    verdict_command: str

    def __init__(
        self,
        name: str,
        args: QualificationGatesArgs | dict,
        opts: pulumi.ResourceOptions | None = None,
        *,
        network: RdmaNetwork,
        cluster: ClusterContext,
        gpu_claims: DraDeviceClasses | None = None,
    ):
        """
        :param name: Logical name; children are named ``<name>-gate-<n>`` and so on.
        :param args: Settings, a ``QualificationGatesArgs`` or a dict of its fields.
        :param opts: Standard Pulumi resource options; a Kubernetes ``provider`` here wins over the cluster's.
            Children wait for its ``depends_on`` too (the namespace owner, the claim templates).
        :param network: The RdmaNetwork whose NIC claims the gates use; gates 1 and 3 claim one NIC,
            and the network makes that template for the gated pool if its args did not.
        :param cluster: The cluster; its Kubernetes provider runs the Jobs.
        :param gpu_claims: DRA GPU claim templates, when GPUs are allocated through DRA; without it
            the gates request ``nvidia.com/gpu`` from the device plugin.
        """
        args = validate_args(QualificationGatesArgs, args, "QualificationGates", name)
        raise_problems("QualificationGates", name, qualification_gates_problems(args, network, gpu_claims))
        super().__init__(f"{PACKAGE}:index:QualificationGates", name, None, opts)
        network.nic_template(args.pool, 1)  # gates 1 and 3 claim one NIC
        child = Children(self, opts, kubernetes_provider(opts, cluster.provider)).opts()
        pool = network.pools[args.pool]
        plan = GatePlan(
            name=name,
            namespace=network.namespace,
            run=args.run,
            nics=network.nics[args.pool],
            gpus_per_node=pool.gpus_per_node,
            gpu_resource=pool.gpu_resource_name,
            min_gbps=args.min_gbps_per_rail or 0.75 * (pool.sku.ib_write_bw_gbps or pool.sku.infiniband_gbps),
            min_nvlink_gbps=args.min_nvlink_busbw_gbps or 0.75 * NVL72_BUSBW_GBPS,
            timeout_minutes=args.timeout_minutes,
            supplemental_groups=tuple(args.supplemental_groups),
        )
        scripts = k8s.core.v1.ConfigMap(
            f"{name}-scripts",
            metadata={"name": plan.scripts, "namespace": plan.namespace},
            data=script_files(),
            opts=child,
        )
        service = k8s.core.v1.Service(
            f"{name}-peers",
            metadata={"name": plan.service, "namespace": plan.namespace},
            # Headless: gives each Indexed Job pod a stable DNS name, <job>-<index>.<service>.
            spec={"clusterIP": "None", "selector": {GATE_LABEL: name}, "publishNotReadyAddresses": True},
            opts=child,
        )
        job_opts = pulumi.ResourceOptions.merge(
            child,
            pulumi.ResourceOptions(
                depends_on=[scripts, service], custom_timeouts=pulumi.CustomTimeouts(create=f"{args.timeout_minutes + 15}m")
            ),
        )
        self.jobs = {}
        channel = getattr(gpu_claims, "channel_templates", {}).get(args.pool) if gpu_claims is not None else None
        for gate in GATES + ([NVLINK_GATE] if channel else []):
            if gate is NVLINK_GATE:
                # No NIC: NVLink or nothing (a socket fallback fails the bandwidth check).
                claims = {"gpus": full_node_gpu_template(args.pool), CHANNEL_CLAIM: channel}
                contract = RdmaPodSpec(claims, dict(pool.node_selector), list(pool.tolerations), env={})
            else:
                contract = network.pod_spec(
                    args.pool,
                    nics=1 if gate.nics == "one" else None,
                    gpu_claim_template=_gpu_template(gate, args.pool, gpu_claims),
                )
            k8s.batch.v1.Job(
                f"{name}-gate-{gate.number}",
                metadata=plan.metadata(gate),
                spec=plan.job_spec(gate, gate_image(args, gate), contract),
                opts=job_opts,
            )
            self.jobs[f"gate-{gate.number}-{gate.slug}"] = plan.job_name(gate)
        self.verdict_command = plan.verdict_command
        self.register_outputs({"jobs": self.jobs, "verdict_command": self.verdict_command})


def gate_image(args: QualificationGatesArgs, gate: Gate) -> str:
    """The image a gate runs: its own arg, ``nccl_image`` falling back to ``tools_image``."""
    return getattr(args, gate.image) or args.tools_image


def _gpu_template(gate: Gate, pool: str, gpu_claims: DraDeviceClasses | None) -> str | None:
    """The DRA GPU claim template a gate's pods use, or None for none (or the device plugin)."""
    if gpu_claims is None or gate.gpus == "none":
        return None
    return "gpu-1" if gate.gpus == "one" else full_node_gpu_template(pool)
