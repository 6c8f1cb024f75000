"""TraceCollector: where the gateway and the router send OpenTelemetry traces.

An in-cluster OpenTelemetry Collector receives OTLP (gRPC 4317) and exports to a workspace-based
Application Insights, so a request can be followed from the gateway through the router to the
model in Azure Monitor. The component takes no key-based ingestion (``DisableLocalAuth``): the
collector signs in with Entra ID through workload identity and holds Monitoring Metrics Publisher
on the component, the role Azure Monitor requires for Entra-authenticated telemetry.
"""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s
import yaml
from pulumi_azure_native import applicationinsights, operationalinsights

from .._base import PACKAGE, Children
from ..azure.workload_identity import WorkloadIdentity
from ..context import ClusterContext
from ..core.security import restricted_container

# The contrib distribution carries the azuremonitor exporter and the azureauth extension
# (open-telemetry/opentelemetry-collector-releases@v0.159.0:distributions/otelcol-contrib/manifest.yaml
# lines 15 and 64); the exporter takes an authenticator from v0.139.0 (contrib PR #41107) and the
# extension custom scopes from 0.132 (PR #41084). The image runs as 10001 (its Dockerfile's USER).
COLLECTOR_IMAGE = "otel/opentelemetry-collector-contrib:0.159.0"
COLLECTOR_UID = 10001
OTLP_PORT = 4317
SERVICE_ACCOUNT = "otel-collector"
MONITOR_SCOPE = "https://monitor.azure.com/.default"
"""The token audience of Azure Monitor ingestion in the public cloud (azure-monitor app/azure-ad-authentication.md)."""
COLLECTOR_CONFIG = {
    # The workload identity webhook injects these three variables into pods of a federated service account.
    "extensions": {
        "azureauth": {
            "workload_identity": {
                "client_id": "${env:AZURE_CLIENT_ID}",
                "tenant_id": "${env:AZURE_TENANT_ID}",
                "federated_token_file": "${env:AZURE_FEDERATED_TOKEN_FILE}",
            },
            "scopes": [MONITOR_SCOPE],
        }
    },
    "receivers": {"otlp": {"protocols": {"grpc": {"endpoint": f"0.0.0.0:{OTLP_PORT}"}}}},
    "processors": {"batch": {}},
    # The connection string still names the component and its ingestion endpoint; with local auth off
    # it no longer authorizes anything by itself.
    "exporters": {
        "azuremonitor": {
            "connection_string": "${env:APPLICATIONINSIGHTS_CONNECTION_STRING}",
            "auth": {"authenticator": "azureauth"},
        }
    },
    "service": {
        "extensions": ["azureauth"],
        "pipelines": {"traces": {"receivers": ["otlp"], "processors": ["batch"], "exporters": ["azuremonitor"]}},
    },
}


