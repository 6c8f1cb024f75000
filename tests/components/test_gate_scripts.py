"""The gate scripts run for real with bash, against fake tools that print what seed 004 saw (or
what a broken data path prints instead), so every GATE PASS / GATE FAIL verdict is exercised."""

import os
import py_compile
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from aks_gpu_inference.components.gpu.gate_jobs import GATES, SCRIPTS
from tests.components.container_root import as_container_root

BASH = shutil.which("bash")
# The real tools the scripts use besides the fakes; nothing else from the host PATH is visible.
HOST_TOOLS = ["ls", "grep", "awk", "head", "tee", "sort", "wc", "seq", "cat"]
PEER = "qualify-3-ib-write-bw-1-0.qualify-peers.llm-d-infra.svc.cluster.local"

pytestmark = pytest.mark.skipif(BASH is None, reason="bash is needed to run the gate scripts")


# ---- realistic tool output ---------------------------------------------------------------------


def perftest(connection="RC", link="IB", average="375.97", table=True, device="mlx5_0") -> str:
    """ib_write_bw output as perftest prints it (seed 004: RC over IB at 375.97 Gb/s on one rail)."""
    lines = [
        "---------------------------------------------------------------------------------------",
        "                    RDMA_Write BW Test",
        f" Dual-port       : OFF\t\tDevice         : {device}",
        " Number of qps   : 1\t\tTransport type : IB",
        f" Connection type : {connection}\t\tUsing SRQ      : OFF",
        " PCIe relax order: ON",
        " ibv_wr* API     : ON",
        " TX depth        : 128",
        " CQ Moderation   : 1",
        " Mtu             : 4096[B]",
        f" Link type       : {link}",
        " Max inline data : 0[B]",
        " rdma_cm QPs\t : OFF",
        # perftest exchanges QP data over TCP; this line must not read as a TCP fallback.
        " Data ex. method : Ethernet",
        "---------------------------------------------------------------------------------------",
        " local address: LID 0x1d QPN 0x0129 PSN 0x4c1a2e RKey 0x1fff00 VAddr 0x007f2b5c3f0000",
        " remote address: LID 0x1e QPN 0x012a PSN 0x8a3b1c RKey 0x1fff00 VAddr 0x007f9d2a1f0000",
        "---------------------------------------------------------------------------------------",
        " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]",
    ]
    if table:
        lines.append(f" 65536      7170000          0.00               {average}             0.717113")
    lines.append("---------------------------------------------------------------------------------------")
    return "\n".join(lines) + "\n"


def nccl_log(rails=1, gdrdma=True, dmabuf=True, wrong=0, world=2, gdr_rails=None, transport="IB") -> str:
    """NCCL INFO lines as seed 004 quotes them, then the all-reduce script's verdict line."""
    prefix = "aks-h100-0:212:212 [0] NCCL INFO"
    lines = [
        f"{prefix} Bootstrap : Using eth0:10.244.1.17<0>",
        f"{prefix} NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB [3]mlx5_3:1/IB ; OOB eth0:10.244.1.17<0>",
        f"{prefix} Using network IB",
    ]
    if dmabuf:
        lines.append(f"{prefix} DMA-BUF is available on GPU device 0")
    if gdrdma:
        lines.append(f"{prefix} GPU Direct RDMA Enabled for HCA 0 'mlx5_0'")
    gdr_rails = rails if gdr_rails is None else gdr_rails
    for rail in range(rails):
        suffix = "/GDRDMA" if gdrdma and rail < gdr_rails else ""
        lines.append(f"{prefix} Channel {rail:02d}/0 : 0[{rail}] -> 8[{rail}] [send] via NET/{transport}/{rail}{suffix}")
    lines.append(f"{prefix} Connected all rings")
    lines.append(f"world size: {world}; wrong values: {wrong}")
    return "\n".join(lines) + "\n"


