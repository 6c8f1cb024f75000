"""TraceCollector: where the gateway and the router send OpenTelemetry traces.

An in-cluster OpenTelemetry Collector receives OTLP (gRPC 4317) and exports to a workspace-based
Application Insights, so a request can be followed from the gateway through the router to the
model in Azure Monitor.
"""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s
import yaml
from pulumi_azure_native import applicationinsights, operationalinsights

from ._base import PACKAGE, Children, restricted_container

# The contrib distribution carries the azuremonitor exporter; it reads the Application Insights
# connection string (opentelemetry-collector-contrib exporter/azuremonitorexporter README).
COLLECTOR_IMAGE = "otel/opentelemetry-collector-contrib:0.115.1"
OTLP_PORT = 4317
COLLECTOR_CONFIG = {
    "receivers": {"otlp": {"protocols": {"grpc": {"endpoint": f"0.0.0.0:{OTLP_PORT}"}}}},
    "processors": {"batch": {}},
    "exporters": {"azuremonitor": {"connection_string": "${env:APPLICATIONINSIGHTS_CONNECTION_STRING}"}},
    "service": {"pipelines": {"traces": {"receivers": ["otlp"], "processors": ["batch"], "exporters": ["azuremonitor"]}}},
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
        kube_name: str | None = None,
    ):
        """
        :param name: Logical name of the component; children are named ``<name>-<role>``.
        :param namespace: Namespace of the collector (it must exist; the gateway's namespace).
        :param resource_group_name: Resource group for Log Analytics and Application Insights.
        :param location: Azure region for them.
        :param provider: Kubernetes provider of the cluster.
        :param opts: Standard Pulumi resource options.
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
            opts=azure,
        )
        self.app_insights_id = insights.id
        secret = k8s.core.v1.Secret(
            f"{name}-connection",
            metadata={"name": f"{kube_name}-connection", "namespace": namespace},
            type="Opaque",
            # The connection string only allows writing telemetry, but it stays a secret all the same.
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
                    "metadata": {"labels": labels},
                    "spec": {
                        "securityContext": {
                            "runAsNonRoot": True,
                            "runAsUser": 10001,
                            "seccompProfile": {"type": "RuntimeDefault"},
                        },
                        "containers": [
                            {
                                "name": "collector",
                                "image": COLLECTOR_IMAGE,
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
            opts=pulumi.ResourceOptions.merge(on_cluster, pulumi.ResourceOptions(depends_on=[secret, config])),
        )
        k8s.core.v1.Service(
            f"{name}-service",
            metadata={"name": kube_name, "namespace": namespace, "labels": labels},
            spec={"selector": labels, "ports": [{"name": "otlp-grpc", "port": OTLP_PORT, "targetPort": "otlp-grpc"}]},
            opts=on_cluster,
        )
        self.register_outputs({"service": kube_name, "namespace": namespace, "port": OTLP_PORT})
