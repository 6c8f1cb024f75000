"""Claim satisfiability (planner.claims.check): on the prod plan, on raw programs built to fail, and
through ``aks-gpu plan``."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import pulumi
import pulumi_kubernetes as k8s
import pytest

from aks_gpu_inference.components.gpu.dra_device_classes import GPU_CLASS, MIG_CLASS, mig_profile_cel, model_class_cel
from aks_gpu_inference.components.gpu.rdma_network import DEVICE_CLASS, DEVICE_CLASS_CEL
from aks_gpu_inference.planner import claims
from aks_gpu_inference.planner.cli import main
from aks_gpu_inference.planner.engine import program as engine
from aks_gpu_inference.planner.engine.program import run_function
from tests.conftest import PROJECT, REPO

from .claim_programs import (
    H100,
    H100_PRODUCT,
    NC,
    ND_A100,
    agent_pool,
    claim_template,
    device_class,
    nc_rdma_program,
    vm_size_cel,
)


def by_template(verdicts: list[claims.Verdict]) -> dict[str, claims.Verdict]:
    found = {v.template: v for v in verdicts}
    assert len(found) == len(verdicts), "one request per template in these tests"
    return found


# --- the prod stack ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def prod_plan(tmp_path_factory) -> tuple[engine.ProgramRun, int, str, Path]:
    """`aks-gpu plan prod` run once; the ProgramRun it planned, its exit code, stdout and output folder."""
    out_dir = tmp_path_factory.mktemp("prod")
    runs: list[engine.ProgramRun] = []
    real_run_program = engine.run_program

    def recording_run_program(*args, **kwargs):
        runs.append(real_run_program(*args, **kwargs))
        return runs[-1]

    stdout = io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(stdout):
        patch.setattr(engine, "run_program", recording_run_program)
        code = main(["plan", "prod", "--project-dir", str(REPO), "--out", str(out_dir), "--quiet"])
    (run,) = runs
    return run, code, stdout.getvalue(), out_dir


PROD_CLAIMS = {
    "h100-rdma-full-node": (DEVICE_CLASS, "h100", 8, 8, True, "8 matching NICs per node"),
    "h100-rdma-1-nic": (DEVICE_CLASS, "h100", 1, 8, True, "8 matching NICs per node"),
    "h100-gpus-full-node": ("gpu-h100-80gb", "h100", 8, 8, True, "8 matching devices per node"),
    "gpu-1": (GPU_CLASS, "h100", 1, 8, True, "8 matching devices per node"),
    "gpu-8": (GPU_CLASS, "h100", 8, 8, True, "8 matching devices per node"),
}


def test_prod_plan_claims_are_all_satisfiable(prod_plan):
    run = prod_plan[0]
    assert (run.stack, run.project) == ("prod", PROJECT)
    verdicts = by_template(claims.check(run))
    got = {name: (v.device_class, v.pool, v.needed, v.matched, v.satisfiable, v.reason) for name, v in verdicts.items()}
    assert got == PROD_CLAIMS
    assert {v.namespace for v in verdicts.values()} == {"llm-d-infra"}


# --- raw programs -------------------------------------------------------------------------------------


def test_nic_claim_on_a_pool_without_infiniband_is_unsatisfiable():
    (verdict,) = claims.check(run_function(nc_rdma_program, PROJECT, "nc"))
    assert (verdict.template, verdict.pool, verdict.device_class) == ("nc-rdma-full-node", "nc", DEVICE_CLASS)
    assert (verdict.needed, verdict.matched, verdict.satisfiable) == (8, 0, False)
    assert verdict.reason == f"needs 8 NICs, {NC} nodes publish 0"


def mixed_program() -> None:
    """Three pools (NC A100, ND H100, ND A100 in MIG1g) and claims that fit or do not."""
    agent_pool("nc", NC)
    agent_pool("h100", H100)
    agent_pool("a100mig", ND_A100, gpu_instance_profile="MIG1g")
    opts = pulumi.ResourceOptions(provider=k8s.Provider("k8s", kubeconfig="x"))
    device_class(DEVICE_CLASS, DEVICE_CLASS_CEL, opts)
    device_class("gpu-h100-80gb", model_class_cel([H100_PRODUCT]), opts)
    claim_template("h100-no-class", "gpu-b200-192gb", opts, count=8, pool="h100")
    claim_template("h100-gpus-9", "gpu-h100-80gb", opts, count=9, pool="h100")
    claim_template("h100-gpus-8", "gpu-h100-80gb", opts, count=8, pool="h100")
    claim_template("h100-all-nics", DEVICE_CLASS, opts, count=None, pool="h100", cel=vm_size_cel(H100))
    claim_template("h100-nics-on-a100-size", DEVICE_CLASS, opts, count=8, pool="h100", cel=vm_size_cel(ND_A100))
    claim_template("h100-mig-1g-10gb", MIG_CLASS, opts, pool="h100", cel=mig_profile_cel("1g.10gb"))
    claim_template("a100mig-mig-1g-5gb", MIG_CLASS, opts, count=56, pool="a100mig", cel=mig_profile_cel("1g.5gb"))
    claim_template("a100mig-mig-57", MIG_CLASS, opts, count=57, pool="a100mig", cel=mig_profile_cel("1g.5gb"))
    claim_template("a100mig-whole-gpu", GPU_CLASS, opts, pool="a100mig")
    claim_template("a100mig-rdma-full-node", DEVICE_CLASS, opts, count=8, pool="a100mig", cel=vm_size_cel(ND_A100))
    claim_template("gpu-1", GPU_CLASS, opts, count=1)
    claim_template("gpu-2", GPU_CLASS, opts, count=2)
    claim_template("gpu-9", GPU_CLASS, opts, count=9)
    claim_template("mig-1", MIG_CLASS, opts, count=1)
    claim_template("ghost-pool", GPU_CLASS, opts, pool="b200")


@pytest.fixture(scope="module")
def mixed_run() -> engine.ProgramRun:
    return run_function(mixed_program, PROJECT, "mixed")


@pytest.fixture(scope="module")
def mixed(mixed_run) -> dict[str, claims.Verdict]:
    return by_template(claims.check(mixed_run))


def pools(listing: str) -> set[str]:
    """A verdict's pool list as a set: its order follows resource registration, which is not deterministic."""
    return set(listing.split(", "))