def ucx_log(transport="rc_mlx5", wrong=0, role="initiator") -> str:
    """UCX_PROTO_INFO=y output and the NIXL transfer script's verdict line."""
    lines = [
        "[1764491000.101010] [aks-h100-1:77:0]     ucp_context.c:2190 UCX  INFO  Version 1.19.0",
        "[1764491000.202020] [aks-h100-1:77:0]  +--------------------------------+---------------------------------------+",
        "[1764491000.202021] [aks-h100-1:77:0]  | ucp_context_0 inter-node cfg#2 | remote memory read by ucp_get* from cuda |",
        "[1764491000.202022] [aks-h100-1:77:0]  +--------------------------------+---------------------------------------+",
        f"[1764491000.202023] [aks-h100-1:77:0]  |                       0..inf | zero-copy | {transport}/mlx5_0:1 |",
        "[1764491000.202024] [aks-h100-1:77:0]  +--------------------------------+---------------------------------------+",
    ]
    lines.append(f"initiator: wrong values: {wrong}" if role == "initiator" else "target: transfer served")
    return "\n".join(lines) + "\n"


# ---- a sandbox per run -------------------------------------------------------------------------


@dataclass
class Sandbox:
    root: Path
    bin: Path
    env: dict[str, str]

    def tool(self, name: str, body: str) -> None:
        """A fake executable on PATH; it records its arguments in <name>.args."""
        path = self.bin / name
        path.write_text(f'#!{BASH}\necho "$@" >> "{self.root}/{name}.args"\n{body}\n')
        path.chmod(0o755)

    def prints(self, name: str, text: str, status: int = 0) -> None:
        output = self.root / f"{name}.out"
        output.write_text(text)
        self.tool(name, f'cat "{output}"\nexit {status}')

    def args(self, name: str) -> list[str]:
        path = self.root / f"{name}.args"
        return path.read_text().splitlines() if path.exists() else []

    def devices(self, *names: str) -> None:
        for name in names:
            (self.root / "dev" / name).touch()

    def verbs(self, uverbs: str, ibdev: str) -> None:
        """The host sysfs entry that names the InfiniBand device behind a uverbs node."""
        node = self.root / "sys" / uverbs
        node.mkdir(exist_ok=True)
        (node / "ibdev").write_text(f"{ibdev}\n")

    def run(self, script: str, **env: str) -> subprocess.CompletedProcess:
        result = subprocess.run(
            [BASH, str(SCRIPTS / script)],
            env={**self.env, **env},
            cwd=self.root,
            capture_output=True,
            text=True,
            timeout=30,
        )
        return result


@pytest.fixture
def box(tmp_path) -> Sandbox:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in HOST_TOOLS:
        found = shutil.which(tool)
        assert found, f"{tool} is needed on the test host"
        (bin_dir / tool).symlink_to(found)
    for name in ("dev", "sys", "work"):
        (tmp_path / name).mkdir()
    env = {
        "PATH": str(bin_dir),
        "GATES_DIR": str(SCRIPTS),
        "WORK_DIR": str(tmp_path / "work"),
        "IB_DEV_DIR": str(tmp_path / "dev"),
        "IB_VERBS_SYS_DIR": str(tmp_path / "sys"),
        "JOB_COMPLETION_INDEX": "0",
        "GATE_JOB": "qualify-3-ib-write-bw-1",
        "GATE_SERVICE": "qualify-peers",
        "GATE_NAMESPACE": "llm-d-infra",
        "MIN_GBPS": "300",
        "EXPECTED_UVERBS": "1",
        "EXPECTED_RAILS": "1",
        "GPUS_PER_NODE": "1",
    }
    sandbox = Sandbox(tmp_path, bin_dir, env)
    sandbox.tool("sleep", "exit 0")  # the scripts wait for peers; the fakes are ready at once
    sandbox.tool("getent", f'echo "10.244.1.17     {PEER}"')
    # The pod sees the host's /sys/class/infiniband_verbs: every NIC of the node, claimed or not.
    for i in range(8):
        sandbox.verbs(f"uverbs{i}", f"mlx5_{i}")
    return sandbox


@pytest.fixture
def nic_box(box) -> Sandbox:
    """A sandbox whose pod got one NIC through its DRA claim, as gate 3 runs: uverbs0 (mlx5_0)."""
    box.devices("uverbs0", "rdma_cm")
    return box


def passed(result) -> str:
    assert result.returncode == 0, result.stdout + result.stderr
    verdicts = [line for line in result.stdout.splitlines() if line.startswith("GATE ")]
    assert len(verdicts) == 1 and verdicts[0].startswith("GATE PASS: "), result.stdout
    return verdicts[0]


