"""WorkloadIdentity: a user-assigned managed identity that one Kubernetes service account can act
as through AKS workload identity (OIDC federation), so pods reach Azure without any stored secret."""

from __future__ import annotations

import re

import pulumi
from pulumi_azure_native import authorization, managedidentity
from pydantic import Field, field_validator

from .._base import PACKAGE, StrictModel, raise_problems, validate_args
from ..context import ClusterContext
from ..core import pins
from ..core.errors import FieldProblem
from ..core.names import DNS_LABEL, DNS_SUBDOMAIN, GUID

BUILT_IN_ROLES: dict[str, str] = {
    # Azure RBAC docs, "Understand Azure role definitions" (role-definitions.md): the Storage Blob Data
    # Reader definition as shown by the Azure CLI, name 2a2b9908-...; read and list blobs only.
    "Storage Blob Data Reader": "2a2b9908-6ea1-4ae2-8e65-a410df84e7d1",
    # Azure RBAC docs, built-in roles for storage (built-in-roles/storage.md): roleName "Storage Blob
    # Data Contributor", name ba92f5b4-...; read, write and delete blobs (and containers).
    "Storage Blob Data Contributor": "ba92f5b4-2d11-453d-a403-e96b0029c9fe",
    # Azure Monitor docs on sending Prometheus metrics to several Azure Monitor workspaces: the ARM
    # role assignment that gives Grafana "Monitoring Data Reader" uses b0d8363b-...; the same GUID is
    # in Microsoft's AKS managed-Prometheus Bicep and Terraform templates.
    "Monitoring Data Reader": "b0d8363b-8ddd-447d-831f-62ca05bff136",
    # Azure RBAC docs, built-in roles for AI + machine learning (ai-machine-learning.md): roleName
    # "Cognitive Services OpenAI User", name 5e0bd9bd-....
    "Cognitive Services OpenAI User": "5e0bd9bd-7b93-4f28-af87-19fc36ad61bd",
    # Azure RBAC docs, built-in roles for monitor (monitor.md): "Monitoring Metrics Publisher",
    # 3913510d-...; Application Insights with local auth off takes Entra-authenticated telemetry from
    # holders of this role on the component (azure-monitor app/azure-ad-authentication.md).
    "Monitoring Metrics Publisher": "3913510d-42f4-4e42-8a64-420c390055eb",
}
"""Built-in Azure role names that ``WorkloadIdentity.grant`` accepts by name, mapped to their
role-definition GUIDs (the same in every subscription and tenant)."""

TOKEN_EXCHANGE_AUDIENCE = "api://AzureADTokenExchange"
"""The audience Microsoft Entra ID expects in tokens it exchanges (Microsoft Graph
``federatedIdentityCredential`` reference)."""

CLIENT_ID_ANNOTATION = "azure.workload.identity/client-id"
USE_LABEL = "azure.workload.identity/use"
"""Service-account annotation and pod label read by the workload identity webhook
(``azure-workload-identity`` ``pkg/webhook`` constants)."""

_ROLE_DEFINITION_ID = re.compile(r"^(/.+)?/providers/Microsoft\.Authorization/roleDefinitions/[0-9a-fA-F-]{36}$", re.IGNORECASE)
_GRANT_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


