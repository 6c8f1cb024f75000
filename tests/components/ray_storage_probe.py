"""Run by an interpreter that has Ray (test_checkpoint_storage.py): hands ``checkpoint_storage``'s result to Ray Train's
own storage code, as a training program in a DistributedTraining pod would, and prints what Ray made of it as JSON.

Nothing here reaches Azure: it stops where Ray would write its validation marker to the store."""

from __future__ import annotations

import json
import os
import sys


def kind(obj) -> str:
    return f"{type(obj).__module__}.{type(obj).__name__}"


def main() -> None:
    from aks_gpu_inference.components.training import checkpoint_storage as storage

    loaded_before_ray = sorted(m for m in ("pulumi", "pydantic", "yaml", "ray") if m in sys.modules)
    import ray
    from ray import cloudpickle
    from ray.train import RunConfig
    from ray.train.v2._internal.execution.storage import StorageContext, get_fs_and_path

    config = RunConfig(**storage.run_config_kwargs())
    fs, path = get_fs_and_path(config.storage_path, config.storage_filesystem)
    blob = fs.handler.fs
    chain = list(getattr(blob.credential, "credentials", ()))
    workload = next(c for c in chain if type(c).__name__ == "WorkloadIdentityCredential")
    environment = next(c for c in chain if type(c).__name__ == "EnvironmentCredential")
    # Ray's path arithmetic for the run (StorageContext.experiment_fs_path), without the marker write its __init__ does.
    context = StorageContext.__new__(StorageContext)
    context.storage_fs_path, context.experiment_dir_name = path, config.name
    # Ray ships the RunConfig to its TrainController actor and the storage context on to every worker by pickling.
    shipped = cloudpickle.dumps(config)
    type(blob).clear_instance_cache()  # another process: no cached filesystem to hand back
    clone = cloudpickle.loads(shipped).storage_filesystem.handler.fs
    traps = {}
    for name in (storage.STORAGE_PATH, storage.CHECKPOINT_URI):
        try:
            get_fs_and_path(os.environ[name])
            traps[name] = "resolved"
        except Exception as error:  # what Ray would raise from RunConfig(storage_path=...) alone
            traps[name] = f"{type(error).__name__}: {error}"
    result = {
        "ray": ray.__version__,
        "run_config": kind(config),
        "name": config.name,
        "loaded_before_ray": loaded_before_ray,
        "filesystem": fs.type_name,
        "same_filesystem": fs is config.storage_filesystem,
        "path": path,
        "blob": kind(blob),
        "account": blob.account_name,
        "anon": blob.anon,
        "credential": kind(blob.credential),
        "environment_credential_configured": getattr(environment, "_credential", None) is not None,
        "workload_token_file": workload._token_file_path,
        "workload_client": [workload._client._client_id, workload._client._tenant_id],
        "experiment": context.experiment_fs_path,
        "pickled_bytes": len(shipped),
        "clone": {
            "account": clone.account_name,
            "anon": clone.anon,
            "credential": kind(clone.credential),
            "rebuilt": clone.credential is not blob.credential,
        },
        "without_filesystem": traps,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
