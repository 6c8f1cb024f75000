"""Models of the custom resources the project renders, written from their CRDs' sources, and the
reference check between the gateway's objects; shared by the tests that read rendered objects.

kubernetes-validate has no schema for custom resources, and the API server only rejects unknown
fields of a CRD with structural pruning at apply time, so a misspelled field would otherwise pass
every offline check and be dropped silently on the cluster. Each model below is written from the
field names in its upstream source (cited per class), forbids unknown keys at every level it models,
and refuses JSON types the CRD refuses (strict: no "5" for 5, no 5 for "5"). Levels the project never
renders are typed as plain mappings and say so.
"""

from __future__ import annotations

import re
import zoneinfo
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from tests.conftest import is_custom_resource


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


def custom_resources(objects: list[dict]) -> list[dict]:
    return [obj for obj in objects if is_custom_resource(obj)]


def check_gateway_references(objects: list[dict]) -> None:
    """Names between the gateway's objects resolve, in the namespace each reference is local to."""
    found = custom_resources(objects)
    if not any(o["kind"] == "Gateway" for o in found):
        return
    for obj in found:
        check = _REFERENCE_CHECKS.get(obj["kind"])
        if check:
            check(obj, found)


def _named(found: list[dict], kind: str, namespace: str | None) -> set[str]:
    return {o["metadata"]["name"] for o in found if o["kind"] == kind and o["metadata"].get("namespace") == namespace}


def _gateway_references(obj: dict, found: list[dict]) -> None:
    spec = Gateway.model_validate(obj).spec
    assert spec.gatewayClassName in {o["metadata"]["name"] for o in found if o["kind"] == "GatewayClass"}
    ref = spec.infrastructure.parametersRef
    assert (ref.group, ref.kind) == ("gateway.envoyproxy.io", "EnvoyProxy")
    assert ref.name in _named(found, "EnvoyProxy", obj["metadata"]["namespace"]), (
        "the Gateway's parametersRef names an EnvoyProxy beside it"
    )


def _policy_references(obj: dict, found: list[dict]) -> None:
    kind = obj["kind"]
    targets = MODELS[(obj["apiVersion"], kind)].model_validate(obj).spec.targets()
    assert targets, f"{kind} {obj['metadata']['name']} targets nothing"
    for t in targets:
        assert (t.group, t.kind) == ("gateway.networking.k8s.io", "Gateway"), f"{kind} targets {t}"
        assert t.name in _named(found, "Gateway", obj["metadata"].get("namespace")), (
            f"{kind} targets a Gateway that does not exist: {t.name}"
        )


def _route_references(obj: dict, found: list[dict]) -> None:
    ns = obj["metadata"].get("namespace")
    spec = AIGatewayRoute.model_validate(obj).spec
    for parent in spec.parentRefs:
        assert parent.name in _named(found, "Gateway", parent.namespace or ns)
    for rule in spec.rules:
        for backend in rule.backendRefs:
            assert backend.group is None and backend.kind is None, "an AIServiceBackend reference"
            assert backend.name in _named(found, "AIServiceBackend", backend.namespace or ns), backend.name


def _ai_service_backend_references(obj: dict, found: list[dict]) -> None:
    ref = AIServiceBackend.model_validate(obj).spec.backendRef
    assert ref.name in _named(found, "Backend", ref.namespace or obj["metadata"].get("namespace")), f"no Backend {ref.name}"


def _backend_security_policy_references(obj: dict, found: list[dict]) -> None:
    for t in BackendSecurityPolicy.model_validate(obj).spec.targetRefs:
        assert t.name in _named(found, t.kind, obj["metadata"].get("namespace")), (
            f"BackendSecurityPolicy targets a missing {t.kind} {t.name}"
        )


def _backend_tls_policy_references(obj: dict, found: list[dict]) -> None:
    spec = BackendTLSPolicy.model_validate(obj).spec
    for t in spec.targetRefs:
        (backend,) = [o for o in found if o["kind"] == t.kind and o["metadata"]["name"] == t.name]
        hosts = {e["fqdn"]["hostname"] for e in backend["spec"]["endpoints"]}
        assert spec.validation.hostname in hosts, "TLS is verified against the name the Backend dials"


_REFERENCE_CHECKS = {
    "Gateway": _gateway_references,
    "SecurityPolicy": _policy_references,
    "BackendTrafficPolicy": _policy_references,
    "ClientTrafficPolicy": _policy_references,
    "EnvoyExtensionPolicy": _policy_references,
    "AIGatewayRoute": _route_references,
    "AIServiceBackend": _ai_service_backend_references,
    "BackendSecurityPolicy": _backend_security_policy_references,
    "BackendTLSPolicy": _backend_tls_policy_references,
}
"""Per kind, the check that the names it references exist."""