def test_mixed_program_pools_are_simulated_with_their_drivers(mixed_run):
    assert sorted(claims.sim_pools(mixed_run), key=lambda pool: pool.name) == [
        claims.SimPool("a100mig", ND_A100, "MIG1g", dranet=True, gpu_driver=True),
        claims.SimPool("h100", H100, None, dranet=True, gpu_driver=True),
        claims.SimPool("nc", NC, None, dranet=False, gpu_driver=True),
    ]


def test_missing_device_class_is_named(mixed):
    verdict = mixed["h100-no-class"]
    assert not verdict.satisfiable and verdict.matched == 0
    assert "gpu-b200-192gb" in verdict.reason
    assert verdict.reason == "DeviceClass 'gpu-b200-192gb' is not in the stack or a driver chart"


def test_more_gpus_than_a_node_has_is_unsatisfiable(mixed):
    verdict = mixed["h100-gpus-9"]
    assert (verdict.pool, verdict.needed, verdict.matched, verdict.satisfiable) == ("h100", 9, 8, False)
    assert verdict.reason == f"needs 9 devices, {H100} nodes publish 8"
    assert mixed["h100-gpus-8"].satisfiable and mixed["h100-gpus-8"].matched == 8


def test_all_allocation_mode(mixed):
    verdict = mixed["h100-all-nics"]
    assert (verdict.needed, verdict.matched, verdict.satisfiable) == ("All", 8, True)


def test_nic_claim_pinned_to_another_vm_size_is_unsatisfiable(mixed):
    verdict = mixed["h100-nics-on-a100-size"]
    assert (verdict.matched, verdict.satisfiable) == (0, False)
    assert verdict.reason == f"needs 8 NICs, {H100} nodes publish 0"
    assert mixed["a100mig-rdma-full-node"].satisfiable and mixed["a100mig-rdma-full-node"].matched == 8


def test_mig_profile_claim_on_a_whole_gpu_pool_is_unsatisfiable(mixed):
    verdict = mixed["h100-mig-1g-10gb"]
    assert (verdict.device_class, verdict.matched, verdict.satisfiable) == (MIG_CLASS, 0, False)
    assert verdict.reason == f"needs 1 devices, {H100} nodes publish 0"


def test_mig_pool_publishes_its_slices_and_no_whole_gpu(mixed):
    assert (mixed["a100mig-mig-1g-5gb"].matched, mixed["a100mig-mig-1g-5gb"].satisfiable) == (56, True)
    assert mixed["a100mig-mig-57"].reason == f"needs 57 devices, {ND_A100} nodes publish 56"
    assert not mixed["a100mig-whole-gpu"].satisfiable and mixed["a100mig-whole-gpu"].matched == 0


