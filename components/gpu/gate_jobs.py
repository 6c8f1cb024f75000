"""Seed 004's six qualification gates and the Kubernetes Jobs that run them, as plain dicts: which
script each gate runs, on how many nodes, with which NICs and GPUs, and what it expects to see."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .pod_contract import NCCL_IB_ONLY, RdmaPodSpec

SCRIPTS = Path(__file__).with_name("gate_scripts")
GATE_LABEL = "aks-gpu-inference/gate"


@dataclass(frozen=True)
class Gate:
    """One of seed 004's data-path tests."""

    number: int
    slug: str
    """Its short name in Job names, e.g. ``ib-write-bw``."""
    title: str
    """What passing proves, in the Job's ``gate-title`` annotation."""
    script: str
    """The script in ``gate_scripts/`` that runs it and prints the verdict."""
    nodes: int
    """How many nodes (pods) it spans: 1, or 2 to cross the fabric."""
    nics: str
    """``one`` (the 1-NIC template) or ``all`` (the full-node template)."""
    gpus: str
    """``none``, ``one`` or ``all`` GPUs per pod."""
    image: str
    """Which image arg runs it: ``tools_image``, ``nccl_image`` or ``nixl_image``."""


GATES = [
    Gate(1, "nic-isolation", "one-NIC DRA claim sees exactly one uverbs device", "uverbs.sh", 1, "one", "none", "tools_image"),
    Gate(2, "full-node-nics", "full-node claim sees every NIC", "uverbs.sh", 1, "all", "none", "tools_image"),
    Gate(3, "ib-write-bw", "two-node ib_write_bw over RC, no TCP fallback", "ib_write_bw.sh", 2, "one", "none", "tools_image"),
    Gate(4, "nccl", "NCCL all-reduce with DMA-BUF and GDRDMA, zero wrong values", "nccl.sh", 2, "all", "one", "nccl_image"),
    Gate(5, "nixl", "NIXL transfer over UCX rc_mlx5, zero wrong values", "nixl.sh", 2, "all", "one", "nixl_image"),
    Gate(6, "full-node-nccl", "full-node NCCL on all GPUs and rails", "nccl.sh", 2, "all", "all", "nccl_image"),
]
NVLINK_GATE = Gate(
    7, "nvlink", "NCCL all-reduce across two nodes over multi-node NVLink (IMEX)", "nvlink.sh", 2, "none", "all", "nccl_image"
)
"""Run on rack-scale pools only, next to gates 1-6: NVLink across the rack through the pool's ComputeDomain."""

NVL72_BUSBW_GBPS = 834.6
"""NCCL all_reduce_perf bus bandwidth on one GB200 NVL72 rack (72 GPUs, NCCL 2.26.2) at 8 GiB, the lower of the two
figures measured (coreweave/nccl-tests@cb86553328f8c9ed6f9d682971f5f9b17a926ab4:README.md:256-274). GB300 NVL72 has
the same fifth-generation NVLink at 1.8 TB/s per GPU (Azure's ND GB200 v6 and GB300 v6 summaries); no GB300 figure
was found. The NVLink gate passes at 75% of it, as gate 3 passes at 75% of the NIC's rate; InfiniBand alone (4 NICs
of at most 800 Gb/s per node) cannot reach that."""


def script_files() -> dict[str, str]:
    """The gate scripts and their helpers, file name -> text, as the scripts ConfigMap carries them."""
    return {p.name: p.read_text() for p in sorted(SCRIPTS.iterdir()) if p.suffix in (".sh", ".py")}


