"""The manifest walk the policy rules, the offline planner and ``aks-gpu scan`` share: resources as plain
mappings with engine wire names, where each kind keeps its pod templates, and the helpers that find containers,
GPU requests, DRA claims and node pools in them. Nothing here imports Pulumi.

``values`` steps through possibly-unknown values; ``walk`` holds the steps every finder takes; ``templates`` knows
where each kind keeps its pod templates (``operators/`` builds the operators' pods); ``bases`` finds the runtime an
object is built over; ``nodepools`` reads Karpenter NodePools; ``model`` builds resources, pod templates, pools and
the stack index on them all.
"""

from aks_gpu_inference.components.core.labels import GPU_DEVICE_CLASSES
from aks_gpu_inference.policies.manifests.model import (
    CONTAINER_LISTS,
    UNKNOWN_CLASS,
    Exemption,
    PodTemplate,
    Pool,
    Resource,
    StackIndex,
    Violation,
    container_claims,
    env_value,
    gpu_resource_names,
    kube_kind,
    parse_taint,
    pod_templates,
    pools,
    resources_of,
    token_for_manifest,
    tolerates,
    type_matches,
)
from aks_gpu_inference.policies.manifests.nodepools import (
    GPU_REQUIREMENT_KEYS,
    SIZE_KEYS,
    is_nodepool,
    nodepool_gpu_selection,
    nodepool_requirements,
    nodepool_taints,
)
from aks_gpu_inference.policies.manifests.operators.kaito import KAITO_TOLERATIONS
from aks_gpu_inference.policies.manifests.operators.kserve import KSERVE_CONTAINER
from aks_gpu_inference.policies.manifests.templates import TEMPLATE_KINDS, api_of, template_group, templates_of
from aks_gpu_inference.policies.manifests.values import UNKNOWN, get, is_unknown, items, looks_gpu
from aks_gpu_inference.policies.manifests.walk import Found

__all__ = [
    "CONTAINER_LISTS",
    "GPU_DEVICE_CLASSES",
    "GPU_REQUIREMENT_KEYS",
    "KAITO_TOLERATIONS",
    "KSERVE_CONTAINER",
    "SIZE_KEYS",
    "TEMPLATE_KINDS",
    "UNKNOWN",
    "UNKNOWN_CLASS",
    "Exemption",
    "Found",
    "PodTemplate",
    "Pool",
    "Resource",
    "StackIndex",
    "Violation",
    "api_of",
    "container_claims",
    "env_value",
    "get",
    "gpu_resource_names",
    "is_nodepool",
    "is_unknown",
    "items",
    "kube_kind",
    "looks_gpu",
    "nodepool_gpu_selection",
    "nodepool_requirements",
    "nodepool_taints",
    "parse_taint",
    "pod_templates",
    "pools",
    "resources_of",
    "template_group",
    "templates_of",
    "token_for_manifest",
    "tolerates",
    "type_matches",
]
