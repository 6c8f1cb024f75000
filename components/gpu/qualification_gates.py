"""QualificationGates: seed 004's six data-path tests as Kubernetes Jobs on an RDMA pool.

Each Job's script (``gate_scripts/``) reads the tool output for the phrases the seed quotes
(RC transport, DMA-BUF, GDRDMA, rc_mlx5, zero wrong values) and exits non-zero on failure, so the
Job status is the verdict and ``pulumi up`` fails when a gate fails. Bump ``run`` to re-qualify
after a node-image update: Jobs are immutable, so a new run means new Jobs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pulumi
import pulumi_kubernetes as k8s
from pydantic import Field, field_validator

from .._base import PACKAGE, Children, StrictModel, fail, validate_args
from .dra_device_classes import DraDeviceClasses
from .pod_contract import RdmaPodSpec
from .rdma_network import RdmaNetwork

SCRIPTS = Path(__file__).with_name("gate_scripts")
GATE_LABEL = "aks-gpu-inference/gate"


@dataclass(frozen=True)
class Gate:
    number: int
    slug: str
    title: str
    script: str
    nodes: int
    nics: str
    """``one`` (the 1-NIC template) or ``all`` (the full-node template)."""
    gpus: str
    """``none``, ``one`` or ``all`` GPUs per pod."""
    image: str
    """Which image arg runs it: ``tools_image`` or ``nixl_image``."""


GATES = [
    Gate(1, "nic-isolation", "one-NIC DRA claim sees exactly one uverbs device", "uverbs.sh", 1, "one", "none", "tools_image"),
    Gate(2, "full-node-nics", "full-node claim sees every NIC", "uverbs.sh", 1, "all", "none", "tools_image"),
    Gate(3, "ib-write-bw", "two-node ib_write_bw over RC, no TCP fallback", "ib_write_bw.sh", 2, "one", "none", "tools_image"),
    Gate(4, "nccl", "NCCL all-reduce with DMA-BUF and GDRDMA, zero wrong values", "nccl.sh", 2, "all", "one", "tools_image"),
    Gate(5, "nixl", "NIXL transfer over UCX rc_mlx5, zero wrong values", "nixl.sh", 2, "all", "one", "nixl_image"),
    Gate(6, "full-node-nccl", "full-node NCCL on all GPUs and rails", "nccl.sh", 2, "all", "all", "tools_image"),
]


class QualificationGatesArgs(StrictModel):
    """Which pool to qualify and with which images."""

    pool: str
    """The RDMA pool to test; it needs two nodes for gates 3-6. Required."""

    tools_image: str = "nvcr.io/nvidia/pytorch:25.09-py3"
    """Image with perftest (``ib_write_bw``), PyTorch and NCCL. Default the NGC PyTorch 25.09 image;
    a gate whose tool is missing fails with a message saying so."""

    nixl_image: str = "vllm/vllm-openai:v0.11.0"
    """Image with the ``nixl`` Python package and PyTorch for gate 5. Default vLLM 0.11.0."""

    min_gbps_per_rail: float | None = Field(None, gt=0)
    """Lowest acceptable ib_write_bw average. Default: 75% of the catalog's per-NIC rate (seed 004
    measured 375.97 of 400 Gb/s)."""

    timeout_minutes: int = Field(30, ge=5, le=240)
    """How long each gate may run before it fails. Default 30 minutes."""

    run: str = Field("1", pattern=r"^[a-z0-9]{1,8}$")
    """Run identifier in the Job names. Default ``1``; change it to run the gates again."""

    @field_validator("tools_image", "nixl_image")
    @classmethod
    def _pinned(cls, image: str) -> str:
        name = image.rsplit("/", 1)[-1]
        if "@sha256:" not in image and (":" not in name or name.endswith(":latest")):
            raise ValueError("pin the image to a version tag or digest, so a gate result means the same thing next time")
        return image


class QualificationGates(pulumi.ComponentResource):
    """Jobs for gates 1-6 on one RDMA pool. Outputs ``jobs`` (gate -> Job name) and ``verdict_command``."""

    jobs: dict[str, str]
    verdict_command: str

    def __init__(
        self,
        name: str,
        args: QualificationGatesArgs | dict,
        network: RdmaNetwork,
        provider: k8s.Provider,
        gpu_claims: DraDeviceClasses | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ):
        """
        :param name: Logical name; children are named ``<name>-gate-<n>`` and so on.
        :param args: Settings, a ``QualificationGatesArgs`` or a dict of its fields.
        :param network: The RdmaNetwork whose NIC claims the gates use; it needs a 1-NIC template.
        :param provider: Kubernetes provider of the cluster.
        :param gpu_claims: DRA GPU claim templates, when GPUs are allocated through DRA; without it
            the gates request ``nvidia.com/gpu`` from the device plugin.
        :param opts: Standard Pulumi resource options.
        """
        args = validate_args(QualificationGatesArgs, args, "QualificationGates", name)
        if args.pool not in network.nics:
            fail(
                "QualificationGates",
                name,
                "pool",
                args.pool,
                f"not an RDMA pool of the network; pools: {', '.join(network.nics)}",
            )
        if 1 not in network.partial_templates[args.pool]:
            fail(
                "QualificationGates",
                name,
                "pool",
                args.pool,
                "gates 1 and 3 need a 1-NIC claim template: add 1 to the RdmaNetwork's partial_node_nics",
            )
        if gpu_claims is not None and (
            "gpu-1" not in gpu_claims.templates or f"{args.pool}-gpus-full-node" not in gpu_claims.templates
        ):
            fail(
                "QualificationGates",
                name,
                "gpu_claims",
                sorted(gpu_claims.templates),
                f"needs the DRA templates gpu-1 and {args.pool}-gpus-full-node (gpu_counts must include 1)",
            )
        if gpu_claims is not None and gpu_claims.namespace != network.namespace:
            fail(
                "QualificationGates",
                name,
                "gpu_claims",
                gpu_claims.namespace,
                f"claim templates are namespaced: the GPU templates must live in the RDMA namespace {network.namespace!r}",
            )
        if network.pools[args.pool].max_nodes < 2:
            fail(
                "QualificationGates",
                name,
                "pool",
                args.pool,
                "gates 3-6 run across two nodes; give the pool count (or max_count) of at least 2",
            )
        super().__init__(f"{PACKAGE}:index:QualificationGates", name, None, opts)
        # Children wait for what the component waits for (the namespace owner, the claim templates).
        child = Children(self, opts, provider).opts()
        namespace = network.namespace
        pool = network.pools[args.pool]
        rail_gbps = pool.sku.infiniband_gbps
        min_gbps = args.min_gbps_per_rail or 0.75 * rail_gbps

        scripts_name = f"{name}-scripts-{args.run}"
        scripts = k8s.core.v1.ConfigMap(
            f"{name}-scripts",
            metadata={"name": scripts_name, "namespace": namespace},
            data={p.name: p.read_text() for p in sorted(SCRIPTS.iterdir()) if p.suffix in (".sh", ".py")},
            opts=child,
        )
        service = k8s.core.v1.Service(
            f"{name}-peers",
            metadata={"name": f"{name}-peers", "namespace": namespace},
            # Headless: gives each Indexed Job pod a stable DNS name, <job>-<index>.<service>.
            spec={"clusterIP": "None", "selector": {GATE_LABEL: name}, "publishNotReadyAddresses": True},
            opts=child,
        )
        self.jobs = {}
        for gate in GATES:
            job_name = f"{name}-{gate.number}-{gate.slug}-{args.run}"
            contract = network.pod_spec(
                args.pool,
                nics=1 if gate.nics == "one" else None,
                gpu_claim_template=self._gpu_template(gate, args.pool, gpu_claims),
            )
            env = {
                "GATE_JOB": job_name,
                "GATE_SERVICE": f"{name}-peers",
                "GATE_NAMESPACE": namespace,
                "EXPECTED_UVERBS": str(1 if gate.nics == "one" else network.nics[args.pool]),
                "MIN_GBPS": f"{min_gbps:g}",
                "GPUS_PER_NODE": str(pool.gpus_per_node if gate.gpus == "all" else 1),
                "EXPECTED_RAILS": str(network.nics[args.pool] if gate.gpus == "all" else 1),
            }
            k8s.batch.v1.Job(
                f"{name}-gate-{gate.number}",
                metadata={
                    "name": job_name,
                    "namespace": namespace,
                    "labels": {GATE_LABEL: name},
                    "annotations": {"aks-gpu-inference/gate-title": gate.title},
                },
                spec=self._job_spec(
                    name,
                    job_name,
                    gate,
                    getattr(args, gate.image),
                    contract,
                    env,
                    scripts_name,
                    pool.gpu_resource_name,
                    args.timeout_minutes,
                ),
                opts=pulumi.ResourceOptions.merge(
                    child,
                    pulumi.ResourceOptions(
                        depends_on=[scripts, service],
                        custom_timeouts=pulumi.CustomTimeouts(create=f"{args.timeout_minutes + 15}m"),
                    ),
                ),
            )
            self.jobs[f"gate-{gate.number}-{gate.slug}"] = job_name
        self.verdict_command = (
            f"kubectl -n {namespace} logs -l {GATE_LABEL}={name} --prefix --tail=-1 | grep -E 'GATE (PASS|FAIL)'"
        )
        self.register_outputs({"jobs": self.jobs, "verdict_command": self.verdict_command})

    @staticmethod
    def _gpu_template(gate: Gate, pool: str, gpu_claims: DraDeviceClasses | None) -> str | None:
        if gpu_claims is None or gate.gpus == "none":
            return None
        return "gpu-1" if gate.gpus == "one" else f"{pool}-gpus-full-node"

    @staticmethod
    def _job_spec(name, job_name, gate, image, contract: RdmaPodSpec, env, scripts_name, gpu_resource, timeout_minutes) -> dict:
        container = {
            "name": "gate",
            "image": image,
            "command": ["bash", f"/gates/{gate.script}"],
            "env": [{"name": k, "value": v} for k, v in env.items()],
            "volumeMounts": [{"name": "gates", "mountPath": "/gates", "readOnly": True}],
        }
        if gate.gpus != "none" and "gpus" not in contract.claims:
            count = 1 if gate.gpus == "one" else int(env["GPUS_PER_NODE"])
            container["resources"] = {"limits": {gpu_resource: count}}
        pod = {
            "restartPolicy": "Never",
            "subdomain": f"{name}-peers",
            "containers": [container],
            "volumes": [{"name": "gates", "configMap": {"name": scripts_name}}],
        }
        if gate.nodes > 1:
            # Two-node gates must cross the fabric: never both pods on one node.
            pod["affinity"] = {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {"labelSelector": {"matchLabels": {"job-name": job_name}}, "topologyKey": "kubernetes.io/hostname"}
                    ]
                }
            }
        return {
            "completionMode": "Indexed",
            "completions": gate.nodes,
            "parallelism": gate.nodes,
            "backoffLimit": 0,
            "activeDeadlineSeconds": timeout_minutes * 60,
            "template": {"metadata": {"labels": {GATE_LABEL: name}}, "spec": contract.apply(pod)},
        }
