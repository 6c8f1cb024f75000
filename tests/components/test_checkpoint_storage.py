"""The training contract's storage (issue 27): ``checkpoint_storage.run_config_kwargs()`` turns what a DistributedTraining
pod gets (the component's variables, as the train stack renders them, and the workload identity webhook's) into a
``RunConfig`` that Ray Train's own storage code, at the pinned Ray version, resolves to the model store, under the
prefix the identity may write, with credentials rebuilt in every process Ray ships it to.

Ray is heavy (about 640 MB installed), so it never enters the project's venv: the Ray part runs in a separate
interpreter, ``$AKS_GPU_RAY_PYTHON`` (one with ray at the pinned version, pyarrow, adlfs and azure-identity); else in a
venv built from the wheels in ``$AKS_GPU_WHEELHOUSE`` (``pip download "ray[train]==<pinned>" pyarrow adlfs azure-identity
-d DIR``); else in a venv built once from PyPI into the user's cache (``$XDG_CACHE_HOME/aks-gpu``, about 35 s the first
time) and reused. Where none can be had (no index reachable) it skips, saying so. Nothing reaches Azure; nothing is
written into the checkout."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from aks_gpu_inference.components.core import pins
from aks_gpu_inference.components.training import checkpoint_storage as storage
from aks_gpu_inference.components.training.ray_manifests import image_ray_version
from aks_gpu_inference.planner.engine.values import kubernetes_object
from tests.conftest import REPO, one, planned_stack, stack_config

RAY_VERSION = image_ray_version(pins.image("ray"))
PROBE = Path(__file__).with_name("ray_storage_probe.py")
WEBHOOK = {"AZURE_CLIENT_ID": "00000000-0000-0000-0000-0000000000c1", "AZURE_TENANT_ID": "00000000-0000-0000-0000-0000000000a1"}


# ---- what the train stack's pods get -----------------------------------------------------------------


@pytest.fixture(scope="module")
def train():
    return planned_stack("train")


@pytest.fixture(scope="module")
def worker_env(train) -> dict[str, str]:
    """The literal variables of the train stack's Ray worker container, as rendered."""
    job = kubernetes_object(one(train, "ray.io/v1:RayJob"))
    container = job["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]
    return {e["name"]: e["value"] for e in container["env"] if "value" in e}


@pytest.fixture
def pod_env(worker_env, tmp_path) -> dict[str, str]:
    """The worker's environment once the workload identity webhook has mutated the pod (its projected token file)."""
    token = tmp_path / "azure-identity-token"
    token.write_text("a-federated-token")
    return {**worker_env, **WEBHOOK, "AZURE_FEDERATED_TOKEN_FILE": str(token)}


def test_the_pods_get_every_variable_the_helper_reads(worker_env):
    assert set(storage.CHECKPOINT_ENV) <= set(worker_env)


def test_the_settings_are_the_run_name_its_storage_path_and_account(pod_env):
    settings = storage.storage_settings(pod_env)
    assert (settings.run_name, settings.storage_path, settings.account_name, settings.interval_seconds) == (
        "frontier-ft",
        "models/checkpoints/frontier-ft",
        "aksgputraincheckpoints",
        1800,
    )


@pytest.mark.parametrize(
    ("drop", "phrase"),
    [
        ("TRAINING_RUN_NAME", "TRAINING_RUN_NAME is not set"),
        ("CHECKPOINT_STORAGE_PATH", "CHECKPOINT_STORAGE_PATH is not set"),
        ("AZURE_FEDERATED_TOKEN_FILE", "AZURE_FEDERATED_TOKEN_FILE not set: the workload identity webhook did not mutate"),
        ("AZURE_CLIENT_ID", "AZURE_CLIENT_ID not set"),
    ],
)
def test_a_pod_without_a_variable_is_refused_naming_it(pod_env, drop, phrase):
    env = {k: v for k, v in pod_env.items() if k != drop}
    with pytest.raises(storage.StorageSettingsError, match="cannot give Ray Train its checkpoint storage") as refused:
        storage.storage_settings(env)
    assert phrase in str(refused.value)


def test_bad_values_are_refused(pod_env, tmp_path):
    env = {**pod_env, "CHECKPOINT_STORAGE_PATH": "models", "CHECKPOINT_INTERVAL_SECONDS": "30m"}
    env["AZURE_FEDERATED_TOKEN_FILE"] = str(tmp_path / "none")
    with pytest.raises(storage.StorageSettingsError) as refused:
        storage.storage_settings(env)
    message = str(refused.value)
    assert "CHECKPOINT_STORAGE_PATH='models' is not <container>/<prefix>" in message
    assert "CHECKPOINT_INTERVAL_SECONDS='30m' is not a number of seconds" in message
    assert "does not exist" in message


def test_the_helper_imports_only_the_standard_library():
    """A training image installs this package with --no-deps: importing the helper must need none of its SDKs."""
    blocked = ("pulumi", "pulumi_kubernetes", "pulumi_azure_native", "pydantic", "yaml", "ray", "pyarrow", "adlfs", "azure")
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        f"        if name.split('.')[0] in {blocked!r}: raise ImportError('blocked: ' + name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "from aks_gpu_inference.components.training.checkpoint_storage import run_config_kwargs\n"
        "print('imported')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.stdout == "imported\n", result.stderr


def test_the_stack_and_the_docs_say_how_to_use_it():
    call = "RunConfig(**run_config_kwargs()"
    assert call in (REPO / "Pulumi.train.yaml").read_text()
    docs = (REPO / "docs" / "training.md").read_text()
    assert call in docs and "from aks_gpu_inference.components.training.checkpoint_storage import run_config_kwargs" in docs


def test_the_train_stack_runs_the_ray_version_the_helper_is_tested_at():
    assert stack_config("train")["aks-gpu-inference:training"]["ray_version"] == RAY_VERSION


# ---- Ray Train's own storage resolution, at the pinned Ray ------------------------------------------


def _ray_version_of(python: str) -> str | None:
    found = subprocess.run([python, "-c", "import ray; print(ray.__version__)"], capture_output=True, text=True, timeout=120)
    return found.stdout.strip() if found.returncode == 0 else None


@pytest.fixture(scope="module")
def ray_python(tmp_path_factory) -> str:
    """An interpreter with Ray at the pinned version, pyarrow, adlfs and azure-identity; skips when there is none."""
    given = os.environ.get("AKS_GPU_RAY_PYTHON")
    if given:
        found = _ray_version_of(given)
        if found != RAY_VERSION:
            pytest.skip(f"AKS_GPU_RAY_PYTHON={given} has Ray {found}, not the pinned {RAY_VERSION}")
        return given
    wheels = os.environ.get("AKS_GPU_WHEELHOUSE")
    if wheels:
        return _built(tmp_path_factory.mktemp("ray-venv"), ["--no-index", "--find-links", wheels], f"from {wheels}")
    cached = _cache_dir() / f"ray-{RAY_VERSION}-py{sys.version_info.major}{sys.version_info.minor}"
    python = cached / "bin" / "python"
    if python.exists() and _ray_version_of(str(python)) == RAY_VERSION:
        return str(python)
    building = Path(f"{cached}.building-{os.getpid()}")  # another run's half-built venv is never taken for a whole one
    _built(building, [], "from the package index")
    shutil.rmtree(cached, ignore_errors=True)
    building.rename(cached)
    _repoint(cached, building)
    return str(python)


RAY_COMPANIONS = ("pyarrow==26.0.1", "adlfs==2026.8.0", "azure-identity==1.27.0")
"""What Ray's storage code needs beside it, at the versions the test was run with (Ray's train extra pins none)."""


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "aks-gpu"


def _built(env_dir: Path, index: list[str], where: str) -> str:
    """A venv at ``env_dir`` with Ray at the pinned version and its companions installed ``where`` says; skips on failure."""
    env_dir.parent.mkdir(parents=True, exist_ok=True)
    venv.create(env_dir, with_pip=True)
    python = str(env_dir / "bin" / "python")
    # One retry and a 30 s socket timeout: without an index the install fails in seconds, not pip's default minutes.
    install = [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--retries", "1", "--timeout", "30"]
    try:
        built = subprocess.run(
            [*install, *index, f"ray[train]=={RAY_VERSION}", *RAY_COMPANIONS], capture_output=True, text=True, timeout=900
        )
        failure = None if built.returncode == 0 else built.stderr.strip().splitlines()[-1:]
    except subprocess.TimeoutExpired:
        failure = "pip did not finish in 15 minutes"
    if failure is not None:
        shutil.rmtree(env_dir, ignore_errors=True)
        pytest.skip(
            f"cannot build a Ray {RAY_VERSION} venv {where}: {failure}; set "
            "AKS_GPU_RAY_PYTHON to an interpreter with it (and pyarrow, adlfs, azure-identity), or AKS_GPU_WHEELHOUSE to "
            f"a directory of their wheels (pip download 'ray[train]=={RAY_VERSION}' pyarrow adlfs azure-identity -d DIR)"
        )
    return python


def _repoint(env_dir: Path, built_at: Path) -> None:
    """A venv records its own path (pyvenv.cfg, scripts' shebangs); the interpreter itself runs from anywhere, and the
    test only runs ``bin/python``, so only the config is rewritten."""
    config = env_dir / "pyvenv.cfg"
    config.write_text(config.read_text().replace(str(built_at), str(env_dir)))


@pytest.fixture
def resolved(ray_python, pod_env, tmp_path) -> dict:
    """What Ray made of the helper's RunConfig in the pod's environment (ray_storage_probe.py's report)."""
    package = tmp_path / "site" / "aks_gpu_inference"
    package.mkdir(parents=True)
    (package / "components").symlink_to(REPO / "components")  # the wheel's layout (pyproject package-dir)
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(package.parent), "PYTHONDONTWRITEBYTECODE": "1", **pod_env}
    run = subprocess.run([ray_python, str(PROBE)], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_ray_train_resolves_the_helpers_storage_at_the_pinned_version(resolved, pod_env):
    assert resolved["ray"] == RAY_VERSION and resolved["run_config"] == "ray.train.RunConfig", "Train V2, Ray's default"
    assert resolved["loaded_before_ray"] == []
    assert resolved["name"] == pod_env["TRAINING_RUN_NAME"]
    # Ray uses the given filesystem as it is, and the storage path as a path inside it (get_fs_and_path).
    assert resolved["same_filesystem"] and resolved["filesystem"].startswith("py::fsspec+")
    assert resolved["path"] == pod_env["CHECKPOINT_STORAGE_PATH"]
    assert (resolved["blob"], resolved["account"], resolved["anon"]) == (
        "adlfs.spec.AzureBlobFileSystem",
        pod_env["AZURE_STORAGE_ACCOUNT_NAME"],
        False,
    )


def test_the_credential_is_the_pods_workload_identity_rebuilt_in_every_process(resolved, pod_env):
    """adlfs's DefaultAzureCredential: the environment credential has nothing to use, the workload identity credential
    reads the webhook's client, tenant and token file; unpickled elsewhere, the filesystem builds its own."""
    assert resolved["credential"] == "azure.identity.aio._credentials.default.DefaultAzureCredential"
    assert resolved["environment_credential_configured"] is False
    assert resolved["workload_token_file"] == pod_env["AZURE_FEDERATED_TOKEN_FILE"]
    assert resolved["workload_client"] == [WEBHOOK["AZURE_CLIENT_ID"], WEBHOOK["AZURE_TENANT_ID"]]
    clone = resolved["clone"]
    assert (clone["account"], clone["anon"], clone["rebuilt"]) == (pod_env["AZURE_STORAGE_ACCOUNT_NAME"], False, True)
    assert resolved["pickled_bytes"] < 4096, "constructor arguments, not a credential object with its state"


def test_checkpoints_land_where_the_identity_may_write(resolved, train):
    """Ray writes the run under <storage path>/<run name>; the identity's grant is the container, writing only below
    the checkpoint prefix (the role assignment's condition)."""
    grant = next(r for r in train.resources if r.type.endswith("authorization:RoleAssignment") and r.name.endswith("-write"))
    container = grant.inputs["scope"].rsplit("/containers/", 1)[1]
    prefix = re.search(r"StringStartsWith '([^']+)'", grant.inputs["condition"])[1]
    experiment = resolved["experiment"]
    assert experiment == f"{resolved['path']}/{resolved['name']}"
    assert experiment.startswith(f"{container}/") and f"{experiment.removeprefix(container + '/')}/".startswith(prefix)


def test_the_storage_path_alone_is_no_uri_ray_can_open(resolved):
    """Why the helper exists: without the filesystem, Ray hands the path to pyarrow's FileSystem.from_uri."""
    traps = resolved["without_filesystem"]
    assert traps["CHECKPOINT_STORAGE_PATH"].startswith("ArrowInvalid: URI has empty scheme")
    assert traps["CHECKPOINT_URI"].startswith("ArrowInvalid: Unrecognized filesystem type in URI: az://")