def failed(result) -> str:
    assert result.returncode != 0, result.stdout
    verdicts = [line for line in result.stdout.splitlines() if line.startswith("GATE ")]
    assert len(verdicts) == 1 and verdicts[0].startswith("GATE FAIL: "), result.stdout + result.stderr
    return verdicts[0]


# ---- static checks -----------------------------------------------------------------------------


def test_every_gate_script_exists_and_parses():
    shell = sorted(SCRIPTS.glob("*.sh"))
    assert {p.name for p in shell} >= {"common.sh", *(g.script for g in GATES)}
    for script in shell:
        check = subprocess.run([BASH, "-n", str(script)], capture_output=True, text=True)
        assert check.returncode == 0, f"{script.name}: {check.stderr}"
        if script.name != "common.sh":
            assert '. "${GATES_DIR:-/gates}/common.sh"' in script.read_text()


@pytest.mark.parametrize("script", ["nccl_allreduce.py", "nixl_transfer.py", "nccl_busbw.py"])
def test_python_scripts_compile(script, tmp_path):
    py_compile.compile(str(SCRIPTS / script), cfile=str(tmp_path / f"{script}c"), doraise=True)


# ---- gates 1 and 2: uverbs -----------------------------------------------------------------------


def test_one_nic_claim_sees_one_uverbs_device(box):
    box.devices("uverbs0", "rdma_cm")
    assert passed(box.run("uverbs.sh")) == "GATE PASS: 1 uverbs device(s), as claimed"


def test_full_node_claim_sees_every_uverbs_device(box):
    box.devices(*(f"uverbs{i}" for i in range(8)), "rdma_cm", "umad0")
    result = box.run("uverbs.sh", EXPECTED_UVERBS="8")
    assert passed(result) == "GATE PASS: 8 uverbs device(s), as claimed"
    assert "uverbs devices visible: 8 (expected 8)" in result.stdout


def test_isolation_fails_when_the_pod_sees_every_nic(box):
    box.devices(*(f"uverbs{i}" for i in range(8)))
    assert failed(box.run("uverbs.sh")) == "GATE FAIL: expected exactly 1 uverbs device(s), saw 8"


def test_full_node_fails_with_too_few_devices(box):
    box.devices("uverbs0", "uverbs1")
    assert failed(box.run("uverbs.sh", EXPECTED_UVERBS="8")) == "GATE FAIL: expected exactly 8 uverbs device(s), saw 2"


def test_no_infiniband_devices_at_all(box):
    result = box.run("uverbs.sh", IB_DEV_DIR=str(box.root / "missing"))
    assert failed(result) == "GATE FAIL: expected exactly 1 uverbs device(s), saw 0"


# ---- gate 3: ib_write_bw -----------------------------------------------------------------------


def test_ib_write_bw_server_passes_on_rc_over_ib(nic_box):
    box = nic_box
    box.prints("ib_write_bw", perftest())
    assert passed(box.run("ib_write_bw.sh")) == "GATE PASS: RC over IB at 375.97 Gb/s on mlx5_0"
    assert box.args("ib_write_bw") == ["-d mlx5_0 -F --report_gbits -D 10"]
    assert box.args("getent") == [], "the server does not wait for a peer"


def test_ib_write_bw_client_connects_to_pod_zero(nic_box):
    box = nic_box
    box.prints("ib_write_bw", perftest())
    assert passed(box.run("ib_write_bw.sh", JOB_COMPLETION_INDEX="1")).startswith("GATE PASS: RC over IB")
    assert box.args("ib_write_bw") == [f"-d mlx5_0 -F --report_gbits -D 10 {PEER}"]
    assert box.args("getent") == [f"hosts {PEER}"]


def test_ib_write_bw_uses_the_nic_the_claim_injected(box):
    # The host sysfs lists all eight NICs; the claim injected uverbs5 only, so the test must run on
    # the device behind uverbs5, not the first device in sysfs (which another pod may own).
    box.devices("rdma_cm", "uverbs5")
    box.prints("ib_write_bw", perftest(device="mlx5_5"))
    assert passed(box.run("ib_write_bw.sh")) == "GATE PASS: RC over IB at 375.97 Gb/s on mlx5_5"
    assert box.args("ib_write_bw") == ["-d mlx5_5 -F --report_gbits -D 10"]


