"""VllmService: vLLM's OpenAI-compatible server on a GPU pool, checked to fit before it is deployed.

The GPU-memory fit runs at preview time and refuses a configuration that cannot load (seeds 000
and 002: OOMs that only show after deploy). Weights stream from Azure Blob with the RunAI Model
Streamer under workload identity (no storage keys), so cold starts stay short enough for
autoscaling. Every endpoint needs the API key, held as a Kubernetes Secret from a Pulumi secret.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Literal

import pulumi
import pulumi_kubernetes as k8s
from pydantic import Field, field_validator, model_validator

from .._base import PACKAGE, Children, StrictModel, fail, validate_args
from ..azure.gpu_node_pool import GpuNodePool
from ..core import catalog, models
from ..core.errors import FieldProblem
from ..core.security import restricted_container
from ..gpu.pod_contract import RdmaPodSpec

PORT = 8000
DECODE_ENGINE_PORT = 8200
"""Decode pods: vLLM listens here, the llm-d routing sidecar takes PORT in front of it (llm-d P/D guide)."""
ROUTING_SIDECAR_IMAGE = "ghcr.io/llm-d/llm-d-routing-sidecar:v0.8.0"
"""The sidecar image llm-d v0.8.0 publishes (``llm-d/llm-d-router@v0.8.0:.github/workflows/ci-release.yaml``
``sidecar_name``); the ``llm-d-router-disagg-sidecar`` name starts at v0.9.0, with a new EPP image too."""
INFERENCEPOOL_CHART = "oci://registry.k8s.io/gateway-api-inference-extension/charts/inferencepool"
INFERENCEPOOL_CHART_VERSION = "v1.3.1"
"""The Gateway API Inference Extension chart (InferencePool + endpoint picker), KAITO's pin."""
EPP_IMAGE = {"hub": "ghcr.io/llm-d", "name": "llm-d-inference-scheduler", "tag": "v0.8.0"}
"""llm-d's endpoint picker, which knows prefill/decode roles; upstream GAIE's EPP does not."""
# Prefill/decode profiles keyed on the llm-d.ai/role label (llm-d P/D guide; verify plugin names
# against the pinned scheduler when upgrading it).
PD_PLUGINS = """\
apiVersion: inference.networking.x-k8s.io/v1alpha1
kind: EndpointPickerConfig
plugins:
- type: prefill-header-handler
- type: prefill-filter
- type: decode-filter
- type: max-score-picker
- type: queue-scorer
- type: pd-profile-handler
schedulingProfiles:
- name: prefill
  plugins:
  - pluginRef: prefill-filter
  - pluginRef: queue-scorer
  - pluginRef: max-score-picker
- name: decode
  plugins:
  - pluginRef: decode-filter
  - pluginRef: queue-scorer
  - pluginRef: max-score-picker
"""
INSTANCE_LABEL = "app.kubernetes.io/instance"
ROLE_LABEL = "llm-d.ai/role"
BLOB_STREAM_GBPS = 1.0
"""Assumed Blob-to-GPU streaming rate per pod (GB/s) for the startup budget. The RunAI streamer reads
tensors concurrently; a Premium block-blob account sustains well over this, so budgets err long."""
HUB_GBPS = 0.15
"""Assumed download rate from the Hugging Face hub (GB/s), for the startup budget."""
WARMUP_SECONDS = 180
"""Engine start after the weights are in: profiling, KV allocation and CUDA graph capture."""


@dataclass(frozen=True)
class ScalingMonitor:
    """Where KEDA reads vLLM's metrics: the managed Prometheus query endpoint and the identity KEDA uses."""

    query_endpoint: pulumi.Input[str]
    keda_client_id: pulumi.Input[str]


class ActiveHours(StrictModel):
    """When a scale-to-zero service must be up: a KEDA cron window (crontab start and end)."""

    start: str = Field(pattern=r"^\S+( \S+){4}$")
    """Crontab expression that opens the window, e.g. ``0 8 * * 1-5``. Required."""

    end: str = Field(pattern=r"^\S+( \S+){4}$")
    """Crontab expression that closes it, e.g. ``0 20 * * 1-5``. Required."""

    timezone: str = "UTC"
    """IANA time zone of the expressions. Default ``UTC``."""


