"""What Azure says about one subscription and region, read through the Azure SDKs: vCPU usage and
limits, which VM sizes the subscription may use where, the Kubernetes versions AKS offers, and the
state of preview features. Only ``aks-gpu preflight`` imports this module (the SDKs load on demand).

Every call goes through ``transport``, so tests replay recorded responses through the SDKs' own
pipeline (``azure.core.pipeline.transport``) and nothing touches the network.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from aks_gpu_inference.components.core import quota


@dataclass(frozen=True)
class Usage:
    """One row of the Compute usages API."""

    name: str
    display: str
    current: int
    limit: int


@dataclass(frozen=True)
class SkuFacts:
    """One VM size as the Resource SKUs API describes it for this subscription and region."""

    name: str
    family: str
    zones: tuple[str, ...]
    """Zones the size is offered in."""
    blocked_region: bool
    """Restricted in the whole region for this subscription (``NotAvailableForSubscription``)."""
    blocked_zones: tuple[str, ...]
    reason: str = ""
    spot: bool | None = None
    """The ``LowPriorityCapable`` capability: Spot VMs of the size exist (None: Azure did not say)."""


@dataclass(frozen=True)
class KubernetesVersion:
    version: str
    patches: tuple[str, ...]
    preview: bool
    support_plans: tuple[str, ...]


@dataclass
class AzureFacts:
    """Everything preflight compares the stack with."""

    subscription: str
    region: str
    usages: dict[str, Usage] = field(default_factory=dict)
    """By normalised name (``quota.normalise``)."""
    skus: dict[str, SkuFacts] = field(default_factory=dict)
    kubernetes_versions: list[KubernetesVersion] = field(default_factory=list)
    features: dict[str, str] = field(default_factory=dict)
    """``Namespace/Name`` -> registration state as Azure spells it."""


def _clients(credential: Any, subscription: str, transport: Any) -> tuple[Any, Any, Any]:
    from azure.mgmt.compute import ComputeManagementClient
    from azure.mgmt.containerservice import ContainerServiceClient
    from azure.mgmt.resource.features import FeatureClient

    extra = {"transport": transport} if transport is not None else {}
    return (
        ComputeManagementClient(credential, subscription, **extra),
        ContainerServiceClient(credential, subscription, **extra),
        FeatureClient(credential, subscription, **extra),
    )


def _sku(sku: Any, region: str) -> SkuFacts:
    zones = tuple(z for info in sku.location_info or [] if (info.location or "").lower() == region for z in info.zones or [])
    blocked_region, blocked_zones, reasons = False, [], []
    for restriction in sku.restrictions or []:
        kind = str(getattr(restriction.type, "value", restriction.type))
        reasons.append(str(getattr(restriction.reason_code, "value", restriction.reason_code)))
        if kind == "Location":
            blocked_region = True
        elif kind == "Zone" and restriction.restriction_info:
            blocked_zones.extend(restriction.restriction_info.zones or [])
    capable = {c.name: c.value for c in sku.capabilities or []}.get("LowPriorityCapable")
    spot = None if capable is None else str(capable).lower() == "true"
    return SkuFacts(sku.name, sku.family or "", zones, blocked_region, tuple(sorted(blocked_zones)), ", ".join(reasons), spot)


def _compute_facts(compute: Any, facts: AzureFacts, sizes: set[str]) -> None:
    """The region's vCPU usages and limits, and how the Resource SKUs API offers ``sizes`` there."""
    for usage in compute.usage.list(facts.region):
        name = usage.name.value or ""
        facts.usages[quota.normalise(name)] = Usage(name, usage.name.localized_value or name, usage.current_value, usage.limit)
    for sku in compute.resource_skus.list(filter=f"location eq '{facts.region}'"):
        if sku.resource_type == "virtualMachines" and sku.name in sizes:
            facts.skus[sku.name] = _sku(sku, facts.region)


def fetch_regions(
    credential: Any, subscription: str, wanted: dict[str, set[str]], transport: Any = None
) -> dict[str, AzureFacts]:
    """Usages and the sizes' Resource SKUs in each region of ``wanted`` (region -> sizes): one ``usage.list`` and one
    location-filtered ``resource_skus.list`` per region (the APIs have no multi-region form)."""
    compute = _clients(credential, subscription, transport)[0]
    found = {}
    for region, sizes in wanted.items():
        found[region] = AzureFacts(subscription, region)
        _compute_facts(compute, found[region], sizes)
    return found


def fetch(
    credential: Any, subscription: str, region: str, sizes: set[str], features: list[str], transport: Any = None
) -> AzureFacts:
    """Ask Azure; ``features`` are ``Namespace/Name``. Raises azure-core errors (the caller reports them)."""
    compute, aks, feature_client = _clients(credential, subscription, transport)
    facts = AzureFacts(subscription, region)
    _compute_facts(compute, facts, sizes)
    for version in aks.managed_clusters.list_kubernetes_versions(region).values_property or []:
        facts.kubernetes_versions.append(
            KubernetesVersion(
                version.version,
                tuple(version.patch_versions or {}),
                bool(version.is_preview),
                tuple(str(getattr(p, "value", p)) for p in (version.capabilities.support_plan or []))
                if version.capabilities
                else (),
            )
        )
    for feature in features:
        namespace, name = feature.split("/", 1)
        facts.features[feature] = feature_client.features.get(namespace, name).properties.state or "NotRegistered"
    return facts