def test_ib_write_bw_reads_the_device_name_from_sysfs(box):
    # uverbs numbering need not follow mlx5 numbering; ibdev is the source of truth.
    box.devices("uverbs3")
    box.verbs("uverbs3", "mlx5_ib7")
    box.prints("ib_write_bw", perftest(device="mlx5_ib7"))
    assert passed(box.run("ib_write_bw.sh", JOB_COMPLETION_INDEX="1")).endswith(" on mlx5_ib7")
    assert box.args("ib_write_bw") == [f"-d mlx5_ib7 -F --report_gbits -D 10 {PEER}"]


@pytest.mark.parametrize(
    "output, status, expected",
    [
        (perftest(link="Ethernet"), 0, "GATE FAIL: link type is not IB (Ethernet/TCP fallback)"),
        (perftest(connection="UD"), 0, "GATE FAIL: transport is not InfiniBand RC"),
        (perftest(average="95.12"), 0, "GATE FAIL: average 95.12 Gb/s is below 300 Gb/s"),
        (perftest(table=False), 0, "GATE FAIL: average 0 Gb/s is below 300 Gb/s"),
        (" Couldn't connect to mlx5_0\n Unable to init the socket connection\n", 1, "GATE FAIL: ib_write_bw server failed"),
    ],
)
def test_ib_write_bw_failures(nic_box, output, status, expected):
    nic_box.prints("ib_write_bw", output, status)
    assert failed(nic_box.run("ib_write_bw.sh")) == expected


def test_ib_write_bw_threshold_comes_from_min_gbps(nic_box):
    nic_box.prints("ib_write_bw", perftest(average="375.97"))
    assert failed(nic_box.run("ib_write_bw.sh", MIN_GBPS="380")) == "GATE FAIL: average 375.97 Gb/s is below 380 Gb/s"


def test_ib_write_bw_client_failure(nic_box):
    nic_box.prints("ib_write_bw", "Couldn't connect to server\n", 1)
    assert failed(nic_box.run("ib_write_bw.sh", JOB_COMPLETION_INDEX="1")) == "GATE FAIL: ib_write_bw client failed"


def test_ib_write_bw_missing_tool(nic_box):
    assert failed(nic_box.run("ib_write_bw.sh")) == (
        "GATE FAIL: ib_write_bw is not in this image; set the gate image to one that ships it"
    )


NO_UVERBS = "GATE FAIL: no uverbs device in the pod: the NIC claim was not injected"


@pytest.mark.parametrize(
    "devices, env",
    [
        ((), {}),
        (("rdma_cm", "umad0"), {}),  # other InfiniBand nodes are not a verbs device
        (("uverbs0",), {"IB_DEV_DIR": "missing"}),  # no /dev/infiniband at all
    ],
)
def test_ib_write_bw_without_an_injected_nic(box, devices, env):
    box.devices(*devices)
    box.prints("ib_write_bw", perftest())
    env = {k: str(box.root / v) for k, v in env.items()}
    assert failed(box.run("ib_write_bw.sh", **env)) == NO_UVERBS
    assert box.args("ib_write_bw") == [], "nothing runs without a NIC"


def test_ib_write_bw_cannot_map_the_uverbs_node(nic_box):
    box = nic_box
    box.prints("ib_write_bw", perftest())
    expected = "GATE FAIL: cannot map uverbs0 to its InfiniBand device"
    # No infiniband_verbs class in the pod's sysfs.
    assert failed(box.run("ib_write_bw.sh", IB_VERBS_SYS_DIR=str(box.root / "none"))) == expected
    # The class is there but has no entry for this node (uverbs0 removed from the host's view).
    (box.root / "sys" / "uverbs0" / "ibdev").unlink()
    assert failed(box.run("ib_write_bw.sh")) == expected
    # An empty ibdev is no device name either.
    (box.root / "sys" / "uverbs0" / "ibdev").write_text("")
    assert failed(box.run("ib_write_bw.sh")) == expected
    assert box.args("ib_write_bw") == []


