"""The stack's charts rendered by Helm itself (helm-python-sdk here; ``helm template`` where a binary is on the
PATH), with Pulumi's semantics: where archives come from, hooks and CRDs per resource type, release names and
namespaces, Helm 3's reading of multi-document values, charts that cannot be had offline, and values Helm ignores."""

from __future__ import annotations

import functools
import http.server
import shutil
import tarfile
import threading
from datetime import date
from pathlib import Path

import kubernetes_validate
import pulumi_kubernetes as k8s
import pytest
import yaml

from aks_gpu_inference.planner import claims, deploy
from aks_gpu_inference.planner.charts import ChartRef, ChartSources, expand, render_chart
from aks_gpu_inference.planner.charts.archive import ChartArchive, first_document
from aks_gpu_inference.planner.charts.sources import PullError
from aks_gpu_inference.planner.deploy.crds import BUILT_IN_GROUPS
from aks_gpu_inference.planner.engine.program import Registered
from tests.conftest import (
    PROJECT,
    STACKS,
    chart_sources,
    expand_charts,
    expanded_stack,
    planned_stack,
    render_pinned,
    run_components,
)

KUBERNETES = "1.35"
PINNED = {
    ("dranet", "v1.3.0"),
    ("dranet", "v1.4.0"),
    ("dra-driver-nvidia-gpu", "0.4.1"),
    ("gpu-operator", "v25.10.0"),
    ("nvidia-device-plugin", "0.17.0"),
    ("gateway-helm", "v1.8.2"),
    ("ai-gateway-crds-helm", "v1.1.0"),
    ("ai-gateway-helm", "v1.1.0"),
    ("semantic-router", "0.3.0"),
    ("inferencepool", "v1.3.1"),
    ("kuberay-operator", "1.7.0"),
    ("dynamo-platform", "1.6.1"),
}


def archives_dir() -> Path:
    return chart_sources().cache


@pytest.mark.parametrize("stack", STACKS)
def test_every_chart_of_every_stack_is_rendered_by_helm(stack):
    _, renders = expanded_stack(stack)
    assert renders, "every repo stack installs charts"
    assert [(r.label, r.problems) for r in renders if not r.rendered] == []
    assert {(r.chart, r.version) for r in renders if r.resource.type != "kubernetes:yaml/v2:ConfigFile"} <= PINNED


@pytest.mark.parametrize(("chart", "version"), sorted(PINNED))
def test_every_pinned_chart_has_its_archive(chart, version):
    found = chart_sources().find(ChartRef(f"oci://example.invalid/charts/{chart}", version))
    if found is None and (chart, version) == ("dranet", "v1.4.0"):
        pytest.skip("dranet-1.4.0.tgz (rack-scale pools only) is not in shared/upstream/chart-archives or the chart cache")
    assert found is not None and found.name == chart and found.version.lstrip("v") == version.lstrip("v")


@pytest.mark.parametrize("stack", STACKS)
def test_built_in_objects_the_charts_render_are_valid_for_the_cluster_version(stack):
    _, renders = expanded_stack(stack)
    for render in renders:
        for obj in render.objects:
            if obj["apiVersion"].rpartition("/")[0] in BUILT_IN_GROUPS:
                kubernetes_validate.validate(obj, KUBERNETES, strict=True)


def test_a_v4_chart_registers_its_crds_as_children_and_never_its_hooks():
    def program():
        k8s.helm.v4.Chart("eg", chart="oci://docker.io/envoyproxy/gateway-helm", version="v1.8.2", namespace="gw")

    run, (render,) = expand_charts(run_components(program))
    children = [r for r in run.resources if r.parent == render.resource.urn]
    kinds = [c.inputs["kind"] for c in children]
    assert kinds.count("CustomResourceDefinition") == 20 == len(render.crds), "12 Gateway API + 8 Envoy Gateway CRDs"
    assert not any("helm.sh/hook" in (c.inputs["metadata"].get("annotations") or {}) for c in children)
    assert {(h.kind, h.name.endswith("-certgen")) for h in render.hooks} >= {("Job", True)}
    crd = next(c for c in children if c.inputs["kind"] == "CustomResourceDefinition")
    assert crd.name.startswith("eg:") and "/" not in crd.name, "cluster-scoped: no namespace in the child's name"
    assert crd.urn.endswith(
        "kubernetes:helm.sh/v4:Chart$kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition::" + crd.name
    )


