"""``aks-gpu scan`` on folders as they are found (issue 11 items 2, 4 and 5): bad files are reported
and the scan goes on, nothing passes in silence, JSON and SARIF are whole documents whatever the exit
code, and exit codes mean one thing for every command. ``tests/fixtures/scan_mixed/`` holds one file
of each kind; the comment at the top of each says what it is.
"""

from __future__ import annotations

import importlib
import json
from collections import Counter
from pathlib import Path

import pytest

from aks_gpu_inference.planner import scan as scan_module
from aks_gpu_inference.planner.cli import EXIT_FAILED, EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, main
from tests.conftest import REPO

FIXTURES = REPO / "tests" / "fixtures"
MIXED = FIXTURES / "scan_mixed"
BROKEN = FIXTURES / "scan" / "broken" / "broken.yaml"
MULTI = FIXTURES / "scan" / "multi-document.yaml"
SEED004_POD = FIXTURES / "seeds" / "seed004-llm-d-modelserver-pod.yaml"
SEED004_CLAIM_TEMPLATE = FIXTURES / "seeds" / "seed004-nd-rdma-full-node-h100.yaml"

# (check, file, line, part of the message) for each problem, in file order
MIXED_PROBLEMS = [
    ("invalid-yaml", "bad-yaml.yaml", 6, "not valid YAML: line 6, column 2: while parsing a block mapping"),
    ("conflict-markers", "conflict.yaml", 8, "git conflict marker '<<<<<<<' on line 8: resolve the merge conflict first"),
    ("helm-template", "helm-chart/templates/deployment.yaml", 1, "('{{' on line 1): render it with `helm template` first"),
    ("no-objects", "helm-chart/values.yaml", None, "no Kubernetes objects: a Helm values file?"),
    ("invalid-object", "invalid-metadata.yaml", 2, "ConfigMap: metadata must be a mapping whose name and namespace are strings"),
    ("not-utf8", "latin1.yaml", 5, "not UTF-8 text: byte 0xe9 on line 5; save it as UTF-8"),
    ("claim-not-scanned", "pod-claim-missing.yaml", 2, "names ResourceClaimTemplate serving/nd-rdma-nics"),
    ("unknown-kind-devices", "unknown-crd.yaml", 2, "kind ModelServer (serving.example.com/v1alpha1) is unknown"),
]
WARNINGS = {"no-objects", "claim-not-scanned", "unknown-kind-devices"}