def test_unresolvable_peer_fails(nic_box):
    box = nic_box
    box.prints("ib_write_bw", perftest())
    box.tool("getent", "exit 2")
    assert failed(box.run("ib_write_bw.sh", JOB_COMPLETION_INDEX="1")) == f"GATE FAIL: peer {PEER} never became resolvable"
    assert len(box.args("getent")) == 120 and box.args("ib_write_bw") == []


# ---- gates 4 and 6: NCCL -----------------------------------------------------------------------


def test_nccl_one_gpu_per_node_passes(box):
    box.prints("torchrun", nccl_log())
    assert passed(box.run("nccl.sh")) == "GATE PASS: all-reduce over 1 GDRDMA rails with zero wrong values"
    (args,) = box.args("torchrun")
    assert args == (
        f"--nnodes 2 --nproc-per-node 1 --node-rank 0 --master-addr {PEER} --master-port 29500 {SCRIPTS}/nccl_allreduce.py"
    )


def test_full_node_nccl_uses_sixteen_gpus_on_eight_rails(box):
    box.prints("torchrun", nccl_log(rails=8, world=16))
    result = box.run("nccl.sh", GPUS_PER_NODE="8", EXPECTED_RAILS="8")
    assert passed(result) == "GATE PASS: all-reduce over 8 GDRDMA rails with zero wrong values"
    assert "world size: 16; wrong values: 0" in result.stdout
    assert "--nproc-per-node 8" in box.args("torchrun")[0]


def test_nccl_rank_one_does_not_need_the_verdict_line(box):
    box.prints("torchrun", nccl_log().replace("world size: 2; wrong values: 0\n", ""))
    assert passed(box.run("nccl.sh", JOB_COMPLETION_INDEX="1")).startswith("GATE PASS")
    assert "--node-rank 1" in box.args("torchrun")[0]
    assert box.args("getent") == [f"hosts {PEER}"]


@pytest.mark.parametrize(
    "log, env, expected",
    [
        (nccl_log(dmabuf=False), {}, "GATE FAIL: NCCL did not report DMA-BUF"),
        (nccl_log(gdrdma=False), {}, "GATE FAIL: NCCL did not use GPUDirect RDMA (GDRDMA)"),
        (nccl_log(gdrdma=False, transport="Socket"), {}, "GATE FAIL: NCCL did not use GPUDirect RDMA (GDRDMA)"),
        (nccl_log(wrong=12), {}, "GATE FAIL: all-reduce returned wrong values"),
        (nccl_log(wrong=10), {}, "GATE FAIL: all-reduce returned wrong values"),
        (nccl_log().replace("world size: 2; wrong values: 0\n", ""), {}, "GATE FAIL: all-reduce returned wrong values"),
        (
            nccl_log(rails=4, world=16),
            {"GPUS_PER_NODE": "8", "EXPECTED_RAILS": "8"},
            "GATE FAIL: NCCL used GDRDMA on 4 IB rails, expected 8",
        ),
    ],
)
def test_nccl_failures(box, log, env, expected):
    box.prints("torchrun", log)
    assert failed(box.run("nccl.sh", **env)) == expected


def test_nccl_torchrun_failure_and_missing_tool(box):
    assert failed(box.run("nccl.sh")) == "GATE FAIL: torchrun is not in this image; set the gate image to one that ships it"
    box.prints("torchrun", "torch.distributed.elastic.multiprocessing.errors.ChildFailedError\n", 1)
    assert failed(box.run("nccl.sh")) == "GATE FAIL: torchrun failed"


@pytest.mark.parametrize("gdr_rails", [1, 6, 7])
def test_full_node_nccl_fails_when_some_rails_lack_gdrdma(box, gdr_rails):
    # All eight rails carry traffic, but only some with GPUDirect RDMA (seed 004: all eight must be GDRDMA).
    log = nccl_log(rails=8, world=16, gdr_rails=gdr_rails)
    assert len(set(re.findall(r"NET/IB/[0-9]+", log))) == 8 and "GDRDMA" in log
    box.prints("torchrun", log)
    result = box.run("nccl.sh", GPUS_PER_NODE="8", EXPECTED_RAILS="8")
    assert failed(result) == f"GATE FAIL: NCCL used GDRDMA on {gdr_rails} IB rails, expected 8"