class WorkloadIdentityArgs(StrictModel):
    """Which Kubernetes service account may act as the identity."""

    namespace: str
    """Namespace of the service account: a DNS-1123 label (1-63 lowercase letters, digits or '-').
    Required; it is part of the federated subject, so changing it re-points the trust."""

    service_account: str
    """Name of the service account: a DNS-1123 subdomain (lowercase letters, digits, '-' and '.',
    at most 253 characters). Required; part of the federated subject."""

    audiences: list[str] = Field(default_factory=lambda: [TOKEN_EXCHANGE_AUDIENCE])
    """Audiences accepted in the service-account token. Default ``["api://AzureADTokenExchange"]``,
    the value the AKS workload identity webhook projects and Entra ID expects. Entra ID accepts exactly
    one audience of at most 600 characters per federated credential."""

    tags: dict[str, str] = Field(default_factory=dict)
    """Azure tags for the managed identity. Default none."""

    @field_validator("namespace")
    @classmethod
    def _check_namespace(cls, value: str) -> str:
        if not DNS_LABEL.match(value):
            raise ValueError(
                "Kubernetes namespaces are DNS-1123 labels: 1-63 lowercase letters, digits or '-', "
                "starting and ending with a letter or digit"
            )
        return value

    @field_validator("service_account")
    @classmethod
    def _check_service_account(cls, value: str) -> str:
        if len(value) > 253 or not DNS_SUBDOMAIN.match(value):
            raise ValueError(
                "Kubernetes service account names are DNS-1123 subdomains: at most 253 lowercase letters, "
                "digits, '-' or '.', each dot-separated part starting and ending with a letter or digit"
            )
        return value

    @field_validator("audiences")
    @classmethod
    def _check_audiences(cls, value: list[str]) -> list[str]:
        if len(value) != 1 or not value[0] or len(value[0]) > 600:
            raise ValueError(
                f"Entra ID accepts exactly one audience of 1-600 characters per federated credential; use [{TOKEN_EXCHANGE_AUDIENCE!r}]"
            )
        return value

    @property
    def subject(self) -> str:
        """The ``sub`` claim of the service account's projected token."""
        return f"system:serviceaccount:{self.namespace}:{self.service_account}"


def role_definition_guid(role: str) -> str | None:
    """The GUID of a built-in role named in ``BUILT_IN_ROLES``, or of a role given by GUID; else None."""
    if role in BUILT_IN_ROLES:
        return BUILT_IN_ROLES[role]
    if GUID.match(role):
        return role.lower()
    return None


def role_definition_id(subscription_id: str, guid: str) -> str:
    """The resource ID of the role definition ``guid`` as seen from subscription ``subscription_id``."""
    return f"/subscriptions/{subscription_id}/providers/Microsoft.Authorization/roleDefinitions/{guid}"


def grant_problems(role_name_or_id: str, name: str) -> list[FieldProblem]:
    """Every reason ``WorkloadIdentity.grant(role_name_or_id, ..., name)`` cannot make its role assignment."""
    problems = []
    if role_definition_guid(role_name_or_id) is None and not _ROLE_DEFINITION_ID.match(role_name_or_id):
        problems.append(
            FieldProblem(
                "role_name_or_id",
                role_name_or_id,
                f"expected one of {', '.join(sorted(BUILT_IN_ROLES))}, a role-definition GUID or a role-definition resource ID",
            )
        )
    if not _GRANT_NAME.match(name):
        problems.append(FieldProblem("name", name, "expected lowercase letters, digits or '-' (e.g. 'models-read')"))
    return problems