def run(capsys, *args: str | Path) -> tuple[int, str, str]:
    code = main(["scan", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys, *args: str | Path) -> tuple[int, dict]:
    code, out, err = run(capsys, *args, "--format", "json")
    assert err == ""
    return code, json.loads(out)


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def checks(report: dict, kind: str = "warnings") -> list[str]:
    return [p["check"] for p in report[kind]]


def test_mixed_folder_reports_every_bad_file_and_scans_the_rest(capsys):
    code, report = run_json(capsys, MIXED)
    problems = sorted(report["errors"] + report["warnings"], key=lambda p: p["file"])
    assert len(problems) == len(MIXED_PROBLEMS)
    for problem, (check, name, line, message) in zip(problems, MIXED_PROBLEMS, strict=True):
        assert (problem["check"], problem["file"], problem["line"]) == (check, str(MIXED / name), line)
        assert message in problem["message"] and (problem in report["warnings"]) == (check in WARNINGS)
    # good.yaml (2), podlist.yaml (2 pods), unknown-crd.yaml (2), pod-claim-missing.yaml (1)
    assert (report["files"], report["objects"]) == (10, 7)
    assert Counter((f["rule"], f["resource"]) for f in report["findings"]) == Counter({("image-pinned", "Pod batch/debug"): 1})
    assert code == report["exit_code"] == EXIT_USAGE


def test_table_format_prints_errors_and_warnings_on_stderr(capsys):
    code, out, err = run(capsys, MIXED)
    assert code == EXIT_USAGE and "Traceback" not in err
    assert [line.split(": ")[0] for line in err.splitlines()] == ["error"] * 3 + ["warning", "error", "error"] + ["warning"] * 2
    assert f"error: {MIXED / 'conflict.yaml'}:8: git conflict marker" in err
    assert f"warning: {MIXED / 'helm-chart' / 'values.yaml'}: no Kubernetes objects: a Helm values file?" in err
    summary = "7 objects scanned: 0 mandatory, 1 advisory findings, 0 exempted; 5 input errors, 3 warnings (on stderr)"
    assert out.splitlines()[-1] == summary


def test_sarif_reports_problems_as_tool_execution_notifications(capsys):
    code, out, err = run(capsys, MIXED, "--format", "sarif")
    assert (code, err) == (EXIT_USAGE, "")
    [run_] = json.loads(out)["runs"]
    [invocation] = run_["invocations"]
    assert invocation["executionSuccessful"] is False and invocation["exitCode"] == EXIT_USAGE
    assert invocation["toolConfigurationNotifications"] == []
    notifications = invocation["toolExecutionNotifications"]
    assert Counter(n["level"] for n in notifications) == Counter({"error": 5, "warning": 3})
    descriptors = {d["id"] for d in run_["tool"]["driver"]["notifications"]}
    for notification in notifications:
        assert notification["descriptor"]["id"] in descriptors and notification["message"]["text"]
        uri = notification["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        assert (REPO / uri).resolve().is_relative_to(MIXED)
    assert [r["ruleId"] for r in run_["results"]] == ["image-pinned"]


CM = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"


@pytest.mark.parametrize(
    ("text", "errors"),
    [
        *(
            (f"{CM}{marker}\ndata: {{}}\n", [("conflict-markers", 4)])
            for marker in ("<<<<<<< HEAD", "=======", ">>>>>>> x", "=======  ")
        ),
        (f"{CM}data:\n  README.md: |\n    Title\n    =======\n", []),  # indented: block scalar text, not a marker
    ],
    ids=["ours", "separator", "theirs", "separator-spaces", "block-scalar"],
)
def test_conflict_markers_at_line_start(capsys, tmp_path, text, errors):
    code, report = run_json(capsys, write(tmp_path, "c.yaml", text))
    assert [(e["check"], e["line"]) for e in report["errors"]] == errors
    assert code == (EXIT_USAGE if errors else EXIT_OK)


@pytest.mark.parametrize(
    ("value", "warnings"),
    [("'{{ .Release.Name }}-config'", [("helm-template", 6)]), ("'{{ .CommonLabels.alertname }}'", [])],
    ids=["helm-action", "alertmanager-template"],
)
def test_templates_in_yaml_that_parses(capsys, tmp_path, value, warnings):
    """Helm actions warn (the file is still scanned); other tools' Go templates in rendered data do not."""
    text = f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  {value}: x\n"
    code, report = run_json(capsys, write(tmp_path, "t.yaml", text))
    assert [(w["check"], w["line"]) for w in report["warnings"]] == warnings
    assert all("render it with `helm template` first; scanned as written" in w["message"] for w in report["warnings"])
    assert (code, report["objects"]) == (EXIT_OK, 1)


def test_unreadable_file_is_an_error(capsys, tmp_path, monkeypatch):
    path = write(tmp_path, "secret.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
    read_bytes = Path.read_bytes

    def refuse(self):
        if self == path:
            raise PermissionError(13, "Permission denied", str(self))
        return read_bytes(self)

    monkeypatch.setattr(Path, "read_bytes", refuse)
    code, report = run_json(capsys, path, MIXED / "good.yaml")
    assert [(e["check"], e["message"]) for e in report["errors"]] == [("unreadable", "cannot read it: Permission denied")]
    assert (code, report["objects"]) == (EXIT_USAGE, 2)


def test_missing_path_is_an_error_in_the_document(capsys):
    code, report = run_json(capsys, "no/such/dir", MIXED / "good.yaml")
    assert report["errors"] == [
        {"check": "no-such-path", "file": "no/such/dir", "line": None, "resource": None, "message": "no such file or folder"}
    ]
    assert (code, report["objects"]) == (EXIT_USAGE, 2)


def test_empty_folder_warns(capsys, tmp_path):
    write(tmp_path, "notes.txt", "not yaml")
    code, report = run_json(capsys, tmp_path)
    assert (code, checks(report), report["objects"]) == (EXIT_OK, ["no-yaml-files"], 0)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no Kubernetes objects: the file is empty"),
        ("# only a comment\n---\n", "no Kubernetes objects: the file is empty"),
        ("replicas: 2\nimage: {tag: v1}\n", "no Kubernetes objects: a Helm values file? (no document has apiVersion and kind)"),
        ("apiVersion: v1\nkind: List\nitems: []\n", "no Kubernetes objects: its List has no items"),
        ("apiVersion: v1\nkind: PodList\nitems: []\n", "no Kubernetes objects: its List has no items"),
    ],
    ids=["empty", "comments", "values", "empty-list", "empty-podlist"],
)
def test_a_file_without_objects_is_reported(capsys, tmp_path, text, message):
    code, report = run_json(capsys, write(tmp_path, "f.yaml", text))
    assert [(w["check"], w["message"]) for w in report["warnings"]] == [("no-objects", message)]
    assert code == EXIT_OK


def test_documents_that_are_not_objects_beside_objects_warn(capsys):
    """multi-document.yaml: the helm-values mapping and the YAML sequence (the empty document is fine)."""
    _, report = run_json(capsys, MULTI)
    lines = MULTI.read_text().splitlines()
    found = [(w["check"], lines[w["line"] - 1]) for w in report["warnings"]]
    assert found == [("not-an-object", "image:"), ("not-an-object", "- just")]


def test_typed_lists_are_expanded_and_judged(capsys, tmp_path):
    text = (
        "apiVersion: apps/v1\nkind: DeploymentList\nitems:\n"
        "  - metadata: {name: no-toleration, namespace: ml}\n"
        "    spec:\n      template:\n        spec:\n          containers:\n"
        "            - {name: c, image: 'vllm/vllm-openai:v0.10.1', resources: {limits: {nvidia.com/gpu: 1}}}\n"
        "---\napiVersion: v1\nkind: List\nitems:\n"
        "  - {apiVersion: storage.k8s.io/v1, kind: StorageClass, metadata: {name: disk}, provisioner: disk.csi.azure.com}\n"
    )
    code, report = run_json(capsys, write(tmp_path, "lists.yaml", text))
    assert report["objects"] == 2 and report["warnings"] == []
    found = {(f["rule"], f["resource"], f["line"]) for f in report["findings"]}
    assert found == {
        ("gpu-taints-and-tolerations", "Deployment ml/no-toleration", 7),  # the pod spec's line
        ("azure-disk-caching-none", "StorageClass disk", 14),
    }
    assert code == EXIT_FAILED


def test_unknown_kind_asking_for_devices_names_the_kind_and_paths(capsys):
    code, report = run_json(capsys, MIXED / "unknown-crd.yaml")
    [warning] = report["warnings"]
    assert warning["check"] == "unknown-kind-devices" and warning["resource"] == "ModelServer serving/llama-70b"
    assert "kind ModelServer (serving.example.com/v1alpha1) is unknown to the guardrail rules" in warning["message"]
    paths = 'spec.worker.resources.requests["nvidia.com/gpu"], spec.worker.resources.requests["rdma/ib"], spec.worker.resources.limits'
    assert f'at {paths}["nvidia.com/gpu"]: its pods are not checked' in warning["message"]
    assert (code, report["objects"]) == (EXIT_OK, 2)


@pytest.mark.parametrize(
    ("spec", "shown"),
    [
        (
            "  pod:\n    resourceClaims: [{name: g, resourceClaimTemplateName: g}]\n"
            "    workers:\n      - resources: {claims: [{name: g}], limits: {nvidia.com/mig-1g.10gb: 1}}\n",
            'at spec.pod.resourceClaims, spec.pod.workers[0].resources.claims, spec.pod.workers[0].resources.limits["nvidia.com/mig-1g.10gb"]:',
        ),
        (
            "  workers:\n" + "    - resources: {limits: {amd.com/gpu: 1}}\n" * 6,
            '.workers[3].resources.limits["amd.com/gpu"] and 2 more:',
        ),
    ],
    ids=["dra-and-mig", "summarised"],
)
def test_unknown_kind_device_paths(capsys, tmp_path, spec, shown):
    _, report = run_json(
        capsys, write(tmp_path, "t.yaml", f"apiVersion: example.com/v1\nkind: Trainer\nmetadata: {{name: t}}\nspec:\n{spec}")
    )
    [warning] = report["warnings"]
    assert shown in warning["message"] and warning["message"].endswith(": its pods are not checked")


SCAN_DRA = FIXTURES / "scan_dra"


def test_dra_through_an_operators_own_field_is_read(capsys):
    """NIM Operator's sample NIMService asks for a GPU through spec.draResources[].resourceClaimTemplateName: its pod
    (policies/manifests/operators/nim.py) holds that claim, on gpu.nvidia.com, and tolerates no GPU taint."""
    code, report = run_json(capsys, SCAN_DRA / "nimservice-dra-manual.yaml")
    assert report["warnings"] == []
    [finding] = report["findings"]
    assert (finding["rule"], finding["resource"]) == (
        "gpu-taints-and-tolerations",
        "NIMService nim-service/meta-llama3-2-1b-instruct",
    )
    assert "requests GPUs (claim draResources[0]) but does not tolerate 'sku=gpu:NoSchedule'" in finding["message"]
    assert (code, report["objects"]) == (EXIT_FAILED, 3)


@pytest.mark.parametrize(
    ("spec", "shown"),
    [
        ("  draResources: [{resourceClaimName: gpu-claim}]\n", "spec.draResources"),
        ("  draResources: [{claimCreationSpec: {devices: [{name: gpu}]}}]\n", "spec.draResources"),
        ("  engine: {gpuResourceClaimTemplateName: h100-4gpu}\n", "spec.engine.gpuResourceClaimTemplateName"),
        ("  workers: [{resourceClaimName: nics}]\n", "spec.workers[0].resourceClaimName"),
        ("  resources: {nvidia.com/gpu: 2}\n", 'spec.resources["nvidia.com/gpu"]'),
    ],
    ids=["claim-name", "claim-creation-spec", "key-ending-in-template-name", "claim-name-key", "shorthand-resources"],
)
def test_claim_references_under_operator_fields_warn(capsys, tmp_path, spec, shown):
    _, report = run_json(
        capsys, write(tmp_path, "t.yaml", f"apiVersion: example.com/v1\nkind: Server\nmetadata: {{name: s}}\nspec:\n{spec}")
    )
    [warning] = report["warnings"]
    assert f"DRA claims at {shown}: its pods are not checked" in warning["message"]


def test_gpu_node_labels_of_a_kueue_resource_flavor_do_not_warn(capsys):
    """nvidia.com/gpu as a ResourceFlavor's node label, taint key and toleration key is no request."""
    code, report = run_json(capsys, SCAN_DRA / "resourceflavor-gpu-node-labels.yaml")
    assert (code, report["warnings"], report["objects"]) == (EXIT_OK, [], 1)


def test_a_self_referencing_alias_is_refused_not_walked(capsys, tmp_path):
    spec = "  &a\n  self: *a\n  limits: {rdma/ib: 1}\n"
    _, report = run_json(
        capsys, write(tmp_path, "t.yaml", f"apiVersion: example.com/v1\nkind: Trainer\nmetadata: {{name: t}}\nspec:\n{spec}")
    )
    [problem] = report["errors"]
    assert problem["check"] == "invalid-yaml" and "recursive alias" in problem["message"]


def test_unknown_means_pod_templates_finds_none(capsys, monkeypatch):
    """The decision follows policies.manifests.pod_templates: a kind it gives no templates for is unknown."""
    monkeypatch.setattr(importlib.import_module("aks_gpu_inference.planner.scan.blind_spots"), "pod_templates", lambda _r: [])
    _, report = run_json(capsys, MIXED / "good.yaml")
    [warning] = report["warnings"]
    assert warning["resource"] == "Deployment serving/chat"
    assert 'at spec.template.spec.containers[0].resources.limits["nvidia.com/gpu"]' in warning["message"]


@pytest.mark.parametrize(
    "text",
    [
        "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: q}\nspec: {hard: {requests.nvidia.com/gpu: 8}}\n",
        "apiVersion: v1\nkind: Node\nmetadata: {name: n, labels: {nvidia.com/gpu: 'true'}}\nstatus: {capacity: {nvidia.com/gpu: 8}}\n",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {resource: nvidia.com/gpu}\n",
        "apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: t}\nspec: {nodeSelector: {nvidia.com/gpu: 'true'}}\n",
        "apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: t}\nspec: {pool: {nodeLabels: {nvidia.com/gpu: 'true'}}}\n",
        "apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: t}\nspec: {capacity: {nvidia.com/gpu: 8}}\n",
        "apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: t}\nspec: {draResources: [], resourceClaimName: ''}\n",
        "apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: t}\nspec: {resourceClaims: []}\n",
        "apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: t}\nstatus: {resources: {limits: {nvidia.com/gpu: 1}}}\n",
        "apiVersion: example.com/v1\nkind: AllowList\nmetadata: {name: a}\nspec: {}\nitems: [one, two]\n",
    ],
    ids=[
        "quota",
        "node",
        "string-value",
        "node-selector",
        "node-labels",
        "capacity",
        "empty-claim-fields",
        "no-claims",
        "status",
        "list-kind-with-spec",
    ],
)
def test_device_names_that_are_not_requests_do_not_warn(capsys, tmp_path, text):
    code, report = run_json(capsys, write(tmp_path, "x.yaml", text))
    assert (code, report["warnings"], report["objects"]) == (EXIT_OK, [], 1)


def test_claim_template_not_scanned_warns_until_it_is(capsys):
    _, report = run_json(capsys, SEED004_POD)
    [warning] = report["warnings"]
    assert warning["check"] == "claim-not-scanned" and warning["resource"] == "Pod llm-d-infra/llm-d-modelserver"
    assert "ResourceClaimTemplate llm-d-infra/nd-rdma-full-node-h100, which is not among the scanned" in warning["message"]
    _, report = run_json(capsys, SEED004_POD, SEED004_CLAIM_TEMPLATE)
    assert report["warnings"] == []


def test_claims_resolve_by_namespace_and_resource_claims_count_too(capsys, tmp_path):
    template = SEED004_CLAIM_TEMPLATE.read_text().replace("namespace: llm-d-infra", "namespace: elsewhere")
    _, report = run_json(capsys, SEED004_POD, write(tmp_path, "rct.yaml", template))
    assert checks(report) == ["claim-not-scanned"]
    text = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  template:\n    spec:\n"
        "      resourceClaims: [{name: gpu, resourceClaimName: shared-gpu}]\n      containers: [{name: c, image: 'b:1'}]\n"
    )
    _, report = run_json(capsys, write(tmp_path, "d.yaml", text))
    assert "spec.template.spec.resourceClaims[0] names ResourceClaim default/shared-gpu" in report["warnings"][0]["message"]


