import pulumi
import pytest

from aks_gpu_inference.components._base import ComponentInputError
from aks_gpu_inference.components.azure.azure_openai import (
    MODEL_PRICES,
    MODEL_VERSIONS,
    PRICES_SOURCE,
    AzureOpenAI,
    OpenAIDeploymentArgs,
    deployment_problems,
)
from aks_gpu_inference.components.azure.workload_identity import BUILT_IN_ROLES, WorkloadIdentity
from aks_gpu_inference.components.context import AzureScope
from tests.azure_support import run_with_outputs
from tests.conftest import ISSUER, cluster_context, of_type, one, refusal_message, run_components

OPENAI_USER_ROLE_ID = (
    "/subscriptions/<computed:subscriptionId>/providers/Microsoft.Authorization/roleDefinitions/"
    "5e0bd9bd-7b93-4f28-af87-19fc36ad61bd"
)

CHAT = {"name": "chat", "model": "gpt-4.1"}
MINI = {"name": "mini", "model": "gpt-4o-mini", "sku": "DataZoneStandard", "capacity": 200}


def build_openai(grant=False, **args):
    holder = {}

    def program():
        openai = AzureOpenAI("openai", {"account_name": "contoso-openai", **args}, scope=AzureScope("rg-test", "eastus2"))
        if grant:
            identity = WorkloadIdentity(
                "vllm",
                {"namespace": "inference", "service_account": "vllm"},
                cluster=cluster_context(resource_group_name="rg-test", location="eastus", oidc_issuer_url=ISSUER),
            )
            openai.grant_use(identity)
        holder["openai"] = openai
        pulumi.export("endpoint", openai.endpoint)
        pulumi.export("account_id", openai.account_id)

    run, mocks = run_with_outputs(program)
    return holder["openai"], run, [token for token, _ in mocks.calls]


def test_account_is_openai_s0_with_custom_subdomain_and_no_keys_by_default():
    openai, run, _ = build_openai(tags={"team": "ml"})
    component = one(run, "aks-gpu:index:AzureOpenAI")
    account = one(run, "cognitiveservices:Account")
    assert account.type == "azure-native:cognitiveservices:Account"
    assert account.name == "openai-account" and account.parent == component.urn
    assert account.inputs == {
        "accountName": "contoso-openai",
        "resourceGroupName": "rg-test",
        "location": "eastus2",
        "kind": "OpenAI",
        "sku": {"name": "S0"},
        "properties": {
            "customSubDomainName": "contoso-openai",
            "disableLocalAuth": True,
            "publicNetworkAccess": "Enabled",
        },
        "tags": {"team": "ml"},
    }
    assert openai.api_key_secret_needed is False
    assert of_type(run, "cognitiveservices:Deployment") == []
    assert of_type(run, "RoleAssignment") == [], "nobody can call the account until grant_use is called"


def test_local_auth_is_an_explicit_opt_in_that_asks_for_a_secret():
    openai, run, calls = build_openai(local_auth=True, public_network_access="Disabled")
    properties = one(run, "cognitiveservices:Account").inputs["properties"]
    assert properties["disableLocalAuth"] is False and properties["publicNetworkAccess"] == "Disabled"
    assert openai.api_key_secret_needed is True
    assert [token for token in calls if "cognitiveservices" in token] == [], "keys are never read here"


def test_deployments_pin_model_version_sku_and_capacity_one_at_a_time():
    _, run, _ = build_openai(deployments=[CHAT, MINI])
    component = one(run, "aks-gpu:index:AzureOpenAI")
    account = one(run, "cognitiveservices:Account")
    chat, mini = of_type(run, "cognitiveservices:Deployment")
    assert (chat.name, mini.name) == ("openai-deployment-chat", "openai-deployment-mini")
    assert chat.parent == component.urn and mini.parent == component.urn
    assert chat.inputs == {
        "accountName": "contoso-openai",
        "resourceGroupName": "rg-test",
        "deploymentName": "chat",
        "properties": {
            "model": {"format": "OpenAI", "name": "gpt-4.1", "version": "2025-04-14"},
            "versionUpgradeOption": "OnceCurrentVersionExpired",
        },
        "sku": {"name": "GlobalStandard", "capacity": 50},
    }
    assert mini.inputs["properties"]["model"] == {"format": "OpenAI", "name": "gpt-4o-mini", "version": "2024-07-18"}
    assert mini.inputs["sku"] == {"name": "DataZoneStandard", "capacity": 200}
    assert chat.options["dependsOn"] == [account.urn]
    assert mini.options["dependsOn"] == [chat.urn], "Azure refuses concurrent deployment writes on one account"