class WorkloadIdentity(pulumi.ComponentResource):
    """A user-assigned managed identity federated with one service account of one cluster.

    Outputs: ``client_id``, ``principal_id``, ``identity_id``, ``subject``, plus what the pod side
    needs: ``service_account_annotations`` for the ServiceAccount and ``pod_labels`` for the pod
    template. ``grant()`` gives the identity an Azure role on a scope.
    """

    client_id: pulumi.Output[str]
    principal_id: pulumi.Output[str]
    identity_id: pulumi.Output[str]
    subject: str
    namespace: str
    service_account: str
    service_account_annotations: pulumi.Output[dict[str, str]]
    pod_labels: dict[str, str]
    identity: managedidentity.UserAssignedIdentity
    federated_credential: managedidentity.FederatedIdentityCredential

    def __init__(
        self,
        name: str,
        args: WorkloadIdentityArgs | dict,
        opts: pulumi.ResourceOptions | None = None,
        *,
        cluster: ClusterContext,
    ):
        """
        :param name: Logical name; children are named ``<name>-identity``, ``<name>-federation`` and
            ``<name>-<grant name>``.
        :param args: The service account to federate, a ``WorkloadIdentityArgs`` or a dict of its fields.
        :param opts: Standard Pulumi resource options.
        :param cluster: The cluster whose service account is federated (``AksCluster.context``): its OIDC
            issuer, and the resource group and region the managed identity is created in.
        """
        args = validate_args(WorkloadIdentityArgs, args, "WorkloadIdentity", name)
        cluster.require("WorkloadIdentity", name, "oidc_issuer_url", "location")
        resource_group_name, location = cluster.resource_group_name, cluster.location
        super().__init__(f"{PACKAGE}:index:WorkloadIdentity", name, None, opts)
        self._name = name
        self._client_config: pulumi.Output | None = None
        child = pulumi.ResourceOptions(parent=self)

        self.identity = managedidentity.UserAssignedIdentity(
            f"{name}-identity",
            resource_group_name=resource_group_name,
            location=location,
            tags=args.tags or None,
            opts=child,
        )
        self.federated_credential = managedidentity.FederatedIdentityCredential(
            f"{name}-federation",
            resource_name_=self.identity.name,
            resource_group_name=resource_group_name,
            issuer=cluster.oidc_issuer_url,
            subject=args.subject,
            audiences=args.audiences,
            opts=child,
        )

        self.client_id = self.identity.client_id
        self.principal_id = self.identity.principal_id
        self.identity_id = self.identity.id
        self.subject = args.subject
        self.namespace = args.namespace
        self.service_account = args.service_account
        self.service_account_annotations = self.client_id.apply(lambda client_id: {CLIENT_ID_ANNOTATION: client_id})
        self.pod_labels = {USE_LABEL: "true"}
        self.register_outputs(
            {
                "client_id": self.client_id,
                "principal_id": self.principal_id,
                "identity_id": self.identity_id,
                "subject": self.subject,
                "service_account_annotations": self.service_account_annotations,
                "pod_labels": self.pod_labels,
            }
        )

    def grant(
        self,
        role_name_or_id: str,
        scope: pulumi.Input[str],
        name: str,
        opts: pulumi.ResourceOptions | None = None,
        *,
        condition: str | None = None,
    ) -> authorization.RoleAssignment:
        """Give this identity an Azure role on ``scope``; returns the role assignment, named ``<component>-<name>``.

        :param role_name_or_id: A name from ``BUILT_IN_ROLES``, a role-definition GUID, or a full
            role-definition resource ID (``.../providers/Microsoft.Authorization/roleDefinitions/<guid>``,
            e.g. a custom role).
        :param scope: Resource ID the role applies to; keep it as narrow as the workload allows.
        :param name: Short name for the assignment (lowercase letters, digits, '-'), unique per identity.
        :param opts: Extra resource options, e.g. ``depends_on`` the scope's resource.
        :param condition: An Azure ABAC role-assignment condition (condition version 2.0) that narrows the
            role further, e.g. to a blob path prefix (``ModelStore.grant_write``). Default None: none.
        """
        raise_problems("WorkloadIdentity", self._name, grant_problems(role_name_or_id, name))
        guid = role_definition_guid(role_name_or_id)
        if guid is None:
            role_definition: pulumi.Input[str] = role_name_or_id
        else:
            role_definition = self._subscription_id().apply(lambda sub: role_definition_id(sub, guid))
        return authorization.RoleAssignment(
            f"{self._name}-{name}",
            scope=scope,
            principal_id=self.principal_id,
            # A managed identity is a service principal. Declaring the type also lets ARM skip the
            # directory lookup that fails with PrincipalNotFound while a new identity replicates.
            principal_type="ServicePrincipal",
            role_definition_id=role_definition,
            **({"condition": condition, "condition_version": pins.azure_api_version("rbac-condition")} if condition else {}),
            opts=pulumi.ResourceOptions.merge(pulumi.ResourceOptions(parent=self), opts),
        )

    def _subscription_id(self) -> pulumi.Output[str]:
        if self._client_config is None:
            self._client_config = authorization.get_client_config_output(opts=pulumi.InvokeOutputOptions(parent=self))
        return self._client_config.subscription_id
