"""KAITO Workspace pods (kaito.sh, kaito v0.6.0: crds/kaito.sh_workspaces.yaml in shared/upstream).

kaito v0.6.0 pkg/workspace/manifests/manifests.go GenerateDeploymentManifestWithPodTemplate: the template's
tolerations get ``KAITO_TOLERATIONS`` appended (pkg/workspace/inference/preset_inferences.go) and its affinity is
replaced by a node affinity on resource.labelSelector.matchLabels. Preset workspaces have no template and their
pods are KAITO's own.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from aks_gpu_inference.components.core.labels import NVIDIA_GPU
from aks_gpu_inference.policies.manifests.values import UNKNOWN, get, is_unknown, items
from aks_gpu_inference.policies.manifests.walk import Found, pod_template_specs

KAITO_TOLERATIONS = (
    {"effect": "NoSchedule", "operator": "Exists", "key": NVIDIA_GPU},
    {"effect": "NoSchedule", "value": "gpu", "key": "sku", "operator": "Equal"},
)


def workspace(props: Mapping[str, Any]) -> Iterator[Found]:
    """``inference.template`` (a PodTemplateSpec, top level, not under spec) with KAITO's edits applied."""
    for found in pod_template_specs(("inference", "template"))(props):
        spec = found.spec
        if isinstance(spec, Mapping):
            tolerations = spec.get("tolerations")
            match = get(props, "resource", "labelSelector", "matchLabels")
            terms = UNKNOWN
            if not is_unknown(match):
                expressions = [{"key": k, "operator": "In", "values": [v]} for k, v in (match or {}).items()]
                terms = {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": expressions}]}
                }
            spec = {
                **spec,
                "tolerations": tolerations if is_unknown(tolerations) else [*items(tolerations), *map(dict, KAITO_TOLERATIONS)],
                "affinity": {"nodeAffinity": terms},
            }
        yield found._replace(spec=spec)