def test_explicit_version_and_upgrade_option_are_passed_through():
    _, run, _ = build_openai(
        deployments=[{"name": "gpt4o", "model": "gpt-4o", "version": "2024-08-06", "version_upgrade_option": "NoAutoUpgrade"}]
    )
    properties = one(run, "cognitiveservices:Deployment").inputs["properties"]
    assert properties == {
        "model": {"format": "OpenAI", "name": "gpt-4o", "version": "2024-08-06"},
        "versionUpgradeOption": "NoAutoUpgrade",
    }


def test_outputs_endpoint_account_deployments_and_prices():
    unknown = {"name": "embed", "model": "text-embedding-3-large", "version": "1", "prompt_per_1m": 0.13, "completion_per_1m": 0}
    cheap_chat = {**CHAT, "name": "chat-dz", "prompt_per_1m": 2.2}
    openai, run, _ = build_openai(deployments=[CHAT, MINI, unknown, cheap_chat])
    assert run.outputs["endpoint"] == "https://contoso-openai.openai.azure.com/"
    assert run.outputs["account_id"] == "<computed:openai-account.id>"
    assert openai.account_name == "contoso-openai"
    assert openai.deployments == {
        "chat": "gpt-4.1",
        "mini": "gpt-4o-mini",
        "embed": "text-embedding-3-large",
        "chat-dz": "gpt-4.1",
    }
    assert openai.prices == {
        "chat": (2.00, 8.00),
        "mini": (0.15, 0.60),
        "embed": (0.13, 0.0),
        "chat-dz": (2.2, 8.00),
    }


def test_price_table_is_dated_marked_unverified_and_covers_the_default_versions():
    assert "collected 2026-11" in PRICES_SOURCE
    assert "UNVERIFIED" in PRICES_SOURCE and "third-party" in PRICES_SOURCE
    assert MODEL_PRICES == {
        "gpt-5.5": (5.00, 30.00),
        "gpt-4o": (2.50, 10.00),
        "gpt-4.1": (2.00, 8.00),
        "gpt-4o-mini": (0.15, 0.60),
    }
    assert MODEL_VERSIONS == {
        "gpt-5.5": "2026-04-24",
        "gpt-4o": "2024-11-20",
        "gpt-4.1": "2025-04-14",
        "gpt-4o-mini": "2024-07-18",
    }


def test_default_versions_are_in_the_lifecycle_table_and_the_recommended_one_is_a_default():
    """Before: the defaults were versions the issue reported retired; now each is dated in the table."""
    from datetime import date

    from aks_gpu_inference.components.core import lifecycle

    today = date(2026, 12, 1)
    for model, version in MODEL_VERSIONS.items():
        row = lifecycle.model_status(model, version, today)
        assert row is not None, f"{model}@{version} is not in components/core/lifecycle.json"
        assert row.state != "retired", f"{model}@{version} is retired on {today}"
    recommended = lifecycle.recommendations()["frontier_model"]
    assert MODEL_VERSIONS[recommended["model"]] == recommended["version"]
    assert lifecycle.model_status("gpt-4.1", "2025-04-14", date(2027, 4, 14)).state == "retired"


def test_grant_use_is_openai_user_on_the_account():
    _, run, _ = build_openai(grant=True, deployments=[CHAT])
    assert BUILT_IN_ROLES["Cognitive Services OpenAI User"] == "5e0bd9bd-7b93-4f28-af87-19fc36ad61bd"
    grant = one(run, "authorization:RoleAssignment")
    assert grant.name == "vllm-openai-use"
    assert grant.parent == one(run, "aks-gpu:index:WorkloadIdentity").urn
    assert grant.inputs == {
        "scope": "<computed:openai-account.id>",
        "principalId": "<computed:vllm-identity.principalId>",
        "principalType": "ServicePrincipal",
        "roleDefinitionId": OPENAI_USER_ROLE_ID,
    }
    assert one(run, "cognitiveservices:Account").urn in grant.options["dependsOn"]


