import pulumi
import pytest
from hypothesis import given
from hypothesis import strategies as st

from aks_gpu_inference.components._base import ComponentInputError
from aks_gpu_inference.components.azure.model_store import ModelStore, ModelStoreArgs, store_problems
from aks_gpu_inference.components.azure.workload_identity import BUILT_IN_ROLES, WorkloadIdentity
from aks_gpu_inference.components.context import AzureScope
from tests.azure_support import run_with_outputs
from tests.conftest import ISSUER, cluster_context, of_type, one, registered_before_error, run_components

READER_ROLE_ID = (
    "/subscriptions/<computed:subscriptionId>/providers/Microsoft.Authorization/roleDefinitions/"
    f"{BUILT_IN_ROLES['Storage Blob Data Reader']}"
)


def build_store(grant=False, location="eastus", **args):
    holder = {}

    def program():
        store = ModelStore("models", {"account_name": "gpumodels01", **args}, scope=AzureScope("rg-test", location))
        if grant:
            identity = WorkloadIdentity(
                "vllm",
                {"namespace": "inference", "service_account": "vllm"},
                cluster=cluster_context(resource_group_name="rg-test", location="eastus", oidc_issuer_url=ISSUER),
            )
            store.grant_read(identity)
        holder["store"] = store
        pulumi.export("account_id", store.account_id)
        pulumi.export("container_scope", store.container_scope)
        pulumi.export("blob_endpoint", store.blob_endpoint)

    run, mocks = run_with_outputs(program)
    return holder["store"], run, mocks


def test_new_account_is_keyless_private_and_entra_only():
    _, run, _ = build_store(tags={"team": "ml"})
    component = one(run, "aks-gpu:index:ModelStore")
    account = one(run, "storage:StorageAccount")
    assert account.name == "models-account" and account.parent == component.urn
    assert account.inputs == {
        "accountName": "gpumodels01",
        "resourceGroupName": "rg-test",
        "location": "eastus",
        "sku": {"name": "Premium_LRS"},
        "kind": "BlockBlobStorage",
        "allowSharedKeyAccess": False,
        "allowBlobPublicAccess": False,
        "defaultToOAuthAuthentication": True,
        "minimumTlsVersion": "TLS1_2",
        "enableHttpsTrafficOnly": True,
        "tags": {"team": "ml"},
    }
    container = one(run, "storage:BlobContainer")
    assert container.name == "models-container" and container.parent == component.urn
    assert container.inputs == {
        "accountName": "gpumodels01",
        "containerName": "models",
        "resourceGroupName": "rg-test",
        "publicAccess": "None",
    }
    assert account.urn in container.options["dependsOn"]
    assert of_type(run, "RoleAssignment") == [], "nobody can read until grant_read is called"


def test_outputs_name_the_account_container_and_scope():
    store, run, _ = build_store()
    assert (store.account_name, store.container_name) == ("gpumodels01", "models")
    assert run.outputs["account_id"] == "<computed:models-account.id>"
    assert run.outputs["container_scope"] == "<computed:models-account.id>/blobServices/default/containers/models"
    assert run.outputs["blob_endpoint"] == "<computed:models-account.blob>"


def test_standard_sku_uses_a_general_purpose_v2_account():
    _, run, _ = build_store(sku="Standard_LRS", container="weights-v2")
    account = one(run, "storage:StorageAccount").inputs
    assert (account["sku"], account["kind"]) == ({"name": "Standard_LRS"}, "StorageV2")
    assert account["allowSharedKeyAccess"] is False
    assert one(run, "storage:BlobContainer").inputs["containerName"] == "weights-v2"


def test_grant_read_is_blob_data_reader_on_the_container_only():
    _, run, _ = build_store(grant=True)
    grant = one(run, "authorization:RoleAssignment")
    assert grant.name == "vllm-models-read"
    assert grant.parent == one(run, "aks-gpu:index:WorkloadIdentity").urn
    assert grant.inputs == {
        "scope": "<computed:models-account.id>/blobServices/default/containers/models",
        "principalId": "<computed:vllm-identity.principalId>",
        "principalType": "ServicePrincipal",
        "roleDefinitionId": READER_ROLE_ID,
    }
    assert one(run, "storage:BlobContainer").urn in grant.options["dependsOn"]


def test_existing_account_creates_only_the_role_assignment():
    _, run, mocks = build_store(grant=True, create=False, location=None)
    assert of_type(run, "storage:StorageAccount") == [] and of_type(run, "storage:BlobContainer") == []
    azure = [r.type for r in run.resources if r.type.startswith("azure-native:")]
    assert sorted(azure) == [
        "azure-native:authorization:RoleAssignment",
        "azure-native:managedidentity:FederatedIdentityCredential",
        "azure-native:managedidentity:UserAssignedIdentity",
    ]
    account_id = (
        "/subscriptions/<computed:subscriptionId>/resourceGroups/rg-test/providers/Microsoft.Storage/storageAccounts/gpumodels01"
    )
    grant = one(run, "authorization:RoleAssignment").inputs
    assert grant["scope"] == f"{account_id}/blobServices/default/containers/models"
    assert grant["roleDefinitionId"] == READER_ROLE_ID and grant["principalType"] == "ServicePrincipal"
    assert run.outputs["account_id"] == account_id
    assert run.outputs["blob_endpoint"] == "https://gpumodels01.blob.core.windows.net/"
    lookups = [args for token, args in mocks.calls if token == "azure-native:storage:getStorageAccount"]
    assert lookups == [{"accountName": "gpumodels01", "resourceGroupName": "rg-test"}]


