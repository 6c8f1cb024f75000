"""Every managed cluster upgrades node OS images through the NodeImage channel.

Seed 002 gotcha 5: with ``Unmanaged``, unattended-upgrades moves the kernel under the NVIDIA
module and the node comes back with ``nvidia.com/gpu: 0``; ``NodeImage`` ships kernel and driver
as one tested VHD. A missing value fails too: the AKS default has changed across API versions, so
a stack that relies on it has no guarantee.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

NAME = "aks-node-os-upgrade-channel"
MANAGED_CLUSTER = "azure-native:containerservice:ManagedCluster"


def violations(props: Mapping[str, Any], allow_security_patch: bool = False) -> list[str]:
    """Why a ManagedCluster's inputs break the rule (empty when compliant)."""
    profile = props.get("autoUpgradeProfile") or {}
    channel = profile.get("nodeOSUpgradeChannel")
    allowed = {"NodeImage", "SecurityPatch"} if allow_security_patch else {"NodeImage"}
    if channel in allowed:
        return []
    if channel is None:
        return [
            "autoUpgradeProfile.nodeOSUpgradeChannel is not set; set it to NodeImage so kernel and GPU driver upgrade together"
        ]
    return [f"autoUpgradeProfile.nodeOSUpgradeChannel is {channel!r}; use NodeImage (accepted: {', '.join(sorted(allowed))})"]
