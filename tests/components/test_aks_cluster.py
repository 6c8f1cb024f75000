import base64

import pytest
import yaml

from aks_gpu_inference.components import AksCluster, AksClusterArgs
from aks_gpu_inference.components._base import ComponentInputError
from aks_gpu_inference.components.azure.aks_cluster import AKS_RBAC_CLUSTER_ADMIN_ROLE, cluster_problems
from aks_gpu_inference.components.azure.kubeconfig import kubeconfig_for_login
from aks_gpu_inference.components.context import AzureScope
from aks_gpu_inference.planner.engine.program import SECRET
from tests.conftest import of_type, one, registered_before_error, run_components


def build_cluster(**args):
    holder = {}

    def program():
        holder["cluster"] = AksCluster("aks", {"name": "aks-test", **args}, scope=AzureScope("rg-test", "eastus"))

    run = run_components(program)
    return holder["cluster"], run


def test_defaults_are_the_safe_path():
    _, run = build_cluster()
    cluster = one(run, "containerservice:ManagedCluster").inputs
    assert cluster["resourceName"] == "aks-test" and cluster["location"] == "eastus"
    assert cluster["autoUpgradeProfile"] == {"nodeOSUpgradeChannel": "NodeImage", "upgradeChannel": "patch"}
    assert cluster["kubernetesVersion"] == "1.35", "AKS ended 1.34 support on 2026-11-30"
    assert cluster["sku"] == {"name": "Base", "tier": "Standard"}
    assert cluster["oidcIssuerProfile"] == {"enabled": True}
    assert cluster["securityProfile"] == {"workloadIdentity": {"enabled": True}}
    assert cluster["aadProfile"]["managed"] and cluster["aadProfile"]["enableAzureRBAC"]
    assert cluster["disableLocalAccounts"] is True
    assert cluster["azureMonitorProfile"]["metrics"]["enabled"] is True
    assert "aiToolchainOperatorProfile" not in cluster
    (system,) = cluster["agentPoolProfiles"]
    assert (system["mode"], system["name"], system["count"]) == ("System", "system", 2)
    assert "scaleSetPriority" not in system
    assert one(run, "containerservice:ManagedCluster").options["ignoreChanges"] == ["agentPoolProfiles"]


def test_deployer_gets_cluster_admin_and_provider_waits_for_it():
    _, run = build_cluster()
    grant = one(run, "authorization:RoleAssignment")
    assert grant.inputs["roleDefinitionId"].endswith(f"/roleDefinitions/{AKS_RBAC_CLUSTER_ADMIN_ROLE}")
    assert grant.inputs["scope"] == "<computed:aks-aks.id>"
    assert grant.inputs["principalType"] == "User"
    provider = one(run, "pulumi:providers:kubernetes")
    assert grant.urn in provider.options["dependsOn"]
    assert provider.inputs["kubeconfig"] == SECRET, "the kubeconfig is a secret and never written out"
    assert provider.inputs["enableServerSideApply"] == "true"


def test_ci_service_principal_gets_a_matching_principal_type():
    _, run = build_cluster(deployer_principal_type="ServicePrincipal")
    assert one(run, "authorization:RoleAssignment").inputs["principalType"] == "ServicePrincipal"


def test_kaito_and_tier_and_channels_are_configurable():
    _, run = build_cluster(
        kaito=True, tier="Premium", upgrade_channel="stable", node_os_upgrade_channel="SecurityPatch", grant_deployer_admin=False
    )
    cluster = one(run, "containerservice:ManagedCluster").inputs
    assert cluster["aiToolchainOperatorProfile"] == {"enabled": True}
    assert cluster["sku"]["tier"] == "Premium"
    assert cluster["autoUpgradeProfile"] == {"nodeOSUpgradeChannel": "SecurityPatch", "upgradeChannel": "stable"}
    assert of_type(run, "RoleAssignment") == []


def test_without_a_maintenance_window_aks_upgrades_whenever_it_releases():
    _, run = build_cluster()
    assert of_type(run, "MaintenanceConfiguration") == []


def test_a_maintenance_window_gates_both_upgrade_channels():
    """AKS planned maintenance (API 2025-09-01): the configuration's name says what it gates; one weekly window for the
    cluster upgrade channel and one for node image upgrades, with the run's days blacked out."""
    window = {
        "day_of_week": "Saturday",
        "start_time": "22:00",
        "duration_hours": 6,
        "utc_offset": "+01:00",
        "not_allowed": [{"start": "2026-12-14", "end": "2026-12-16"}],
    }
    _, run = build_cluster(maintenance_window=window)
    configs = {r.inputs["configName"]: r for r in of_type(run, "containerservice:MaintenanceConfiguration")}
    assert set(configs) == {"aksManagedAutoUpgradeSchedule", "aksManagedNodeOSUpgradeSchedule"}
    for config in configs.values():
        assert config.inputs["resourceName"] == "aks-test" and config.inputs["resourceGroupName"] == "rg-test"
        assert config.inputs["maintenanceWindow"] == {
            "schedule": {"weekly": {"dayOfWeek": "Saturday", "intervalWeeks": 1}},
            "durationHours": 6,
            "startTime": "22:00",
            "utcOffset": "+01:00",
            "notAllowedDates": [{"start": "2026-12-14", "end": "2026-12-16"}],
        }
        assert config.parent == one(run, "aks-gpu:index:AksCluster").urn