class AutoscalingArgs(StrictModel):
    """KEDA scaling on queued requests (``vllm:num_requests_waiting``) from Azure managed Prometheus."""

    min_replicas: int = Field(1, ge=0, le=100)
    """Replicas kept when idle. Default 1; 0 is scale to zero and needs ``scale_to_zero: true``."""

    max_replicas: int = Field(4, ge=1, le=100)
    """Upper bound. Default 4; keep it within the pool's max_count x replicas per node."""

    waiting_requests_target: int = Field(5, ge=1)
    """Queued requests per replica that trigger a scale-out. Default 5."""

    scale_to_zero: bool = False
    """Allow zero replicas when idle. Default False: the first request after idle waits for a GPU node
    and a model load. Opt in for dev or batch endpoints; needs ``active_hours``."""

    active_hours: ActiveHours | None = None
    """Window in which at least ``max(1, min_replicas)`` replicas run (KEDA cron trigger). Required with
    ``scale_to_zero``: at zero replicas vLLM publishes no queue metric, so the queue alone can never
    wake the service. Default None."""

    @model_validator(mode="after")
    def _check(self) -> AutoscalingArgs:
        if self.min_replicas == 0 and not self.scale_to_zero:
            raise FieldProblem("min_replicas", 0, "zero replicas means scale to zero; set scale_to_zero: true to opt in")
        if self.scale_to_zero and self.active_hours is None:
            raise FieldProblem(
                "active_hours",
                None,
                "scale to zero needs a wake-up window: an idle vLLM has no pods, so no queue metric to scale on",
            )
        if self.min_replicas > self.max_replicas:
            raise FieldProblem("min_replicas", self.min_replicas, f"must be at most max_replicas ({self.max_replicas})")
        return self


class DisaggregationArgs(StrictModel):
    """Prefill/decode disaggregation on full RDMA nodes (seed 004), KV moved over NIXL."""

    prefill_replicas: int = Field(1, ge=1, le=32)
    """Prefill engines, one full node each. Default 1."""

    decode_replicas: int = Field(1, ge=1, le=32)
    """Decode engines, one full node each. Default 1."""


