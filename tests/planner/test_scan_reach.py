"""``aks-gpu scan`` on kustomize patches (fragments of the objects they patch), the line of each finding in every output
format, and object names as the API server checks them. Upstream fixtures are under tests/fixtures/upstream/."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from aks_gpu_inference.planner.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE, main
from aks_gpu_inference.planner.scan import run
from aks_gpu_inference.planner.scan.names import name_problem
from tests.conftest import REPO

UPSTREAM = REPO / "tests" / "fixtures" / "upstream"
RDMA_DEFAULTS = UPSTREAM / "dynamo-rdma-defaults"
OCI = UPSTREAM / "llmd-oci"


def scan_json(capsys, *args) -> tuple[int, dict]:
    code = main(["scan", *map(str, args), "--format", "json"])
    out, _ = capsys.readouterr()
    return code, json.loads(out)


def line(path: Path, text: str) -> int:
    return next(n + 1 for n, row in enumerate(path.read_text().splitlines()) if row.strip() == text)


# ---- kustomize patches ------------------------------------------------------------------------------


def test_a_component_that_makes_dynamo_workers_privileged(capsys):
    """Dynamo's rdma-defaults component patches both disaggregated workers privileged, with IPC_LOCK and SYS_PTRACE
    (one security context, aliased): flagged on the line where it is written."""
    code, report = scan_json(capsys, RDMA_DEFAULTS)
    privileged = line(RDMA_DEFAULTS / "patch-dgd.yaml", "privileged: true")
    found = [(f["rule"], f["line"]) for f in report["findings"]]
    assert found == [("ipc-lock-without-privileged", privileged)] * 2
    assert code == EXIT_FAILED


@pytest.mark.parametrize("with_kustomization", [True, False])
def test_a_patch_file_is_a_fragment_when_a_kustomization_beside_it_says_so(tmp_path, with_kustomization):
    """Dynamo's AKS InfiniBand component adds rdma/shared_ib and the host's /dev/infiniband to the workers; its own
    security context and pool come from the graph it patches. Scanned alone in its folder, next to the
    kustomization that names it, it is a fragment: checked for what it sets. Copied elsewhere without it, it is a
    whole object, which pins no RDMA pool and lacks IPC_LOCK."""
    patch = (UPSTREAM / "dynamo-rdma-defaults" / "patch-dgd.yaml").read_text()
    aks_ib = patch.replace("name: disagg-workers", "name: aks-ib").split("spec:")[0] + (
        "spec:\n  services:\n    DecodeWorker:\n      extraPodSpec:\n        mainContainer:\n"
        "          volumeMounts: [{name: ib, mountPath: /dev/infiniband}]\n"
        "        volumes: [{name: ib, hostPath: {path: /dev/infiniband}}]\n"
        "      resources: {limits: {custom: {rdma/shared_ib: '1'}}}\n"
    )
    (tmp_path / "patch-dgd.yaml").write_text(aks_ib)
    if with_kustomization:
        shutil.copy(RDMA_DEFAULTS / "kustomization.yaml", tmp_path / "kustomization.yaml")
    report = run([str(tmp_path / "patch-dgd.yaml")])
    rules = sorted({f.rule.name for f in report.findings if f.level == "mandatory"})
    assert rules == ([] if with_kustomization else ["ipc-lock-without-privileged", "rdma-capable-sku"])


def test_json6902_patches_inline_are_fragments_on_their_lines():
    """llm-d's OCI overlay adds SR-IOV RDMA VFs, UCX over RC and IPC_LOCK to two Deployments with JSON 6902
    operations: each becomes a Deployment fragment; it sets nothing wrong and leaves the rest to its base."""
    report = run([str(OCI)])
    fragments = [item for item in report.located if item.resource.fragment]
    assert sorted(item.resource.label for item in fragments) == ["Deployment decode", "Deployment prefill"]
    decode = next(item for item in fragments if item.resource.label == "Deployment decode")
    container = decode.resource.props["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"]["limits"] == {"nvidia.com/sriov-rdma-vf": "4"}
    assert [e["name"] for e in container["env"]] == ["UCX_TLS", "UCX_IB_GID_INDEX"]
    assert report.findings == [] and report.errors == []


def test_a_json6902_patch_that_sets_privileged_is_flagged_on_its_line(tmp_path, capsys):
    text = (
        (OCI / "kustomization.yaml")
        .read_text()
        .replace(
            "              - IPC_LOCK\n  - target:\n      kind: Deployment\n      name: prefill",
            "              - IPC_LOCK\n          privileged: true\n  - target:\n      kind: Deployment\n      name: prefill",
            1,
        )
    )
    (tmp_path / "kustomization.yaml").write_text(text)
    code, report = scan_json(capsys, tmp_path)
    [finding] = report["findings"]
    assert finding["rule"] == "ipc-lock-without-privileged" and finding["resource"] == "Deployment decode"
    assert finding["line"] == line(tmp_path / "kustomization.yaml", "privileged: true")
    assert code == EXIT_FAILED


def test_a_json6902_patch_file_named_by_path(tmp_path, capsys):
    (tmp_path / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [base.yaml]\n"
        "patches:\n  - target: {kind: Deployment, name: vllm}\n    path: gpu.yaml\n"
    )
    (tmp_path / "gpu.yaml").write_text(
        "- op: add\n  path: /spec/template/spec/containers/0/securityContext\n"
        "  value: {capabilities: {add: [SYS_ADMIN, IPC_LOCK]}}\n"
        "- op: add\n  path: /spec/template/spec/containers/0/resources/limits/rdma~1ib\n  value: '1'\n"
    )
    code, report = scan_json(capsys, tmp_path)
    assert report["warnings"] == [], "the patch file is no object, and is not warned as one"
    [finding] = report["findings"]
    assert "remove capabilities ['SYS_ADMIN']" in finding["message"] and finding["file"].endswith("gpu.yaml")
    assert code == EXIT_FAILED


def test_a_patch_file_that_cannot_be_read_warns(tmp_path, capsys):
    (tmp_path / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Component\npatches:\n  - path: missing.yaml\n"
    )
    code, report = scan_json(capsys, tmp_path / "kustomization.yaml")
    [warning] = report["warnings"]
    assert warning["check"] == "patch-not-read" and "missing.yaml cannot be read" in warning["message"]
    assert code == EXIT_OK


# ---- every finding's file and line, in every format ---------------------------------------------------


def test_table_json_and_sarif_name_the_same_field_lines(capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    target = UPSTREAM / "dranet-rdma-perftest.yaml"
    _, report = scan_json(capsys, target)
    main(["scan", str(target), "--format", "sarif"])
    sarif = json.loads(capsys.readouterr().out)
    main(["scan", str(target)])
    table = capsys.readouterr().out
    from_json = [(f["rule"], f["line"]) for f in report["findings"]]
    from_sarif = [
        (r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"]) for r in sarif["runs"][0]["results"]
    ]
    assert from_json == from_sarif
    for rule, at in from_json:
        assert f"{target}:{at}" in next(row for row in table.splitlines() if rule in row and f":{at} " in row)
    image = line(target, "- image: registry.k8s.io/networking/dranet-rdma-perftest:stable")
    assert ("image-pinned", image) in from_json, "the image field's line, not the object's"


# ---- names --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("group", "kind", "name", "problem"),
    [
        ("apps", "Deployment", "vllm.chat-1", None),
        ("apps", "Deployment", "Llama-3", "must be a lowercase RFC 1123 subdomain"),
        ("apps", "Deployment", "a" * 254, "must be no more than 253 characters"),
        ("apps", "StatefulSet", "nccl.test", "must be a lowercase RFC 1123 label"),
        ("core", "Service", "1-head", "must be a DNS-1035 label"),
        ("core", "Namespace", "llm_d", "must be a lowercase RFC 1123 label"),
        ("batch", "CronJob", "n" * 53, "must be no more than 52 characters"),
        ("rbac.authorization.k8s.io", "ClusterRole", "system:aggregate-to-edit", None),
        ("rbac.authorization.k8s.io", "Role", "a/b", "may not contain '/'"),
        ("nvidia.com", "DynamoGraphDeployment", "Qwen3_32B", "must be a lowercase RFC 1123 subdomain"),
    ],
)
def test_names_as_the_api_server_checks_them(group, kind, name, problem):
    found = name_problem(group, kind, {"metadata": {"name": name}})
    if problem is None:
        assert found is None
    else:
        assert found is not None and found[0] == "name" and found[1].startswith(f"metadata.name {name!r} {problem}")


def test_generate_name_and_a_missing_name():
    assert name_problem("core", "Pod", {"metadata": {"generateName": "nccl-test-"}}) is None
    assert name_problem("core", "Pod", {"metadata": {"generateName": "Nccl-"}})[0] == "generateName"
    assert name_problem("llm-d.ai", "EndpointPickerConfig", {}) is None, "a tool's config written like an object"
    crd = {"metadata": {"name": "engines.example.com"}, "spec": {"group": "example.com", "names": {"plural": "engine"}}}
    assert (
        "must be spec.names.plural+'.'+spec.group ('engine.example.com')"
        in name_problem("apiextensions.k8s.io", "CustomResourceDefinition", crd)[1]
    )


def test_an_invalid_name_is_an_error_on_its_line_and_the_object_is_still_checked(tmp_path, capsys):
    text = (UPSTREAM / "mellanox-hca-pod.yaml").read_text().replace("name: mofed-test-pod", "name: MOFED_test")
    (tmp_path / "pod.yaml").write_text(text)
    code, report = scan_json(capsys, tmp_path / "pod.yaml")
    [error] = report["errors"]
    assert error["check"] == "invalid-name" and error["line"] == line(tmp_path / "pod.yaml", "name: MOFED_test")
    assert "metadata.name 'MOFED_test' must be a lowercase RFC 1123 subdomain" in error["message"]
    assert report["mandatory"] == 2 and code == EXIT_FAILED, "a mandatory finding wins over the error"
    text = text.replace("rdma/hca_shared_devices_a: 1", "cpu: 1").replace(
        "image: mellanox/rping-test", "image: mellanox/rping-test:v1"
    )
    (tmp_path / "pod.yaml").write_text(text)
    code, report = scan_json(capsys, tmp_path / "pod.yaml")
    assert (code, report["mandatory"], len(report["errors"])) == (EXIT_USAGE, 0, 1)


def test_upstream_names_are_valid():
    report = run([str(UPSTREAM)])
    assert [p for p in report.problems if p.check == "invalid-name"] == []