class TraceCollector(pulumi.ComponentResource):
    """Log Analytics + Application Insights, and an OTLP collector in ``namespace`` that ships to them.

    Outputs: ``service``, ``namespace``, ``port`` (the OTLP endpoint) and ``app_insights_id``.
    """

    service: str
    namespace: str
    port: int

    def __init__(
        self,
        name: str,
        namespace: str,
        resource_group_name: pulumi.Input[str],
        location: pulumi.Input[str],
        provider: k8s.Provider,
        opts: pulumi.ResourceOptions | None = None,
        *,
        oidc_issuer_url: pulumi.Input[str],
        kube_name: str | None = None,
        image: str = COLLECTOR_IMAGE,
    ):
        """
        :param name: Logical name of the component; children are named ``<name>-<role>``.
        :param namespace: Namespace of the collector (it must exist; the gateway's namespace).
        :param resource_group_name: Resource group for Log Analytics and Application Insights.
        :param location: Azure region for them.
        :param provider: Kubernetes provider of the cluster.
        :param opts: Standard Pulumi resource options.
        :param oidc_issuer_url: The cluster's OIDC issuer, for the collector's workload identity.
        :param image: The collector image. Default ``COLLECTOR_IMAGE``; pass a private registry's copy.
        :param kube_name: Kubernetes name of its objects. Default ``name``; a parent component passes its
            own child name as ``name`` (unique per parent) and the fixed in-cluster name here.
        """
        kube_name = kube_name or name
        super().__init__(f"{PACKAGE}:index:TraceCollector", name, None, opts)
        azure = pulumi.ResourceOptions(parent=self)
        # Children wait for what the component waits for (the namespace is often created by a sibling).
        on_cluster = Children(self, opts, provider).opts()
        self.service, self.namespace, self.port = kube_name, namespace, OTLP_PORT
        logs = operationalinsights.Workspace(
            f"{name}-logs",
            resource_group_name=resource_group_name,
            location=location,
            sku={"name": "PerGB2018"},
            retention_in_days=30,
            opts=azure,
        )
        insights = applicationinsights.Component(
            f"{name}-insights",
            resource_group_name=resource_group_name,
            location=location,
            kind="web",
            application_type="web",
            workspace_resource_id=logs.id,
            ingestion_mode="LogAnalytics",
            # No instrumentation-key ingestion: only Entra-authenticated callers with the publisher role.
            disable_local_auth=True,
            opts=azure,
        )
        self.app_insights_id = insights.id
        identity = WorkloadIdentity(
            f"{name}-identity",
            {"namespace": namespace, "service_account": SERVICE_ACCOUNT},
            cluster=ClusterContext(
                cluster_name=None, resource_group_name=resource_group_name, location=location, oidc_issuer_url=oidc_issuer_url
            ),
            opts=azure,
        )
        publisher = identity.grant("Monitoring Metrics Publisher", insights.id, "publish")
        account = k8s.core.v1.ServiceAccount(
            f"{name}-service-account",
            metadata={"name": SERVICE_ACCOUNT, "namespace": namespace, "annotations": identity.service_account_annotations},
            opts=on_cluster,
        )
        secret = k8s.core.v1.Secret(
            f"{name}-connection",
            metadata={"name": f"{kube_name}-connection", "namespace": namespace},
            type="Opaque",
            # The connection string no longer authorizes writes, but it stays a secret all the same.
            string_data={"connectionString": pulumi.Output.secret(insights.connection_string)},
            opts=on_cluster,
        )
        config = k8s.core.v1.ConfigMap(
            f"{name}-config",
            metadata={"name": f"{kube_name}-config", "namespace": namespace},
            data={"config.yaml": yaml.safe_dump(COLLECTOR_CONFIG, sort_keys=False)},
            opts=on_cluster,
        )
        labels = {"app.kubernetes.io/name": "otel-collector", "app.kubernetes.io/instance": kube_name}
        k8s.apps.v1.Deployment(
            f"{name}-deployment",
            metadata={"name": kube_name, "namespace": namespace, "labels": labels},
            spec={
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": {**labels, **identity.pod_labels}},
                    "spec": {
                        "serviceAccountName": SERVICE_ACCOUNT,
                        "securityContext": {
                            "runAsNonRoot": True,
                            "runAsUser": COLLECTOR_UID,
                            "seccompProfile": {"type": "RuntimeDefault"},
                        },
                        "containers": [
                            {
                                "name": "collector",
                                "image": image,
                                "args": ["--config=/conf/config.yaml"],
                                "ports": [{"name": "otlp-grpc", "containerPort": OTLP_PORT}],
                                "env": [
                                    {
                                        "name": "APPLICATIONINSIGHTS_CONNECTION_STRING",
                                        "valueFrom": {
                                            "secretKeyRef": {"name": f"{kube_name}-connection", "key": "connectionString"}
                                        },
                                    }
                                ],
                                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}},
                                "securityContext": restricted_container(),
                                "volumeMounts": [{"name": "conf", "mountPath": "/conf", "readOnly": True}],
                            }
                        ],
                        "volumes": [{"name": "conf", "configMap": {"name": f"{kube_name}-config"}}],
                    },
                },
            },
            # The role must exist before the first export, or Azure Monitor answers 403.
            opts=pulumi.ResourceOptions.merge(
                on_cluster, pulumi.ResourceOptions(depends_on=[secret, config, account, publisher])
            ),
        )
        k8s.core.v1.Service(
            f"{name}-service",
            metadata={"name": kube_name, "namespace": namespace, "labels": labels},
            spec={"selector": labels, "ports": [{"name": "otlp-grpc", "port": OTLP_PORT, "targetPort": "otlp-grpc"}]},
            opts=on_cluster,
        )
        self.register_outputs({"service": kube_name, "namespace": namespace, "port": OTLP_PORT})