class VllmServiceArgs(StrictModel):
    """One model served by vLLM. Plain values: they decide names, counts and the memory fit."""

    name: str = Field(pattern=r"^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$")
    """Service name (lowercase, at most 40 characters, so derived names stay within Kubernetes limits). Required."""

    namespace: str = Field("gpu-inference", pattern=r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
    """Namespace; it must exist. Default ``gpu-inference``."""

    model: str
    """Hugging Face model id, e.g. ``meta-llama/Llama-3.1-8B-Instruct``. Required."""

    model_facts: models.ModelFactsArgs | None = None
    """Parameters, layers, KV heads, head dim and max context for a model the catalog lacks (its
    ``hf_id`` must equal ``model``). Default None: the catalog's facts for ``model``."""

    source: Literal["blob", "huggingface"] = "blob"
    """Where weights come from. Default ``blob``: the RunAI streamer reads them from Azure Blob under
    workload identity, the fast cold start. ``huggingface`` downloads from the hub with a token."""

    model_path: str | None = None
    """Path of the weights inside the model store's container. Default: the model id."""

    image: str = "vllm/vllm-openai:v0.32.0"
    """vLLM image, pinned. Default ``v0.32.0`` (Azure Blob streaming needs v0.18.0 or later)."""

    served_model_name: str | None = None
    """Name clients pass as ``model``. Default: the model id."""

    tensor_parallel_size: int = Field(1, ge=1, le=8)
    """GPUs per replica. Default 1."""

    max_model_len: int = Field(8192, ge=256)
    """Context length per sequence. Default 8192: long contexts cost KV memory on every replica."""

    gpu_memory_utilization: float = Field(0.9, gt=0.1, le=0.98)
    """Share of each GPU's memory vLLM may use. Default 0.9 (vLLM's default)."""

    dtype: Literal["auto", "bfloat16", "fp8"] = "auto"
    """Weights precision. Default ``auto`` (the checkpoint's); ``fp8`` halves weights on Hopper-class GPUs."""

    kv_cache_dtype: Literal["auto", "fp8"] = "auto"
    """KV cache precision. Default ``auto``; ``fp8`` doubles the tokens that fit."""

    enable_prefix_caching: bool = True
    """Reuse KV of shared prompt prefixes (system prompts, agent scaffolds). Default True."""

    max_num_seqs: int | None = Field(None, ge=1)
    """Concurrent sequences per replica. Default None (vLLM decides)."""

    min_full_sequences: int = Field(4, ge=1)
    """Warn when fewer full-length sequences fit in the KV cache. Default 4."""

    replicas: int = Field(1, ge=1, le=100)
    """Replicas without autoscaling. Default 1."""

    autoscaling: AutoscalingArgs | None = None
    """KEDA autoscaling. Default None (fixed ``replicas``)."""

    gpu_access: Literal["device-plugin", "dra"] = "device-plugin"
    """How pods get GPUs: the device plugin's resource (``nvidia.com/gpu`` or the pool's MIG slice) or a DRA
    claim from DraDeviceClasses. Default ``device-plugin``."""

    rdma: bool = False
    """Claim the pool's InfiniBand NICs through RdmaNetwork's pod contract. Default False."""

    disaggregation: DisaggregationArgs | None = None
    """Separate prefill and decode engines on full RDMA nodes. Default None (aggregated serving)."""

    extra_args: list[str] = Field(default_factory=list)
    """More vLLM flags, appended as given. Default none."""

    cpu: str = "8"
    """CPU request per replica. Default 8 cores: tokenization and scheduling run on the CPU."""

    memory: str = "64Gi"
    """Memory request and limit per replica. Default 64Gi (the streamer buffers tensors in host memory)."""

    @field_validator("image")
    @classmethod
    def _pinned(cls, image: str) -> str:
        tail = image.rsplit("/", 1)[-1]
        if "@sha256:" not in image and (":" not in tail or tail.endswith(":latest")):
            raise ValueError("pin the vLLM image to a version tag or digest")
        return image

    @model_validator(mode="after")
    def _check(self) -> VllmServiceArgs:
        if self.disaggregation and not self.rdma:
            raise FieldProblem("disaggregation", "set", "prefill/decode moves KV caches over InfiniBand: set rdma: true")
        if self.disaggregation and self.autoscaling:
            raise FieldProblem("autoscaling", "set", "disaggregated engines are sized by prefill_replicas and decode_replicas")
        return self

    def facts(self) -> models.ModelFactsArgs:
        if self.model_facts is not None:
            if self.model_facts.hf_id != self.model:
                raise ValueError(f"model_facts.hf_id {self.model_facts.hf_id!r} is not the served model {self.model!r}")
            return self.model_facts
        return models.get_model(self.model)


class VllmService(pulumi.ComponentResource):
    """A vLLM OpenAI-compatible endpoint (``endpoint``: ``http://<name>.<ns>.svc:8000/v1``).

    Outputs: ``endpoint``, ``service_name``, ``fit`` (the memory-fit numbers), ``service_account``.
    """

    endpoint: str
    service_name: str
    namespace: str
    served_model_name: str
    pool_sku: catalog.GpuSku
    fit: models.FitResult
    service_account: str

    def __init__(
        self,
        name: str,
        args: VllmServiceArgs | dict,
        pool: GpuNodePool,
        provider: k8s.Provider,
        api_key: pulumi.Input[str],
        model_store=None,
        identity=None,
        hf_token: pulumi.Input[str] | None = None,
        dra=None,
        rdma=None,
        monitoring=None,
        opts: pulumi.ResourceOptions | None = None,
    ):
        """
        :param name: Logical name; children are named ``<name>-deployment`` and so on.
        :param args: Settings, a ``VllmServiceArgs`` or a dict of its fields.
        :param pool: The GPU pool to run on (node selector, tolerations, GPU resource, size for the fit).
        :param provider: Kubernetes provider of the cluster.
        :param api_key: The key clients must send (``Authorization: Bearer``); pass a Pulumi secret.
        :param model_store: ModelStore holding the weights, for ``source: blob``.
        :param identity: WorkloadIdentity for the service account (``namespace``/``<name>``) with read access to the store.
        :param hf_token: Hugging Face token for ``source: huggingface`` (a Pulumi secret).
        :param dra: DraDeviceClasses, for ``gpu_access: dra``.
        :param rdma: RdmaNetwork, for ``rdma: true``.
        :param monitoring: ``ScalingMonitor`` (query endpoint and KEDA identity), for autoscaling.
        :param opts: Standard Pulumi resource options.
        """
        args = validate_args(VllmServiceArgs, args, "VllmService", name)
        facts = self._check(name, args, pool, model_store, identity, hf_token, dra, rdma, monitoring)
        super().__init__(f"{PACKAGE}:index:VllmService", name, None, opts)
        # Children do not inherit the component's depends_on (namespace, Blob read grant): pass it on.
        child = Children(self, opts, provider).opts()
        self.service_name = args.name
        self.namespace = args.namespace
        self.served_model_name = args.served_model_name or args.model
        self.pool_sku = pool.sku
        self.service_account = args.name
        self.endpoint = f"http://{args.name}.{args.namespace}.svc.cluster.local:{PORT}/v1"
        labels = {"app.kubernetes.io/name": "vllm", INSTANCE_LABEL: args.name}

        annotations = {}
        if args.source == "blob":
            annotations = identity.service_account_annotations
        account = k8s.core.v1.ServiceAccount(
            f"{name}-sa",
            metadata={"name": args.name, "namespace": args.namespace, "labels": labels, "annotations": annotations},
            automount_service_account_token=args.source == "blob",
            opts=child,
        )
        secrets = {"api-key": api_key}
        if args.source == "huggingface":
            secrets["hf-token"] = hf_token
        secret = k8s.core.v1.Secret(
            f"{name}-secret",
            metadata={"name": f"{args.name}-secrets", "namespace": args.namespace, "labels": labels},
            type="Opaque",
            string_data={k: pulumi.Output.secret(v) for k, v in secrets.items()},
            opts=child,
        )
        load_seconds = self._load_seconds(args, facts)
        roles = (
            {"": args.replicas}
            if not args.disaggregation
            else {"prefill": args.disaggregation.prefill_replicas, "decode": args.disaggregation.decode_replicas}
        )
        deployments = []
        for role, replicas in roles.items():
            pod_spec = self._pod_spec(args, facts, pool, dra, rdma, model_store, role, load_seconds)
            role_labels = {**labels, **({ROLE_LABEL: role} if role else {})}
            pod_labels = {**role_labels, **(identity.pod_labels if args.source == "blob" else {})}
            deployments.append(
                k8s.apps.v1.Deployment(
                    f"{name}-{role or 'engine'}",
                    metadata={
                        "name": args.name + (f"-{role}" if role else ""),
                        "namespace": args.namespace,
                        "labels": role_labels,
                    },
                    spec={
                        "replicas": (args.autoscaling.min_replicas if args.autoscaling else replicas),
                        "selector": {"matchLabels": role_labels},
                        # A replacement needs a second GPU node; with scarce GPUs, replace in place.
                        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}},
                        "template": {"metadata": {"labels": pod_labels}, "spec": pod_spec},
                    },
                    opts=pulumi.ResourceOptions.merge(
                        child,
                        pulumi.ResourceOptions(
                            depends_on=[account, secret],
                            # KEDA owns the replica count once it scales the Deployment.
                            ignore_changes=["spec.replicas"] if args.autoscaling else None,
                            custom_timeouts=pulumi.CustomTimeouts(
                                create=f"{load_seconds // 60 + 15}m", update=f"{load_seconds // 60 + 15}m"
                            ),
                        ),
                    ),
                )
            )
        front_role = {ROLE_LABEL: "decode"} if args.disaggregation else {}
        k8s.core.v1.Service(
            f"{name}-service",
            metadata={"name": args.name, "namespace": args.namespace, "labels": labels},
            spec={"selector": {**labels, **front_role}, "ports": [{"name": "http", "port": PORT, "targetPort": "http"}]},
            opts=child,
        )
        k8s.policy.v1.PodDisruptionBudget(
            f"{name}-pdb",
            metadata={"name": args.name, "namespace": args.namespace, "labels": labels},
            # maxUnavailable 1 with AlwaysAllow never blocks a node drain, even for one replica.
            spec={"maxUnavailable": 1, "selector": {"matchLabels": labels}, "unhealthyPodEvictionPolicy": "AlwaysAllow"},
            opts=child,
        )
        k8s.apiextensions.CustomResource(
            f"{name}-podmonitor",
            api_version="azmonitoring.coreos.com/v1",
            kind="PodMonitor",
            metadata={"name": args.name, "namespace": args.namespace, "labels": labels},
            # Azure managed Prometheus scrapes azmonitoring.coreos.com PodMonitors (named ports only).
            spec={
                "selector": {"matchLabels": labels},
                # Carries the instance label onto every series, so queries can tell services apart.
                "podTargetLabels": [INSTANCE_LABEL],
                "podMetricsEndpoints": [{"port": "http", "path": "/metrics", "interval": "30s"}],
                # Microsoft's recommended limits, so no series is dropped in ingestion.
                "labelLimit": 63,
                "labelNameLengthLimit": 511,
                "labelValueLengthLimit": 1023,
            },
            opts=child,
        )
        if args.autoscaling:
            self._autoscaler(name, args, monitoring, deployments[0], child)
        if args.disaggregation:
            self._inference_pool(name, args, labels, pool, child)
        self.fit = self._fit
        self.register_outputs({"endpoint": self.endpoint, "service_name": self.service_name})

    def _check(
        self, name, args: VllmServiceArgs, pool, model_store, identity, hf_token, dra, rdma, monitoring
    ) -> models.ModelFactsArgs:
        """Everything that can be known before a resource exists: sources, GPUs, fit."""
        try:
            facts = args.facts()
        except ValueError as err:
            fail("VllmService", name, "model", args.model, str(err).replace("\n", " "))
        if args.source == "blob" and (model_store is None or identity is None):
            fail(
                "VllmService",
                name,
                "source",
                "blob",
                "give model_store and identity (a WorkloadIdentity with read access to it), or use source huggingface",
            )
        if args.source == "huggingface" and hf_token is None:
            fail(
                "VllmService",
                name,
                "source",
                "huggingface",
                "give hf_token (a Pulumi secret); it becomes a Kubernetes Secret, never a plain env value",
            )
        mig = pool.gpu_resource_name.startswith("nvidia.com/mig-")
        gpus = args.tensor_parallel_size
        if mig and gpus != 1:
            fail(
                "VllmService",
                name,
                "tensor_parallel_size",
                gpus,
                f"pool {pool.pool_name} serves MIG slices ({pool.gpu_resource_name}); a slice cannot join tensor parallelism",
            )
        if not mig and gpus > pool.sku.gpus:
            fail("VllmService", name, "tensor_parallel_size", gpus, f"{pool.sku.name} has {pool.sku.gpus} GPUs per node")
        if args.gpu_access == "dra":
            template = _dra_template(pool, gpus)
            if dra is None or template not in dra.templates:
                problem = (
                    f"needs the claim template {template!r}: give DraDeviceClasses serving this MIG pool"
                    if mig
                    else f"needs DraDeviceClasses with a gpu-{gpus} claim template (add {gpus} to dra.gpu_counts)"
                )
                fail("VllmService", name, "gpu_access", "dra", problem)
            if dra.namespace != args.namespace:
                fail(
                    "VllmService",
                    name,
                    "namespace",
                    args.namespace,
                    f"DRA claim templates live in {dra.namespace!r}; serve from that namespace",
                )
        if args.rdma:
            if rdma is None or pool.pool_name not in rdma.nics:
                fail("VllmService", name, "rdma", True, f"pool {pool.pool_name} is not an RDMA pool of the given RdmaNetwork")
            if rdma.namespace != args.namespace:
                fail(
                    "VllmService",
                    name,
                    "namespace",
                    args.namespace,
                    f"RDMA claim templates live in {rdma.namespace!r}; serve from that namespace",
                )
        if args.disaggregation and gpus != pool.sku.gpus:
            fail(
                "VllmService",
                name,
                "tensor_parallel_size",
                gpus,
                f"disaggregated engines take full nodes: use {pool.sku.gpus} on {pool.sku.name}",
            )
        if args.autoscaling and monitoring is None:
            fail(
                "VllmService",
                name,
                "autoscaling",
                "set",
                "needs the cluster's managed Prometheus (query endpoint and KEDA identity)",
            )
        self._fit = models.fit(
            facts,
            pool.sku.name,
            gpus,
            max_model_len=args.max_model_len,
            gpu_memory_utilization=args.gpu_memory_utilization,
            dtype=args.dtype,
            kv_cache_dtype=args.kv_cache_dtype,
            mig_profile=pool.mig_profile,
            warn_below_sequences=args.min_full_sequences,
        )
        if not self._fit.fits:
            advice = "; ".join(s.text for s in self._fit.suggestions) or "choose a larger GPU size"
            fail(
                "VllmService",
                name,
                "model",
                args.model,
                f"cannot load on {pool.sku.name}: {self._fit.problem}. Smallest changes that fit: {advice}",
            )
        if self._fit.warning:
            pulumi.log.warn(f"VllmService {name!r}: {self._fit.warning}")
        return facts

    @staticmethod
    def _load_seconds(args: VllmServiceArgs, facts: models.ModelFactsArgs) -> int:
        rate = BLOB_STREAM_GBPS if args.source == "blob" else HUB_GBPS
        # The whole checkpoint streams even with dtype fp8: vLLM quantizes after loading.
        return int(facts.weight_bytes("auto") / 1e9 / rate) + WARMUP_SECONDS

    def _vllm_args(self, args: VllmServiceArgs, facts: models.ModelFactsArgs, model_store, role: str) -> list[str]:
        port = DECODE_ENGINE_PORT if role == "decode" else PORT
        if args.source == "blob":
            model = model_store.model_uri(args.model_path or args.model)
            loader = [
                "--load-format",
                "runai_streamer",
                "--model-loader-extra-config",
                json.dumps({"concurrency": _streamer_concurrency(facts)}),
            ]
        else:
            model, loader = args.model, []
        result = [
            "--model", model, *loader,
            "--served-model-name", args.served_model_name or args.model,
            "--host", "0.0.0.0", "--port", str(port),
            "--tensor-parallel-size", str(args.tensor_parallel_size),
            "--max-model-len", str(args.max_model_len),
            "--gpu-memory-utilization", str(args.gpu_memory_utilization),
        ]  # fmt: skip
        if args.dtype == "fp8":
            result += ["--quantization", "fp8"]
        if args.kv_cache_dtype == "fp8":
            result += ["--kv-cache-dtype", "fp8"]
        if args.enable_prefix_caching:
            result.append("--enable-prefix-caching")
        if args.max_num_seqs:
            result += ["--max-num-seqs", str(args.max_num_seqs)]
        if role:
            result += ["--kv-transfer-config", json.dumps({"kv_connector": "NixlConnector", "kv_role": "kv_both"})]
        return result + list(args.extra_args)

    def _pod_spec(
        self, args: VllmServiceArgs, facts, pool: GpuNodePool, dra, rdma, model_store, role: str, load_seconds: int
    ) -> dict:
        env = [
            {"name": "VLLM_API_KEY", "valueFrom": {"secretKeyRef": {"name": f"{args.name}-secrets", "key": "api-key"}}},
            # The image has no user for a non-root UID; HOME and USER keep torch, triton and getpass working.
            {"name": "HOME", "value": "/home/vllm"},
            {"name": "USER", "value": "vllm"},
            {"name": "HF_HOME", "value": "/home/vllm/.cache/huggingface"},
        ]
        if args.source == "blob":
            env.append({"name": "AZURE_STORAGE_ACCOUNT_NAME", "value": model_store.account_name})
        else:
            env.append({"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": f"{args.name}-secrets", "key": "hf-token"}}})
        if role:
            env.append({"name": "VLLM_NIXL_SIDE_CHANNEL_HOST", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}})
        resources: dict = {"requests": {"cpu": args.cpu, "memory": args.memory}, "limits": {"memory": args.memory}}
        claims: dict[str, str] = {}
        if args.gpu_access == "dra":
            claims["gpus"] = _dra_template(pool, args.tensor_parallel_size)
            resources["claims"] = [{"name": "gpus"}]
        else:
            resources["requests"][pool.gpu_resource_name] = args.tensor_parallel_size
            resources["limits"][pool.gpu_resource_name] = args.tensor_parallel_size
        probe = {
            "httpGet": {"path": "/health", "port": "engine" if role == "decode" else "http"},
            "periodSeconds": 10,
            "timeoutSeconds": 5,
        }
        container = {
            "name": "vllm",
            "image": args.image,
            "args": self._vllm_args(args, facts, model_store, role),
            "ports": [
                {
                    "name": "engine" if role == "decode" else "http",
                    "containerPort": DECODE_ENGINE_PORT if role == "decode" else PORT,
                }
            ],
            "env": env,
            "resources": resources,
            # The startup budget covers the estimated weight load; liveness starts only after it.
            "startupProbe": {**probe, "failureThreshold": math.ceil(load_seconds / 10) + 6},
            "readinessProbe": {**probe, "failureThreshold": 3},
            "livenessProbe": {**probe, "periodSeconds": 20, "failureThreshold": 3},
            "securityContext": {
                "allowPrivilegeEscalation": False,
                "capabilities": {"drop": ["ALL"]},
                # Exception: torch.compile, triton and the streamer write caches outside the mounted folders.
                "readOnlyRootFilesystem": False,
            },
            "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}, {"name": "home", "mountPath": "/home/vllm"}],
        }
        spec = {
            "serviceAccountName": args.name,
            "nodeSelector": dict(pool.node_selector),
            "tolerations": list(pool.tolerations),
            "securityContext": {
                "runAsNonRoot": True,
                "runAsUser": 1000,
                "runAsGroup": 1000,
                "fsGroup": 1000,
                "seccompProfile": {"type": "RuntimeDefault"},
            },
            # In-flight requests finish before the node drains.
            "terminationGracePeriodSeconds": 120,
            "containers": [container],
            "volumes": [
                # NCCL and PyTorch exchange tensors through shared memory between TP workers.
                {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": f"{max(2, 4 * args.tensor_parallel_size)}Gi"}},
                {"name": "home", "emptyDir": {}},
            ],
        }
        if role == "decode":
            # The routing sidecar runs the KV handoff: it asks the prefill pod the endpoint picker chose
            # (request header) to compute the prompt, then lets local vLLM decode from the NIXL-moved KV.
            spec["initContainers"] = [
                {
                    "name": "routing-sidecar",
                    "image": ROUTING_SIDECAR_IMAGE,
                    "restartPolicy": "Always",
                    "args": [
                        f"--port={PORT}",
                        f"--vllm-port={DECODE_ENGINE_PORT}",
                        "--kv-connector=nixlv2",
                        # v0.8.0's flag (pkg/sidecar/proxy/options.go); --secure-serving is the EPP's and stops it.
                        "--secure-proxy=false",
                    ],
                    "ports": [{"name": "http", "containerPort": PORT}],
                    "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"memory": "512Mi"}},
                    "securityContext": restricted_container(),
                }
            ]
        if claims:
            spec["resourceClaims"] = [{"name": k, "resourceClaimTemplateName": v} for k, v in claims.items()]
        if role:
            # Seed 004: prefill and decode engines never share a node.
            spec["affinity"] = {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {"labelSelector": {"matchLabels": {INSTANCE_LABEL: args.name}}, "topologyKey": "kubernetes.io/hostname"}
                    ]
                }
            }
        if args.rdma:
            contract: RdmaPodSpec = rdma.pod_spec(pool.pool_name)
            spec = contract.apply(spec, containers=["vllm"])
        return spec

    @staticmethod
    def _inference_pool(name, args: VllmServiceArgs, labels: dict, pool: GpuNodePool, opts) -> None:
        """The routing front: an InferencePool over prefill and decode pods, with llm-d's endpoint picker.

        Chosen over a bespoke router because InferencePool is the Gateway API standard that Envoy AI
        Gateway routes to natively; the picker chooses a decode pod and a prefill pod per request.
        """
        k8s.helm.v4.Chart(
            f"{name}-inferencepool",
            chart=INFERENCEPOOL_CHART,
            version=INFERENCEPOOL_CHART_VERSION,
            namespace=args.namespace,
            values={
                "inferencePool": {"modelServers": {"matchLabels": labels}, "targetPortNumber": PORT},
                "inferenceExtension": {
                    "image": {**EPP_IMAGE, "pullPolicy": "IfNotPresent"},
                    "pluginsCustomConfig": {"pd-config.yaml": PD_PLUGINS},
                    "pluginsConfigFile": "pd-config.yaml",
                },
                "provider": {"name": "none"},
            },
            opts=opts,
        )

    @staticmethod
    def _autoscaler(name, args: VllmServiceArgs, monitoring, deployment, opts) -> None:
        scaling = args.autoscaling
        auth = k8s.apiextensions.CustomResource(
            f"{name}-keda-auth",
            api_version="keda.sh/v1alpha1",
            kind="TriggerAuthentication",
            metadata={"name": f"{args.name}-prometheus", "namespace": args.namespace},
            spec={"podIdentity": {"provider": "azure-workload", "identityId": monitoring.keda_client_id}},
            opts=opts,
        )
        query = f'sum(vllm:num_requests_waiting{{namespace="{args.namespace}",app_kubernetes_io_instance="{args.name}"}})'
        triggers: list[dict] = [
            {
                "type": "prometheus",
                "metadata": {
                    "serverAddress": monitoring.query_endpoint,
                    "query": query,
                    "threshold": str(scaling.waiting_requests_target),
                },
                "authenticationRef": {"name": f"{args.name}-prometheus"},
            }
        ]
        if scaling.active_hours:
            hours = scaling.active_hours
            triggers.append(
                {
                    "type": "cron",
                    "metadata": {
                        "timezone": hours.timezone,
                        "start": hours.start,
                        "end": hours.end,
                        "desiredReplicas": str(max(1, scaling.min_replicas)),
                    },
                }
            )
        k8s.apiextensions.CustomResource(
            f"{name}-scaler",
            api_version="keda.sh/v1alpha1",
            kind="ScaledObject",
            metadata={"name": args.name, "namespace": args.namespace},
            spec={
                "scaleTargetRef": {"name": args.name},
                "minReplicaCount": scaling.min_replicas,
                "maxReplicaCount": scaling.max_replicas,
                # Idle time before scaling to zero (KEDA applies cooldownPeriod only to that step).
                "cooldownPeriod": 600,
                # Model loads take minutes: scale in slowly so a brief lull does not drop warm replicas.
                "advanced": {"horizontalPodAutoscalerConfig": {"behavior": {"scaleDown": {"stabilizationWindowSeconds": 600}}}},
                "triggers": triggers,
            },
            opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[auth, deployment])),
        )


def _streamer_concurrency(facts: models.ModelFactsArgs) -> int:
    """More parallel reads for bigger checkpoints: 16 up to ~16 GB, up to 64 for 70B-class models."""
    gigabytes = facts.weight_bytes("auto") / 1e9
    return int(min(64, max(16, 2 ** math.ceil(math.log2(max(gigabytes, 1))))))


def _dra_template(pool: GpuNodePool, gpus: int) -> str:
    """The DraDeviceClasses claim template for ``gpus`` GPUs, or for one slice on a MIG pool."""
    if pool.gpu_resource_name.startswith("nvidia.com/mig-"):
        profile = pool.gpu_resource_name.removeprefix("nvidia.com/mig-")
        return f"{pool.pool_name}-mig-{profile.replace('.', '-')}"
    return f"gpu-{gpus}"
