"""What no plan can check about a pool in an Azure InterconnectGroup: that Azure put its VMs there.

AKS's agent pool API has no property that places a pool's VMs in an interconnect group or block
(``components/azure/interconnect.py``), so the plan assumes it when it simulates the pool's NICs (their
``interconnectGroupId`` and ``interconnectSubgroupId`` are the group's placeholders). What it does check: the group is
created, the pool is labelled with it, and every NIC claim of the pool selects its group and subgroup, so pods on a
node outside it stay Pending instead of crossing fabrics. Each such pool makes the plan incomplete with how to check
the rest on the cluster.
"""

from __future__ import annotations

from aks_gpu_inference.components.core.labels import INTERCONNECT_GROUP_ATTRIBUTE as GROUP_ATTRIBUTE
from aks_gpu_inference.components.core.labels import INTERCONNECT_LABEL
from aks_gpu_inference.components.core.labels import INTERCONNECT_SUBGROUP_ATTRIBUTE as SUBGROUP_ATTRIBUTE
from aks_gpu_inference.planner.deploy.finding import Finding
from aks_gpu_inference.planner.deploy.model import DeployModel


def check(model: DeployModel) -> list[Finding]:
    groups = {
        str(r.inputs.get("interconnectGroupName")): r
        for r in model.run.resources
        if r.type == "azure-native:network:InterconnectGroup"
    }
    findings = []
    for pool in model.pools:
        name = pool.labels.get(INTERCONNECT_LABEL)
        if name is None:
            continue
        if name not in groups:
            findings.append(
                Finding(
                    "interconnect",
                    "blocker",
                    pool.where,
                    f"pool {pool.name} is labelled for InterconnectGroup {name}, which the stack does not create",
                    "set gpu_pools[].interconnect, which creates the group, instead of the label",
                )
            )
            continue
        findings.append(
            Finding(
                "interconnect",
                "unchecked",
                pool.where,
                f"pool {pool.name}'s VMs are assumed to be in InterconnectGroup {name} and one of its subgroups: AKS has no "
                "agent-pool property that places them there (containerservice 2025-09-01 to 2026-08-02-preview), so the "
                f"plan cannot know; its NIC claims select {GROUP_ATTRIBUTE} and {SUBGROUP_ATTRIBUTE}, and stay Pending "
                "on nodes outside them",
                f"after `pulumi up`, read each node's {GROUP_ATTRIBUTE} and {SUBGROUP_ATTRIBUTE} from DRANET "
                "(`kubectl get resourceslices -o yaml | grep -i interconnect`) and run the gates (the NVLink gate spans "
                "two nodes of the rack)",
            )
        )
    return findings
