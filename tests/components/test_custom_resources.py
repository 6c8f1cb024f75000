"""The custom resources the stacks render, checked against models of their CRDs.

kubernetes-validate has no schema for custom resources, and the API server only rejects unknown
fields of a CRD with structural pruning at apply time, so a misspelled field would otherwise pass
every offline check and be dropped silently on the cluster. Each model below is written from the
field names in its upstream source (cited per class), forbids unknown keys at every level it models,
and refuses JSON types the CRD refuses (strict: no "5" for 5, no 5 for "5"). Levels the project never
renders are typed as plain mappings and say so.
"""

from __future__ import annotations

import copy
import re
import zoneinfo
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from components.serving.kaito_workspace import KaitoWorkspaceArgs
from planner.render import kubernetes_object
from tests.conftest import CUSTOM_RESOURCE_GROUPS, STACKS, is_custom_resource, run_stack, stack_config


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


NonNegative = Annotated[int, Field(ge=0)]
Unmodelled = dict[str, Any]
"""A level the project does not render; typed only as a mapping."""


class ObjectMeta(Strict):
    """The metadata the project sets on custom resources (Kubernetes ObjectMeta, the fields it uses)."""

    name: str = Field(pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length=253)
    namespace: str | None = Field(None, pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=63)
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None


class LabelSelectorRequirement(Strict):
    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[str] | None = None


class LabelSelector(Strict):
    """metav1.LabelSelector, as both the PodMonitor CRD and KAITO's ResourceSpec use it."""

    matchLabels: dict[str, str] | None = None
    matchExpressions: list[LabelSelectorRequirement] | None = None


# ---- KEDA (keda.sh/v1alpha1) --------------------------------------------------------------------
# Source: KEDA docs, "ScaledObject specification" (keda.sh/docs/2.17/reference/scaledobject-spec/,
# kedacore/keda-docs content/docs/2.17/reference/scaledobject-spec.md) and the types it names,
# kedacore/keda apis/keda/v1alpha1/scaledobject_types.go and scaletriggers_types.go.


class ScaleTargetRef(Strict):
    name: str
    apiVersion: str | None = None
    kind: str | None = None
    envSourceContainerName: str | None = None


class AuthenticationRef(Strict):
    name: str
    kind: Literal["TriggerAuthentication", "ClusterTriggerAuthentication"] | None = None


class PrometheusTriggerMetadata(Strict):
    """Source: KEDA docs, "Prometheus" scaler (keda-docs content/docs/2.17/scalers/prometheus.md). Every value is a string."""

    serverAddress: str
    query: str
    threshold: str
    activationThreshold: str | None = None
    namespace: str | None = None
    customHeaders: str | None = None
    ignoreNullValues: Literal["true", "false"] | None = None
    queryParameters: str | None = None
    unsafeSsl: Literal["true", "false"] | None = None
    authModes: str | None = None

    @field_validator("threshold", "activationThreshold")
    @classmethod
    def _number(cls, value: str | None) -> str | None:
        if value is not None:
            float(value)  # "This value can be a float"
        return value


Crontab = Annotated[str, Field(pattern=r"^\S+( \S+){4}$")]
"""'Linux format cron' (Minute Hour Dom Month Dow), five fields, as the cron scaler's docs require."""


class CronTriggerMetadata(Strict):
    """Source: KEDA docs, "Cron" scaler (keda.sh/docs/2.17/scalers/cron/, keda-docs content/docs/2.17/scalers/cron.md):
    all four parameters are required, values are strings ("desiredReplicas: \"10\""), and start and end must differ."""

    timezone: str
    """"One of the acceptable values from the IANA Time Zone Database"."""
    start: Crontab
    end: Crontab
    desiredReplicas: str

    @field_validator("timezone")
    @classmethod
    def _iana(cls, value: str) -> str:
        try:
            zoneinfo.ZoneInfo(value)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError) as err:
            raise ValueError(f"{value!r} is not an IANA time zone") from err
        return value

    @field_validator("desiredReplicas")
    @classmethod
    def _count(cls, value: str) -> str:
        if not re.fullmatch(r"[0-9]+", value):
            raise ValueError("desiredReplicas is a replica count, quoted")
        return value

    @model_validator(mode="after")
    def _a_window(self) -> CronTriggerMetadata:
        if self.start == self.end:
            raise ValueError("start and end should not be the same")
        return self


SCALER_METADATA: dict[str, type[Strict]] = {"prometheus": PrometheusTriggerMetadata, "cron": CronTriggerMetadata}
"""The scalers the project renders; the metadata of any other is checked only as map[string]string."""


class ScaleTrigger(Strict):
    type: str
    metadata: dict[str, str]
    """map[string]string in the CRD: numbers must be quoted."""
    name: str | None = None
    useCachedMetrics: bool | None = None
    authenticationRef: AuthenticationRef | None = None
    metricType: Literal["AverageValue", "Value", "Utilization"] | None = None

    @model_validator(mode="after")
    def _known_scaler_metadata(self) -> ScaleTrigger:
        if self.type in SCALER_METADATA:
            SCALER_METADATA[self.type].model_validate(self.metadata)
        return self


class Fallback(Strict):
    failureThreshold: NonNegative
    replicas: NonNegative
    behavior: Literal["static", "currentReplicas", "currentReplicasIfHigher", "currentReplicasIfLower"] | None = None


# Source: kubernetes/api autoscaling/v2/types.go (HorizontalPodAutoscalerBehavior, HPAScalingRules,
# HPAScalingPolicy) and its API reference (kubernetes.io/docs/reference/kubernetes-api/workload-resources/
# horizontal-pod-autoscaler-v2/), which KEDA's advanced.horizontalPodAutoscalerConfig.behavior passes through
# unchanged ("Uses the standard HPA behavior", KEDA ScaledObject spec).


class HPAScalingPolicy(Strict):
    type: Literal["Pods", "Percent"]
    value: int = Field(gt=0)
    periodSeconds: int = Field(gt=0, le=1800)


class HPAScalingRules(Strict):
    stabilizationWindowSeconds: int | None = Field(None, ge=0, le=3600)
    selectPolicy: Literal["Max", "Min", "Disabled"] | None = None
    policies: list[HPAScalingPolicy] | None = None
    tolerance: str | int | float | None = None
    """A resource.Quantity (Kubernetes 1.33+, HPAConfigurableTolerance); the project sets none."""


class HorizontalPodAutoscalerBehavior(Strict):
    scaleUp: HPAScalingRules | None = None
    scaleDown: HPAScalingRules | None = None


class HorizontalPodAutoscalerConfig(Strict):
    name: str | None = None
    behavior: HorizontalPodAutoscalerBehavior | None = None


class ScalingModifiers(Strict):
    formula: str
    target: str
    activationTarget: str | None = None
    metricType: Literal["AverageValue", "Value"] | None = None


class Advanced(Strict):
    restoreToOriginalReplicaCount: bool | None = None
    horizontalPodAutoscalerConfig: HorizontalPodAutoscalerConfig | None = None
    scalingModifiers: ScalingModifiers | None = None


class ScaledObjectSpec(Strict):
    scaleTargetRef: ScaleTargetRef
    pollingInterval: NonNegative | None = None
    cooldownPeriod: NonNegative | None = None
    initialCooldownPeriod: NonNegative | None = None
    idleReplicaCount: NonNegative | None = None
    minReplicaCount: NonNegative | None = None
    maxReplicaCount: NonNegative | None = None
    fallback: Fallback | None = None
    advanced: Advanced | None = None
    triggers: list[ScaleTrigger] = Field(min_length=1)

    @model_validator(mode="after")
    def _counts(self) -> ScaledObjectSpec:
        low, high = self.minReplicaCount or 0, 100 if self.maxReplicaCount is None else self.maxReplicaCount
        if low > high:
            raise ValueError(f"minReplicaCount {low} exceeds maxReplicaCount {high}")
        if self.idleReplicaCount is not None and self.idleReplicaCount >= low:
            raise ValueError("idleReplicaCount must be less than minReplicaCount")
        return self


class ScaledObject(Strict):
    apiVersion: Literal["keda.sh/v1alpha1"]
    kind: Literal["ScaledObject"]
    metadata: ObjectMeta
    spec: ScaledObjectSpec


# Source: KEDA docs, "Authentication" (keda-docs content/docs/2.17/concepts/authentication.md) and
# kedacore/keda apis/keda/v1alpha1/triggerauthentication_types.go (AuthPodIdentity's
# +kubebuilder:validation:Enum=azure-workload;gcp;aws;aws-eks;none).