def test_a_v3_release_runs_its_install_hooks_and_applies_its_crds():
    render = render_pinned("gateway-helm", "v1.8.2", {}, "eg", "gw", kind="kubernetes:helm.sh/v3:Release")
    names = {(o["kind"], o["metadata"]["name"]) for o in render.objects}
    assert ("Job", "eg-gateway-helm-certgen") in names, "a pre-install hook an install runs"
    assert sum(o["kind"] == "CustomResourceDefinition" for o in render.objects) == 20
    assert len(render.hooks) == 7


def test_skip_crds_drops_the_crds_folder_but_not_templated_crds():
    urn = f"urn:pulumi:test::{PROJECT}::kubernetes:helm.sh/v4:Chart::c"
    for chart, version, expected in (("gateway-helm", "v1.8.2", 0), ("ai-gateway-crds-helm", "v1.1.0", 6)):
        inputs = {"chart": chart, "version": version, "namespace": "ns", "skipCrds": True}
        render = render_chart(Registered(urn, "kubernetes:helm.sh/v4:Chart", "c", None, True, inputs), chart_sources(), "ns")
        assert sum(o["kind"] == "CustomResourceDefinition" for o in render.objects) == expected, chart


def test_release_name_is_the_resource_name_unless_set_and_objects_land_in_the_release_namespace():
    urn = f"urn:pulumi:test::{PROJECT}::kubernetes:helm.sh/v4:Chart::my-dranet"
    inputs = {"chart": "oci://registry.k8s.io/networking/charts/dranet", "version": "v1.3.0"}
    resource = Registered(urn, "kubernetes:helm.sh/v4:Chart", "my-dranet", None, True, inputs)
    render = render_chart(resource, chart_sources(), "net")
    daemonset = next(o for o in render.objects if o["kind"] == "DaemonSet")
    assert (render.release, daemonset["metadata"]["namespace"]) == ("my-dranet", "net")
    named = Registered(urn, resource.type, "my-dranet", None, True, {**inputs, "name": "dranet"})
    assert render_chart(named, chart_sources(), "net").release == "dranet"


def test_the_namespace_defaults_to_the_providers_then_default():
    from aks_gpu_inference.planner.charts.expand import release_namespace

    provider = f"urn:pulumi:test::{PROJECT}::pulumi:providers:kubernetes::k"
    chart = Registered("urn:c", "kubernetes:helm.sh/v4:Chart", "c", None, True, {}, {"provider": f"{provider}::id-1"})
    assert release_namespace(chart, {provider: "apps"}) == "apps"
    assert release_namespace(chart, {}) == "default"
    explicit = Registered("urn:c", chart.type, "c", None, True, {"namespace": "mine"}, chart.options)
    assert release_namespace(explicit, {provider: "apps"}) == "mine"


def test_helm_3_reads_the_first_document_of_values_and_the_plan_says_what_helm_4_changes():
    render = render_pinned("semantic-router", "0.3.0", {}, "router", "vsr")
    (deployment,) = [o for o in render.objects if o["kind"] == "Deployment"]
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["imagePullPolicy"] != "Never" and container["resources"]["limits"]["memory"] == "7Gi"
    assert not any("hostPath" in v for v in deployment["spec"]["template"]["spec"].get("volumes", []))
    changes = "; ".join(render.helm4)
    for expected in ("imagePullPolicy IfNotPresent -> Never", "resources.limits.memory 7Gi -> 2Gi", "volumes differs"):
        assert expected in changes


def test_only_charts_with_multi_document_values_are_rewritten():
    for chart, version in PINNED:
        found = chart_sources().find(ChartRef(chart, version))
        assert (found.as_helm3() is found.data) == (chart != "semantic-router"), chart
    assert first_document("a: 1\n---\nb: 2\n") == "a: 1\n" and first_document("a: 1\n") is None


