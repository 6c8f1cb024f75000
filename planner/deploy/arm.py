"""Constraints Azure Resource Manager enforces on the cluster and its pools, checked before any call.

Enum values come from the installed azure-native SDK module, whose enums are generated from the
REST API version it calls (containerservice 2025-09-01 in azure-native 3.29): a value it lacks is
one that API version refuses. The ephemeral OS disk must fit the size's local disk (AKS places it
on the cache disk, else the temp disk; ``components/core/vm_disks.py``).
"""

from __future__ import annotations

from typing import Any

from aks_gpu_inference.components.core import pins, vm_disks
from aks_gpu_inference.components.core.names import AKS_POOL_NAME
from aks_gpu_inference.planner.deploy.finding import Finding
from aks_gpu_inference.planner.deploy.model import DeployModel

# (property path in an agent pool or the cluster, enum class of pulumi_azure_native.containerservice)
POOL_ENUMS = (
    (("osSKU",), "OSSKU"),
    (("osType",), "OSType"),
    (("osDiskType",), "OSDiskType"),
    (("mode",), "AgentPoolMode"),
    (("type",), "AgentPoolType"),
    (("scaleSetPriority",), "ScaleSetPriority"),
    (("scaleSetEvictionPolicy",), "ScaleSetEvictionPolicy"),
    (("gpuInstanceProfile",), "GPUInstanceProfile"),
    (("gpuProfile", "driver"), "GPUDriver"),
)
CLUSTER_ENUMS = (
    (("autoUpgradeProfile", "upgradeChannel"), "UpgradeChannel"),
    (("autoUpgradeProfile", "nodeOSUpgradeChannel"), "NodeOSUpgradeChannel"),
    (("sku", "tier"), "ManagedClusterSKUTier"),
    (("sku", "name"), "ManagedClusterSKUName"),
    (("networkProfile", "networkPlugin"), "NetworkPlugin"),
    (("networkProfile", "networkPolicy"), "NetworkPolicy"),
    (("networkProfile", "networkPluginMode"), "NetworkPluginMode"),
    (("networkProfile", "networkDataplane"), "NetworkDataplane"),
)
API_VERSION = pins.azure_api_version("containerservice")
"""The containerservice API version of the pinned azure-native SDK (its module docstrings say so)."""


def _get(node: Any, path: tuple[str, ...]) -> Any:
    for step in path:
        node = node.get(step) if isinstance(node, dict) else None
    return node


def _enum_values(name: str) -> list[str] | None:
    from pulumi_azure_native import containerservice

    enum = getattr(containerservice, name, None)
    return [member.value for member in enum] if enum else None


def _enum_findings(props: dict[str, Any], table, where: str) -> list[Finding]:
    findings = []
    for path, enum in table:
        value = _get(props, path)
        accepted = _enum_values(enum)
        if value is None or accepted is None or not isinstance(value, str) or value in accepted:
            continue
        findings.append(
            Finding(
                "arm",
                "blocker",
                where,
                f"{'.'.join(path)}={value!r} is not accepted by containerservice API {API_VERSION} (accepted: {', '.join(accepted)})",
                "use an accepted value, or an SDK whose API version has it",
            )
        )
    return findings


def _disk_findings(props: dict[str, Any], where: str) -> list[Finding]:
    if props.get("osDiskType") != "Ephemeral":
        return []
    vm_size = str(props.get("vmSize", ""))
    size = props.get("osDiskSizeGB") or vm_disks.DEFAULT_OS_DISK_GB
    limit = vm_disks.ephemeral_limit_gib(vm_size)
    if limit is None:
        if vm_size in vm_disks.sizes():
            return [
                Finding(
                    "arm",
                    "blocker",
                    where,
                    f"osDiskType Ephemeral on {vm_size}, which has no local disk for it",
                    "set os_disk_type: Managed",
                )
            ]
        return [
            Finding(
                "arm",
                "warning",
                where,
                f"ephemeral OS disk on {vm_size}, whose local disk sizes the catalog does not know",
                "add the size to components/core/vm_disks.json",
            )
        ]
    if size > limit:
        return [
            Finding(
                "arm",
                "blocker",
                where,
                f"ephemeral OS disk of {size} GB does not fit {vm_size}'s local disk ({limit} GiB): VMCannotFitEphemeralOSDisk",
                f"set os_disk_size_gb to at most {limit}, or os_disk_type: Managed",
            )
        ]
    return []


def _pool_findings(props: dict[str, Any], where: str) -> list[Finding]:
    findings = _enum_findings(props, POOL_ENUMS, where) + _disk_findings(props, where)
    name = props.get("agentPoolName") or props.get("name")
    if isinstance(name, str) and props.get("osType", "Linux") == "Linux" and not AKS_POOL_NAME.match(name):
        findings.append(
            Finding(
                "arm",
                "blocker",
                where,
                f"pool name {name!r}: Linux pool names are 1-12 lowercase letters and digits",
                "rename the pool",
            )
        )
    if props.get("scaleSetPriority") == "Spot" and props.get("mode") == "System":
        findings.append(Finding("arm", "blocker", where, "a Spot pool cannot be a System pool", "set mode: User"))
    if props.get("enableAutoScaling"):
        low, high, count = props.get("minCount"), props.get("maxCount"), props.get("count")
        if isinstance(low, (int, float)) and isinstance(high, (int, float)) and low > high:
            findings.append(Finding("arm", "blocker", where, f"minCount {low} is above maxCount {high}", "swap them"))
        numbers = all(isinstance(v, (int, float)) for v in (low, high, count))
        if numbers and not low <= count <= high:
            findings.append(
                Finding(
                    "arm",
                    "blocker",
                    where,
                    f"count {count} is outside minCount..maxCount ({low}..{high})",
                    "set count within the range",
                )
            )
    return findings


def check(model: DeployModel) -> list[Finding]:
    findings = []
    for record in model.run.resources:
        if record.type.endswith("containerservice:ManagedCluster"):
            findings += _enum_findings(record.inputs, CLUSTER_ENUMS, f"ManagedCluster {record.name}")
    for pool in model.pools:
        findings += _pool_findings(pool.props, pool.where)
    return findings