def test_nccl_counts_each_gdrdma_rail_once(box):
    # Several channels per rail, on both sides of the ring, still make eight rails.
    log = nccl_log(rails=8, world=16)
    box.prints("torchrun", log + log.replace("[send]", "[receive]"))
    result = box.run("nccl.sh", GPUS_PER_NODE="8", EXPECTED_RAILS="8")
    assert passed(result) == "GATE PASS: all-reduce over 8 GDRDMA rails with zero wrong values"


# ---- gate 5: NIXL ------------------------------------------------------------------------------


def fake_python(box: Sandbox, log: str, nixl: bool = True, status: int = 0) -> None:
    output = box.root / "python3.out"
    output.write_text(log)
    box.tool(
        "python3",
        f"""if [ "$1" = "-c" ]; then {"exit 0" if nixl else 'echo "ModuleNotFoundError: No module named nixl" >&2; exit 1'}; fi
cat "{output}"
exit {status}""",
    )


def test_nixl_initiator_passes_over_rc_mlx5(box):
    fake_python(box, ucx_log())
    assert passed(box.run("nixl.sh", JOB_COMPLETION_INDEX="1")) == "GATE PASS: NIXL over UCX rc_mlx5 with zero wrong values"
    assert box.args("python3") == ["-c import nixl", f"{SCRIPTS}/nixl_transfer.py initiator {PEER}"]


def test_nixl_target_passes_without_a_verdict_line(box):
    fake_python(box, ucx_log(role="target"))
    assert passed(box.run("nixl.sh")).startswith("GATE PASS")
    assert box.args("python3")[-1] == f"{SCRIPTS}/nixl_transfer.py target"


@pytest.mark.parametrize(
    "log, index, status, expected",
    [
        (ucx_log(transport="tcp"), "1", 0, "GATE FAIL: UCX did not select rc_mlx5"),
        (ucx_log(transport="ud_mlx5", role="target"), "0", 0, "GATE FAIL: UCX did not select rc_mlx5"),
        (ucx_log(wrong=65536), "1", 0, "GATE FAIL: the transferred data has wrong values"),
        (ucx_log(role="target"), "1", 0, "GATE FAIL: the transferred data has wrong values"),
        ("transfer failed\n", "1", 1, "GATE FAIL: the NIXL transfer failed"),
        ("Traceback (most recent call last):\n", "0", 1, "GATE FAIL: the NIXL target failed"),
    ],
)
def test_nixl_failures(box, log, index, status, expected):
    fake_python(box, log, status=status)
    assert failed(box.run("nixl.sh", JOB_COMPLETION_INDEX=index)) == expected


def test_nixl_missing_python(box):
    assert failed(box.run("nixl.sh", JOB_COMPLETION_INDEX="1")) == (
        "GATE FAIL: python3 is not in this image; set the gate image to one that ships it"
    )


def test_nixl_missing_package(box):
    """The import's own last line says why: not installed, or (nixl's meta package) no build for this CUDA."""
    fake_python(box, ucx_log(), nixl=False)
    assert failed(box.run("nixl.sh", JOB_COMPLETION_INDEX="1")) == (
        "GATE FAIL: the nixl Python package does not import in this image: ModuleNotFoundError: No module named nixl"
    )
    assert len(box.args("python3")) == 1, "nothing runs after the import check fails"


# ---- a tool behind a directory root may not enter ------------------------------------------------


def test_a_tool_in_a_directory_root_cannot_enter_fails_saying_so(box):
    """rayproject images keep torchrun under /home/ray (0750 ray:users); the gates' root, with every capability
    dropped, is 'other' there. The verdict names the directory and the fix, not a missing tool."""
    home = box.root / "home-ray"
    (home / "bin").mkdir(parents=True)
    torchrun = home / "bin" / "torchrun"
    torchrun.write_text(f"#!{BASH}\necho ran\n")
    torchrun.chmod(0o755)
    home.chmod(0o000)
    try:
        env = {**box.env, "PATH": f"{home / 'bin'}:{box.bin}"}
        result = subprocess.run(
            [*as_container_root(), BASH, str(SCRIPTS / "nccl.sh")], env=env, capture_output=True, text=True, timeout=30
        )
    finally:
        home.chmod(0o755)
    verdict = failed(result)
    assert verdict.startswith(f"GATE FAIL: torchrun is not reachable: PATH directory {home / 'bin'} cannot be entered by uid ")
    assert verdict.endswith("add the group that owns it to the gate pods (supplemental_groups)")