@pytest.mark.parametrize(
    "args, expected",
    [
        ({"account_name": "GpuModels"}, "account_name='GpuModels': Azure storage account names are 3-24 characters"),
        ({"account_name": "gpu-models"}, "account_name='gpu-models': Azure storage account names"),
        ({"account_name": "ab"}, "account_name='ab'"),
        ({"account_name": "a" * 25}, "lowercase letters and digits only"),
        ({"container": "Models"}, "container='Models': Azure blob container names are 3-63"),
        ({"container": "ab"}, "container='ab': Azure blob container names"),
        ({"container": "a--b"}, "without consecutive hyphens"),
        ({"container": "-models"}, "container='-models'"),
        ({"container": "models-"}, "container='models-'"),
        ({"container": "$web"}, "container='$web'"),
        ({"container": "m" * 64}, "Azure blob container names are 3-63"),
        ({"sku": "Premium_ZRS"}, "sku='Premium_ZRS': Input should be 'Premium_LRS' or 'Standard_LRS'"),
        ({"create": "maybe"}, "create='maybe'"),
    ],
)
def test_bad_store_input_is_refused_before_anything_is_created(args, expected):
    def program():
        ModelStore("models", {"account_name": "gpumodels01", **args}, scope=AzureScope("rg", "eastus"))

    assert registered_before_error(program, ComponentInputError) == []
    with pytest.raises(ComponentInputError, match="ModelStore 'models': invalid arguments") as caught:
        run_components(program)
    assert expected in str(caught.value)


def test_new_account_needs_a_location():
    def program():
        ModelStore("models", {"account_name": "gpumodels01"}, scope=AzureScope("rg", None))

    assert registered_before_error(program, ComponentInputError) == []
    with pytest.raises(ComponentInputError, match=r"scope\.location=None: required to create a storage account"):
        run_components(program)


def test_store_problems_need_a_region_only_for_a_new_account():
    (problem,) = store_problems(ModelStoreArgs(account_name="gpumodels01"), AzureScope("rg", None))
    assert str(problem) == "scope.location=None: required to create a storage account (or set create=False to use one)"
    assert store_problems(ModelStoreArgs(account_name="gpumodels01", create=False), AzureScope("rg", None)) == []
    assert store_problems(ModelStoreArgs(account_name="gpumodels01"), AzureScope("rg", "eastus")) == []


@pytest.mark.parametrize(
    "path",
    ["llama-3.1-8b", "meta/Llama-3.1-8B-Instruct/model-00001-of-00004.safetensors", "qwen2.5_7b/config.json"],
)
def test_model_uri_names_the_container_and_path(path):
    store, _, _ = build_store(container="weights")
    assert store.model_uri(path) == f"az://weights/{path}"


@pytest.mark.parametrize(
    "path, expected",
    [
        ("", "expected a blob path inside the container"),
        ("/llama", "without a leading '/' or a scheme"),
        ("az://models/llama", "without a leading '/' or a scheme"),
        ("llama//model", "must not be empty, '.' or '..'"),
        ("llama/", "must not be empty, '.' or '..'"),
        ("../other/llama", "must not be empty, '.' or '..'"),
        ("llama/./model", "must not be empty, '.' or '..'"),
        ("llama model", "no whitespace, backslashes or control characters"),
        ("llama\\model", "no whitespace, backslashes or control characters"),
        ("llama\x00", "no whitespace, backslashes or control characters"),
        ("llama./model", "must not end with '.'"),
        ("x" * 1025, "at most 1024 characters"),
        ("/".join(["x"] * 255), "at most 254 path segments"),
    ],
)
def test_model_uri_refuses_paths_that_are_not_blob_names(path, expected):
    store, _, _ = build_store()
    with pytest.raises(ComponentInputError, match="ModelStore 'models': invalid arguments") as caught:
        store.model_uri(path)
    assert expected in str(caught.value)


_SEGMENT = st.from_regex(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,20}[A-Za-z0-9_-]|[A-Za-z0-9_-]", fullmatch=True)


@given(segments=st.lists(_SEGMENT, min_size=1, max_size=6))
def test_model_uri_accepts_every_plain_relative_path(segments):
    path = "/".join(segments)
    assert ModelStore.model_uri(_StubStore(), path) == f"az://models/{path}"


@given(segments=st.lists(_SEGMENT, min_size=2, max_size=6), at=st.integers(min_value=0, max_value=4))
def test_model_uri_refuses_any_empty_segment(segments, at):
    segments.insert(min(at, len(segments) - 1) + 1, "")
    with pytest.raises(ComponentInputError, match="must not be empty"):
        ModelStore.model_uri(_StubStore(), "/".join(segments))


class _StubStore:
    """Just what ``model_uri`` reads, so hypothesis need not run a Pulumi program per example."""

    _name = "models"
    container_name = "models"