def test_a_chart_not_found_offline_is_named_with_what_it_leaves_unchecked(tmp_path):
    def program():
        k8s.helm.v4.Chart("x", chart="oci://example.invalid/charts/nothing", version="9.9.9", namespace="kube-system")

    sources = ChartSources(folders=[tmp_path], cache=tmp_path / "cache")

    run, (render,) = expand(run_components(program), sources)
    assert not render.rendered and "chart oci://example.invalid/charts/nothing 9.9.9 not found offline" in render.problems[0]
    assert "--pull" in render.problems[0]
    model = deploy.build(run, [render], claims.check(run))
    (finding,) = [f for f in deploy.run(model, date(2026, 12, 1), None) if f.check == "charts"]
    assert finding.level == "warning" and "nothing it creates was checked" in finding.message


def test_values_helm_refuses_are_a_blocker():
    render = render_pinned("dranet", "v1.3.0", {"image": {"tag": 5}}, "dranet", "kube-system")
    assert not render.rendered and "Helm refuses to render it" in render.problems[0]


def test_values_helm_ignores_are_found_as_helm_reads_values():
    dynamo = render_pinned("dynamo-platform", "1.6.1", {"dynamo-operator": {"discoveryBackend": "kubernetes"}}, "d", "dynamo")
    assert dynamo.values_problems == [], "set by the parent's values.yaml and read by the subchart's templates"
    typo = render_pinned("dynamo-platform", "1.6.1", {"dynamo-operator": {"discoveryBackends": "x"}}, "d", "dynamo")
    assert typo.values_problems == [
        "values.dynamo-operator.discoveryBackends: not a value of subchart dynamo-operator of dynamo-platform 1.6.1 "
        "(neither its values.yaml nor a template reads it)"
    ]
    passthrough = {"resources": {"requests": {"cpu": "1"}}, "nodeSelector": {"any": "thing"}}
    assert render_pinned("dranet", "v1.3.0", passthrough, "dranet", "kube-system").values_problems == []
    misplaced = render_pinned("kuberay-operator", "1.7.0", {"image": {"repository": "r", "tagg": "v1"}}, "k", "ray")
    assert [p.split(":")[0] for p in misplaced.values_problems] == ["values.image.tagg"]


def test_a_value_the_charts_schema_forbids_is_helms_own_refusal():
    render = render_pinned("dranet", "v1.3.0", {"image": {"repository": "r", "tagg": "v1"}}, "dranet", "kube-system")
    assert not render.rendered and render.values_problems is None
    assert "at '/image': additional properties 'tagg' not allowed" in render.problems[0]


def _copy_archive(folder: Path, name: str) -> Path:
    source = next(archives_dir().glob(f"{name}-*.tgz"))
    folder.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copy(source, folder / source.name))


def test_archives_come_from_the_args_a_folder_the_environment_and_the_cache(tmp_path, monkeypatch):
    given = _copy_archive(tmp_path / "given", "dranet")
    assert ChartSources(cache=tmp_path / "none").find(ChartRef(str(given), "1.3.0")).origin == str(given)
    _copy_archive(tmp_path / "folder", "dranet")
    found = ChartSources(folders=[tmp_path / "folder"], cache=tmp_path / "none").find(ChartRef("oci://r/dranet", "v1.3.0"))
    assert found is not None and found.origin.startswith(str(tmp_path / "folder"))
    monkeypatch.setenv("AKS_GPU_CHARTS", str(tmp_path / "folder"))
    monkeypatch.setenv("AKS_GPU_CHART_CACHE", str(tmp_path / "cache"))
    configured = ChartSources.configured(None, None, pull=False, project_dir=None)
    assert configured.folders == [tmp_path / "folder"] and configured.cache == tmp_path / "cache"
    unpacked = tmp_path / "unpacked"
    with tarfile.open(given) as tar:
        tar.extractall(unpacked, filter="data")
    local = ChartSources(cache=tmp_path / "none").find(ChartRef(str(unpacked / "dranet"), "1.3.0"))
    assert local is not None and local.name == "dranet" and local.charts[""].values == given_values(given)


def given_values(path: Path) -> dict:
    return ChartArchive.read(path).charts[""].values


def test_a_misnamed_archive_is_never_taken_for_another_version(tmp_path):
    source = next(archives_dir().glob("dranet-*.tgz"))
    shutil.copy(source, tmp_path / "dranet-1.4.0.tgz")
    assert ChartSources(folders=[tmp_path], cache=tmp_path / "c").find(ChartRef("dranet", "1.4.0")) is None