def test_the_fake_path_hides_host_tools(box):
    """Sanity: the sandbox PATH has only the listed host tools and the fakes."""
    assert sorted(os.listdir(box.bin)) == sorted([*HOST_TOOLS, "sleep", "getent"])


# ---- gate 7 (rack-scale pools): NCCL over multi-node NVLink ----------------------------------------------------------


def mnnvl_log(busbw="812.4", wrong=0, mnnvl=True) -> str:
    """NCCL INFO lines of a rank on an NVL72 fabric (src/init.cc's MNNVL line), then the bandwidth script's verdict."""
    prefix = "aks-gb300-0:301:301 [0] NCCL INFO"
    lines = [f"{prefix} Bootstrap : Using eth0:10.244.2.9<0>"]
    if mnnvl:
        lines.append(
            f"{prefix} MNNVL busId 0x8000 fabric UUID 7a4af5e106e46349.c4fe63d71b7d9aa1 cliqueId 0x7ffe state 3 healthMask 0x0"
        )
    lines.append(f"{prefix} Connected all rings")
    lines.append(f"busbw GB/s: {busbw}; world size: 8; wrong values: {wrong}")
    return "\n".join(lines) + "\n"


@pytest.fixture
def imex_box(box) -> Sandbox:
    """A sandbox whose pod got an IMEX channel from the pool's ComputeDomain, and no NIC."""
    channels = box.root / "imex"
    channels.mkdir()
    (channels / "channel0").touch()
    box.env.update(IMEX_DIR=str(channels), GPUS_PER_NODE="4", MIN_NVLINK_GBPS="625.95", GATE_JOB="qualify-7-nvlink-1")
    return box


def test_nvlink_gate_passes_over_the_fabric_at_the_threshold(imex_box):
    imex_box.prints("torchrun", mnnvl_log())
    verdict = passed(imex_box.run("nvlink.sh"))
    assert verdict == "GATE PASS: all-reduce across two nodes over NVLink at 812.4 GB/s bus bandwidth with zero wrong values"
    (args,) = imex_box.args("torchrun")
    assert "--nnodes 2 --nproc-per-node 4 --node-rank 0" in args and args.endswith("nccl_busbw.py")


@pytest.mark.parametrize(
    ("log", "why"),
    [
        (mnnvl_log(busbw="41.7"), "GATE FAIL: all-reduce bus bandwidth 41.7 GB/s is under 625.95 GB/s: not multi-node NVLink"),
        (mnnvl_log(mnnvl=False), "GATE FAIL: NCCL found no multi-node NVLink fabric (no MNNVL line)"),
        (mnnvl_log(wrong=3), "GATE FAIL: all-reduce returned wrong values"),
        (mnnvl_log().replace("busbw GB/s: 812.4; ", ""), "GATE FAIL: no bus bandwidth reported"),
    ],
    ids=["socket bandwidth", "no fabric", "wrong values", "no figure"],
)
def test_nvlink_gate_fails(imex_box, log, why):
    imex_box.prints("torchrun", log)
    assert failed(imex_box.run("nvlink.sh")) == why


def test_nvlink_gate_without_an_imex_channel(imex_box):
    imex_box.prints("torchrun", mnnvl_log())
    result = imex_box.run("nvlink.sh", IMEX_DIR=str(imex_box.root / "none"))
    assert failed(result) == "GATE FAIL: no IMEX channel in the pod: the ComputeDomain claim gave none"


def test_nvlink_gate_second_node_reports_its_rank(imex_box):
    imex_box.prints("torchrun", mnnvl_log().replace("busbw GB/s: 812.4; world size: 8; wrong values: 0\n", ""))
    assert passed(imex_box.run("nvlink.sh", JOB_COMPLETION_INDEX="1")) == "GATE PASS: rank node 1 on the NVLink fabric"
