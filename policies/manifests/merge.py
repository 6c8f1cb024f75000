"""Strategic merge of pod-shaped data, as operators merge a user's object into a runtime's template (Kubeflow
Trainer's runtimePatches, OME's engine over its runtime's engineConfig, both through
k8s.io/apimachinery/pkg/util/strategicpatch.StrategicMergePatch).

Maps merge key by key and a null deletes; a list merges item by item on the merge key its field has in the
Kubernetes and JobSet API types (``patchMergeKey``: containers and volumes by name, volumeMounts by mountPath...);
any other list is replaced. Directives (``$patch``, ``$setElementOrder``) are not read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "env": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "ports": "containerPort",
    "imagePullSecrets": "name",
    "resourceClaims": "name",
    "claims": "name",
    "schedulingGates": "name",
    "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey",
    "replicatedJobs": "name",
}
"""List fields merged item by item, with their merge key (k8s.io/api/core/v1 types.go; JobSet's replicatedJobs)."""


def merge(base: Any, patch: Any, field: str = "") -> Any:
    """``patch`` merged into ``base`` (neither is changed); ``field`` is the key ``base`` sits under."""
    if isinstance(base, Mapping) and isinstance(patch, Mapping):
        merged = dict(base)
        for key, value in patch.items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = merge(base.get(key), value, str(key)) if key in base else value
        return merged
    key = MERGE_KEYS.get(field)
    if key and isinstance(base, list) and isinstance(patch, list):
        merged_list = list(base)
        for item in patch:
            at = next(
                (
                    i
                    for i, old in enumerate(merged_list)
                    if isinstance(old, Mapping) and isinstance(item, Mapping) and key in item and old.get(key) == item[key]
                ),
                None,
            )
            if at is None:
                merged_list.append(item)
            else:
                merged_list[at] = merge(merged_list[at], item)
        return merged_list
    return patch
