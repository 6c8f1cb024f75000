"""The router's models come from the model store through a Job, never from the internet."""

from __future__ import annotations

import importlib.util
import io
import sys

import pytest

from aks_gpu_inference.components.gateway.router_models import DEFAULT_PREFIX, SCRIPTS
from aks_gpu_inference.planner.engine.values import kubernetes_object
from tests.conftest import planned_stack, run_stack, stack_config


@pytest.fixture(scope="module")
def dev_run():
    return planned_stack("dev")


def named(run, name: str):
    return next(r for r in run.resources if r.name == name)


def test_the_job_fills_the_routers_volume_from_the_model_store(dev_run):
    job = kubernetes_object(named(dev_run, "gateway-router-models-job"))
    pod = job["spec"]["template"]["spec"]
    env = {e["name"]: e["value"] for e in pod["containers"][0]["env"]}
    assert env["CONTAINER"] == "models" and env["PREFIX"] == DEFAULT_PREFIX == "semantic-router/v0.3.0/models/"
    assert env["MODELS"] == "mmbert-embed-32k-2d-matryoshka,mmbert32k-intent-classifier-merged"
    assert env["TOKEN_SCOPE"] == "https://storage.azure.com/.default"
    assert pod["volumes"][1] == {"name": "models", "persistentVolumeClaim": {"claimName": "semantic-router-models"}}
    assert pod["securityContext"]["fsGroup"] == 65532, "the router (UID 65532) reads what the Job writes"
    assert job["spec"]["template"]["metadata"]["labels"]["azure.workload.identity/use"] == "true"
    claim = kubernetes_object(named(dev_run, "gateway-router-models-claim"))
    assert claim["spec"]["storageClassName"] == "managed-csi", "AKS has no 'standard' class"
    read = named(dev_run, "gateway-router-models-identity-model-store-read").inputs
    assert read["roleDefinitionId"].endswith("2a2b9908-6ea1-4ae2-8e65-a410df84e7d1"), "Storage Blob Data Reader"
    assert read["scope"].endswith("/blobServices/default/containers/models")


def test_the_router_chart_waits_for_the_job(dev_run):
    chart = named(dev_run, "gateway-router-chart")
    assert named(dev_run, "gateway-router-models-job").urn in chart.options["dependsOn"]


def test_without_a_model_store_or_volume_the_gateway_is_refused():
    config = stack_config("dev")
    del config["aks-gpu-inference:model_store"]
    config["aks-gpu-inference:models"][0]["source"] = "huggingface"
    with pytest.raises(Exception, match="the router needs its classifier models without internet access"):
        run_stack(config)


def test_a_prefilled_volume_replaces_the_job():
    config = stack_config("dev")
    config["aks-gpu-inference:gateway"]["router_models_volume"] = "my-router-models"
    run = run_stack(config)
    assert not [r for r in run.resources if r.name == "gateway-router-models-job"]
    values = named(run, "gateway-router-chart").inputs["values"]
    assert values["persistence"]["existingClaim"] == "my-router-models"


# ---- the script ---------------------------------------------------------------------------------


@pytest.fixture
def fetch(monkeypatch):
    monkeypatch.syspath_prepend(str(SCRIPTS))
    spec = importlib.util.spec_from_file_location("fetch_models", SCRIPTS / "fetch_models.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("refresh_token", None)


LISTING = """<?xml version="1.0" encoding="utf-8"?><EnumerationResults><Blobs>
<Blob><Name>p/m1/config.json</Name><Properties><Content-Length>2</Content-Length></Properties></Blob>
<Blob><Name>p/m1/model.safetensors</Name><Properties><Content-Length>4</Content-Length></Properties></Blob>
</Blobs><NextMarker/></EnumerationResults>"""


def fake_get(calls):
    def get(url, _token):
        calls.append(url)
        if "comp=list" in url:
            return io.BytesIO(LISTING.encode())
        return io.BytesIO(b"{}" if url.endswith("config.json") else b"wxyz")

    return get


def environment(monkeypatch, dest, models: str) -> None:
    env = {"MODELS": models, "BLOB_ENDPOINT": "https://a.blob/", "CONTAINER": "c", "PREFIX": "p/", "DEST": str(dest)}
    for key, value in env.items():
        monkeypatch.setenv(key, value)


def test_the_script_copies_each_model_and_skips_what_is_there(fetch, monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(fetch, "_get", fake_get(calls))
    monkeypatch.setattr(fetch, "fetch_token", lambda: "token")
    environment(monkeypatch, tmp_path, "m1")
    assert fetch.main() == 0
    assert (tmp_path / "m1" / "config.json").read_bytes() == b"{}"
    assert (tmp_path / "m1" / "model.safetensors").read_bytes() == b"wxyz"
    assert "prefix=p%2Fm1%2F" in calls[0]
    calls.clear()
    assert fetch.main() == 0
    assert len(calls) == 1, "a second run only lists: same sizes are kept"


def test_the_script_fails_when_a_model_was_never_uploaded(fetch, monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(fetch, "_get", fake_get([]))
    monkeypatch.setattr(fetch, "fetch_token", lambda: "token")
    environment(monkeypatch, tmp_path, "m1,m2")
    fetch.list_blobs = lambda _endpoint, _container, prefix, _token: [] if "m2" in prefix else [("p/m1/config.json", 2)]
    assert fetch.main() == 1
    assert "no config.json for m2: upload each model directory to https://a.blob/c/p/<model>/" in capsys.readouterr().err
