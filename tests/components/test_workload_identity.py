import pulumi
import pytest

from aks_gpu_inference.components import AksCluster
from aks_gpu_inference.components._base import ComponentInputError
from aks_gpu_inference.components.azure.workload_identity import (
    BUILT_IN_ROLES,
    WorkloadIdentity,
    grant_problems,
    role_definition_guid,
    role_definition_id,
)
from aks_gpu_inference.components.context import AzureScope
from tests.azure_support import run_with_outputs
from tests.conftest import ISSUER, cluster_context, of_type, one, registered_before_error, run_components

SCOPE = "/subscriptions/sub/resourceGroups/rg/providers/Microsoft.Monitor/accounts/amw"


def build_identity(grants=(), **args):
    holder = {}

    def program():
        identity = WorkloadIdentity(
            "vllm",
            {"namespace": "inference", "service_account": "vllm", **args},
            cluster=cluster_context(resource_group_name="rg-test", location="eastus", oidc_issuer_url=ISSUER),
        )
        for role, scope, name in grants:
            identity.grant(role, scope, name)
        holder["identity"] = identity
        pulumi.export("annotations", identity.service_account_annotations)
        pulumi.export("client_id", identity.client_id)
        pulumi.export("principal_id", identity.principal_id)
        pulumi.export("identity_id", identity.identity_id)

    run, _ = run_with_outputs(program)
    return holder["identity"], run


def test_identity_and_federated_credential_receive_every_input():
    _, run = build_identity()
    component = one(run, "aks-gpu:index:WorkloadIdentity")
    identity = one(run, "managedidentity:UserAssignedIdentity")
    assert identity.name == "vllm-identity" and identity.parent == component.urn
    assert identity.inputs == {"resourceGroupName": "rg-test", "location": "eastus"}
    credential = one(run, "managedidentity:FederatedIdentityCredential")
    assert credential.name == "vllm-federation" and credential.parent == component.urn
    assert credential.inputs == {
        "resourceName": "<computed:vllm-identity.name>",
        "resourceGroupName": "rg-test",
        "issuer": ISSUER,
        "subject": "system:serviceaccount:inference:vllm",
        "audiences": ["api://AzureADTokenExchange"],
    }
    assert identity.urn in credential.options["dependsOn"]
    assert of_type(run, "RoleAssignment") == [], "no role is granted unless asked for"


def test_identity_chain_follows_the_clusters_oidc_issuer():
    holder = {}

    def program():
        cluster = AksCluster("aks", {"name": "aks-test"}, scope=AzureScope("rg-test", "eastus"))
        holder["identity"] = WorkloadIdentity(
            "router",
            {"namespace": "ml-serving", "service_account": "semantic-router"},
            cluster=cluster_context(resource_group_name="rg-test", location="eastus", oidc_issuer_url=cluster.oidc_issuer_url),
        )

    run, _ = run_with_outputs(program)
    credential = one(run, "managedidentity:FederatedIdentityCredential").inputs
    assert credential["issuer"] == "<computed:oidcIssuerURL>", "the issuer is exactly the cluster's OIDC output"
    assert credential["subject"] == "system:serviceaccount:ml-serving:semantic-router"
    assert holder["identity"].subject == credential["subject"]
    cluster = one(run, "containerservice:ManagedCluster")
    assert cluster.urn in one(run, "FederatedIdentityCredential").options["dependsOn"]


def test_outputs_give_the_pod_side_what_it_needs():
    identity, run = build_identity()
    assert identity.subject == "system:serviceaccount:inference:vllm"
    assert (identity.namespace, identity.service_account) == ("inference", "vllm")
    assert identity.pod_labels == {"azure.workload.identity/use": "true"}
    assert run.outputs["annotations"] == {"azure.workload.identity/client-id": "<computed:vllm-identity.clientId>"}
    assert run.outputs["client_id"] == "<computed:vllm-identity.clientId>"
    assert run.outputs["principal_id"] == "<computed:vllm-identity.principalId>"
    assert run.outputs["identity_id"] == "<computed:vllm-identity.id>"


def test_tags_and_dotted_service_account_names_are_accepted():
    _, run = build_identity(service_account="vllm.reader", tags={"team": "ml"})
    assert one(run, "UserAssignedIdentity").inputs["tags"] == {"team": "ml"}
    assert one(run, "FederatedIdentityCredential").inputs["subject"] == "system:serviceaccount:inference:vllm.reader"


@pytest.mark.parametrize("role", sorted(BUILT_IN_ROLES))
def test_grant_by_built_in_name_assigns_that_role_to_the_identity(role):
    _, run = build_identity(grants=[(role, SCOPE, "access")])
    grant = one(run, "authorization:RoleAssignment")
    assert grant.name == "vllm-access"
    assert grant.parent == one(run, "aks-gpu:index:WorkloadIdentity").urn
    assert grant.inputs == {
        "scope": SCOPE,
        "principalId": "<computed:vllm-identity.principalId>",
        "principalType": "ServicePrincipal",
        "roleDefinitionId": (
            f"/subscriptions/<computed:subscriptionId>/providers/Microsoft.Authorization/roleDefinitions/{BUILT_IN_ROLES[role]}"
        ),
    }


def test_built_in_role_guids_are_the_published_ones():
    assert BUILT_IN_ROLES == {
        "Storage Blob Data Reader": "2a2b9908-6ea1-4ae2-8e65-a410df84e7d1",
        "Storage Blob Data Contributor": "ba92f5b4-2d11-453d-a403-e96b0029c9fe",
        "Monitoring Data Reader": "b0d8363b-8ddd-447d-831f-62ca05bff136",
        "Cognitive Services OpenAI User": "5e0bd9bd-7b93-4f28-af87-19fc36ad61bd",
        "Monitoring Metrics Publisher": "3913510d-42f4-4e42-8a64-420c390055eb",
    }


