"""What the SDK's mocks answer in place of Azure and Kubernetes: each resource's inputs echoed as its outputs,
and the fields a provider would compute filled with marked placeholders (``<computed:...>``), never a value that
could be mistaken for a real ID. ``program`` runs the stack program against them.
"""

from __future__ import annotations

import base64
import json

import pulumi

from aks_gpu_inference.components.core import pins


def placeholder(what: str) -> str:
    """A value the cloud would compute at deploy time; never presented as real."""
    return f"<computed:{what}>"


_PLACEHOLDER_KUBECONFIG = base64.b64encode(
    json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "offline", "cluster": {"server": "https://offline-plan.invalid"}}],
            "contexts": [{"name": "offline", "context": {"cluster": "offline", "user": "offline"}}],
            "current-context": "offline",
            "users": [
                {
                    "name": "offline",
                    "user": {
                        "exec": {
                            "apiVersion": pins.api_version("ExecCredential"),
                            "command": "kubelogin",
                            "args": ["get-token", "--login", "devicecode"],
                        }
                    },
                }
            ],
        }
    ).encode()
).decode()


# Which input becomes an azure-native resource's `name` output; others are autonamed by the provider.
_NAME_INPUTS = {
    "azure-native:resources:ResourceGroup": "resourceGroupName",
    "azure-native:containerservice:AgentPool": "agentPoolName",
    "azure-native:authorization:RoleAssignment": "roleAssignmentName",
}


def interconnect_attributes(resource_name: str) -> dict[str, str]:
    """The placeholders the mocks give an InterconnectGroup registered as ``resource_name``: its ``resourceGuid`` and
    its first subgroup's ``internalSubgroupId``, which DRANET would publish on the nodes Azure placed in it."""
    return {
        "resourceGuid": placeholder(f"{resource_name}.resourceGuid"),
        "internalSubgroupId": placeholder(f"{resource_name}.subgroups[0].internalSubgroupId"),
    }


class PlaceholderMocks(pulumi.runtime.Mocks):
    """Echo inputs, and mark what Azure or Kubernetes would compute."""

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        state = dict(args.inputs)
        if args.typ.startswith("azure-native:"):
            name_input = _NAME_INPUTS.get(args.typ, "resourceName")
            state.setdefault("name", args.inputs.get(name_input) or placeholder(f"{args.name}.name"))
            state.setdefault("provisioningState", placeholder("provisioningState"))
        if args.typ == "azure-native:managedidentity:UserAssignedIdentity":
            state.update(clientId=placeholder(f"{args.name}.clientId"), principalId=placeholder(f"{args.name}.principalId"))
        if args.typ == "azure-native:network:InterconnectGroup":
            # What Azure computes for a group (pulumi-azure-native 3.29 network.InterconnectGroup outputs): its
            # resourceGuid and its subgroups, each with an internalSubgroupId. ``interconnect_attributes`` reads them
            # back for the simulated nodes.
            state.update(interconnect_attributes(args.name))
            state["subgroups"] = [{"name": "subgroup0", "internalSubgroupId": state.pop("internalSubgroupId")}]
        if args.typ == "azure-native:storage:StorageAccount":
            state["primaryEndpoints"] = {"blob": placeholder(f"{args.name}.blobEndpoint")}
        if args.typ == "azure-native:monitor:AzureMonitorWorkspace":
            state["metrics"] = {
                "prometheusQueryEndpoint": placeholder("prometheusQueryEndpoint"),
                "internalId": placeholder("internalId"),
            }
        if args.typ == "azure-native:applicationinsights:Component":
            state["connectionString"] = placeholder(f"{args.name}.connectionString")
        if args.typ == "azure-native:containerservice:ManagedCluster":
            state["oidcIssuerProfile"] = {**state.get("oidcIssuerProfile", {}), "issuerURL": placeholder("oidcIssuerURL")}
            state["fqdn"] = placeholder("fqdn")
            state["nodeResourceGroup"] = placeholder("nodeResourceGroup")
        return placeholder(f"{args.name}.id"), state

    def call(self, args: pulumi.runtime.MockCallArgs):
        token = args.token
        if token == "azure-native:containerservice:listManagedClusterUserCredentials":
            return {"kubeconfigs": [{"name": "clusterUser", "value": _PLACEHOLDER_KUBECONFIG}]}
        if token == "azure-native:authorization:getClientConfig":
            return {key: placeholder(key) for key in ("clientId", "objectId", "subscriptionId", "tenantId")}
        if token == "azure-native:storage:getStorageAccount":
            return {
                "name": args.args.get("accountName"),
                "id": placeholder("storageAccount.id"),
                "primaryEndpoints": {"blob": placeholder("blobEndpoint")},
            }
        if token == "azure-native:containerservice:getManagedCluster":
            return {
                "name": args.args.get("resourceName"),
                "oidcIssuerProfile": {"enabled": True, "issuerURL": placeholder("oidcIssuerURL")},
                "id": placeholder("managedCluster.id"),
            }
        return {}
