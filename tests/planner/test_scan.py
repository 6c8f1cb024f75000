"""``aks-gpu scan`` end to end: the seeds' own manifests, hand-written compliant and broken sets, the three
output formats, policy configs, unreadable input, and the promise that scanning never imports Pulumi.

Fixtures live in tests/fixtures/: ``seeds/`` holds the manifests of the source documents (seed 002
section 4.3, seed 004 sections 4, 5 and 6) copied faithfully; ``scan/`` holds hand-written sets.

Plain YAML holds only Kubernetes objects, so the rules that read Azure resources (AgentPool,
ManagedCluster) or Helm releases never fire in a scan: aks-node-os-upgrade-channel, retired-gpu-size,
helm-chart-pinned, the pool half of rdma-capable-sku and gpu-taints-and-tolerations, and
mig-resource-request (which joins a pod's agentpool selector to the pool's MIG profile).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from urllib.parse import unquote

import kubernetes_validate
import pytest
import yaml

from aks_gpu_inference.planner.cli import main
from aks_gpu_inference.policies.rules import RULES
from tests.conftest import REPO

FIXTURES = REPO / "tests" / "fixtures"
SEEDS = FIXTURES / "seeds"
SCAN = FIXTURES / "scan"
SEED002_DEPLOYMENT = SEEDS / "seed002-vllm-mistral-serving.yaml"
SEED004_DEVICE_CLASS = SEEDS / "seed004-dranet-device-class.yaml"
SEED004_CLAIM_TEMPLATE = SEEDS / "seed004-nd-rdma-full-node-h100.yaml"
SEED004_POD = SEEDS / "seed004-llm-d-modelserver-pod.yaml"
COMPLIANT = SCAN / "compliant"
BROKEN = SCAN / "broken" / "broken.yaml"
MULTI = SCAN / "multi-document.yaml"
INVALID = SCAN / "invalid" / "invalid.yaml"
CONSOLE_SCRIPT = Path(sys.executable).parent / "aks-gpu"


def scan(capsys, *args: str | Path) -> tuple[int, str, str]:
    """Run ``aks-gpu scan ARGS`` in process; return (exit code, stdout, stderr)."""
    code = main(["scan", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


def scan_json(capsys, *args: str | Path) -> tuple[int, dict]:
    code, out, err = scan(capsys, *args, "--format", "json")
    assert err == ""
    return code, json.loads(out)


def verdicts(report: dict) -> Counter:
    """The findings of a JSON report as a multiset of (rule, level)."""
    return Counter((f["rule"], f["level"]) for f in report["findings"])


def write_config(tmp_path: Path, config: object) -> Path:
    path = tmp_path / "policy-config.json"
    path.write_text(json.dumps(config))
    return path


# ---- the seeds' manifests --------------------------------------------------------------------

# What every rule says about each seed manifest scanned on its own, and why:
#
# seed 002 Deployment vllm-mistral-serving: requests nvidia.com/gpu and tolerates sku=gpu:NoSchedule
#   (key sku, operator Equal, value gpu, effect NoSchedule), so gpu-taints-and-tolerations passes;
#   image vllm/vllm-openai:v0.4.0 is pinned; no container is privileged and none claims RDMA NICs, so
#   ipc-lock-without-privileged, nccl-infiniband-enabled and rdma-capable-sku have nothing to check;
#   its args do not touch memlock; it has no prefill/decode role label; its nodeSelector is
#   accelerator=nvidia-a100 (not kubernetes.azure.com/agentpool), so mig-resource-request joins no
#   pool. No findings.
# seed 004 DeviceClass dranet.net and ResourceClaimTemplate nd-rdma-full-node-h100: no rule judges
#   these kinds by themselves (they only feed the claim joins). No findings.
# seed 004 model-server Pod, alone: the claim template it names is not among the scanned objects, so
#   its rdma-nics claim resolves to no device class; but its UCX_TLS=rc_x,... names only InfiniBand
#   transports, so modelserver is an RDMA container all the same: it pins a pool (outside the scan, not
#   checked), adds IPC_LOCK, drops ALL and forbids escalation, and does not set NCCL_IB_DISABLE=0 (one
#   advisory finding); it requests 8 nvidia.com/gpu and tolerates the taint; its container has no image at
#   all (faithful to the seed), which image-pinned skips.
SEED_FILES_ALONE = {
    SEED002_DEPLOYMENT: Counter(),
    SEED004_DEVICE_CLASS: Counter(),
    SEED004_CLAIM_TEMPLATE: Counter(),
    SEED004_POD: Counter({("nccl-infiniband-enabled", "advisory"): 1}),
}


@pytest.mark.parametrize("path", list(SEED_FILES_ALONE), ids=lambda p: p.stem)
def test_each_seed_manifest_alone(capsys, path):
    code, report = scan_json(capsys, path)
    assert report["objects"] == 1
    assert verdicts(report) == SEED_FILES_ALONE[path]
    assert code == 0


def test_seed004_set_together_only_asks_for_nccl_ib_disable(capsys):
    """The whole seed folder: now the Pod's rdma-nics claim resolves (same namespace llm-d-infra) to the
    dranet.net template, so modelserver is an RDMA container.

    - ipc-lock-without-privileged: adds IPC_LOCK, drops ALL, allowPrivilegeEscalation false, not
      privileged -> passes, as seed 004 prescribes.
    - rdma-capable-sku: it pins kubernetes.azure.com/agentpool (the seed's placeholder
      <node-pool-name>); that pool is an Azure resource outside the scan, so its size is not checked.
    - gpu-taints-and-tolerations: tolerates sku=gpu:NoSchedule -> passes.
    - nccl-infiniband-enabled (advisory): the seed sets only UCX_TLS, not NCCL_IB_DISABLE=0, which seed
      002 gotcha 2 says to always inject -> one advisory finding on the Pod. (NCCL's own default keeps
      InfiniBand on, and seed 004's qualified run reached GDRDMA without the variable: this is advice,
      not a defect, hence advisory and exit 0.)
    """
    code, report = scan_json(capsys, SEEDS)
    assert report["objects"] == 4
    assert verdicts(report) == Counter({("nccl-infiniband-enabled", "advisory"): 1})
    [finding] = report["findings"]
    assert finding["resource"] == "Pod llm-d-infra/llm-d-modelserver"
    assert finding["file"] == str(SEED004_POD) and finding["line"] == line_of(SEED004_POD, "    - name: modelserver")
    assert (
        "modelserver claims RDMA NICs and selects InfiniBand (UCX_TLS=rc_x,cuda_copy,cuda_ipc,self) but does not set NCCL_IB_DISABLE=0"
        in finding["message"]
    )
    assert code == 0


def test_seed004_pod_without_its_claim_template_is_not_checked_as_rdma(capsys, tmp_path):
    """Limitation, documented: a pod whose claim template is not among the scanned files is not known to
    claim RDMA NICs, so even a pod that breaks every RDMA rule passes when scanned alone. Scan the
    template (or the whole chart output) together with the workloads. The scan says so: a
    claim-not-scanned warning (exit code unchanged)."""
    pod = yaml.safe_load(SEED004_POD.read_text())
    container = pod["spec"]["containers"][0]
    container["securityContext"] = {"capabilities": {"add": ["SYS_ADMIN"]}}
    container["env"] = [{"name": "NCCL_IB_DISABLE", "value": "1"}]
    (tmp_path / "pod.yaml").write_text(yaml.safe_dump(pod))
    code, report = scan_json(capsys, tmp_path / "pod.yaml")
    assert verdicts(report) == Counter() and code == 0
    assert [w["check"] for w in report["warnings"]] == ["claim-not-scanned"]
    code, report = scan_json(capsys, tmp_path / "pod.yaml", SEED004_CLAIM_TEMPLATE)
    assert verdicts(report) == Counter(
        {("ipc-lock-without-privileged", "mandatory"): 1, ("nccl-infiniband-enabled", "advisory"): 1}
    )
    assert code == 1


def test_seed004_pod_has_no_image_and_the_scan_does_not_say_so(capsys):
    """The seed's container has no image. The fixture keeps it that way; the OpenAPI schema accepts it
    (Container.image is optional there; the API server rejects a Pod without one), and image-pinned only
    judges images that are present, so the scan is silent about it."""
    pod = yaml.safe_load(SEED004_POD.read_text())
    assert "image" not in pod["spec"]["containers"][0]
    _, report = scan_json(capsys, SEEDS)
    assert not [f for f in report["findings"] if f["rule"] == "image-pinned"]


@pytest.mark.parametrize("path", sorted(SEEDS.glob("*.yaml")), ids=lambda p: p.stem)
def test_seed_fixtures_are_valid_kubernetes_1_34(path):
    text = path.read_text()
    assert text.startswith("# Seed 00"), "every seed fixture names its seed and section"
    kubernetes_validate.validate(yaml.safe_load(text), "1.35", strict=True)


def test_seed002_mutations_trip_the_rules_it_motivates(capsys, tmp_path):
    """The rule docstrings cite seed 002: :latest is unpinned and a GPU pod without the toleration breaks."""
    deployment = yaml.safe_load(SEED002_DEPLOYMENT.read_text())
    spec = deployment["spec"]["template"]["spec"]
    spec["containers"][0]["image"] = "vllm/vllm-openai:latest"
    del spec["tolerations"]
    (tmp_path / "mutated.yaml").write_text(yaml.safe_dump(deployment))
    code, report = scan_json(capsys, tmp_path / "mutated.yaml")
    assert verdicts(report) == Counter({("gpu-taints-and-tolerations", "mandatory"): 1, ("image-pinned", "advisory"): 1})
    assert code == 1


# ---- hand-written sets -----------------------------------------------------------------------


def first_key_line(path: Path, index: int = 0) -> int:
    """1-based line of the first key (``apiVersion:``) of the index-th document of a file."""
    lines = [n + 1 for n, line in enumerate(path.read_text().splitlines()) if line.startswith("apiVersion:")]
    return lines[index]


def document_at(path: Path, line: int) -> int:
    """The index of the document of a file that holds ``line``."""
    starts = [n + 1 for n, text in enumerate(path.read_text().splitlines()) if text.startswith("apiVersion:")]
    return max(i for i, start in enumerate(starts) if start <= line)


def line_of(path: Path, text: str, after: int = 0) -> int:
    """1-based line of the first line of a file that is ``text`` (after line ``after``)."""
    return next(n + 1 for n, line in enumerate(path.read_text().splitlines()) if n + 1 > after and line == text)


def test_compliant_rdma_set_passes_and_folders_are_searched_recursively(capsys):
    """rdma-workloads.yaml (4 objects) plus storage/model-cache.yml (2) one folder down; notes.txt (not
    YAML) and ignored.json (a Pod on busybox:latest) are not *.yaml/*.yml and are skipped. The ND96isr
    pool is Azure, not YAML, so rdma-capable-sku can only check that the RDMA pods pin a pool."""
    code, out, err = scan(capsys, COMPLIANT)
    assert (code, err) == (0, "")
    assert out.strip() == "6 objects scanned: 0 mandatory, 0 advisory findings, 0 exempted"


def test_folder_search_finds_yaml_and_yml_at_any_depth(capsys, tmp_path):
    deep = tmp_path / "a" / "b" / "c"
    deep.mkdir(parents=True)
    storage_class = "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: %s}\nprovisioner: disk.csi.azure.com\n"
    (tmp_path / "top.yaml").write_text(storage_class % "top")
    (deep / "deep.yml").write_text(storage_class % "deep")
    (deep / "skipped.json").write_text(storage_class % "skipped")
    code, report = scan_json(capsys, tmp_path)
    assert report["objects"] == 2
    assert sorted(f["resource"] for f in report["findings"]) == ["StorageClass deep", "StorageClass top"]
    assert code == 0  # azure-disk-caching-none is advisory


# Every rule that can fire on plain YAML, with the object (document of broken.yaml) it fires on.
BROKEN_FINDINGS = Counter(
    {
        ("rdma-capable-sku", "mandatory", 1): 1,  # RDMA Deployment pins no pool
        ("ipc-lock-without-privileged", "mandatory", 1): 1,  # no IPC_LOCK, SYS_ADMIN, no drop ALL, escalation
        ("ipc-lock-without-privileged", "mandatory", 2): 1,  # privileged sidecar in the CronJob
        ("gpu-taints-and-tolerations", "mandatory", 2): 1,  # tolerates sku=cpu, not sku=gpu
        ("nccl-infiniband-enabled", "advisory", 1): 1,  # NCCL_IB_DISABLE=1
        ("no-memlock-override", "advisory", 1): 1,  # ulimit -l unlimited
        ("prefill-decode-anti-affinity", "advisory", 1): 1,  # prefill role, no anti-affinity
        ("image-pinned", "advisory", 1): 1,  # vllm/vllm-openai (no tag)
        ("image-pinned", "advisory", 2): 1,  # busybox:latest
        ("azure-disk-caching-none", "advisory", 3): 1,  # cachingMode not set
    }
)


def test_broken_set_reports_every_yaml_rule_and_exits_1(capsys):
    code, report = scan_json(capsys, BROKEN)
    assert Counter((f["rule"], f["level"], document_at(BROKEN, f["line"])) for f in report["findings"]) == BROKEN_FINDINGS
    assert {f["file"] for f in report["findings"]} == {str(BROKEN)}
    assert (report["objects"], report["mandatory"], report["advisory"]) == (4, 4, 6)
    assert code == 1
    [rdma] = [f for f in report["findings"] if f["rule"] == "ipc-lock-without-privileged" and document_at(BROKEN, f["line"]) == 1]
    for problem in (
        "add capability IPC_LOCK",
        "remove capabilities ['SYS_ADMIN']",
        "drop ALL",
        "allowPrivilegeEscalation: false",
    ):
        assert problem in rdma["message"]


def test_table_output(capsys):
    code, out, err = scan(capsys, BROKEN)
    assert code == 1 and err == ""
    header, _separator, *rows, summary = out.strip().splitlines()
    assert header.split() == ["level", "rule", "where", "finding"]
    assert len(rows) == 10
    assert rows[0].startswith("mandatory  rdma-capable-sku")
    where = re.search(rf"{re.escape(str(BROKEN))}:(\d+)", rows[0])
    assert where and document_at(BROKEN, int(where[1])) == 1 and int(where[1]) > first_key_line(BROKEN, 1), "the pod spec's line"
    assert summary == "4 objects scanned: 4 mandatory, 6 advisory findings, 0 exempted"


def test_multi_document_file_with_a_list(capsys):
    """The List contributes its two items (Deployment, Service), then a StorageClass; the empty document,
    the helm-values mapping and the YAML sequence are not Kubernetes objects and are skipped. Objects
    inside the List are located at their own item line, not the List's."""
    code, report = scan_json(capsys, MULTI)
    assert report["objects"] == 3
    assert verdicts(report) == Counter({("image-pinned", "advisory"): 1, ("azure-disk-caching-none", "advisory"): 1})
    lines = {f["resource"]: f["line"] for f in report["findings"]}
    assert lines["StorageClass legacy-disk"] == line_of(MULTI, "  cachingMode: ReadWrite"), "the field's line"
    item_line = line_of(MULTI, "  - apiVersion: apps/v1")
    assert lines["Deployment apps/chat"] == line_of(MULTI, "              image: registry.example.com/chat:latest", item_line)
    assert code == 0


def test_list_with_null_items_has_no_objects(capsys, tmp_path):
    path = tmp_path / "list.yaml"
    path.write_text("apiVersion: v1\nkind: List\nitems:\n")
    code, report = scan_json(capsys, path)
    assert (code, report["objects"]) == (0, 0)


# ---- output formats --------------------------------------------------------------------------


def test_json_structure_and_counts(capsys):
    code, report = scan_json(capsys, BROKEN, MULTI, SEEDS)
    assert set(report) == {"objects", "files", "exit_code", "errors", "warnings", "exempted", "mandatory", "advisory", "findings"}
    assert report["objects"] == 4 + 3 + 4
    assert report["mandatory"] == sum(f["level"] == "mandatory" for f in report["findings"]) == 4
    assert report["advisory"] == sum(f["level"] == "advisory" for f in report["findings"]) == 6 + 2 + 1
    rules = {rule.name for rule in RULES}
    for finding in report["findings"]:
        assert set(finding) == {"rule", "level", "file", "line", "resource", "template", "message"}
        assert finding["rule"] in rules and finding["level"] in ("mandatory", "advisory")
        assert isinstance(finding["line"], int) and finding["line"] >= 1
        assert Path(finding["file"]).is_file()
        assert finding["message"].startswith(finding["resource"])
    assert code == 1


def test_sarif_2_1_0_shape(capsys, monkeypatch):
    monkeypatch.chdir(REPO)  # SRCROOT, the base of the relative file URIs
    code, out, err = scan(capsys, BROKEN, SEEDS, MULTI, "--format", "sarif")
    assert code == 1 and err == ""
    sarif = json.loads(out)
    assert sarif["version"] == "2.1.0"
    assert sarif["$schema"].endswith("sarif-2.1.0.json")
    [run] = sarif["runs"]
    driver = run["tool"]["driver"]
    assert isinstance(driver["name"], str) and driver["name"]
    assert [r["id"] for r in driver["rules"]] == [rule.name for rule in RULES]
    for descriptor, rule in zip(driver["rules"], RULES, strict=True):
        assert descriptor["shortDescription"]["text"] == rule.description
        assert descriptor["defaultConfiguration"]["level"] == ("error" if rule.enforcement == "mandatory" else "warning")
    results = run["results"]
    assert len(results) == 10 + 1 + 2
    assert Counter(r["level"] for r in results) == Counter({"error": 4, "warning": 9})
    ids = {r["id"] for r in driver["rules"]}
    for result in results:
        assert result["ruleId"] in ids
        assert result["level"] in ("error", "warning") and result["message"]["text"]
        [location] = result["locations"]
        physical = location["physicalLocation"]
        assert physical["artifactLocation"]["uriBaseId"] == "SRCROOT"  # the fixtures are below the working folder
        path, line = REPO / unquote(physical["artifactLocation"]["uri"]), physical["region"]["startLine"]
        assert isinstance(line, int) and line >= 1
        # startLine is the line of the field the finding names, inside its object: the last object start at or
        # above it (apiVersion, or the "- " of a List item) begins the object whose metadata.name the message names.
        lines = path.read_text().splitlines()
        start = max(n for n, text in enumerate(lines[:line]) if re.match(r"^(  - )?apiVersion:", text))
        name = next(m[1] for text in lines[start:] if (m := re.match(r"^\s*name: (\S+)$", text)))
        assert name in result["message"]["text"]


def test_sarif_without_findings_still_lists_every_rule(capsys):
    code, out, _ = scan(capsys, COMPLIANT, "--format", "sarif")
    sarif = json.loads(out)
    assert code == 0 and sarif["runs"][0]["results"] == []
    assert len(sarif["runs"][0]["tool"]["driver"]["rules"]) == len(RULES)


# ---- policy config ---------------------------------------------------------------------------


def test_policy_config_disables_and_downgrades_rules(capsys, tmp_path):
    config = write_config(
        tmp_path,
        {
            "gpu-taints-and-tolerations": "disabled",
            "ipc-lock-without-privileged": {"enforcementLevel": "advisory"},
            "rdma-capable-sku": {"enforcementLevel": "disabled"},
        },
    )
    code, report = scan_json(capsys, BROKEN, "--policy-config", config)
    found = verdicts(report)
    assert ("gpu-taints-and-tolerations", "mandatory") not in found and ("rdma-capable-sku", "mandatory") not in found
    assert found[("ipc-lock-without-privileged", "advisory")] == 2
    assert report["mandatory"] == 0 and code == 0


def test_policy_config_upgrades_an_advisory_rule(capsys, tmp_path):
    code, report = scan_json(capsys, MULTI, "--policy-config", write_config(tmp_path, {"image-pinned": "mandatory"}))
    assert verdicts(report) == Counter({("image-pinned", "mandatory"): 1, ("azure-disk-caching-none", "advisory"): 1})
    assert code == 1


def test_policy_config_knobs_change_the_result(capsys, tmp_path):
    # allowed_capabilities: SYS_ADMIN no longer listed as extra
    config = write_config(tmp_path, {"ipc-lock-without-privileged": {"allowed_capabilities": ["SYS_ADMIN"]}})
    _, report = scan_json(capsys, BROKEN, "--policy-config", config)
    messages = [f["message"] for f in report["findings"] if f["rule"] == "ipc-lock-without-privileged"]
    assert len(messages) == 2 and not any("remove capabilities" in m for m in messages)
    # role_labels: the prefill label is no longer a role label
    config = write_config(tmp_path, {"prefill-decode-anti-affinity": {"role_labels": ["example.com/role"]}})
    _, report = scan_json(capsys, BROKEN, "--policy-config", config)
    assert ("prefill-decode-anti-affinity", "advisory") not in verdicts(report)
    # taint: the seed 002 Deployment tolerates sku=gpu, not another taint
    config = write_config(tmp_path, {"gpu-taints-and-tolerations": {"taint": "nvidia.com/gpu=present:NoSchedule"}})
    code, report = scan_json(capsys, SEED002_DEPLOYMENT, "--policy-config", config)
    assert verdicts(report) == Counter({("gpu-taints-and-tolerations", "mandatory"): 1}) and code == 1
    assert "does not tolerate 'nvidia.com/gpu=present:NoSchedule'" in report["findings"][0]["message"]


@pytest.mark.parametrize(
    ("config", "problem"),
    [
        ({"no-such-rule": "advisory"}, "no-such-rule: unknown rule; rules: rdma-capable-sku, "),
        ({"image-pinned": {"tag": "v1"}}, "image-pinned.tag: unknown setting; settings of this rule: enforcementLevel, none"),
        (
            {"gpu-taints-and-tolerations": {"toleration": "x"}},
            "gpu-taints-and-tolerations.toleration: unknown setting; settings of this rule: enforcementLevel, taint",
        ),
        ({"image-pinned": "warn"}, "image-pinned.enforcementLevel='warn': accepted: advisory, mandatory, disabled"),
        ({"image-pinned": {"enforcementLevel": "error"}}, "image-pinned.enforcementLevel='error': accepted: "),
        ({"image-pinned": 3}, "image-pinned=3: expected an enforcement level or an object of settings"),
        (["image-pinned"], "expected a JSON object of rule names to settings, got list"),
    ],
    ids=["unknown-rule", "unknown-knob", "unknown-knob-2", "bad-level", "bad-level-2", "bad-settings", "not-an-object"],
)
def test_invalid_policy_config_exits_2_naming_the_problem(capsys, tmp_path, config, problem):
    path = write_config(tmp_path, config)
    code, out, err = scan(capsys, COMPLIANT, "--policy-config", path)
    assert code == 2 and out == ""
    assert err.startswith(f"error: policy config {path} is invalid:\n  - ")
    assert problem in err and "Traceback" not in err


def test_unreadable_policy_config_exits_2(capsys, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    code, _, err = scan(capsys, COMPLIANT, "--policy-config", bad)
    assert code == 2 and f"error: cannot read policy config {bad}" in err and "line 1 column 2" in err
    code, _, err = scan(capsys, COMPLIANT, "--policy-config", tmp_path / "missing.json")
    assert code == 2 and "cannot read policy config" in err and "No such file or directory" in err


@pytest.mark.parametrize(
    ("knobs", "problem"),
    [
        ({"gpu-taints-and-tolerations": {"taint": 5}}, "gpu-taints-and-tolerations.taint=5: expected a string"),
        (
            {"ipc-lock-without-privileged": {"allowed_capabilities": "SYS_ADMIN"}},
            "ipc-lock-without-privileged.allowed_capabilities='SYS_ADMIN': expected an array of strings",
        ),
        ({"aks-node-os-upgrade-channel": {"allow_security_patch": "yes"}}, "allow_security_patch='yes': expected a boolean"),
    ],
    ids=["string", "array", "boolean"],
)
def test_knob_of_the_wrong_type_exits_2(capsys, tmp_path, knobs, problem):
    code, out, err = scan(capsys, SEED002_DEPLOYMENT, "--policy-config", write_config(tmp_path, knobs))
    assert (code, out) == (2, "")
    assert problem in err and "Traceback" not in err


# ---- unreadable input ------------------------------------------------------------------------


def test_missing_path_exits_2(capsys):
    """The other paths are still scanned (they used to be dropped: the first bad path stopped the scan)."""
    code, out, err = scan(capsys, COMPLIANT, "no/such/dir")
    assert code == 2 and out.startswith("6 objects scanned: 0 mandatory")
    assert err == "error: no/such/dir: no such file or folder\n"


def test_invalid_yaml_exits_2_naming_file_and_line(capsys):
    code, out, err = scan(capsys, INVALID)
    assert code == 2 and out.startswith("0 objects scanned")
    assert err.startswith(f"error: {INVALID}:5: not valid YAML: ")
    assert "line 5, column 2" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, "the YAML error is folded onto one line"


def test_invalid_yaml_in_a_scanned_folder_is_reported_and_the_rest_scanned(capsys):
    """It used to fail the whole scan with nothing else reported; now the other files are scanned, and
    broken.yaml's mandatory findings make the exit code 1 (mandatory findings win over bad input)."""
    code, report = scan_json(capsys, SCAN)  # compliant/, broken/, multi-document.yaml and invalid/invalid.yaml
    assert [(e["check"], e["file"], e["line"]) for e in report["errors"]] == [("invalid-yaml", str(INVALID), 5)]
    assert report["objects"] == 6 + 4 + 3 and report["mandatory"] == 4
    assert code == report["exit_code"] == 1


def test_non_utf8_file_exits_2(capsys, tmp_path):
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: caf\xe9\n")
    code, out, err = scan(capsys, path)
    assert code == 2 and out.startswith("0 objects scanned")
    assert err.startswith(f"error: {path}:4: not UTF-8 text: byte 0xe9 on line 4") and "Traceback" not in err


# Parseable YAML that is not a valid Kubernetes object (the API server would refuse it). The scan should
# skip such an object or exit 2 naming it; today the rules assume mappings and strings and crash.
MALFORMED = {
    "scalar-pod-metadata": "apiVersion: v1\nkind: Pod\nmetadata: oops\nspec: {containers: [{name: c, image: 'b:1'}]}\n",
    "list-labels": "apiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: [a]}\nspec: {containers: [{name: c, image: 'b:1'}]}\n",
    "scalar-template-metadata": (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n"
        "spec: {template: {metadata: x, spec: {containers: [{name: c, image: 'b:1'}]}}}\n"
    ),
    "scalar-storage-parameters": (
        "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: s}\nprovisioner: disk.csi.azure.com\nparameters: oops\n"
    ),
    "list-name": (
        "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: [x]}\n"
        "spec: {selectors: [{cel: {expression: 'device.driver == \"gpu.nvidia.com\"'}}]}\n"
    ),
    "list-namespace": "apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {name: t, namespace: [x]}\nspec: {}\n",
    "integer-resource-name": (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: 'b:1', resources: {limits: {5: 1}}}]}\n"
    ),
}


@pytest.mark.parametrize("text", list(MALFORMED.values()), ids=list(MALFORMED))
def test_malformed_objects_do_not_crash_the_scan(capsys, tmp_path, text):
    path = tmp_path / "malformed.yaml"
    path.write_text(text)
    code, _, err = scan(capsys, path)
    assert code in (0, 1, 2) and "Traceback" not in err


# ---- the console script and imports ----------------------------------------------------------


def test_console_script_exit_codes():
    """The installed ``aks-gpu`` entry point, as CI would call it: 0 clean, 1 mandatory findings, 2 bad input."""
    assert CONSOLE_SCRIPT.exists()
    expected = {COMPLIANT: 0, SEEDS: 0, BROKEN: 1, INVALID: 2, FIXTURES / "nope.yaml": 2}
    for path, code in expected.items():
        result = subprocess.run([str(CONSOLE_SCRIPT), "scan", str(path)], capture_output=True, text=True, cwd=REPO, timeout=120)
        assert result.returncode == code, (path, result.stdout, result.stderr)
        assert "Traceback" not in result.stderr
        if code == 2:
            assert result.stderr.startswith("error: ") and result.stdout.startswith("0 objects scanned")


def test_scan_never_imports_pulumi():
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "aks_gpu_inference.planner", "scan", str(BROKEN), "--format", "json"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert result.returncode == 1, result.stderr
    modules = [m[1].strip() for m in re.finditer(r"^import time:[^|]*\|[^|]*\|(.*)$", result.stderr, re.MULTILINE)]
    assert "aks_gpu_inference.policies.rules" in modules and "yaml" in modules, "importtime output was parsed"
    assert not [m for m in modules if m.startswith("pulumi")]
