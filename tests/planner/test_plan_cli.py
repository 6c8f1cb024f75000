import json
import re
import shutil
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from aks_gpu_inference.components.core.errors import ConfigError
from aks_gpu_inference.planner.cli import main
from tests.conftest import REPO, STACKS, is_custom_resource


@pytest.fixture(scope="module")
def planned(tmp_path_factory) -> dict[str, Path]:
    """Every stack in the repo, planned once through the real command line."""
    results = {}
    for stack in STACKS:
        out = tmp_path_factory.mktemp(stack)
        assert main(["plan", stack, "--project-dir", str(REPO), "--out", str(out), "--quiet"]) == 0
        results[stack] = out
    return results


def test_every_stack_plans_and_writes_its_artifacts(planned):
    for stack, out in planned.items():
        resources = json.loads((out / "resources.json").read_text())["resources"]
        types = {r["type"] for r in resources}
        assert {
            "azure-native:containerservice:ManagedCluster",
            "azure-native:containerservice:AgentPool",
            "aks-gpu:index:GpuNodePool",
        } <= types
        assert all({"type", "name", "parent", "inputs"} <= set(r) for r in resources)
        pools = [r for r in resources if r["type"].endswith(":AgentPool")]
        # An AKS-managed GPU pool is the generic ARM resource (its preview API version is beyond the SDK's).
        managed = [
            r
            for r in resources
            if r["type"] == "azure-native:resources:Resource" and r["inputs"].get("resourceType") == "agentPools"
        ]
        gpu_pools = [r for r in pools if r["inputs"]["agentPoolName"] != "platform"] + managed
        pools += managed
        assert gpu_pools and all(r["parent"].startswith("aks-gpu:index:GpuNodePool::") for r in gpu_pools)
        # The CPU pool for platform pods belongs to the cluster (prod, whose pods all run on GPU or system nodes, has none).
        platform = [] if stack == "prod" else [next(r["parent"] for r in resources if r["name"].endswith("-k8s"))]
        assert [r["parent"] for r in pools if r not in gpu_pools] == platform
        assert sorted(p.name for p in (out / "azure").iterdir())
        assert (out / "graph.mmd").read_text().startswith("graph TD")
        assert (out / "graph.dot").read_text().startswith("digraph")


def test_dev_plan_content(planned):
    out = planned["dev"]
    pool = json.loads((out / "azure" / "AgentPool-a100-pool.json").read_text())["inputs"]
    assert pool["vmSize"] == "Standard_NC24ads_A100_v4" and pool["count"] == 1 and isinstance(pool["count"], int)
    records = {r["name"]: r for r in json.loads((out / "resources.json").read_text())["resources"]}
    assert records["a100-pool"]["parent"] == "aks-gpu:index:GpuNodePool::a100"
    assert records["a100-pool"]["options"]["ignoreChanges"] == ["count"]
    outputs = json.loads((out / "outputs.json").read_text())
    assert outputs["kubeconfig"] == "<secret>"
    assert outputs["oidc_issuer_url"].startswith("<computed:")
    assert outputs["gpu_pools"]["a100"]["gpu_resource_name"] == "nvidia.com/gpu"
    everything = "".join(p.read_text() for p in out.rglob("*") if p.is_file())
    assert not re.search(r"/subscriptions/[0-9a-f-]{36}", everything), (
        "no fake Azure IDs: computed values are marked placeholders"
    )
    assert "/subscriptions/<computed:subscriptionId>/providers/Microsoft.Authorization/roleDefinitions/" in everything


def test_every_kubernetes_manifest_validates_strictly_against_1_35(planned):
    manifests = [yaml.safe_load(p.read_text()) for out in planned.values() for p in (out / "kubernetes").glob("*.yaml")]
    built_in = [obj for obj in manifests if not is_custom_resource(obj)]
    assert built_in and len(built_in) < len(manifests), "both built-in kinds and custom resources are rendered"
    for obj in built_in:
        kubernetes_validate.validate(obj, "1.35", strict=True)