def test_unannotated_templates_list_the_pools_that_fit(mixed):
    assert (pools(mixed["gpu-1"].pool), mixed["gpu-1"].satisfiable) == ({"nc", "h100"}, True)
    assert (mixed["gpu-2"].pool, mixed["gpu-2"].satisfiable) == ("h100", True)
    assert (mixed["mig-1"].pool, mixed["mig-1"].matched) == ("a100mig", 56)
    none = mixed["gpu-9"]
    assert (none.pool, none.satisfiable) == ("no pool", False)
    assert none.reason.startswith("needs 9 devices, ")


def test_template_for_a_pool_not_in_the_stack(mixed):
    verdict = mixed["ghost-pool"]
    assert (verdict.pool, verdict.satisfiable, verdict.reason) == ("b200", False, "its pool is not in the stack")


def test_every_template_gets_a_verdict(mixed):
    assert len(mixed) == 15
    assert sorted(name for name, v in mixed.items() if v.satisfiable) == [
        "a100mig-mig-1g-5gb",
        "a100mig-rdma-full-node",
        "gpu-1",
        "gpu-2",
        "h100-all-nics",
        "h100-gpus-8",
        "mig-1",
    ]


# --- bugs ---------------------------------------------------------------------------------------------


def mig_on_t4_program() -> None:
    agent_pool("t4", "Standard_NC4as_T4_v3", gpu_instance_profile="MIG1g")
    claim_template("gpu-1", GPU_CLASS, pulumi.ResourceOptions(provider=k8s.Provider("k8s", kubeconfig="x")), pool="t4")


def test_mig_profile_on_a_size_without_mig_does_not_crash_check():
    verdicts = claims.check(run_function(mig_on_t4_program, PROJECT, "t4"))
    assert [v.template for v in verdicts] == ["gpu-1"]


def unguarded_class_program() -> None:
    agent_pool("h100", H100)
    opts = pulumi.ResourceOptions(provider=k8s.Provider("k8s", kubeconfig="x"))
    # No device.driver guard: on the node's GPUs, device.attributes["dra.net"] is an empty map and
    # .rdma is a CEL runtime error.
    device_class("rdma-unguarded", 'device.attributes["dra.net"].rdma == true', opts)
    claim_template("h100-rdma", "rdma-unguarded", opts, count=8, pool="h100", cel=vm_size_cel(H100))


def test_cel_runtime_error_in_a_class_is_not_satisfiable():
    (verdict,) = claims.check(run_function(unguarded_class_program, PROJECT, "unguarded"))
    assert verdict.matched == 8, "the NICs themselves match"
    assert not verdict.satisfiable and "CEL" in verdict.reason


# --- aks-gpu plan -------------------------------------------------------------------------------------


def test_plan_prints_the_claim_table_and_writes_claims_json(prod_plan):
    _, code, out, out_dir = prod_plan
    assert code == 0
    assert "Claim satisfiability (simulated ResourceSlices, CEL evaluated with cel-python): 0 unsatisfiable" in out
    table = out.split("Claim satisfiability", 1)[1].split("\n\n", 1)[0]
    assert "claim template" in table and "llm-d-infra/h100-rdma-full-node" in table and " NO " not in table
    written = json.loads((out_dir / "claims.json").read_text())
    assert {v["template"]: (v["needed"], v["matched"], v["satisfiable"]) for v in written} == {
        name: expected[2:5] for name, expected in PROD_CLAIMS.items()
    }


def test_plan_with_an_unsatisfiable_claim_exits_1(tmp_path, capsys):
    """No stack config makes the components render an unsatisfiable claim (they refuse such input), so the
    project here is the repo's Pulumi.yaml with a program of raw resources: nc_rdma_program as a file."""
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(REPO / "Pulumi.yaml", project / "Pulumi.yaml")
    (project / "Pulumi.bad.yaml").write_text("config: {}\n")
    # Like the repo's own __main__.py: the program body comes from an importable module.
    (project / "__main__.py").write_text("from tests.planner.claim_programs import nc_rdma_program\n\nnc_rdma_program()\n")
    assert main(["plan", "bad", "--project-dir", str(project), "--out", str(tmp_path / "out"), "--quiet"]) == 1
    out = capsys.readouterr().out
    assert "Claim satisfiability (simulated ResourceSlices, CEL evaluated with cel-python): 1 unsatisfiable" in out
    assert f"needs 8 NICs, {NC} nodes publish 0" in out
    assert "Policy verdicts (aks-gpu-guardrails): 0 mandatory" in out, "the exit code comes from the claim"
    (written,) = json.loads((tmp_path / "out" / "claims.json").read_text())
    assert written["template"] == "nc-rdma-full-node" and written["satisfiable"] is False