@pytest.fixture
def chart_repository(tmp_path):
    """A Helm chart repository (index.yaml + archives) served over HTTP on 127.0.0.1, from the pinned archives."""
    import helm_python

    served = tmp_path / "repo"
    _copy_archive(served, "kuberay-operator")
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    )
    url = f"http://127.0.0.1:{server.server_port}"
    helm_python.repo_index_generate(served, base_url=url)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield url
    server.shutdown()
    server.server_close()


def test_pull_fetches_the_exact_version_into_the_cache(chart_repository, tmp_path, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda _name: None)  # helm-python-sdk, even where a helm binary exists
    cache = tmp_path / "cache"
    offline = ChartSources(cache=cache)
    ref = ChartRef("kuberay-operator", "1.7.0", chart_repository)
    assert offline.find(ref) is None, "no pull unless asked"
    pulled = ChartSources(cache=cache, pull=True).find(ref)
    assert pulled is not None and pulled.version == "1.7.0" and (cache / "kuberay-operator-1.7.0.tgz").is_file()
    assert offline.find(ref) is not None, "the next plan finds it in the cache"
    with pytest.raises(PullError):
        ChartSources(cache=tmp_path / "other", pull=True).find(ChartRef("kuberay-operator", "9.9.9", chart_repository))


def test_the_plan_registers_the_crds_the_charts_install():
    run, renders = expanded_stack("train")
    kuberay = next(r for r in renders if r.chart == "kuberay-operator")
    children = {r.inputs["metadata"]["name"] for r in run.resources if r.parent == kuberay.resource.urn}
    assert {"rayjobs.ray.io", "rayclusters.ray.io", "rayservices.ray.io", "raycronjobs.ray.io"} <= children
    assert len(planned_stack("train").resources) + sum(
        len(r.objects) for r in renders if r.resource.type != "kubernetes:helm.sh/v3:Release"
    ) == len(run.resources)


def test_archive_reads_subcharts_and_their_templates():
    found = ChartArchive.read(next(archives_dir().glob("dynamo-platform-*.tgz")))
    assert set(found.charts) >= {"", "charts/dynamo-operator"}
    operator = found.charts["charts/dynamo-operator"]
    assert operator.name == "dynamo-operator" and any(t.endswith("operator-config.yaml") for t in operator.templates)
    assert found.charts[""].aliases["dynamo-operator"] == "dynamo-operator"
    assert yaml.safe_load(found.text("Chart.yaml"))["name"] == "dynamo-platform"


FAKE_HELM = """#!{python}
# Stands in for the helm binary's `template` command: the same Go SDK, printed as `helm template --include-crds`
# prints (a `---` and a `# Source:` line before each document, CRDs first).
import sys, yaml, helm_python
args = sys.argv[1:]
assert args[0] == "template", args
release, archive = args[1], args[2]
namespace = args[args.index("--namespace") + 1]
values = yaml.safe_load(open(args[args.index("--values") + 1])) or {{}}
with helm_python.Chart.load(archive) as chart:
    rendered = chart.render(values, name=release, namespace=namespace, is_install=True)
    crds = chart.crds
for crd in crds:
    print("---\\n# Source: " + crd["filename"] + "\\n" + crd["data"])
for path, text in sorted(rendered.items()):
    if not path.endswith("NOTES.txt"):
        for doc in text.split("\\n---\\n"):
            if doc.strip():
                print("---\\n# Source: " + path + "\\n" + doc.strip("-\\n"))
"""


def test_a_helm_binary_on_the_path_is_used_and_its_stream_read(tmp_path, monkeypatch):
    import sys

    from aks_gpu_inference.planner.charts import helm

    fake = tmp_path / "bin" / "helm"
    fake.parent.mkdir()
    fake.write_text(FAKE_HELM.format(python=sys.executable))
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:{__import__('os').environ['PATH']}")
    assert helm.backend() == "helm template"
    found = chart_sources().find(ChartRef("kuberay-operator", "1.7.0"))
    by_binary = helm.render(found.data, {"singleNamespaceInstall": True, "watchNamespace": ["a"]}, "k", "ray")
    by_sdk = helm.render(found.data, {"singleNamespaceInstall": True, "watchNamespace": ["a"]}, "k", "ray", "helm-python-sdk")
    assert [(d.source, d.obj) for d in by_binary] == [(d.source, d.obj) for d in by_sdk]
    assert sum(d.from_crds_folder for d in by_binary) == 4