@pytest.mark.parametrize(
    ("paths", "expected"),
    [
        ([MIXED / "good.yaml"], EXIT_OK),
        ([MIXED / "good.yaml", MIXED / "helm-chart" / "values.yaml"], EXIT_OK),  # a warning alone
        ([MIXED / "good.yaml", MIXED / "bad-yaml.yaml"], EXIT_USAGE),
        ([BROKEN], EXIT_FAILED),
        ([BROKEN, MIXED], EXIT_FAILED),  # mandatory findings win over bad input
    ],
    ids=["clean", "warning", "bad-input", "mandatory", "mandatory-and-bad-input"],
)
@pytest.mark.parametrize("output", ["table", "json", "sarif"])
def test_exit_code_precedence_and_whole_documents(capsys, paths, expected, output):
    code, out, _ = run(capsys, *paths, "--format", output)
    assert code == expected
    if output == "json":
        assert json.loads(out)["exit_code"] == expected
    elif output == "sarif":
        [invocation] = json.loads(out)["runs"][0]["invocations"]
        bad = {MIXED, MIXED / "bad-yaml.yaml"} & set(paths)
        assert (invocation["exitCode"], invocation["executionSuccessful"]) == (expected, not bad)


@pytest.mark.parametrize("output", ["json", "sarif"])
def test_bad_policy_config_still_prints_a_whole_document(capsys, tmp_path, output):
    config = write(tmp_path, "config.json", '{"no-such-rule": "advisory"}')
    code, out, err = run(capsys, MIXED / "good.yaml", "--policy-config", config, "--format", output)
    assert code == EXIT_USAGE and err.startswith(f"error: policy config {config} is invalid:")
    document = json.loads(out)
    if output == "json":
        [error] = document["errors"]
        assert (error["check"], error["file"], document["exit_code"], document["objects"]) == ("policy-config", str(config), 2, 0)
        assert "no-such-rule: unknown rule" in error["message"]
    else:
        [invocation] = document["runs"][0]["invocations"]
        [notification] = invocation["toolConfigurationNotifications"]
        assert (invocation["executionSuccessful"], invocation["exitCode"], notification["level"]) == (False, 2, "error")