def test_summary_is_printed(capsys, tmp_path):
    assert main(["plan", "dev", "--project-dir", str(REPO), "--out", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert "offline, not a diff against live state" in out
    assert "azure-native:containerservice:AgentPool" in out
    assert "Standard_NC24ads_A100_v4  A100-80GB    0-2" in out
    # llama-8b keeps 1 node up (min_replicas 1), the autoscaler may add the second: 1-2 nodes x $3.673 x 730 h
    assert "$3.673" in out and "$2,681.29 - $5,362.58" in out
    assert "List-price estimate" in out
    assert "planning stack 'dev'" in err


def test_unknown_stack_is_a_clean_error(capsys):
    assert main(["plan", "nosuch", "--project-dir", str(REPO)]) == 2
    err = capsys.readouterr().err
    assert "unknown stack 'nosuch'" in err and "stacks here: dev" in err and "Traceback" not in err


@pytest.fixture
def project_copy(tmp_path) -> Path:
    for name in ["Pulumi.yaml", "Pulumi.dev.yaml", "__main__.py"]:
        shutil.copy(REPO / name, tmp_path / name)
    return tmp_path


def test_bad_stack_file_exits_non_zero_with_the_key_path(project_copy, capsys):
    config = yaml.safe_load((project_copy / "Pulumi.dev.yaml").read_text())
    config["config"]["aks-gpu-inference:gpu_pools"][0]["vm_size"] = "Standard_D8s_v5"
    config["config"]["aks-gpu-inference:cluster"]["node_os_upgrade_channel"] = "Sometimes"
    (project_copy / "Pulumi.dev.yaml").write_text(yaml.safe_dump(config))
    assert main(["plan", "dev", "--project-dir", str(project_copy), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "Pulumi.dev.yaml is invalid" in err
    assert "gpu_pools[0].vm_size='Standard_D8s_v5': 'Standard_D8s_v5' is not a GPU VM size" in err
    assert "cluster.node_os_upgrade_channel='Sometimes'" in err
    assert "Traceback" not in err
    assert not (project_copy / "out").exists(), "nothing is written for a refused stack"


def test_malformed_yaml_is_a_clean_error(project_copy, capsys):
    (project_copy / "Pulumi.dev.yaml").write_text("config: [unclosed\n")
    assert main(["plan", "dev", "--project-dir", str(project_copy)]) == 2
    assert "Pulumi.dev.yaml is not valid YAML" in capsys.readouterr().err


def test_help_for_every_command(capsys):
    for argv in (["--help"], ["plan", "--help"]):
        with pytest.raises(SystemExit) as done:
            main(argv)
        assert done.value.code == 0
    assert "out/<STACK>/" in capsys.readouterr().out


def _project(tmp_path, program: str):
    (tmp_path / "__main__.py").write_text(program)
    (tmp_path / "Pulumi.yaml").write_text("name: mine\nruntime: python\n")
    (tmp_path / "Pulumi.dev.yaml").write_text("config:\n  azure-native:location: eastus\n")
    return ["plan", "dev", "--project-dir", str(tmp_path), "--out", str(tmp_path / "out"), "-q"]


def test_an_exception_in_the_users_program_is_reported_as_theirs(tmp_path, capsys):
    argv = _project(tmp_path, "import pulumi\n\nx = 1\nprint(undefined_name)\n")
    assert main(argv) == 4
    err = capsys.readouterr().err
    assert "the stack program raised an exception at __main__.py:4: NameError: name 'undefined_name' is not defined" in err
    assert "internal error" not in err and "Traceback" not in err


def test_a_components_refusal_names_the_component_not_a_stack_file(tmp_path, capsys):
    program = 'from aks_gpu_inference.components import AzureScope, AksCluster\n\nAksCluster("aks", {"name": "x", "tier": "Gold"}, scope=AzureScope("rg", "eastus"))\n'
    assert main(_project(tmp_path, program)) == 2
    err = capsys.readouterr().err
    assert "a component of the stack program refused its arguments" in err and "AksCluster" in err and "tier" in err
    assert "Pulumi.dev.yaml" not in err


@pytest.mark.parametrize("text", ["20261201", "2026-W48-2", "2026-12-1", "2026-12-01T00:00"])
def test_as_of_takes_only_year_month_day(text):
    from aks_gpu_inference.planner.cli import parse_as_of

    with pytest.raises(ConfigError, match="expected a date as YYYY-MM-DD"):
        parse_as_of(text)


def test_ctrl_c_is_one_line_and_exit_130(monkeypatch, capsys):
    import aks_gpu_inference.planner.cli as cli

    def interrupted(_args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "cmd_fit", interrupted)
    assert cli.main(["fit", "meta-llama/Llama-3.1-8B-Instruct"]) == 130
    assert capsys.readouterr().err == "error: interrupted\n"