def test_grant_by_guid_or_full_role_definition_id():
    custom = "/providers/Microsoft.Management/managementGroups/mg/providers/Microsoft.Authorization/roleDefinitions/11111111-2222-3333-4444-555555555555"
    tenant_form = f"/providers/Microsoft.Authorization/roleDefinitions/{BUILT_IN_ROLES['Monitoring Data Reader']}"
    _, run = build_identity(
        grants=[
            ("2A2B9908-6EA1-4AE2-8E65-A410DF84E7D1", SCOPE, "by-guid"),
            (custom, SCOPE, "custom"),
            (tenant_form, SCOPE, "tenant-form"),
        ]
    )
    grants = {g.name: g.inputs for g in of_type(run, "authorization:RoleAssignment")}
    assert grants["vllm-by-guid"]["roleDefinitionId"].endswith("/roleDefinitions/2a2b9908-6ea1-4ae2-8e65-a410df84e7d1")
    assert grants["vllm-by-guid"]["roleDefinitionId"].startswith("/subscriptions/<computed:subscriptionId>/")
    assert grants["vllm-custom"]["roleDefinitionId"] == custom
    assert grants["vllm-tenant-form"]["roleDefinitionId"] == tenant_form
    assert {g["principalType"] for g in grants.values()} == {"ServicePrincipal"}


@pytest.mark.parametrize(
    "role, name, expected",
    [
        ("Storage Blob Data Owner", "access", "role_name_or_id='Storage Blob Data Owner': expected one of Cognitive Services"),
        ("storage blob data reader", "access", "role_name_or_id='storage blob data reader'"),
        ("/providers/Microsoft.Authorization/roleDefinitions/reader", "access", "a role-definition resource ID"),
        ("Storage Blob Data Reader", "Models_Read", "name='Models_Read': expected lowercase letters, digits or '-'"),
    ],
)
def test_bad_grant_is_refused_before_any_role_assignment(role, name, expected):
    assert any(expected in str(problem) for problem in grant_problems(role, name))

    def program():
        WorkloadIdentity(
            "vllm",
            {"namespace": "inference", "service_account": "vllm"},
            cluster=cluster_context(resource_group_name="rg", location="eastus", oidc_issuer_url=ISSUER),
        ).grant(role, SCOPE, name)

    assert "azure-native:authorization:RoleAssignment" not in registered_before_error(program, ComponentInputError)
    with pytest.raises(ComponentInputError, match="WorkloadIdentity 'vllm': invalid arguments") as caught:
        run_components(program)
    assert expected in str(caught.value)


@pytest.mark.parametrize(
    "args, expected",
    [
        ({"namespace": "Inference"}, "namespace='Inference': Kubernetes namespaces are DNS-1123 labels"),
        ({"namespace": "-ns"}, "namespace='-ns': Kubernetes namespaces are DNS-1123 labels"),
        ({"namespace": "n" * 64}, "Kubernetes namespaces are DNS-1123 labels: 1-63"),
        ({"service_account": "vllm_sa"}, "service_account='vllm_sa': Kubernetes service account names are DNS-1123 subdomains"),
        ({"service_account": "Vllm"}, "service_account='Vllm': Kubernetes service account names"),
        ({"service_account": "vllm..sa"}, "service_account='vllm..sa'"),
        ({"service_account": "s" * 254}, "at most 253 lowercase letters"),
        ({"audiences": []}, "audiences=[]: Entra ID accepts exactly one audience"),
        ({"audiences": ["api://AzureADTokenExchange", "other"]}, "Entra ID accepts exactly one audience"),
        ({"audiences": ["a" * 601]}, "of 1-600 characters"),
        ({"service_acount": "vllm"}, "service_acount='vllm': unknown key"),
    ],
)
def test_bad_identity_input_is_refused_before_anything_is_created(args, expected):
    def program():
        WorkloadIdentity(
            "vllm",
            {"namespace": "inference", "service_account": "vllm", **args},
            cluster=cluster_context(resource_group_name="rg", location="eastus", oidc_issuer_url=ISSUER),
        )

    assert registered_before_error(program, ComponentInputError) == []
    with pytest.raises(ComponentInputError, match="WorkloadIdentity 'vllm': invalid arguments") as caught:
        run_components(program)
    assert expected in str(caught.value)


def test_missing_service_account_names_the_key():
    def program():
        WorkloadIdentity(
            "vllm",
            {"namespace": "inference"},
            cluster=cluster_context(resource_group_name="rg", location="eastus", oidc_issuer_url=ISSUER),
        )

    with pytest.raises(ComponentInputError, match="service_account: required key is missing"):
        run_components(program)


def test_role_definition_guid_lookup():
    assert role_definition_guid("Monitoring Data Reader") == "b0d8363b-8ddd-447d-831f-62ca05bff136"
    assert role_definition_guid("5E0BD9BD-7B93-4F28-AF87-19FC36AD61BD") == "5e0bd9bd-7b93-4f28-af87-19fc36ad61bd"
    assert role_definition_guid("Reader") is None
    assert role_definition_id("sub", "b0d8363b-8ddd-447d-831f-62ca05bff136") == (
        "/subscriptions/sub/providers/Microsoft.Authorization/roleDefinitions/b0d8363b-8ddd-447d-831f-62ca05bff136"
    )


def test_grant_problems_reports_every_problem_at_once():
    problems = grant_problems("Storage Blob Data Owner", "Models_Read")
    assert [p.field for p in problems] == ["role_name_or_id", "name"]
    assert grant_problems("Storage Blob Data Reader", "models-read") == []
    assert grant_problems("2A2B9908-6EA1-4AE2-8E65-A410DF84E7D1", "by-guid") == []