def _leaked(resource_type: str) -> bool:
    return resource_type.startswith("azure-native:cognitiveservices:")


@pytest.mark.parametrize(
    "args, expected",
    [
        ({"account_name": "a"}, "account_name='a': Azure OpenAI account names (also the custom subdomain) are 2-63"),
        ({"account_name": "-openai"}, "account_name='-openai'"),
        ({"account_name": "openai-"}, "account_name='openai-'"),
        ({"account_name": "open_ai"}, "account_name='open_ai'"),
        ({"account_name": "a" * 64}, "are 2-63 letters, digits or '-'"),
        ({"local_auth": "sometimes"}, "local_auth='sometimes'"),
        ({"public_network_access": "Private"}, "public_network_access='Private': Input should be 'Enabled' or 'Disabled'"),
        ({"deployments": [CHAT, {**MINI, "name": "Chat"}]}, "deployments=['Chat']: deployment names must be unique"),
        ({"deployments": [{**CHAT, "capacity": 0}]}, "deployments[0].capacity=0: Input should be greater than or equal to 1"),
        ({"deployments": [{**CHAT, "capacity": -5}]}, "deployments[0].capacity=-5"),
        ({"deployments": [{**CHAT, "capacity": 1.5}]}, "deployments[0].capacity=1.5"),
        ({"deployments": [{**CHAT, "sku": "ProvisionedManaged"}]}, "deployments[0].sku='ProvisionedManaged'"),
        ({"deployments": [{**CHAT, "name": "my chat"}]}, "deployments[0].name='my chat': deployment names are 1-64"),
        ({"deployments": [{**CHAT, "prompt_per_1m": -1}]}, "deployments[0].prompt_per_1m=-1"),
        (
            {"deployments": [{"name": "o3", "model": "o3", "version": "2025-04-16"}]},
            "deployments[0].prompt_per_1m=None: no known price for model 'o3'",
        ),
        (
            {"deployments": [{"name": "o3", "model": "o3", "version": "2025-04-16", "prompt_per_1m": 2.0}]},
            "deployments[0].completion_per_1m=None: no known price for model 'o3'",
        ),
        (
            {"deployments": [{"name": "o3", "model": "o3", "prompt_per_1m": 2.0, "completion_per_1m": 8.0}]},
            "deployments[0].version=None: no default version for model 'o3'",
        ),
        ({"deployments": [{"name": "chat"}]}, "deployments[0].model: required key is missing"),
        ({"deployments": [{**CHAT, "region": "eastus"}]}, "deployments[0].region='eastus': unknown key"),
    ],
)
def test_bad_input_is_refused_before_anything_is_created(args, expected):
    def program():
        AzureOpenAI("openai", {"account_name": "contoso-openai", **args}, scope=AzureScope("rg", "eastus2"))

    message = refusal_message(program, "AzureOpenAI", "openai", _leaked)
    assert expected in message


def test_refusal_explains_how_to_supply_prices():
    def program():
        AzureOpenAI(
            "openai",
            {"account_name": "contoso-openai", "deployments": [{"name": "o3", "model": "o3", "version": "2025-04-16"}]},
            scope=AzureScope("rg", "eastus2"),
        )

    with pytest.raises(ComponentInputError) as caught:
        run_components(program)
    assert "set prompt_per_1m and completion_per_1m in USD per 1M tokens" in str(caught.value)
    assert "gpt-4.1, gpt-4o, gpt-4o-mini, gpt-5.5" in str(caught.value)


def test_deployment_problems_name_every_missing_fact_at_once():
    unknown = OpenAIDeploymentArgs.model_construct(
        name="o3", model="o3", version=None, prompt_per_1m=None, completion_per_1m=None
    )
    assert [p.field for p in deployment_problems(unknown)] == ["version", "prompt_per_1m", "completion_per_1m"]
    assert deployment_problems(OpenAIDeploymentArgs(name="chat", model="gpt-4.1")) == []
    with pytest.raises(ComponentInputError) as caught:
        run_components(
            lambda: AzureOpenAI(
                "openai",
                {"account_name": "contoso-openai", "deployments": [{"name": "o3", "model": "o3"}]},
                scope=AzureScope("rg", "eastus2"),
            )
        )
    message = str(caught.value)
    for field in ("version", "prompt_per_1m", "completion_per_1m"):
        assert f"deployments[0].{field}=None" in message