def test_a_channel_that_upgrades_nothing_gets_no_window():
    _, run = build_cluster(maintenance_window={}, upgrade_channel="none", node_os_upgrade_channel="None")
    assert of_type(run, "MaintenanceConfiguration") == []
    _, run = build_cluster(maintenance_window={}, upgrade_channel="none")
    assert [r.inputs["configName"] for r in of_type(run, "MaintenanceConfiguration")] == ["aksManagedNodeOSUpgradeSchedule"]


@pytest.mark.parametrize(
    "window, expected",
    [
        ({"duration_hours": 3}, "maintenance_window.duration_hours=3: Input should be greater than or equal to 4"),
        ({"start_time": "24:00"}, "maintenance_window.start_time='24:00'"),
        ({"utc_offset": "5:30"}, "maintenance_window.utc_offset='5:30'"),
    ],
)
def test_a_window_aks_would_refuse_is_refused_here(window, expected):
    with pytest.raises(ComponentInputError, match="AksCluster 'aks': invalid arguments") as caught:
        build_cluster(maintenance_window=window)
    assert expected in str(caught.value)


def test_existing_cluster_creates_no_cluster():
    cluster, run = build_cluster(existing={"name": "prod-aks", "resource_group": "rg-prod"})
    assert of_type(run, "ManagedCluster") == [] and of_type(run, "RoleAssignment") == []
    assert len(of_type(run, "pulumi:providers:kubernetes")) == 1
    assert cluster.managed_cluster is None and cluster.kubernetes_version is None


@pytest.mark.parametrize(
    "args, expected",
    [
        ({"name": "-bad"}, "name='-bad': AKS cluster names are 1-63 letters"),
        ({"system_pool": {"spot": True}}, "system_pool.spot=True: AKS system pools cannot use Spot VMs"),
        ({"system_pool": {"count": 0}}, "system_pool.count=0: Input should be greater than or equal to 1"),
        (
            {"node_os_upgrade_channel": "Weekly"},
            "node_os_upgrade_channel='Weekly': Input should be 'NodeImage', 'SecurityPatch', 'Unmanaged' or 'None'",
        ),
        ({"kubernetes_version": "1.34.x"}, "kubernetes_version='1.34.x'"),
        ({"admin_group_object_ids": ["admins"]}, "'admins' is not an Entra ID object ID"),
    ],
)
def test_bad_cluster_input_is_refused_before_anything_is_created(args, expected):
    def program():
        AksCluster("aks", {"name": "aks-test", **args}, scope=AzureScope("rg", "eastus"))

    assert registered_before_error(program, ComponentInputError) == []
    with pytest.raises(ComponentInputError, match="AksCluster 'aks': invalid arguments") as caught:
        run_components(program)
    assert expected in str(caught.value)


def test_a_new_cluster_needs_a_scope():
    (problem,) = cluster_problems(AksClusterArgs(name="aks-test"), None)
    assert str(problem) == "scope=None: required to create a cluster (or set existing= to use one)"
    existing = AksClusterArgs(name="aks-test", existing={"name": "prod-aks", "resource_group": "rg-prod"})
    assert cluster_problems(existing, None) == []
    assert cluster_problems(AksClusterArgs(name="aks-test"), AzureScope("rg", "eastus")) == []

    def program():
        AksCluster("aks", {"name": "aks-test"})

    assert registered_before_error(program, ComponentInputError) == []


def test_kubeconfig_login_mode_is_rewritten_for_unattended_runs():
    kubeconfig = {
        "users": [
            {
                "name": "u",
                "user": {"exec": {"command": "kubelogin", "args": ["get-token", "--login", "devicecode", "--server-id", "x"]}},
            }
        ]
    }
    encoded = base64.b64encode(yaml.safe_dump(kubeconfig).encode()).decode()
    rewritten = yaml.safe_load(kubeconfig_for_login(encoded, "azurecli"))
    assert rewritten["users"][0]["user"]["exec"]["args"] == ["get-token", "--login", "azurecli", "--server-id", "x"]
    kubeconfig["users"][0]["user"]["exec"]["args"] = ["get-token"]
    encoded = base64.b64encode(yaml.safe_dump(kubeconfig).encode()).decode()
    assert yaml.safe_load(kubeconfig_for_login(encoded, "workloadidentity"))["users"][0]["user"]["exec"]["args"][-2:] == [
        "--login",
        "workloadidentity",
    ]