@dataclass(frozen=True)
class GatePlan:
    """One run of the gates on one pool, in plain values: everything a gate's Job spec depends on
    besides its image and the pool's RDMA pod contract."""

    name: str
    """The QualificationGates component's name: the gate label's value, and the prefix of every name."""
    namespace: str
    """The RDMA namespace, where the NIC (and GPU) claim templates live."""
    run: str
    """The run identifier in every per-run name."""
    nics: int
    """InfiniBand NICs per node of the pool."""
    gpus_per_node: int
    """GPUs per node of the pool, which gate 6 uses all of."""
    gpu_resource: str
    """The device-plugin resource a gate requests when no DRA GPU claim is given."""
    min_gbps: float
    """The lowest ib_write_bw average that passes gate 3."""
    timeout_minutes: int
    """How long each Job may run."""
    min_nvlink_gbps: float = 0.75 * NVL72_BUSBW_GBPS
    """The lowest all-reduce bus bandwidth (GB/s) that passes the NVLink gate."""
    supplemental_groups: tuple[int, ...] = ()
    """Groups the gate pods' root user joins, to reach an image's group-only directories with every capability dropped."""

    @property
    def service(self) -> str:
        """The headless Service that gives each gate pod a DNS name."""
        return f"{self.name}-peers"

    @property
    def scripts(self) -> str:
        """The scripts ConfigMap's name (per run: a new run ships its own copy)."""
        return f"{self.name}-scripts-{self.run}"

    @property
    def verdict_command(self) -> str:
        return f"kubectl -n {self.namespace} logs -l {GATE_LABEL}={self.name} --prefix --tail=-1 | grep -E 'GATE (PASS|FAIL)'"

    def job_name(self, gate: Gate) -> str:
        return f"{self.name}-{gate.number}-{gate.slug}-{self.run}"

    def env(self, gate: Gate) -> dict[str, str]:
        """What the gate script expects to see; the NCCL gates run NCCL as training does, failing instead of falling
        back to sockets (``NCCL_IB_ONLY``)."""
        return {
            **(NCCL_IB_ONLY if gate.script == "nccl.sh" else {}),
            "GATE_JOB": self.job_name(gate),
            "GATE_SERVICE": self.service,
            "GATE_NAMESPACE": self.namespace,
            "EXPECTED_UVERBS": str(1 if gate.nics == "one" else self.nics),
            "MIN_GBPS": f"{self.min_gbps:g}",
            "GPUS_PER_NODE": str(self.gpus_per_node if gate.gpus == "all" else 1),
            "EXPECTED_RAILS": str(self.nics if gate.gpus == "all" else 1),
            **({"MIN_NVLINK_GBPS": f"{self.min_nvlink_gbps:g}"} if gate is NVLINK_GATE else {}),
        }

    def metadata(self, gate: Gate) -> dict[str, Any]:
        return {
            "name": self.job_name(gate),
            "namespace": self.namespace,
            "labels": {GATE_LABEL: self.name},
            "annotations": {"aks-gpu-inference/gate-title": gate.title},
        }

    def job_spec(self, gate: Gate, image: str, contract: RdmaPodSpec) -> dict[str, Any]:
        """An Indexed Job of ``gate.nodes`` pods, never retried: its status is the verdict."""
        return {
            "completionMode": "Indexed",
            "completions": gate.nodes,
            "parallelism": gate.nodes,
            "backoffLimit": 0,
            "activeDeadlineSeconds": self.timeout_minutes * 60,
            "template": {
                "metadata": {"labels": {GATE_LABEL: self.name}},
                "spec": contract.apply(self._pod(gate, image, contract)),
            },
        }

    def _pod(self, gate: Gate, image: str, contract: RdmaPodSpec) -> dict[str, Any]:
        container: dict[str, Any] = {
            "name": "gate",
            "image": image,
            "command": ["bash", f"/gates/{gate.script}"],
            "env": [{"name": k, "value": v} for k, v in self.env(gate).items()],
            "volumeMounts": [{"name": "gates", "mountPath": "/gates", "readOnly": True}],
        }
        if gate.gpus != "none" and "gpus" not in contract.claims:
            count = 1 if gate.gpus == "one" else self.gpus_per_node
            container["resources"] = {"limits": {self.gpu_resource: count}}
        pod: dict[str, Any] = {
            "restartPolicy": "Never",
            "subdomain": self.service,
            "containers": [container],
            "volumes": [{"name": "gates", "configMap": {"name": self.scripts}}],
        }
        if self.supplemental_groups:
            pod["securityContext"] = {"supplementalGroups": list(self.supplemental_groups)}
        if gate.nodes > 1:
            # Two-node gates must cross the fabric: never both pods on one node.
            term = {"labelSelector": {"matchLabels": {"job-name": self.job_name(gate)}}, "topologyKey": "kubernetes.io/hostname"}
            pod["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
        return pod