def explode(*_args, **_kwargs):
    raise RuntimeError("rule crashed\non two lines")


@pytest.mark.parametrize("output", ["table", "json", "sarif"])
def test_internal_error_is_one_line_exit_3_and_still_a_whole_document(capsys, monkeypatch, output):
    monkeypatch.setattr(scan_module, "evaluate_all", explode)
    code, out, err = run(capsys, MIXED / "good.yaml", "--format", output)
    assert code == EXIT_INTERNAL
    assert err == "error: internal error: RuntimeError: rule crashed on two lines (run with --debug for the traceback)\n"
    if output == "table":
        assert out == ""
    elif output == "json":
        document = json.loads(out)
        assert document["exit_code"] == 3 and checks(document, "errors") == ["internal-error"]
        assert document["errors"][0]["message"] == "RuntimeError: rule crashed on two lines"
    else:
        [invocation] = json.loads(out)["runs"][0]["invocations"]
        assert invocation["exitCode"] == 3 and invocation["toolExecutionNotifications"][0]["descriptor"]["id"] == "internal-error"


@pytest.mark.parametrize("argv", [["--debug", "scan"], ["scan", "--debug"]], ids=["before", "after"])
def test_debug_prints_the_traceback(capsys, monkeypatch, argv):
    monkeypatch.setattr(scan_module, "evaluate_all", explode)
    code = main([*argv, str(MIXED / "good.yaml")])
    err = capsys.readouterr().err
    assert code == EXIT_INTERNAL and err.startswith("Traceback (most recent call last):")
    assert err.endswith("error: internal error: RuntimeError: rule crashed on two lines\n")


