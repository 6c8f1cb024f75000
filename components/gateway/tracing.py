"""TraceCollector: where the gateway and the router send OpenTelemetry traces.

An in-cluster OpenTelemetry Collector receives OTLP (gRPC 4317) and exports to a workspace-based
Application Insights, so a request can be followed from the gateway through the router to the
model in Azure Monitor. The component takes no key-based ingestion (``DisableLocalAuth``): the
collector signs in with Entra ID through workload identity and holds Monitoring Metrics Publisher
on the component, the role Azure Monitor requires for Entra-authenticated telemetry.
"""

from __future__ import annotations

from typing import Annotated, Any

import pulumi
import pulumi_kubernetes as k8s
import yaml
from pulumi_azure_native import applicationinsights, operationalinsights
from pydantic import AfterValidator, Field

from .._base import PACKAGE, Children, StrictModel, kubernetes_provider, validate_args
from ..azure.workload_identity import WorkloadIdentity
from ..context import ClusterContext
from ..core import pins
from ..core.images import require_pinned
from ..core.names import DNS_LABEL
from ..core.security import restricted_container, restricted_pod

# The contrib distribution carries the azuremonitor exporter and the azureauth extension
# (open-telemetry/opentelemetry-collector-releases@v0.159.0:distributions/otelcol-contrib/manifest.yaml
# lines 15 and 64); the exporter takes an authenticator from v0.139.0 (contrib PR #41107) and the
# extension custom scopes from 0.132 (PR #41084). The image runs as 10001 (its Dockerfile's USER).
COLLECTOR_IMAGE = pins.image("otel-collector")
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


class TraceCollectorArgs(StrictModel):
    """Where the collector runs and what it runs."""

    namespace: str = Field(pattern=DNS_LABEL.pattern)
    """Namespace of the collector (it must exist; the gateway's namespace). Required."""

    kube_name: str | None = Field(None, pattern=DNS_LABEL.pattern)
    """Kubernetes name of its objects (the OTLP Service is ``<kube_name>.<namespace>``). Default: the
    component's name; a parent component passes its own child name as ``name`` (unique per parent) and
    the fixed in-cluster name here."""

    image: Annotated[str, AfterValidator(require_pinned)] = COLLECTOR_IMAGE
    """The collector image, pinned. Default ``COLLECTOR_IMAGE``; pass a private registry's copy."""


def collector_deployment(args: TraceCollectorArgs, kube_name: str, pod_labels: dict[str, str]) -> dict[str, Any]:
    """``metadata`` and ``spec`` of the collector: one replica as the federated service account, the
    connection string from its Secret, the config from its ConfigMap."""
    labels = collector_labels(kube_name)
    container = {
        "name": "collector",
        "image": args.image,
        "args": ["--config=/conf/config.yaml"],
        "ports": [{"name": "otlp-grpc", "containerPort": OTLP_PORT}],
        "env": [
            {
                "name": "APPLICATIONINSIGHTS_CONNECTION_STRING",
                "valueFrom": {"secretKeyRef": {"name": f"{kube_name}-connection", "key": "connectionString"}},
            }
        ],
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}},
        "securityContext": restricted_container(),
        "volumeMounts": [{"name": "conf", "mountPath": "/conf", "readOnly": True}],
    }
    return {
        "metadata": {"name": kube_name, "namespace": args.namespace, "labels": labels},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": {**labels, **pod_labels}},
                "spec": {
                    "serviceAccountName": SERVICE_ACCOUNT,
                    "securityContext": restricted_pod(COLLECTOR_UID, group=False, fs_group=False),
                    "containers": [container],
                    "volumes": [{"name": "conf", "configMap": {"name": f"{kube_name}-config"}}],
                },
            },
        },
    }


def collector_labels(kube_name: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": "otel-collector", "app.kubernetes.io/instance": kube_name}


class TraceCollector(pulumi.ComponentResource):
    """Log Analytics + Application Insights, and an OTLP collector in ``namespace`` that ships to them.

    Outputs: ``service``, ``namespace``, ``port`` (the OTLP endpoint) and ``app_insights_id``.
    """

    service: str
    namespace: str
    port: int
    app_insights_id: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        args: TraceCollectorArgs | dict,
        opts: pulumi.ResourceOptions | None = None,
        *,
        cluster: ClusterContext,
    ):
        """
        :param name: Logical name of the component; children are named ``<name>-<role>``.
        :param args: Namespace, names and image, a ``TraceCollectorArgs`` or a dict of its fields.
        :param opts: Standard Pulumi resource options; a Kubernetes ``provider`` here is the one the children use.
        :param cluster: The cluster the collector runs in: its OIDC issuer (for the collector's workload
            identity), the resource group and region of Log Analytics and Application Insights, and its
            ``provider`` unless ``opts`` names one.
        """
        args = validate_args(TraceCollectorArgs, args, "TraceCollector", name)
        cluster.require("TraceCollector", name, "oidc_issuer_url", "location")
        kube_name, namespace = args.kube_name or name, args.namespace
        resource_group_name, location = cluster.resource_group_name, cluster.location
        super().__init__(f"{PACKAGE}:index:TraceCollector", name, None, opts)
        azure = pulumi.ResourceOptions(parent=self)
        # Children wait for what the component waits for (the namespace is often created by a sibling).
        on_cluster = Children(self, opts, kubernetes_provider(opts, cluster.provider)).opts()
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
            f"{name}-identity", {"namespace": namespace, "service_account": SERVICE_ACCOUNT}, cluster=cluster, opts=azure
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
        k8s.apps.v1.Deployment(
            f"{name}-deployment",
            **collector_deployment(args, kube_name, identity.pod_labels),
            # The role must exist before the first export, or Azure Monitor answers 403.
            opts=pulumi.ResourceOptions.merge(
                on_cluster, pulumi.ResourceOptions(depends_on=[secret, config, account, publisher])
            ),
        )
        labels = collector_labels(kube_name)
        k8s.core.v1.Service(
            f"{name}-service",
            metadata={"name": kube_name, "namespace": namespace, "labels": labels},
            spec={"selector": labels, "ports": [{"name": "otlp-grpc", "port": OTLP_PORT, "targetPort": "otlp-grpc"}]},
            opts=on_cluster,
        )
        self.register_outputs({"service": kube_name, "namespace": namespace, "port": OTLP_PORT})
