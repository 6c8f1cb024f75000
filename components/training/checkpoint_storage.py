"""Ray Train's checkpoint storage on the model store, for the training program inside a DistributedTraining job:

    from ray.train import RunConfig
    from aks_gpu_inference.components.training.checkpoint_storage import run_config_kwargs

    run_config = RunConfig(**run_config_kwargs(), checkpoint_config=..., failure_config=...)

``run_config_kwargs()`` reads the variables the job's pods get (the component's, and the workload identity webhook's)
and returns ``name``, ``storage_path`` and ``storage_filesystem``. It imports nothing at module import but the
standard library (no Pulumi, no Ray); building the filesystem imports pyarrow, adlfs and azure-identity, which the
training image must carry (``pip install --no-deps aks-gpu-inference`` adds this module without the SDKs).

Why a filesystem and not a URI (ray 2.52.0, ``ray/train/v2/_internal/execution/storage.py`` ``get_fs_and_path``): with
no ``storage_filesystem`` Ray hands ``storage_path`` to ``pyarrow.fs.FileSystem.from_uri``, which refuses
``<container>/<prefix>`` ("URI has empty scheme") and ``az://...`` ("Unrecognized filesystem type"); with one, Ray uses
it as given and ``storage_path`` is the path inside it (``RunConfig`` docstring: "a path with its prefix stripped").

Credentials: ``AzureBlobFileSystem(anon=False)`` with no credential object, so adlfs builds azure-identity's
``DefaultAzureCredential`` itself (adlfs ``spec.py`` ``_get_default_azure_credential``), in every process that unpickles
the filesystem (fsspec pickles a filesystem as its constructor arguments), from that pod's environment; with the
webhook's ``AZURE_CLIENT_ID``, ``AZURE_TENANT_ID`` and ``AZURE_FEDERATED_TOKEN_FILE`` that chain answers with its
``WorkloadIdentityCredential``. A credential object passed in would instead be pickled into every Ray actor.
``storage_settings`` refuses to build the filesystem without those variables, so a pod the webhook did not mutate
fails at once, naming them, instead of falling through to the node's managed identity.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

RUN_NAME = "TRAINING_RUN_NAME"
"""The run's stable name (the RayJob's): ``RunConfig(name=)``, so a retry resumes from the same checkpoints."""
CHECKPOINT_URI = "CHECKPOINT_URI"
"""``az://<container>/<prefix>``, for tools that read fsspec URIs (not for ``RunConfig``)."""
STORAGE_PATH = "CHECKPOINT_STORAGE_PATH"
"""``<container>/<prefix>``: ``RunConfig(storage_path=)`` together with the adlfs filesystem, never alone."""
INTERVAL = "CHECKPOINT_INTERVAL_SECONDS"
"""How often the program should report a checkpoint."""
ACCOUNT = "AZURE_STORAGE_ACCOUNT_NAME"
"""The model store's storage account."""
CHECKPOINT_ENV = (RUN_NAME, CHECKPOINT_URI, STORAGE_PATH, INTERVAL, ACCOUNT)
"""What DistributedTraining gives the head and the workers (``ray_manifests.training_env``)."""
WORKLOAD_IDENTITY_ENV = ("AZURE_CLIENT_ID", "AZURE_TENANT_ID", "AZURE_FEDERATED_TOKEN_FILE")
"""What the Azure workload identity webhook adds to a pod labelled ``azure.workload.identity/use: "true"`` that runs as
a federated service account."""


class StorageSettingsError(RuntimeError):
    """The pod's environment cannot give Ray Train its storage; the message names what is missing and why."""


@dataclass(frozen=True)
class StorageSettings:
    """Where and as whom a run checkpoints, read from the pod's environment."""

    run_name: str
    storage_path: str
    """``<container>/<prefix>`` inside the storage account."""
    account_name: str
    interval_seconds: int

    def filesystem(self) -> Any:
        """``pyarrow.fs.PyFileSystem(FSSpecHandler(adlfs.AzureBlobFileSystem(account_name, anon=False)))``."""
        import adlfs
        import pyarrow.fs

        blob = adlfs.AzureBlobFileSystem(account_name=self.account_name, anon=False)
        return pyarrow.fs.PyFileSystem(pyarrow.fs.FSSpecHandler(blob))

    def run_config_kwargs(self) -> dict[str, Any]:
        """``name``, ``storage_path`` and ``storage_filesystem`` for ``ray.train.RunConfig``."""
        return {"name": self.run_name, "storage_path": self.storage_path, "storage_filesystem": self.filesystem()}


def storage_settings(environ: Mapping[str, str] | None = None) -> StorageSettings:
    """The run's storage from ``environ`` (default ``os.environ``); a ``StorageSettingsError`` naming every missing or
    malformed variable otherwise."""
    env = os.environ if environ is None else environ
    problems = [f"{name} is not set" for name in (RUN_NAME, STORAGE_PATH, ACCOUNT, INTERVAL) if not env.get(name)]
    container, _, prefix = env.get(STORAGE_PATH, "").partition("/")
    if env.get(STORAGE_PATH) and not (container and prefix):
        problems.append(f"{STORAGE_PATH}={env[STORAGE_PATH]!r} is not <container>/<prefix>")
    interval = env.get(INTERVAL, "")
    if interval and not interval.isdigit():
        problems.append(f"{INTERVAL}={interval!r} is not a number of seconds")
    missing = [name for name in WORKLOAD_IDENTITY_ENV if not env.get(name)]
    if missing:
        problems.append(
            f"{', '.join(missing)} not set: the workload identity webhook did not mutate this pod (it needs the label "
            "azure.workload.identity/use=true and the federated service account)"
        )
    elif not os.path.isfile(env["AZURE_FEDERATED_TOKEN_FILE"]):
        problems.append(f"AZURE_FEDERATED_TOKEN_FILE={env['AZURE_FEDERATED_TOKEN_FILE']!r} does not exist")
    if problems:
        raise StorageSettingsError(
            "cannot give Ray Train its checkpoint storage: " + "; ".join(problems) + ". Run inside a DistributedTraining "
            "job's head or worker pod, which gets these variables."
        )
    return StorageSettings(env[RUN_NAME], env[STORAGE_PATH], env[ACCOUNT], int(interval))


def run_config_kwargs(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``RunConfig(**run_config_kwargs())``: the run's name, its storage path and the adlfs filesystem that reaches it
    with the pod's workload identity."""
    return storage_settings(environ).run_config_kwargs()