class PodIdentity(Strict):
    provider: Literal["azure-workload", "gcp", "aws", "aws-eks", "none"]
    identityId: str | None = None
    identityTenantId: str | None = None
    identityAuthorityHost: str | None = None
    roleArn: str | None = None
    identityOwner: Literal["keda", "workload"] | None = None


class AuthTargetRef(Strict):
    parameter: str
    name: str
    key: str


class AuthEnvironment(Strict):
    parameter: str
    name: str
    containerName: str | None = None


class TriggerAuthenticationSpec(Strict):
    podIdentity: PodIdentity | None = None
    secretTargetRef: list[AuthTargetRef] | None = None
    configMapTargetRef: list[AuthTargetRef] | None = None
    env: list[AuthEnvironment] | None = None
    # Secret stores the project never uses:
    hashiCorpVault: Unmodelled | None = None
    azureKeyVault: Unmodelled | None = None
    gcpSecretManager: Unmodelled | None = None
    awsSecretManager: Unmodelled | None = None


class TriggerAuthentication(Strict):
    apiVersion: Literal["keda.sh/v1alpha1"]
    kind: Literal["TriggerAuthentication"]
    metadata: ObjectMeta
    spec: TriggerAuthenticationSpec


# ---- Azure managed Prometheus (azmonitoring.coreos.com/v1) --------------------------------------
# Source: Microsoft azure-docs articles/azure-monitor/containers/prometheus-metrics-scrape-crd.md
# ("the same CRDs as OSS pod monitors ... except for a change in the group name"; "Port requires a
# named port"), and the CRD it links, Azure/prometheus-collector
# otelcollector/deploy/addon-chart/azure-monitor-metrics-addon/templates/ama-metrics-podmonitor-crd.yaml.

Duration = Annotated[
    str, Field(pattern=r"^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$")
]
"""The CRD's pattern for interval and scrapeTimeout."""


