"""TraceCollector: the OTLP collector and its Application Insights, and the order its objects wait in."""

import kubernetes_validate
import pulumi
import pulumi_kubernetes as k8s
import pytest
import yaml

from aks_gpu_inference.components._base import ComponentInputError, validate_args
from aks_gpu_inference.components.azure.workload_identity import WorkloadIdentity
from aks_gpu_inference.components.core import pins
from aks_gpu_inference.components.gateway.token_refresher import EntraTokenRefresher
from aks_gpu_inference.components.gateway.tracing import OTLP_PORT, TraceCollector, TraceCollectorArgs
from aks_gpu_inference.planner.engine.values import kubernetes_object
from tests.conftest import cluster_context, of_type, one, refusal_message, run_components


def build(with_refresher: bool = False):
    def program():
        provider = k8s.Provider("k8s", kubeconfig="x")
        namespace = k8s.core.v1.Namespace(
            "gateway-ns", metadata={"name": "ai-gateway"}, opts=pulumi.ResourceOptions(provider=provider)
        )
        after = pulumi.ResourceOptions(depends_on=[namespace])
        cluster = cluster_context(
            resource_group_name="rg", location="eastus", oidc_issuer_url="https://issuer", provider=provider
        )
        TraceCollector("otel-collector", {"namespace": "ai-gateway"}, opts=after, cluster=cluster)
        if with_refresher:
            identity = WorkloadIdentity(
                "refresher-identity", {"namespace": "ai-gateway", "service_account": "aoai-token"}, cluster=cluster
            )
            EntraTokenRefresher(
                "aoai-token",
                {"namespace": "ai-gateway", "secret_names": ["aoai-entra-token"]},
                pulumi.ResourceOptions(depends_on=[namespace], provider=provider),
                identity=identity,
            )

    return run_components(program)


def test_collector_receives_otlp_and_exports_to_workspace_based_app_insights():
    run = build()
    assert one(run, "operationalinsights:Workspace").inputs["sku"] == {"name": "PerGB2018"}
    insights = one(run, "applicationinsights:Component")
    assert insights.inputs["ingestionMode"] == "LogAnalytics" and insights.inputs["applicationType"] == "web"
    assert insights.inputs["workspaceResourceId"] == "<computed:otel-collector-logs.id>"
    config = yaml.safe_load(one(run, "core/v1:ConfigMap").inputs["data"]["config.yaml"])
    assert config["receivers"]["otlp"]["protocols"]["grpc"]["endpoint"] == f"0.0.0.0:{OTLP_PORT}"
    assert config["service"]["pipelines"]["traces"] == {
        "receivers": ["otlp"],
        "processors": ["batch"],
        "exporters": ["azuremonitor"],
    }
    assert config["exporters"]["azuremonitor"]["connection_string"] == "${env:APPLICATIONINSIGHTS_CONNECTION_STRING}"
    service = one(run, "core/v1:Service")
    assert service.inputs["spec"]["ports"] == [{"name": "otlp-grpc", "port": OTLP_PORT, "targetPort": "otlp-grpc"}]


def test_app_insights_takes_only_entra_authenticated_telemetry():
    """Before: the component allowed key-based ingestion (anyone holding the connection string could write)."""
    run = build()
    assert one(run, "applicationinsights:Component").inputs["disableLocalAuth"] is True
    config = yaml.safe_load(one(run, "core/v1:ConfigMap").inputs["data"]["config.yaml"])
    assert config["exporters"]["azuremonitor"]["auth"] == {"authenticator": "azureauth"}
    assert config["extensions"]["azureauth"]["scopes"] == ["https://monitor.azure.com/.default"]
    assert set(config["extensions"]["azureauth"]["workload_identity"]) == {"client_id", "tenant_id", "federated_token_file"}
    assert config["service"]["extensions"] == ["azureauth"]
    grant = one(run, "authorization:RoleAssignment").inputs
    assert grant["scope"] == "<computed:otel-collector-insights.id>"
    assert grant["roleDefinitionId"].endswith("/roleDefinitions/3913510d-42f4-4e42-8a64-420c390055eb"), (
        "Monitoring Metrics Publisher"
    )
    pod = one(run, "apps/v1:Deployment").inputs["spec"]["template"]
    assert pod["spec"]["serviceAccountName"] == "otel-collector"
    assert pod["metadata"]["labels"]["azure.workload.identity/use"] == "true"
    assert pod["spec"]["containers"][0]["image"] == pins.image("otel-collector")


def test_connection_string_stays_a_secret_and_the_pod_is_restricted():
    run = build()
    secret = one(run, "core/v1:Secret")
    assert secret.inputs["stringData"] == {"connectionString": "<secret>"}, (
        "the connection string is a Pulumi secret, masked in every record"
    )
    deployment = one(run, "apps/v1:Deployment")
    pod = deployment.inputs["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["env"][0]["valueFrom"] == {"secretKeyRef": {"name": "otel-collector-connection", "key": "connectionString"}}
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]} and pod["securityContext"]["runAsNonRoot"]
    assert not container["securityContext"].get("privileged")
    for resource in run.resources:
        if resource.is_kubernetes and resource.type != "kubernetes:core/v1:Namespace":
            kubernetes_validate.validate(kubernetes_object(resource), "1.35", strict=True)


def test_objects_in_a_namespace_made_elsewhere_wait_for_it():
    """Children do not inherit their component's depends_on; the components pass it on so that
    nothing lands in the gateway's namespace before it exists."""
    run = build(with_refresher=True)
    namespace = one(run, "core/v1:Namespace").urn
    in_gateway_namespace = [
        r for r in run.resources if r.is_kubernetes and r.custom and r.inputs.get("metadata", {}).get("namespace") == "ai-gateway"
    ]
    assert len(in_gateway_namespace) >= 9
    for resource in in_gateway_namespace:
        assert namespace in resource.options.get("dependsOn", []), resource.name
    assert namespace not in one(run, "operationalinsights:Workspace").options.get("dependsOn", [])
    assert len(of_type(run, "batch/v1:CronJob")) == 1


def test_a_collector_without_the_clusters_issuer_is_refused_before_anything_exists():
    def program():
        TraceCollector("otel-collector", {"namespace": "ai-gateway"}, cluster=cluster_context(oidc_issuer_url=None))

    message = refusal_message(program, "TraceCollector", "otel-collector", lambda t: not t.startswith("pulumi:"))
    assert "cluster.oidc_issuer_url=None: required by this component" in message


@pytest.mark.parametrize(
    "change, expected",
    [
        (
            {"image": "otel/opentelemetry-collector-contrib:latest"},
            "pin the image to a version tag or digest: it uses the latest",
        ),
        ({"kube_name": "OTel"}, "kube_name='OTel'"),
        ({}, "namespace: required key is missing"),
    ],
)
def test_bad_collector_args_are_refused(change, expected):
    args = {"namespace": "ai-gateway", **change} if change else {}
    with pytest.raises(ComponentInputError) as caught:
        validate_args(TraceCollectorArgs, args, "TraceCollector", "otel-collector")
    assert expected in str(caught.value)
