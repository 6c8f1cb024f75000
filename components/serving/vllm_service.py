"""VllmService: vLLM's OpenAI-compatible server on a GPU pool, checked to fit before it is deployed.

The GPU-memory fit runs at preview time and refuses a configuration that cannot load (seeds 000
and 002: OOMs that only show after deploy). Weights stream from Azure Blob with the RunAI Model
Streamer under workload identity (no storage keys), so cold starts stay short enough for
autoscaling. Every endpoint needs the API key, held as a Kubernetes Secret from a Pulumi secret.
"""

from __future__ import annotations

from dataclasses import fields

import pulumi
import pulumi_kubernetes as k8s

from .._base import PACKAGE, Children, kubernetes_provider, raise_problems, validate_args
from ..context import ClusterContext
from ..core import catalog, models
from ..core.endpoints import INSTANCE_LABEL, VLLM_PORT  # noqa: F401 (the gateway imports INSTANCE_LABEL from here)
from ..core.endpoints import VLLM_PORT as PORT  # noqa: F401 (and PORT, until it reads core.endpoints)
from ..core.security import restricted_namespace
from . import vllm_manifests as manifests
from .service_facts import service_facts
from .vllm_checks import hub_token_warning, service_fit, vllm_service_problems
from .vllm_disaggregation import (
    INFERENCEPOOL_CHART,
    INFERENCEPOOL_CHART_VERSION,
    engine_roles,
    inference_pool_values,
)
from .vllm_service_args import AzureServices, GpuPlacement, ScalingMonitor, VllmSecrets, VllmServiceArgs


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
    inference_pool: str | None
    """The InferencePool (in ``namespace``) the gateway routes to for prefill/decode serving; None otherwise."""
    pod_labels: dict[str, str]
    """Labels every engine pod of the service carries (both roles)."""
    gpus_per_decoder: float
    """GPUs the service runs per engine that writes output tokens, for its cost per token: the tensor-parallel
    size, or with prefill/decode that times (prefill + decode replicas) / decode replicas."""
    fallback: str | None
    """The served model that answers this model's calls at the gateway when it cannot (``VllmServiceArgs.fallback``)."""

    def __init__(
        self,
        name: str,
        args: VllmServiceArgs | dict,
        opts: pulumi.ResourceOptions | None = None,
        *,
        cluster: ClusterContext,
        placement: GpuPlacement,
        secrets: VllmSecrets,
        azure: AzureServices | None = None,
    ):
        """
        :param name: Logical name; children are named ``<name>-engine``, ``<name>-service`` and so on.
        :param args: Settings, a ``VllmServiceArgs`` or a dict of its fields.
        :param opts: Standard Pulumi resource options; a Kubernetes provider in ``provider``/``providers``
            takes precedence over the cluster's.
        :param cluster: The AKS cluster (``AksCluster.context``); its Kubernetes provider is used.
        :param placement: The GPU pool to run on (node selector, tolerations, GPU resource, size for the fit),
            with the DraDeviceClasses for ``gpu_access: dra`` and the RdmaNetwork for ``rdma: true``.
        :param secrets: The API key clients must send and, for ``source: huggingface``, the hub token.
        :param azure: The ModelStore and WorkloadIdentity for ``source: blob``, and the ``ScalingMonitor``
            (managed Prometheus and KEDA's identity) for autoscaling. Default None: neither.
        """
        args = validate_args(VllmServiceArgs, args, "VllmService", name)
        azure = azure or AzureServices()
        raise_problems("VllmService", name, vllm_service_problems(args, placement, secrets, azure))
        pool = placement.pool
        fit = service_fit(args, pool)
        for warning in (fit.warning, hub_token_warning(args, secrets)):
            if warning:
                pulumi.log.warn(f"VllmService {name!r}: {warning}")
        # Resolved before the component registers: the store refuses a bad path with its own message.
        engine = _engine(args, placement, azure)
        super().__init__(f"{PACKAGE}:index:VllmService", name, None, opts)
        # Children do not inherit the component's depends_on (namespace, Blob read grant): pass it on.
        self._children = Children(self, opts, kubernetes_provider(opts, cluster.provider))
        owned = {owner.namespace for owner in (placement.rdma, placement.dra) if owner is not None}
        if args.create_namespace and args.namespace not in owned:
            # vLLM pods run as non-root with no capabilities: the restricted profile admits them.
            namespace = k8s.core.v1.Namespace(
                f"{name}-namespace", metadata=restricted_namespace(args.namespace), opts=self._children.opts()
            )
            self._children.waits.append(namespace)
        child = self._children.opts()
        facts = service_facts(args, pool)  # what the gateway's checks read before this service exists
        for fact in fields(facts):
            setattr(self, fact.name, getattr(facts, fact.name))

        first = [self._account(name, args, azure), self._secret(name, args, secrets)]
        deployments = self._deployments(name, engine, azure, first)
        labels = manifests.service_labels(args)
        k8s.core.v1.Service(f"{name}-service", **manifests.service(args), opts=child)
        k8s.policy.v1.PodDisruptionBudget(f"{name}-pdb", **manifests.disruption_budget(args), opts=child)
        _custom_resource(f"{name}-podmonitor", manifests.pod_monitor(args), child)
        if args.autoscaling:
            self._autoscaler(name, args, azure.monitoring, deployments[0])
        if args.disaggregation:
            k8s.helm.v4.Chart(
                f"{name}-inferencepool",
                # The release name, which names the InferencePool: from the service's name, like its Service.
                name=self.inference_pool,
                chart=INFERENCEPOOL_CHART,
                version=INFERENCEPOOL_CHART_VERSION,
                namespace=args.namespace,
                values=inference_pool_values(args, labels),
                opts=child,
            )
        self.fit = fit
        self.register_outputs({"endpoint": self.endpoint, "service_name": self.service_name})

    def _account(self, name: str, args: VllmServiceArgs, azure: AzureServices) -> k8s.core.v1.ServiceAccount:
        """The pods' service account; for Blob weights, federated with the identity that reads the store."""
        blob = args.source == "blob"
        annotations = azure.identity.service_account_annotations if blob else {}
        labels = manifests.service_labels(args)
        return k8s.core.v1.ServiceAccount(
            f"{name}-sa",
            metadata={"name": args.name, "namespace": args.namespace, "labels": labels, "annotations": annotations},
            automount_service_account_token=blob,
            opts=self._children.opts(),
        )

    def _secret(self, name: str, args: VllmServiceArgs, secrets: VllmSecrets) -> k8s.core.v1.Secret:
        values = {"api-key": secrets.api_key}
        if args.source == "huggingface":
            values["hf-token"] = secrets.hf_token
        return k8s.core.v1.Secret(
            f"{name}-secret",
            metadata={"name": f"{args.name}-secrets", "namespace": args.namespace, "labels": manifests.service_labels(args)},
            type="Opaque",
            string_data={k: pulumi.Output.secret(v) for k, v in values.items()},
            opts=self._children.opts(),
        )

    def _deployments(
        self, name: str, engine: manifests.VllmEngine, azure: AzureServices, first: list[pulumi.Resource]
    ) -> list[k8s.apps.v1.Deployment]:
        """One Deployment per engine role, after the account and Secret, waiting as long as the load may take."""
        args = engine.args
        pod_labels = azure.identity.pod_labels if args.source == "blob" else {}
        minutes = f"{engine.cold_start.wait_minutes}m"

        def opts() -> pulumi.ResourceOptions:
            return pulumi.ResourceOptions.merge(
                self._children.opts(),
                pulumi.ResourceOptions(
                    depends_on=first,
                    # KEDA owns the replica count once it scales the Deployment.
                    ignore_changes=["spec.replicas"] if args.autoscaling else None,
                    custom_timeouts=pulumi.CustomTimeouts(create=minutes, update=minutes),
                ),
            )

        return [
            k8s.apps.v1.Deployment(
                f"{name}-{role or 'engine'}", **manifests.deployment(engine, role, replicas, pod_labels), opts=opts()
            )
            for role, replicas in engine_roles(args).items()
        ]

    def _autoscaler(self, name: str, args: VllmServiceArgs, monitoring: ScalingMonitor, deployment: pulumi.Resource) -> None:
        """KEDA's TriggerAuthentication and the ScaledObject over the engine Deployment."""
        child = self._children.opts()
        auth = _custom_resource(f"{name}-keda-auth", manifests.keda_authentication(args, monitoring), child)
        opts = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[auth, deployment]))
        _custom_resource(f"{name}-scaler", manifests.scaled_object(args, monitoring), opts)


def _engine(args: VllmServiceArgs, placement: GpuPlacement, azure: AzureServices) -> manifests.VllmEngine:
    """What the engine pods are built from: the weights' location and the pool's RDMA contract."""
    store = azure.model_store
    blob = args.source == "blob"
    return manifests.VllmEngine(
        args=args,
        facts=args.facts(),
        pool=placement.pool,
        model=store.model_uri(args.model_path or args.model) if blob else args.model,
        storage_account=store.account_name if blob else None,
        rdma=placement.rdma.pod_spec(placement.pool.pool_name) if args.rdma else None,
        imex_channel=placement.dra.channel_templates.get(placement.pool.pool_name)
        if args.rdma and args.gpu_access == "dra" and placement.dra
        else None,
    )


def _custom_resource(name: str, obj: dict, opts: pulumi.ResourceOptions) -> k8s.apiextensions.CustomResource:
    return k8s.apiextensions.CustomResource(
        name, api_version=obj["apiVersion"], kind=obj["kind"], metadata=obj["metadata"], spec=obj["spec"], opts=opts
    )