def test_every_command_maps_errors_to_the_same_codes(capsys, monkeypatch):
    """cmd_fit stands for any command: a bug is 3, an unreadable file (OSError) 2, a ConfigError 2."""
    from aks_gpu_inference.components.core.errors import ConfigError
    from aks_gpu_inference.planner import fit

    for error, expected, text in [
        (KeyError("gpu"), EXIT_INTERNAL, "error: internal error: KeyError: 'gpu' (run with --debug for the traceback)\n"),
        (RuntimeError(), EXIT_INTERNAL, "error: internal error: RuntimeError (run with --debug for the traceback)\n"),
        (PermissionError(13, "Permission denied", "/x/facts.json"), EXIT_USAGE, "error: /x/facts.json: Permission denied\n"),
        (ConfigError("model facts are invalid", ["tp: expected an integer"]), EXIT_USAGE, None),
    ]:

        def fail(_args, error=error):
            raise error

        monkeypatch.setattr(fit, "run", fail)
        assert main(["fit", "some/model"]) == expected
        err = capsys.readouterr().err
        assert "Traceback" not in err and (text is None or err == text)


@pytest.mark.parametrize(
    ("argv", "texts"),
    [
        (
            ["scan"],
            ["exit codes:\n  0  no mandatory finding and every file scanned", "(1 wins over 2)", "toolExecutionNotifications"],
        ),
        ([], ["exit codes (every command):", "3  internal error (a bug): one line on stderr", "--debug"]),
    ],
)
def test_help_documents_the_exit_codes(capsys, argv, texts):
    with pytest.raises(SystemExit):
        main([*argv, "--help"])
    out = capsys.readouterr().out
    assert all(text in out for text in texts)