class PodMetricsEndpoint(Strict):
    port: str
    """A container port name (IANA_SVC_NAME); Azure's docs require a named port."""
    path: str | None = None
    scheme: Literal["http", "https"] | None = None
    params: dict[str, list[str]] | None = None
    interval: Duration | None = None
    scrapeTimeout: Duration | None = None
    honorLabels: bool | None = None
    honorTimestamps: bool | None = None
    filterRunning: bool | None = None
    followRedirects: bool | None = None
    enableHttp2: bool | None = None
    proxyUrl: str | None = None
    # Relabelling and auth blocks, which the project never sets:
    relabelings: list[Unmodelled] | None = None
    metricRelabelings: list[Unmodelled] | None = None
    tlsConfig: Unmodelled | None = None
    basicAuth: Unmodelled | None = None
    bearerTokenSecret: Unmodelled | None = None
    authorization: Unmodelled | None = None
    oauth2: Unmodelled | None = None

    @field_validator("port")
    @classmethod
    def _named(cls, value: str) -> str:
        if not (re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", value) and len(value) <= 15 and re.search(r"[a-z]", value)):
            raise ValueError("expected a container port name (at most 15 lowercase letters, digits or '-', with a letter)")
        return value

    @field_validator("path")
    @classmethod
    def _absolute(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith("/"):
            raise ValueError("a metrics path starts with '/'")
        return value


class NamespaceSelector(Strict):
    any: bool | None = None
    matchNames: list[str] | None = None


LabelKey = Annotated[
    str,
    Field(
        pattern=r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
    ),
]
"""A Kubernetes label key (optional DNS-subdomain prefix, then a name of at most 63 characters)."""


class PodMonitorSpec(Strict):
    """PodMonitorSpec of prometheus-operator (Documentation/api.md#monitoring.coreos.com/v1.PodMonitorSpec)."""

    selector: LabelSelector
    podMetricsEndpoints: list[PodMetricsEndpoint] = Field(min_length=1)
    namespaceSelector: NamespaceSelector | None = None
    jobLabel: str | None = None
    podTargetLabels: list[LabelKey] | None = None
    """Pod label keys copied onto every scraped series, under the sanitized name (prometheus-operator relabels
    __meta_kubernetes_pod_label_<sanitized> to target_label <sanitized>: app.kubernetes.io/instance becomes
    app_kubernetes_io_instance)."""
    sampleLimit: NonNegative | None = None
    targetLimit: NonNegative | None = None
    labelLimit: NonNegative | None = None
    """Per-scrape limits on labels (Prometheus label_limit and the two length limits; 0 means no limit). Microsoft's
    templates set labelLimit 63, labelNameLengthLimit 511 and labelValueLengthLimit 1023, and
    prometheus-metrics-scrape-crd.md asks for exactly those "so that they are not dropped during processing"."""
    labelNameLengthLimit: NonNegative | None = None
    labelValueLengthLimit: NonNegative | None = None
    attachMetadata: Unmodelled | None = None


class PodMonitor(Strict):
    apiVersion: Literal["azmonitoring.coreos.com/v1"]
    kind: Literal["PodMonitor"]
    metadata: ObjectMeta
    spec: PodMonitorSpec


# ---- KAITO (kaito.sh/v1beta1) -------------------------------------------------------------------
# Source: kaito-project/kaito api/v1beta1/workspace_types.go: Workspace has `resource`, `inference`
# and `tuning` beside metadata (no `spec`); PresetSpec inlines PresetMeta (name, accessMode) next to
# presetOptions.


class ResourceSpec(Strict):
    labelSelector: LabelSelector
    count: int | None = Field(None, ge=1)
    instanceType: str | None = None
    preferredNodes: list[str] | None = None


class PresetOptions(Strict):
    modelAccessSecret: str | None = None
    image: str | None = None
    imagePullSecrets: list[str] | None = None
    modelWeightsPVC: str | None = None
    modelWeightsSubPath: str | None = None


class PresetSpec(Strict):
    name: str
    accessMode: Literal["public", "private"] | None = None
    presetOptions: PresetOptions | None = None


class InferenceSpec(Strict):
    preset: PresetSpec | None = None
    template: Unmodelled | None = None
    """A PodTemplateSpec (schemaless in the CRD); the project uses presets."""
    config: str | None = None
    adapters: list[Unmodelled] | None = None

    @model_validator(mode="after")
    def _preset_or_template(self) -> InferenceSpec:
        if (self.preset is None) == (self.template is None):
            raise ValueError("give exactly one of preset and template")
        return self


class Workspace(Strict):
    apiVersion: Literal["kaito.sh/v1beta1"]
    kind: Literal["Workspace"]
    metadata: ObjectMeta
    resource: ResourceSpec
    inference: InferenceSpec | None = None
    tuning: Unmodelled | None = None

    @model_validator(mode="after")
    def _one_workload(self) -> Workspace:
        if (self.inference is None) == (self.tuning is None):
            raise ValueError("a workspace runs exactly one of inference and tuning")
        return self


# ---- Gateway API (gateway.networking.k8s.io/v1) -------------------------------------------------
# Source: kubernetes-sigs/gateway-api apis/v1/gateway_types.go (GatewaySpec, Listener,
# GatewayInfrastructure, LocalParametersReference), gatewayclass_types.go (GatewayClassSpec) and
# backendtlspolicy_types.go (BackendTLSPolicySpec, BackendTLSPolicyValidation; v1 since Gateway API
# v1.4), with the shared reference types of shared_types.go / policy_types.go.

Group = Annotated[str, Field(pattern=r"^$|^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$", max_length=253)]
Kind = Annotated[str, Field(pattern=r"^[a-zA-Z]([-a-zA-Z0-9]*[a-zA-Z0-9])?$", max_length=63)]
ObjectName = Annotated[str, Field(min_length=1, max_length=253)]
Port = Annotated[int, Field(ge=1, le=65535)]


class LocalPolicyTargetReference(Strict):
    """gwapiv1a2.LocalPolicyTargetReference (and its WithSectionName variant): a target in the policy's namespace."""

    group: Group
    kind: Kind
    name: ObjectName
    sectionName: str | None = None


class SecretObjectReference(Strict):
    """gwapiv1.SecretObjectReference."""

    name: ObjectName
    group: Group | None = None
    kind: Kind | None = None
    namespace: str | None = None


class BackendObjectReference(Strict):
    """gwapiv1.BackendObjectReference."""

    name: ObjectName
    group: Group | None = None
    kind: Kind | None = None
    namespace: str | None = None
    port: Port | None = None


class ParentReference(Strict):
    """gwapiv1.ParentReference."""

    name: ObjectName
    group: Group | None = None
    kind: Kind | None = None
    namespace: str | None = None
    sectionName: str | None = None
    port: Port | None = None


class LocalParametersReference(Strict):
    group: Group
    kind: Kind
    name: ObjectName


class GatewayInfrastructure(Strict):
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    parametersRef: LocalParametersReference | None = None


class Listener(Strict):
    name: Annotated[str, Field(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")]
    port: Port
    protocol: str
    hostname: str | None = None
    tls: Unmodelled | None = None
    allowedRoutes: Unmodelled | None = None


class GatewaySpec(Strict):
    gatewayClassName: ObjectName
    listeners: list[Listener] = Field(min_length=1, max_length=64)
    addresses: list[Unmodelled] | None = None
    infrastructure: GatewayInfrastructure | None = None
    backendTLS: Unmodelled | None = None
    allowedListeners: Unmodelled | None = None
    tls: Unmodelled | None = None


class Gateway(Strict):
    apiVersion: Literal["gateway.networking.k8s.io/v1"]
    kind: Literal["Gateway"]
    metadata: ObjectMeta
    spec: GatewaySpec


class GatewayClassSpec(Strict):
    controllerName: Annotated[
        str, Field(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/[A-Za-z0-9\/\-._~%!$&'()*+,;=:]+$")
    ]
    parametersRef: Unmodelled | None = None
    description: str | None = Field(None, max_length=64)


class GatewayClass(Strict):
    apiVersion: Literal["gateway.networking.k8s.io/v1"]
    kind: Literal["GatewayClass"]
    metadata: ObjectMeta
    spec: GatewayClassSpec


class BackendTLSPolicyValidation(Strict):
    hostname: str
    """Required: the SNI and the name the certificate must carry."""
    caCertificateRefs: list[Unmodelled] | None = None
    wellKnownCACertificates: Literal["System"] | None = None
    subjectAltNames: list[Unmodelled] | None = None

    @model_validator(mode="after")
    def _one_trust_source(self) -> BackendTLSPolicyValidation:
        if bool(self.caCertificateRefs) == (self.wellKnownCACertificates is not None):
            raise ValueError("give exactly one of caCertificateRefs and wellKnownCACertificates")
        return self


class BackendTLSPolicySpec(Strict):
    targetRefs: list[LocalPolicyTargetReference] = Field(min_length=1, max_length=16)
    validation: BackendTLSPolicyValidation
    options: dict[str, str] | None = None


class BackendTLSPolicy(Strict):
    apiVersion: Literal["gateway.networking.k8s.io/v1"]
    kind: Literal["BackendTLSPolicy"]
    metadata: ObjectMeta
    spec: BackendTLSPolicySpec


# ---- Envoy Gateway (gateway.envoyproxy.io/v1alpha1) ---------------------------------------------
# Source: envoyproxy/gateway api/v1alpha1 (v1.8): envoyproxy_types.go (EnvoyProxySpec,
# EnvoyProxyProvider, EnvoyProxyKubernetesProvider), shared_types.go (KubernetesServiceSpec,
# BackendRef), tracing_types.go (ProxyTracing, TracingProvider), clienttrafficpolicy_types.go and
# connection_types.go (ClientConnection), securitypolicy_types.go and api_key_auth_types.go (APIKeyAuth,
# ExtractFrom), jwt_types.go (JWT, JWTProvider, RemoteJWKS), backendtrafficpolicy_types.go and
# ratelimit_types.go (RateLimitSpec, GlobalRateLimit, RateLimitRule, RateLimitSelectCondition,
# HeaderMatch, RateLimitValue, RateLimitCost, RateLimitCostSpecifier, RateLimitCostMetadata),
# backend_types.go (BackendSpec, BackendEndpoint, FQDNEndpoint) and envoypatchpolicy_types.go
# (EnvoyPatchPolicySpec, EnvoyJSONPatchConfig, JSONPatchOperation). Policies attach with
# targetRefs (or the older single targetRef) of gwapiv1a2.LocalPolicyTargetReferenceWithSectionName.


class EnvoyServiceSpec(Strict):
    """KubernetesServiceSpec."""

    annotations: dict[str, str] | None = None
    labels: dict[str, str] | None = None
    type: Literal["ClusterIP", "LoadBalancer", "NodePort"] | None = None
    loadBalancerClass: str | None = None
    allocateLoadBalancerNodePorts: bool | None = None
    loadBalancerSourceRanges: list[str] | None = None
    loadBalancerIP: str | None = None
    externalTrafficPolicy: Literal["Local", "Cluster"] | None = None
    name: str | None = None
    patch: Unmodelled | None = None


class EnvoyProxyKubernetesProvider(Strict):
    envoyService: EnvoyServiceSpec | None = None
    envoyDeployment: Unmodelled | None = None
    envoyDaemonSet: Unmodelled | None = None
    envoyHpa: Unmodelled | None = None
    envoyPDB: Unmodelled | None = None
    useListenerPortAsContainerPort: bool | None = None


class EnvoyProxyProvider(Strict):
    type: Literal["Kubernetes", "Custom", "Host"]
    kubernetes: EnvoyProxyKubernetesProvider | None = None
    host: Unmodelled | None = None


class TracingProvider(Strict):
    type: Literal["OpenTelemetry", "Zipkin", "Datadog"]
    backendRefs: list[BackendObjectReference] | None = None
    backendSettings: Unmodelled | None = None
    host: str | None = None
    port: Port | None = None
    serviceName: str | None = None
    zipkin: Unmodelled | None = None


class ProxyTracing(Strict):
    provider: TracingProvider
    samplingRate: Annotated[int, Field(ge=0, le=100)] | None = None
    samplingFraction: Unmodelled | None = None
    customTags: Unmodelled | None = None
    tags: dict[str, str] | None = None
    spanName: Unmodelled | None = None


class ProxyTelemetry(Strict):
    tracing: ProxyTracing | None = None
    accessLog: Unmodelled | None = None
    metrics: Unmodelled | None = None


class EnvoyProxySpec(Strict):
    provider: EnvoyProxyProvider | None = None
    telemetry: ProxyTelemetry | None = None
    logging: Unmodelled | None = None
    bootstrap: Unmodelled | None = None
    concurrency: int | None = None
    routingType: Literal["Service", "Endpoint"] | None = None
    extraArgs: list[str] | None = None
    mergeGateways: bool | None = None
    shutdown: Unmodelled | None = None
    filterOrder: list[Unmodelled] | None = None
    backendTLS: Unmodelled | None = None
    ipFamily: Literal["IPv4", "IPv6", "DualStack"] | None = None
    preserveRouteOrder: bool | None = None
    luaValidation: str | None = None


class EnvoyProxy(Strict):
    apiVersion: Literal["gateway.envoyproxy.io/v1alpha1"]
    kind: Literal["EnvoyProxy"]
    metadata: ObjectMeta
    spec: EnvoyProxySpec


Quantity = Annotated[str, Field(pattern=r"^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|k|M|G|T)?$")]


class ClientConnection(Strict):
    bufferLimit: Quantity | None = None
    socketBufferLimit: Quantity | None = None
    connectionLimit: Unmodelled | None = None
    maxAcceptPerSocketEvent: NonNegative | None = None


class PolicyTargets(Strict):
    """The policy attachment every Envoy Gateway policy shares (PolicyTargetReferences)."""

    targetRef: LocalPolicyTargetReference | None = None
    targetRefs: list[LocalPolicyTargetReference] | None = None
    targetSelectors: list[Unmodelled] | None = None

    def targets(self) -> list[LocalPolicyTargetReference]:
        return [self.targetRef] if self.targetRef else list(self.targetRefs or [])

    @model_validator(mode="after")
    def _attached(self) -> PolicyTargets:
        if not (self.targetRef or self.targetRefs or self.targetSelectors):
            raise ValueError("a policy attaches through targetRef, targetRefs or targetSelectors")
        return self


class ClientTrafficPolicySpec(PolicyTargets):
    connection: ClientConnection | None = None
    tcpKeepalive: Unmodelled | None = None
    enableProxyProtocol: bool | None = None
    proxyProtocol: Unmodelled | None = None
    clientIPDetection: Unmodelled | None = None
    tls: Unmodelled | None = None
    path: Unmodelled | None = None
    headers: Unmodelled | None = None
    timeout: Unmodelled | None = None
    http1: Unmodelled | None = None
    http2: Unmodelled | None = None
    http3: Unmodelled | None = None
    healthCheck: Unmodelled | None = None


class ClientTrafficPolicy(Strict):
    apiVersion: Literal["gateway.envoyproxy.io/v1alpha1"]
    kind: Literal["ClientTrafficPolicy"]
    metadata: ObjectMeta
    spec: ClientTrafficPolicySpec


class ExtractFrom(Strict):
    headers: list[str] | None = None
    params: list[str] | None = None
    cookies: list[str] | None = None


class APIKeyAuth(Strict):
    credentialRefs: list[SecretObjectReference] = Field(min_length=1)
    extractFrom: list[ExtractFrom] = Field(min_length=1)
    forwardClientIDHeader: str | None = None
    sanitize: bool | None = None


class RemoteJWKS(Strict):
    uri: Annotated[str, Field(pattern=r"^https://")]
    backendRefs: list[BackendObjectReference] | None = None
    backendSettings: Unmodelled | None = None
    cacheDuration: str | None = None


class JWTProvider(Strict):
    name: str
    issuer: str | None = None
    audiences: list[str] | None = None
    remoteJWKS: RemoteJWKS | None = None
    localJWKS: Unmodelled | None = None
    claimToHeaders: list[Unmodelled] | None = None
    recomputeRoute: bool | None = None
    extractFrom: Unmodelled | None = None


class JWT(Strict):
    providers: list[JWTProvider] = Field(min_length=1, max_length=4)
    optional: bool | None = None


class SecurityPolicySpec(PolicyTargets):
    apiKeyAuth: APIKeyAuth | None = None
    jwt: JWT | None = None
    basicAuth: Unmodelled | None = None
    oidc: Unmodelled | None = None
    extAuth: Unmodelled | None = None
    cors: Unmodelled | None = None
    authorization: Unmodelled | None = None


class SecurityPolicy(Strict):
    apiVersion: Literal["gateway.envoyproxy.io/v1alpha1"]
    kind: Literal["SecurityPolicy"]
    metadata: ObjectMeta
    spec: SecurityPolicySpec


class HeaderMatch(Strict):
    name: str
    type: Literal["Exact", "RegularExpression", "Distinct"] | None = None
    value: str | None = None
    invert: bool | None = None


class RateLimitSelectCondition(Strict):
    headers: list[HeaderMatch] | None = None
    sourceCIDR: Unmodelled | None = None
    methods: list[Unmodelled] | None = None
    path: Unmodelled | None = None
    queryParams: list[Unmodelled] | None = None


class RateLimitValue(Strict):
    requests: int = Field(ge=0)
    unit: Literal["Second", "Minute", "Hour", "Day", "Month", "Year"]


class RateLimitCostMetadata(Strict):
    namespace: str
    key: str


class RateLimitCostSpecifier(Strict):
    # The CRD's CEL rule: Number needs `number`, Metadata needs `metadata`, never both.
    from_: Literal["Number", "Metadata"] = Field(alias="from")
    number: NonNegative | None = None
    metadata: RateLimitCostMetadata | None = None

    @model_validator(mode="after")
    def _source(self) -> RateLimitCostSpecifier:
        if (self.from_ == "Number") != (self.number is not None and self.metadata is None):
            raise ValueError("from Number takes number, from Metadata takes metadata")
        return self


class RateLimitCost(Strict):
    request: RateLimitCostSpecifier | None = None
    response: RateLimitCostSpecifier | None = None


class RateLimitRule(Strict):
    limit: RateLimitValue
    clientSelectors: list[RateLimitSelectCondition] | None = Field(None, max_length=8)
    cost: RateLimitCost | None = None
    shared: bool | None = None
    shadowMode: bool | None = None


class GlobalRateLimit(Strict):
    rules: list[RateLimitRule] = Field(max_length=128)


class RateLimitSpec(Strict):
    type: Literal["Global", "Local"] | None = None
    global_: GlobalRateLimit | None = Field(None, alias="global")
    local: Unmodelled | None = None


class BackendTrafficPolicySpec(PolicyTargets):
    rateLimit: RateLimitSpec | None = None
    loadBalancer: Unmodelled | None = None
    retry: Unmodelled | None = None
    timeout: Unmodelled | None = None
    circuitBreaker: Unmodelled | None = None
    healthCheck: Unmodelled | None = None
    connection: Unmodelled | None = None
    tcpKeepalive: Unmodelled | None = None
    proxyProtocol: Unmodelled | None = None
    dns: Unmodelled | None = None
    http2: Unmodelled | None = None
    faultInjection: Unmodelled | None = None
    useClientProtocol: bool | None = None
    compression: list[Unmodelled] | None = None
    responseOverride: list[Unmodelled] | None = None
    mergeType: str | None = None
    requestBuffer: Unmodelled | None = None
    telemetry: Unmodelled | None = None


class BackendTrafficPolicy(Strict):
    apiVersion: Literal["gateway.envoyproxy.io/v1alpha1"]
    kind: Literal["BackendTrafficPolicy"]
    metadata: ObjectMeta
    spec: BackendTrafficPolicySpec


class FQDNEndpoint(Strict):
    hostname: Annotated[
        str, Field(pattern=r"^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$", max_length=253)
    ]
    port: Port


class BackendEndpoint(Strict):
    fqdn: FQDNEndpoint | None = None
    ip: Unmodelled | None = None
    unix: Unmodelled | None = None
    zone: str | None = None

    @model_validator(mode="after")
    def _one_address(self) -> BackendEndpoint:
        if sum(x is not None for x in (self.fqdn, self.ip, self.unix)) != 1:
            raise ValueError("an endpoint is exactly one of fqdn, ip and unix")
        return self


class BackendSpec(Strict):
    endpoints: list[BackendEndpoint] | None = Field(None, min_length=1, max_length=64)
    appProtocols: list[str] | None = None
    fallback: bool | None = None
    type: Literal["Endpoints", "DynamicResolver"] | None = None
    tls: Unmodelled | None = None


class Backend(Strict):
    apiVersion: Literal["gateway.envoyproxy.io/v1alpha1"]
    kind: Literal["Backend"]
    metadata: ObjectMeta
    spec: BackendSpec


class JSONPatchOperation(Strict):
    op: Literal["add", "remove", "replace", "move", "copy", "test"]
    path: str | None = None
    jsonPath: str | None = None
    from_: str | None = Field(None, alias="from")
    value: Any = None


class EnvoyJSONPatchConfig(Strict):
    type: Literal[
        "type.googleapis.com/envoy.config.listener.v3.Listener",
        "type.googleapis.com/envoy.config.route.v3.RouteConfiguration",
        "type.googleapis.com/envoy.config.cluster.v3.Cluster",
        "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment",
        "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret",
    ]
    name: str
    operation: JSONPatchOperation


class EnvoyPatchPolicySpec(Strict):
    type: Literal["JSONPatch"]
    targetRef: LocalPolicyTargetReference
    jsonPatches: list[EnvoyJSONPatchConfig] | None = None
    priority: int | None = None


class EnvoyPatchPolicy(Strict):
    apiVersion: Literal["gateway.envoyproxy.io/v1alpha1"]
    kind: Literal["EnvoyPatchPolicy"]
    metadata: ObjectMeta
    spec: EnvoyPatchPolicySpec


# envoyextensionypolicy_types.go (EnvoyExtensionPolicySpec: extProc, wasm, lua, dynamicModules) and
# ext_proc_types.go (ExtProc: backendRefs, processingMode, allowModeOverride, messageTimeout, failOpen, metadata).


class ExtProcBodyMode(Strict):
    body: Literal["Streamed", "Buffered", "BufferedPartial", "FullDuplexStreamed"] | None = None
    attributes: list[str] | None = None


class ExtProcProcessingMode(Strict):
    request: ExtProcBodyMode | None = None
    response: ExtProcBodyMode | None = None
    allowModeOverride: bool | None = None


class ExtProc(Strict):
    backendRefs: list[BackendObjectReference] = Field(min_length=1, max_length=16)
    backendSettings: Unmodelled | None = None
    processingMode: ExtProcProcessingMode | None = None
    messageTimeout: str | None = None
    failOpen: bool | None = None
    metadata: Unmodelled | None = None


class EnvoyExtensionPolicySpec(PolicyTargets):
    extProc: list[ExtProc] | None = Field(None, max_length=16)
    wasm: list[Unmodelled] | None = None
    lua: list[Unmodelled] | None = None
    dynamicModules: list[Unmodelled] | None = None


class EnvoyExtensionPolicy(Strict):
    apiVersion: Literal["gateway.envoyproxy.io/v1alpha1"]
    kind: Literal["EnvoyExtensionPolicy"]
    metadata: ObjectMeta
    spec: EnvoyExtensionPolicySpec


# gateway-api apis/v1beta1/referencegrant_types.go (ReferenceGrantFrom: group, kind, namespace;
# ReferenceGrantTo: group, kind, optional name).


class ReferenceGrantFrom(Strict):
    group: str
    kind: Kind
    namespace: str


class ReferenceGrantTo(Strict):
    group: str
    kind: Kind
    name: ObjectName | None = None


class ReferenceGrantSpec(Strict):
    from_: list[ReferenceGrantFrom] = Field(alias="from", min_length=1, max_length=16)
    to: list[ReferenceGrantTo] = Field(min_length=1, max_length=16)


class ReferenceGrant(Strict):
    apiVersion: Literal["gateway.networking.k8s.io/v1beta1"]
    kind: Literal["ReferenceGrant"]
    metadata: ObjectMeta
    spec: ReferenceGrantSpec


# ---- Envoy AI Gateway (aigateway.envoyproxy.io/v1beta1) -----------------------------------------
# Source: envoyproxy/ai-gateway api/v1beta1 ai_gateway_route.go (AIGatewayRouteSpec: parentRefs,
# hostnames, rules (max 15), llmRequestCosts, rateLimitsFromHeaders; AIGatewayRouteRule: backendRefs,
# matches, timeouts, streamIdleTimeout, modelsOwnedBy, modelsCreatedAt), ai_service_backend.go
# (AIServiceBackendSpec: schema, backendRef (must be an Envoy Gateway Backend), headerMutation,
# bodyMutation, responseBodyMutation), backendsecurity_policy.go (BackendSecurityPolicySpec: targetRefs,
# type, apiKey, awsCredentials, azureAPIKey, azureCredentials, gcpCredentials, anthropicAPIKey,
# credentialOverride; BackendSecurityPolicyAPIKey.secretRef, whose Secret key is "apiKey") and
# shared_types.go (VersionedAPISchema, LLMRequestCost).


class HTTPHeaderMatch(Strict):
    name: str
    value: str
    type: Literal["Exact", "RegularExpression"] | None = None


class AIGatewayRouteRuleMatch(Strict):
    headers: list[HTTPHeaderMatch] | None = None


class AIGatewayRouteRuleBackendRef(Strict):
    name: ObjectName
    namespace: str | None = None
    group: Group | None = None
    kind: Kind | None = None
    modelNameOverride: str | None = None
    weight: NonNegative | None = None
    priority: NonNegative | None = None
    headerMutation: Unmodelled | None = None
    bodyMutation: Unmodelled | None = None


class AIGatewayRouteRule(Strict):
    backendRefs: list[AIGatewayRouteRuleBackendRef] | None = Field(None, max_length=128)
    matches: list[AIGatewayRouteRuleMatch] | None = Field(None, max_length=128)
    timeouts: Unmodelled | None = None
    streamIdleTimeout: str | None = None
    modelsOwnedBy: str | None = None
    modelsCreatedAt: str | None = None


class LLMRequestCost(Strict):
    metadataKey: str
    type: Literal["InputToken", "CachedInputToken", "CacheCreationInputToken", "OutputToken", "TotalToken", "CEL"]
    cel: str | None = None


class AIGatewayRouteSpec(Strict):
    rules: list[AIGatewayRouteRule] = Field(max_length=15)
    parentRefs: list[ParentReference] | None = Field(None, max_length=16)
    hostnames: list[str] | None = None
    llmRequestCosts: list[LLMRequestCost] | None = Field(None, max_length=36)
    rateLimitsFromHeaders: list[Unmodelled] | None = None

    @field_validator("parentRefs")
    @classmethod
    def _gateways(cls, refs: list[ParentReference] | None) -> list[ParentReference] | None:
        if refs and any(r.kind != "Gateway" for r in refs):
            raise ValueError("only Gateway is supported")
        return refs


class AIGatewayRoute(Strict):
    apiVersion: Literal["aigateway.envoyproxy.io/v1beta1"]
    kind: Literal["AIGatewayRoute"]
    metadata: ObjectMeta
    spec: AIGatewayRouteSpec


class VersionedAPISchema(Strict):
    name: Literal["OpenAI", "Cohere", "AWSBedrock", "AzureOpenAI", "GCPVertexAI", "GCPAnthropic", "Anthropic", "AWSAnthropic"]
    version: str | None = None
    prefix: str | None = None


class AIServiceBackendSpec(Strict):
    schema_: VersionedAPISchema = Field(alias="schema")
    backendRef: BackendObjectReference
    headerMutation: Unmodelled | None = None
    bodyMutation: Unmodelled | None = None
    responseBodyMutation: Unmodelled | None = None

    @field_validator("backendRef")
    @classmethod
    def _envoy_backend(cls, ref: BackendObjectReference) -> BackendObjectReference:
        if (ref.group, ref.kind) != ("gateway.envoyproxy.io", "Backend"):
            raise ValueError("BackendRef must be a Backend resource of Envoy Gateway")
        return ref


class AIServiceBackend(Strict):
    apiVersion: Literal["aigateway.envoyproxy.io/v1beta1"]
    kind: Literal["AIServiceBackend"]
    metadata: ObjectMeta
    spec: AIServiceBackendSpec


class BackendSecurityPolicyAPIKey(Strict):
    secretRef: SecretObjectReference


class BackendSecurityPolicySpec(Strict):
    type: Literal["APIKey", "AWSCredentials", "AzureAPIKey", "AzureCredentials", "GCPCredentials", "AnthropicAPIKey"]
    targetRefs: list[LocalPolicyTargetReference] | None = Field(None, max_length=16)
    apiKey: BackendSecurityPolicyAPIKey | None = None
    azureAPIKey: BackendSecurityPolicyAPIKey | None = None
    anthropicAPIKey: BackendSecurityPolicyAPIKey | None = None
    awsCredentials: Unmodelled | None = None
    azureCredentials: Unmodelled | None = None
    gcpCredentials: Unmodelled | None = None
    credentialOverride: Unmodelled | None = None

    @model_validator(mode="after")
    def _only_its_type(self) -> BackendSecurityPolicySpec:
        field = {"APIKey": "apiKey", "AzureAPIKey": "azureAPIKey", "AnthropicAPIKey": "anthropicAPIKey"}.get(
            self.type, self.type[0].lower() + self.type[1:]
        )
        mechanisms = ("apiKey", "azureAPIKey", "anthropicAPIKey", "awsCredentials", "azureCredentials", "gcpCredentials")
        set_ = [m for m in mechanisms if getattr(self, m) is not None]
        if set_ != [field]:
            raise ValueError(f"When type is {self.type}, only {field} field should be set")
        return self

    @field_validator("targetRefs")
    @classmethod
    def _backends(cls, refs):
        allowed = {("aigateway.envoyproxy.io", "AIServiceBackend"), ("inference.networking.k8s.io", "InferencePool")}
        if refs and any((r.group, r.kind) not in allowed for r in refs):
            raise ValueError("targetRefs must reference AIServiceBackend or InferencePool resources")
        return refs


class BackendSecurityPolicy(Strict):
    apiVersion: Literal["aigateway.envoyproxy.io/v1beta1"]
    kind: Literal["BackendSecurityPolicy"]
    metadata: ObjectMeta
    spec: BackendSecurityPolicySpec


MODELS: dict[tuple[str, str], type[Strict]] = {
    ("keda.sh/v1alpha1", "ScaledObject"): ScaledObject,
    ("keda.sh/v1alpha1", "TriggerAuthentication"): TriggerAuthentication,
    ("azmonitoring.coreos.com/v1", "PodMonitor"): PodMonitor,
    ("kaito.sh/v1beta1", "Workspace"): Workspace,
    ("gateway.networking.k8s.io/v1", "Gateway"): Gateway,
    ("gateway.networking.k8s.io/v1", "GatewayClass"): GatewayClass,
    ("gateway.networking.k8s.io/v1", "BackendTLSPolicy"): BackendTLSPolicy,
    ("gateway.envoyproxy.io/v1alpha1", "EnvoyProxy"): EnvoyProxy,
    ("gateway.envoyproxy.io/v1alpha1", "ClientTrafficPolicy"): ClientTrafficPolicy,
    ("gateway.envoyproxy.io/v1alpha1", "SecurityPolicy"): SecurityPolicy,
    ("gateway.envoyproxy.io/v1alpha1", "BackendTrafficPolicy"): BackendTrafficPolicy,
    ("gateway.envoyproxy.io/v1alpha1", "Backend"): Backend,
    ("gateway.envoyproxy.io/v1alpha1", "EnvoyPatchPolicy"): EnvoyPatchPolicy,
    ("gateway.envoyproxy.io/v1alpha1", "EnvoyExtensionPolicy"): EnvoyExtensionPolicy,
    ("gateway.networking.k8s.io/v1beta1", "ReferenceGrant"): ReferenceGrant,
    ("aigateway.envoyproxy.io/v1beta1", "AIGatewayRoute"): AIGatewayRoute,
    ("aigateway.envoyproxy.io/v1beta1", "AIServiceBackend"): AIServiceBackend,
    ("aigateway.envoyproxy.io/v1beta1", "BackendSecurityPolicy"): BackendSecurityPolicy,
}


# ---- the stacks ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def stack_objects() -> dict[str, list[dict]]:
    """Every Kubernetes object each repo stack renders, as the API server would receive it."""
    rendered = {}
    for stack in STACKS:
        run = run_stack(stack_config(stack), stack)
        rendered[stack] = [
            kubernetes_object(r) for r in run.resources if r.is_kubernetes and not r.type.startswith("kubernetes:helm.sh/")
        ]
    return rendered


ACTIVE_HOURS = {"start": "0 8 * * 1-5", "end": "0 20 * * 1-5", "timezone": "Europe/Amsterdam"}


@pytest.fixture(scope="module")
def scale_to_zero_objects() -> list[dict]:
    """The dev stack with its model scaling to zero inside active hours: the only render with a cron trigger."""
    config = stack_config("dev")
    config["aks-gpu-inference:models"][0]["autoscaling"] = {
        "min_replicas": 0,
        "max_replicas": 2,
        "scale_to_zero": True,
        "active_hours": ACTIVE_HOURS,
    }
    run = run_stack(config, "dev")
    return [kubernetes_object(r) for r in run.resources if r.is_kubernetes and not r.type.startswith("kubernetes:helm.sh/")]


def custom_resources(objects: list[dict]) -> list[dict]:
    return [obj for obj in objects if is_custom_resource(obj)]


def find(objects: list[dict], kind: str, name: str | None = None) -> dict:
    found = [o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    assert found, f"no {kind} {name or ''} rendered"
    return found[0]


def test_every_custom_resource_group_has_a_model_or_is_rendered_only_by_charts():
    modelled = {api.split("/")[0] for api, _ in MODELS}
    # InferencePool (inference.networking.k8s.io) is rendered by the inferencepool Helm chart, not by the program.
    assert CUSTOM_RESOURCE_GROUPS - modelled == {"inference.networking.k8s.io"}
    assert {"gateway.networking.k8s.io", "gateway.envoyproxy.io", "aigateway.envoyproxy.io"} <= modelled


@pytest.mark.parametrize("stack", STACKS)
def test_every_rendered_custom_resource_matches_its_model(stack_objects, stack):
    found = custom_resources(stack_objects[stack])
    assert found, f"{stack} renders no custom resources"
    for obj in found:
        key = (obj["apiVersion"], obj["kind"])
        assert key in MODELS, f"no model for {key} ({obj['metadata']['name']}); add one from the CRD's source"
        MODELS[key].model_validate(obj)


GATEWAY_KINDS = {
    "Gateway",
    "GatewayClass",
    "BackendTLSPolicy",
    "EnvoyProxy",
    "ClientTrafficPolicy",
    "SecurityPolicy",
    "BackendTrafficPolicy",
    "Backend",
    "EnvoyExtensionPolicy",
    "ReferenceGrant",
    "AIGatewayRoute",
    "AIServiceBackend",
    "BackendSecurityPolicy",
}
"""What the dev stack's gateway section (SemanticRouterGateway) renders besides its two PodMonitors."""


def test_the_stacks_render_the_expected_custom_resources(stack_objects):
    kinds = {stack: sorted(o["kind"] for o in custom_resources(objects)) for stack, objects in stack_objects.items()}
    model_kinds = {
        stack: sorted(o["kind"] for o in custom_resources(objects) if o["kind"] not in GATEWAY_KINDS and not gateway_monitor(o))
        for stack, objects in stack_objects.items()
    }
    # The model's own objects, unchanged by the gateway.
    assert model_kinds["dev"] == ["PodMonitor", "ScaledObject", "TriggerAuthentication"]
    assert model_kinds["prod"] == ["PodMonitor", "Workspace"]
    # The gateway path: every kind once per gateway, backend kinds once per backend (llama-8b and gpt-5.5),
    # and a TLS policy only for the 443 (Azure OpenAI) backend.
    per_backend = {"Backend": 2, "AIServiceBackend": 2, "BackendSecurityPolicy": 2}
    gateway = {k: kinds["dev"].count(k) for k in GATEWAY_KINDS}
    assert gateway == {k: per_backend.get(k, 1) for k in GATEWAY_KINDS}
    assert sorted(o["metadata"]["name"] for o in custom_resources(stack_objects["dev"]) if gateway_monitor(o)) == [
        "gateway-gateway",
        "gateway-router",
    ]
    assert not set(kinds["prod"]) & GATEWAY_KINDS, "prod has no gateway section"


CHART_OWNED_PODS = {
    # Envoy Gateway labels each proxy pod it creates with its Gateway (gateway-helm / the infra translator).
    "envoy-gateway-system": "gateway.envoyproxy.io/owning-gateway-name",
    # The semantic-router Helm chart's release label.
    "vllm-semantic-router-system": "app.kubernetes.io/instance",
}
"""Namespaces whose scraped pods a controller or a chart creates: the program renders no Deployment to match."""


def gateway_monitor(obj: dict) -> bool:
    return obj["kind"] == "PodMonitor" and obj["metadata"].get("namespace") in CHART_OWNED_PODS


@pytest.mark.parametrize("stack", STACKS)
def test_references_between_rendered_objects_resolve(stack_objects, stack):
    check_references(stack_objects[stack])


def test_scale_to_zero_render_matches_the_models_and_resolves(scale_to_zero_objects):
    found = custom_resources(scale_to_zero_objects)
    for obj in found:
        MODELS[(obj["apiVersion"], obj["kind"])].model_validate(obj)
    check_references(scale_to_zero_objects)
    spec = ScaledObject.model_validate(find(found, "ScaledObject")).spec
    assert spec.minReplicaCount == 0
    assert [t.type for t in spec.triggers] == ["prometheus", "cron"]
    CronTriggerMetadata.model_validate(spec.triggers[1].metadata)


def test_scaled_objects_scale_in_through_the_hpa_behavior(stack_objects, scale_to_zero_objects):
    scalers = [o for o in stack_objects["dev"] + scale_to_zero_objects if o["kind"] == "ScaledObject"]
    assert len(scalers) == 2
    for obj in scalers:
        spec = ScaledObject.model_validate(obj).spec
        assert spec.advanced.horizontalPodAutoscalerConfig.behavior.scaleDown.stabilizationWindowSeconds == 600


@pytest.mark.parametrize("stack", STACKS)
def test_pod_monitors_carry_azures_label_limits_and_the_instance_label(stack_objects, stack):
    found = [o for o in custom_resources(stack_objects[stack]) if o["kind"] == "PodMonitor"]
    assert found
    for obj in found:
        spec = PodMonitor.model_validate(obj).spec
        assert (spec.labelLimit, spec.labelNameLengthLimit, spec.labelValueLengthLimit) == (63, 511, 1023)
        # The model's monitors tag every series with the model (the dashboards group by it); the gateway's and
        # the router's monitors scrape one shared proxy/router each and need no such label.
        if not gateway_monitor(obj):
            assert spec.podTargetLabels == ["app.kubernetes.io/instance"]
    assert any(not gateway_monitor(o) for o in found), "every model has its PodMonitor"


def check_references(objects: list[dict]) -> None:
    check_gateway_references(objects)
    deployments = [o for o in objects if o["kind"] == "Deployment"]
    for obj in custom_resources(objects):
        namespace = obj["metadata"].get("namespace")
        if obj["kind"] == "ScaledObject":
            spec = ScaledObject.model_validate(obj).spec
            target = find(
                [d for d in deployments if d["metadata"]["namespace"] == namespace], "Deployment", spec.scaleTargetRef.name
            )
            assert target["spec"]["replicas"] == spec.minReplicaCount
            for trigger in spec.triggers:
                if trigger.type == "cron":
                    assert trigger.authenticationRef is None, "the cron scaler reads the clock, not a secured source"
                    continue
                auth = [o for o in objects if o["kind"] == "TriggerAuthentication" and o["metadata"]["namespace"] == namespace]
                assert trigger.authenticationRef is not None, f"{trigger.type} trigger without authenticationRef"
                find(auth, "TriggerAuthentication", trigger.authenticationRef.name)
        if obj["kind"] == "PodMonitor" and gateway_monitor(obj):
            # Pods created by a controller or a chart: check the selector names the label they carry.
            spec = PodMonitor.model_validate(obj).spec
            assert CHART_OWNED_PODS[namespace] in spec.selector.matchLabels, obj["metadata"]["name"]
            continue
        if obj["kind"] == "PodMonitor":
            spec = PodMonitor.model_validate(obj).spec
            selected = [
                d
                for d in deployments
                if d["metadata"]["namespace"] == namespace
                and spec.selector.matchLabels.items() <= d["spec"]["template"]["metadata"]["labels"].items()
            ]
            assert selected, f"PodMonitor {obj['metadata']['name']} selects no pods"
            for d in selected:
                pod = d["spec"]["template"]["spec"]
                sidecars = [c for c in pod.get("initContainers", []) if c.get("restartPolicy") == "Always"]
                ports = {p.get("name") for c in pod["containers"] + sidecars for p in c.get("ports", [])}
                for endpoint in spec.podMetricsEndpoints:
                    assert endpoint.port in ports, f"{d['metadata']['name']} has no port named {endpoint.port}"


def check_gateway_references(objects: list[dict]) -> None:
    """Names between the gateway's objects resolve, in the namespace each reference is local to."""
    found = custom_resources(objects)
    if not any(o["kind"] == "Gateway" for o in found):
        return

    def named(kind: str, namespace: str | None) -> set[str]:
        return {o["metadata"]["name"] for o in found if o["kind"] == kind and o["metadata"].get("namespace") == namespace}

    for gateway in [o for o in found if o["kind"] == "Gateway"]:
        spec = Gateway.model_validate(gateway).spec
        ns = gateway["metadata"]["namespace"]
        assert spec.gatewayClassName in {o["metadata"]["name"] for o in found if o["kind"] == "GatewayClass"}
        ref = spec.infrastructure.parametersRef
        assert (ref.group, ref.kind) == ("gateway.envoyproxy.io", "EnvoyProxy")
        assert ref.name in named("EnvoyProxy", ns), "the Gateway's parametersRef names an EnvoyProxy beside it"
    for obj in found:
        ns, kind = obj["metadata"].get("namespace"), obj["kind"]
        if kind in ("SecurityPolicy", "BackendTrafficPolicy", "ClientTrafficPolicy", "EnvoyExtensionPolicy"):
            spec = MODELS[(obj["apiVersion"], kind)].model_validate(obj).spec
            targets = spec.targets()
            assert targets, f"{kind} {obj['metadata']['name']} targets nothing"
            for t in targets:
                assert (t.group, t.kind) == ("gateway.networking.k8s.io", "Gateway"), f"{kind} targets {t}"
                assert t.name in named("Gateway", ns), f"{kind} targets a Gateway that does not exist: {t.name}"
        if kind == "AIGatewayRoute":
            spec = AIGatewayRoute.model_validate(obj).spec
            for parent in spec.parentRefs:
                assert parent.name in named("Gateway", parent.namespace or ns)
            for rule in spec.rules:
                for backend in rule.backendRefs:
                    assert backend.group is None and backend.kind is None, "an AIServiceBackend reference"
                    assert backend.name in named("AIServiceBackend", backend.namespace or ns), backend.name
        if kind == "AIServiceBackend":
            ref = AIServiceBackend.model_validate(obj).spec.backendRef
            assert ref.name in named("Backend", ref.namespace or ns), f"no Backend {ref.name}"
        if kind == "BackendSecurityPolicy":
            spec = BackendSecurityPolicy.model_validate(obj).spec
            for t in spec.targetRefs:
                assert t.name in named(t.kind, ns), f"BackendSecurityPolicy targets a missing {t.kind} {t.name}"
        if kind == "BackendTLSPolicy":
            spec = BackendTLSPolicy.model_validate(obj).spec
            for t in spec.targetRefs:
                (backend,) = [o for o in found if o["kind"] == t.kind and o["metadata"]["name"] == t.name]
                hosts = {e["fqdn"]["hostname"] for e in backend["spec"]["endpoints"]}
                assert spec.validation.hostname in hosts, "TLS is verified against the name the Backend dials"


@pytest.mark.parametrize("stack", STACKS)
def test_gateway_references_resolve(stack_objects, stack):
    check_gateway_references(stack_objects[stack])


def test_every_ai_service_backend_is_routed_and_secured(stack_objects):
    found = custom_resources(stack_objects["dev"])
    backends = {o["metadata"]["name"] for o in found if o["kind"] == "AIServiceBackend"}
    (route,) = [AIGatewayRoute.model_validate(o).spec for o in found if o["kind"] == "AIGatewayRoute"]
    routed = {b.name for rule in route.rules for b in rule.backendRefs}
    secured = {
        t.name
        for o in found
        if o["kind"] == "BackendSecurityPolicy"
        for t in BackendSecurityPolicy.model_validate(o).spec.targetRefs
    }
    assert routed == backends == secured == {"llama-8b", "aoai-gpt-5-5"}


def test_a_gateway_reference_to_a_missing_object_is_caught(stack_objects):
    objects = copy.deepcopy(stack_objects["dev"])
    route = find(objects, "AIGatewayRoute")
    route["spec"]["rules"][0]["backendRefs"][0]["name"] = "llama-70b"
    with pytest.raises(AssertionError, match="llama-70b"):
        check_gateway_references(objects)
    objects = copy.deepcopy(stack_objects["dev"])
    find(objects, "Gateway")["spec"]["infrastructure"]["parametersRef"]["name"] = "other"
    with pytest.raises(AssertionError, match="parametersRef"):
        check_gateway_references(objects)


def test_kaito_workspace_with_an_access_secret_matches_the_model():
    args = {"name": "llama", "preset": "llama-3.1-8b-instruct", "instance_type": "Standard_NC24ads_A100_v4"}
    manifest = KaitoWorkspaceArgs(**args, model_access_secret="hf-token").manifest()
    workspace = Workspace.model_validate(manifest)
    assert workspace.inference.preset.presetOptions.modelAccessSecret == "hf-token"


# ---- negative: each model refuses a misspelled field --------------------------------------------


def renamed(obj: dict, path: tuple, new_key: str) -> dict:
    """A copy of ``obj`` with the key at ``path`` (keys and list indexes) renamed to ``new_key``."""
    broken = copy.deepcopy(obj)
    parent = broken
    for part in path[:-1]:
        parent = parent[part]
    parent[new_key] = parent.pop(path[-1])
    return broken


def replaced(obj: dict, path: tuple, value: Any) -> dict:
    broken = copy.deepcopy(obj)
    parent = broken
    for part in path[:-1]:
        parent = parent[part]
    parent[path[-1]] = value
    return broken


def sample(stack_objects, kind: str) -> dict:
    return copy.deepcopy(find(stack_objects["dev"] + stack_objects["prod"], kind))


@pytest.mark.parametrize(
    "path, misspelling",
    [
        (("spec", "triggers", 1, "metadata", "desiredReplicas"), "desiredReplica"),
        (("spec", "triggers", 1, "metadata", "timezone"), "timeZone"),
        (("spec", "advanced", "horizontalPodAutoscalerConfig"), "horizontalPodAutoScalerConfig"),
        (("spec", "advanced", "horizontalPodAutoscalerConfig", "behavior", "scaleDown"), "scaledown"),
        (
            ("spec", "advanced", "horizontalPodAutoscalerConfig", "behavior", "scaleDown", "stabilizationWindowSeconds"),
            "stabilizationWindow",
        ),
    ],
)
def test_a_misspelled_cron_or_behavior_field_is_refused(scale_to_zero_objects, path, misspelling):
    obj = find(scale_to_zero_objects, "ScaledObject")
    ScaledObject.model_validate(obj)
    with pytest.raises(ValidationError) as caught:
        ScaledObject.model_validate(renamed(obj, path, misspelling))
    assert any(e["type"] == "extra_forbidden" and e["loc"][-1] == misspelling for e in caught.value.errors())


@pytest.mark.parametrize(
    "path, value, expected",
    [
        (("spec", "triggers", 1, "metadata", "desiredReplicas"), 1, "valid string"),
        (("spec", "triggers", 1, "metadata", "desiredReplicas"), "one", "replica count"),
        (("spec", "triggers", 1, "metadata", "timezone"), "CET+1", "not an IANA time zone"),
        (("spec", "triggers", 1, "metadata", "start"), "8am", "String should match pattern"),
        (("spec", "triggers", 1, "metadata", "end"), "0 8 * * 1-5", "start and end should not be the same"),
        (
            ("spec", "advanced", "horizontalPodAutoscalerConfig", "behavior", "scaleDown", "stabilizationWindowSeconds"),
            "600",
            "valid integer",
        ),
        (
            ("spec", "advanced", "horizontalPodAutoscalerConfig", "behavior", "scaleDown", "stabilizationWindowSeconds"),
            7200,
            "less than or equal to 3600",
        ),
        (
            ("spec", "advanced", "horizontalPodAutoscalerConfig", "behavior", "scaleDown", "selectPolicy"),
            "Maximum",
            "'Max', 'Min' or 'Disabled'",
        ),
    ],
)
def test_a_wrongly_typed_cron_or_behavior_value_is_refused(scale_to_zero_objects, path, value, expected):
    obj = find(scale_to_zero_objects, "ScaledObject")
    with pytest.raises(ValidationError, match=re.escape(expected)):
        ScaledObject.model_validate(replaced(obj, path, value))


@pytest.mark.parametrize(
    "kind, path, misspelling",
    [
        ("ScaledObject", ("spec",), "specs"),
        ("ScaledObject", ("spec", "minReplicaCount"), "minReplicasCount"),
        ("ScaledObject", ("spec", "cooldownPeriod"), "coolDownPeriod"),
        ("ScaledObject", ("spec", "scaleTargetRef", "name"), "deploymentName"),
        ("ScaledObject", ("spec", "triggers", 0, "authenticationRef"), "authRef"),
        ("ScaledObject", ("spec", "triggers", 0, "metadata", "serverAddress"), "serverAdress"),
        ("TriggerAuthentication", ("spec", "podIdentity"), "podIdentities"),
        ("TriggerAuthentication", ("spec", "podIdentity", "identityId"), "identityID"),
        ("PodMonitor", ("spec", "podMetricsEndpoints"), "podMetricsEndpoint"),
        ("PodMonitor", ("spec", "selector", "matchLabels"), "matchLabel"),
        ("PodMonitor", ("spec", "podMetricsEndpoints", 0, "path"), "metricsPath"),
        ("Workspace", ("resource",), "resources"),
        ("Workspace", ("resource", "instanceType"), "instancetype"),
        ("Workspace", ("resource", "labelSelector", "matchLabels"), "matchlabels"),
        ("Workspace", ("inference", "preset", "name"), "presetName"),
        ("Gateway", ("spec", "infrastructure", "parametersRef"), "parameterRef"),
        ("GatewayClass", ("spec", "controllerName"), "controller"),
        ("BackendTLSPolicy", ("spec", "validation", "wellKnownCACertificates"), "wellKnownCACerts"),
        ("EnvoyProxy", ("spec", "provider", "kubernetes", "envoyService"), "envoyServices"),
        ("ClientTrafficPolicy", ("spec", "connection", "bufferLimit"), "bufferLimits"),
        ("SecurityPolicy", ("spec", "apiKeyAuth", "forwardClientIDHeader"), "forwardClientIdHeader"),
        ("BackendTrafficPolicy", ("spec", "rateLimit", "global", "rules", 0, "clientSelectors"), "clientSelector"),
        ("Backend", ("spec", "endpoints", 0, "fqdn", "hostname"), "host"),
        ("EnvoyExtensionPolicy", ("spec", "extProc", 0, "processingMode"), "processing"),
        ("ReferenceGrant", ("spec", "to", 0, "kind"), "kinds"),
        ("AIGatewayRoute", ("spec", "llmRequestCosts"), "llmRequestCost"),
        ("AIServiceBackend", ("spec", "schema"), "apiSchema"),
        ("BackendSecurityPolicy", ("spec", "apiKey", "secretRef"), "secretName"),
    ],
)
def test_a_misspelled_field_is_refused(stack_objects, kind, path, misspelling):
    obj = sample(stack_objects, kind)
    model = MODELS[(obj["apiVersion"], kind)]
    model.model_validate(obj)
    with pytest.raises(ValidationError) as caught:
        model.model_validate(renamed(obj, path, misspelling))
    assert any(e["type"] == "extra_forbidden" and e["loc"][-1] == misspelling for e in caught.value.errors())


def test_a_misspelled_preset_option_is_refused():
    manifest = KaitoWorkspaceArgs(
        name="llama", preset="llama-3.1-8b-instruct", instance_type="Standard_NC24ads_A100_v4", model_access_secret="hf-token"
    ).manifest()
    with pytest.raises(ValidationError, match="modelAccessSecrets"):
        Workspace.model_validate(
            renamed(manifest, ("inference", "preset", "presetOptions", "modelAccessSecret"), "modelAccessSecrets")
        )


def test_workspace_fields_under_spec_are_refused(stack_objects):
    obj = sample(stack_objects, "Workspace")
    nested = {k: v for k, v in obj.items() if k not in ("resource", "inference")}
    nested["spec"] = {"resource": obj["resource"], "inference": obj["inference"]}
    with pytest.raises(ValidationError, match="spec"):
        Workspace.model_validate(nested)


@pytest.mark.parametrize(
    "kind, path, value, expected",
    [
        ("ScaledObject", ("spec", "triggers", 0, "metadata", "threshold"), 5, "valid string"),
        ("ScaledObject", ("spec", "triggers", 0, "metadata", "threshold"), "five", "could not convert"),
        ("ScaledObject", ("spec", "minReplicaCount"), "1", "valid integer"),
        ("ScaledObject", ("spec", "triggers"), [], "at least 1 item"),
        ("ScaledObject", ("spec", "idleReplicaCount"), 1, "idleReplicaCount must be less than minReplicaCount"),
        ("TriggerAuthentication", ("spec", "podIdentity", "provider"), "azure", "azure-workload"),
        ("PodMonitor", ("spec", "podMetricsEndpoints", 0, "port"), 8000, "valid string"),
        ("PodMonitor", ("spec", "podMetricsEndpoints", 0, "port"), "8000", "container port name"),
        ("PodMonitor", ("spec", "podMetricsEndpoints", 0, "interval"), "30 seconds", "String should match pattern"),
        ("PodMonitor", ("spec", "labelLimit"), "63", "valid integer"),
        ("PodMonitor", ("spec", "labelValueLengthLimit"), -1, "greater than or equal to 0"),
        ("PodMonitor", ("spec", "podTargetLabels"), "app.kubernetes.io/instance", "valid list"),
        ("PodMonitor", ("spec", "podTargetLabels"), ["app.kubernetes.io/"], "String should match pattern"),
        ("Workspace", ("resource", "count"), 0, "greater than or equal to 1"),
        ("Workspace", ("inference",), {"preset": {"name": "phi-4"}, "template": {}}, "exactly one of preset and template"),
        ("Gateway", ("spec", "listeners", 0, "port"), "80", "valid integer"),
        ("AIServiceBackend", ("spec", "backendRef", "kind"), "Service", "must be a Backend resource of Envoy Gateway"),
        ("AIServiceBackend", ("spec", "schema", "name"), "Azure", "'OpenAI'"),
        ("BackendSecurityPolicy", ("spec", "type"), "AzureAPIKey", "only azureAPIKey field should be set"),
        ("BackendTrafficPolicy", ("spec", "rateLimit", "global", "rules", 0, "limit", "unit"), "Hours", "'Hour'"),
        (
            "BackendTrafficPolicy",
            ("spec", "rateLimit", "global", "rules", 0, "cost", "request", "from"),
            "Metadata",
            "from Number",
        ),
        ("BackendTLSPolicy", ("spec", "validation", "wellKnownCACertificates"), None, "exactly one of caCertificateRefs"),
        ("EnvoyExtensionPolicy", ("spec", "extProc", 0, "processingMode", "request", "body"), "Buffer", "'Buffered'"),
    ],
)
def test_a_wrongly_typed_value_is_refused(stack_objects, kind, path, value, expected):
    obj = sample(stack_objects, kind)
    model = MODELS[(obj["apiVersion"], kind)]
    with pytest.raises(ValidationError, match=re.escape(expected)):
        model.model_validate(replaced(obj, path, value))
