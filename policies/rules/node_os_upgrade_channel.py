"""Every managed cluster upgrades node OS images through the NodeImage channel.

Seed 002 gotcha 5: with ``Unmanaged``, unattended-upgrades moves the kernel under the NVIDIA
module and the node comes back with ``nvidia.com/gpu: 0``; ``NodeImage`` ships kernel and driver
as one tested VHD. A missing value fails too: the service default has changed across API versions,
so a stack that leaves it out has no guarantee. An unknown value fails closed.
"""

from __future__ import annotations

from aks_gpu_inference.policies.manifests import StackIndex, Violation, get, is_unknown, type_matches
from aks_gpu_inference.policies.rules._rule import Rule

NAME = "aks-node-os-upgrade-channel"


def _check(index: StackIndex, config: dict):
    allowed = ["NodeImage", "SecurityPatch"] if config["allow_security_patch"] else ["NodeImage"]
    for r in index.resources:
        if not type_matches(r.type, "azure-native", "containerservice", "ManagedCluster"):
            continue
        channel = get(r.props, "autoUpgradeProfile", "nodeOSUpgradeChannel")
        if channel in allowed:
            continue
        if channel is None:
            problem = "is not set"
        elif is_unknown(channel):
            problem = "is unknown during preview (fails closed)"
        else:
            problem = f"is {channel!r}"
        yield Violation(
            NAME,
            r,
            f"{r.label}: autoUpgradeProfile.nodeOSUpgradeChannel {problem}; set it to NodeImage so kernel and GPU driver "
            f"upgrade together (accepted: {', '.join(allowed)})",
        )


RULE = Rule(
    name=NAME,
    description="AKS clusters upgrade node OS images through the NodeImage channel, so kernel and NVIDIA driver move together.",
    why="`autoUpgradeProfile.nodeOSUpgradeChannel` is `NodeImage`. `Unmanaged` lets unattended-upgrades move the kernel under the NVIDIA module (`nvidia.com/gpu: 0` after reboot, seed 002); a missing value fails too, since the service default is no promise.",
    fix="set `NodeImage`",
    enforcement="mandatory",
    scope="resource",
    unknowns="fails closed",
    config={
        "allow_security_patch": {
            "type": "boolean",
            "default": False,
            "description": "Also accept SecurityPatch (kernel patches without a new node image; the driver is not rebuilt).",
        }
    },
    check=_check,
)
