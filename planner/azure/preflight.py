"""``aks-gpu preflight``: ask Azure, before anything is created, whether the stack can be created.

The plan (run offline, as ``aks-gpu plan`` runs it) says what the stack asks for: node pools with
their sizes, zones and maximum node counts, the cluster's Kubernetes version and the preview
features its resources need. Azure (``planner.azure.facts``) says what the subscription has. Each
item gets a verdict and, when it fails, the fix: the quota request to file, the zone or version to
choose, the feature to register. Seed 002's gotcha 1 is why: a pool beyond the quota is accepted,
then fails ten minutes later.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from aks_gpu_inference.components.core import quota
from aks_gpu_inference.planner.azure import quota as demand
from aks_gpu_inference.planner.azure.facts import AzureFacts

MANAGED_GPU_FEATURE = "Microsoft.ContainerService/ManagedGPUExperiencePreview"
"""The preview feature AKS-managed GPU pools need (learn.microsoft.com/azure/aks/aks-managed-gpu-nodes)."""


@dataclass
class StackAsks:
    """What the planned stack asks Azure for."""

    region: str
    pools: list[demand.PoolDemand]
    zones: dict[str, list[str]] = field(default_factory=dict)
    """Pool -> the availability zones it pins (none: any)."""
    kubernetes_version: str | None = None
    features: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Verdict:
    item: str
    ok: bool
    detail: str
    fix: str = ""


def stack_asks(resources, region: str) -> StackAsks:
    """Read the planned resources: pools, zones, the cluster's version and the preview features."""
    asks = StackAsks(region, demand.pool_demands(resources))
    for r in resources:
        inputs = r.inputs
        if r.type == "azure-native:containerservice:ManagedCluster":
            asks.kubernetes_version = inputs.get("kubernetesVersion")
            for profile in inputs.get("agentPoolProfiles") or []:
                asks.zones[str(profile.get("name"))] = list(profile.get("availabilityZones") or [])
        elif r.type == "azure-native:containerservice:AgentPool":
            asks.zones[str(inputs.get("agentPoolName", r.name))] = list(inputs.get("availabilityZones") or [])
        elif r.type == "azure-native:resources:Resource" and inputs.get("resourceType") == "agentPools":
            properties = inputs.get("properties") or {}
            asks.zones[str(inputs.get("resourceName", r.name))] = list(properties.get("availabilityZones") or [])
            nvidia = (properties.get("gpuProfile") or {}).get("nvidia") or {}
            if nvidia.get("managementMode") == "Managed" and MANAGED_GPU_FEATURE not in asks.features:
                asks.features.append(MANAGED_GPU_FEATURE)
    return asks


def _family(vm_size: str, facts: AzureFacts) -> str | None:
    """The size's quota family: Azure's answer first, the offline table second."""
    sku = facts.skus.get(vm_size)
    return sku.family if sku and sku.family else quota.family_of(vm_size)


def _request_fix(name: str, facts: AzureFacts, limit: int) -> str:
    kind = "lowPriority" if name == quota.SPOT else "dedicated"
    scope = f"/subscriptions/{facts.subscription}/providers/Microsoft.Compute/locations/{facts.region}"
    return (
        f"request a quota increase to {limit}: az quota update --resource-name {name.replace(' ', '')!r} --scope {scope} "
        f"--limit-object value={limit} --resource-type {kind} (or Azure portal: Quotas > Compute)"
    )


def quota_verdicts(asks: StackAsks, facts: AzureFacts) -> list[Verdict]:
    verdicts = []
    for row in demand.rows_for(asks.pools, facts.region, lambda size: _family(size, facts)):
        name, vcpus, pools = row.name, row.vcpus, row.pools
        usage = facts.usages.get(quota.normalise(name))
        item = f"quota {name} ({', '.join(pools)})"
        if usage is None:
            verdicts.append(
                Verdict(
                    item,
                    False,
                    f"needs {vcpus} vCPUs; Azure lists no such quota in {facts.region}",
                    "check the VM size and region; the family may not exist there",
                )
            )
            continue
        free = usage.limit - usage.current
        detail = f"needs {vcpus} vCPUs; limit {usage.limit}, in use {usage.current}, free {free}"
        ok = vcpus <= free
        verdicts.append(Verdict(item, ok, detail, "" if ok else _request_fix(usage.name, facts, usage.current + vcpus)))
    return verdicts


def size_verdicts(asks: StackAsks, facts: AzureFacts) -> list[Verdict]:
    verdicts = []
    for pool in asks.pools:
        sku, item = facts.skus.get(pool.vm_size), f"size {pool.vm_size} ({pool.pool})"
        zones = asks.zones.get(pool.pool) or []
        if sku is None:
            verdicts.append(
                Verdict(item, False, f"not offered in {facts.region}", "choose a region that offers it, or another size")
            )
        elif sku.blocked_region:
            verdicts.append(
                Verdict(
                    item,
                    False,
                    f"restricted for this subscription in {facts.region} ({sku.reason})",
                    "ask Azure support to enable the size for the subscription, or choose another region",
                )
            )
        elif bad := [z for z in zones if z not in sku.zones or z in sku.blocked_zones]:
            usable = [z for z in sku.zones if z not in sku.blocked_zones]
            verdicts.append(
                Verdict(
                    item,
                    False,
                    f"zones {', '.join(bad)} not available (usable: {', '.join(usable) or 'none'})",
                    "set availability_zones to usable zones, or none",
                )
            )
        else:
            where = f"zones {', '.join(zones)}" if zones else f"zones {', '.join(sku.zones) or 'none (regional)'}"
            verdicts.append(Verdict(item, True, f"offered in {facts.region}, {where}"))
    return verdicts


def version_verdict(asks: StackAsks, facts: AzureFacts) -> list[Verdict]:
    wanted = asks.kubernetes_version
    if not wanted:
        return []
    item, offered = f"Kubernetes {wanted}", facts.kubernetes_versions
    match = next((v for v in offered if wanted == v.version or wanted in v.patches), None)
    listing = ", ".join(v.version + (" (preview)" if v.preview else "") for v in offered)
    if match is None:
        return [
            Verdict(
                item,
                False,
                f"not offered in {facts.region} (offered: {listing})",
                "set cluster.kubernetes_version to an offered version",
            )
        ]
    if match.preview:
        return [
            Verdict(
                item, False, f"{match.version} is a preview version in {facts.region}", "choose a generally available version"
            )
        ]
    return [Verdict(item, True, f"offered in {facts.region} ({', '.join(match.support_plans) or 'supported'})")]


def feature_verdicts(asks: StackAsks, facts: AzureFacts) -> list[Verdict]:
    verdicts = []
    for feature in asks.features:
        state = facts.features.get(feature, "NotRegistered")
        namespace, name = feature.split("/", 1)
        ok = state.lower() == "registered"
        fix = (
            ""
            if ok
            else f"az feature register --namespace {namespace} --name {name}; then, once Registered: az provider register -n {namespace}"
        )
        verdicts.append(Verdict(f"feature {feature}", ok, f"state {state}", fix))
    return verdicts


def verdicts(asks: StackAsks, facts: AzureFacts) -> list[Verdict]:
    """Every item, quota first; the stack can be created only if all are ok."""
    return [
        *quota_verdicts(asks, facts),
        *size_verdicts(asks, facts),
        *version_verdict(asks, facts),
        *feature_verdicts(asks, facts),
    ]
