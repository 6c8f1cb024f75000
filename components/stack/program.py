"""Assembles one environment from its typed config: resource group, cluster, GPU pools, exports.

``__main__.py`` calls this; other stacks can too, with a ``StackConfig`` of their own.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import pulumi
import pulumi_kubernetes as k8s
from pulumi_azure_native import resources

from .._base import StackFileError
from ..azure import managed_gpu
from ..azure.aks_cluster import AksCluster
from ..azure.gpu_node_pool import GpuNodePool
from ..azure.model_store import ModelStore
from ..azure.monitoring import ManagedPrometheus, ManagedPrometheusArgs
from ..azure.workload_identity import WorkloadIdentity
from ..context import AzureScope, ClusterContext
from ..core.errors import ConfigError
from ..core.security import restricted_namespace
from ..gateway.semantic_router_gateway import SemanticRouterGateway
from ..gateway.semantic_router_gateway_args import GatewaySecrets, SharedServices
from ..gpu.device_plugin import NvidiaDevicePlugin
from ..gpu.dra_device_classes import DraDeviceClasses
from ..gpu.qualification_gates import QualificationGates
from ..gpu.rdma_network import RdmaNetwork
from ..serving.dynamo_args import DynamoPlacement, DynamoSecrets
from ..serving.dynamo_inference import DynamoInference
from ..serving.kaito_workspace import KaitoWorkspace
from ..serving.vllm_disaggregation import INFERENCE_CRDS_URL
from ..serving.vllm_service import VllmService
from ..serving.vllm_service_args import AzureServices, GpuPlacement, ScalingMonitor, VllmSecrets
from ..training.distributed_training import DistributedTraining
from ..training.distributed_training_args import CheckpointStore, TrainingWorkers
from . import exports
from .client_keys import gateway_client_keys
from .component_checks import component_problems
from .config import StackConfig, config_from_env, parse_stack_config
from .gate_images import workload_gate_images
from .idle_keys import device_plugin_pools
from .pool_checks import driverless_pool_warnings


def stack_file() -> str:
    """The name of the stack's file, which refusals of its input blame."""
    return f"Pulumi.{pulumi.get_stack()}.yaml"


def load_stack_config() -> StackConfig:
    """Read and validate this stack's config as the Pulumi engine passed it to the program."""
    raw = config_from_env(pulumi.runtime.get_config_env(), pulumi.get_project())
    try:
        return parse_stack_config(raw, stack_file())
    except ConfigError as err:
        raise StackFileError(err.context, err.problems) from None


def run_stack() -> Stack:
    """What ``__main__.py`` runs: the stack file's config checked, the components' own checks included (on the facts
    each component derives from its args: ``component_checks``), before the first resource is registered; then the
    stack built. A component's refusal names the stack file's key path (``training.checkpoint_prefix``)."""
    config = load_stack_config()
    problems = component_problems(config)
    if problems:
        raise StackFileError(f"{stack_file()} is invalid", problems)
    return build_stack(config)


@dataclass
class Stack:
    cluster: AksCluster
    gpu_pools: list[GpuNodePool]
    rdma: RdmaNetwork | None = None
    dra: DraDeviceClasses | None = None
    gates: QualificationGates | None = None
    device_plugin: NvidiaDevicePlugin | None = None
    prometheus: ManagedPrometheus | None = None
    models: dict[str, VllmService] = field(default_factory=dict)
    kaito: dict[str, KaitoWorkspace] = field(default_factory=dict)
    model_store: ModelStore | None = None
    gateway: SemanticRouterGateway | None = None
    training: DistributedTraining | None = None
    dynamo: DynamoInference | None = None


def build_stack(config: StackConfig) -> Stack:
    """Create the resources of one environment and export what operators and other stacks need."""
    tags = {"managed-by": "aks-gpu-inference", **config.tags}
    if config.resource_group.create:
        group = resources.ResourceGroup(
            "resource-group", resource_group_name=config.resource_group.name, location=config.location, tags=tags
        )
        group_name = group.name
    else:
        group_name = pulumi.Output.from_input(config.resource_group.name)

    # Autoscaled models need the KEDA add-on; turning it on here keeps the stack file short.
    keda = config.cluster.keda or any(m.autoscaling for m in config.models)
    cluster_args = config.cluster.model_copy(update={"tags": {**tags, **config.cluster.tags}, "keda": keda})
    cluster = AksCluster(config.cluster.name, cluster_args, scope=AzureScope(group_name, config.location))
    context = cluster.context
    pools = [
        GpuNodePool(pool.name, pool.model_copy(update={"tags": {**tags, **pool.tags}}), cluster=context)
        for pool in config.gpu_pools
    ]

    for warning in driverless_pool_warnings(config):
        pulumi.log.warn(warning)
    by_name = {pool.pool_name: pool for pool in pools}
    stack = Stack(cluster=cluster, gpu_pools=pools)
    _gpu_software(config, stack, context, by_name)

    if config.cluster.managed_prometheus and not config.cluster.existing:
        prometheus_args = config.prometheus or ManagedPrometheusArgs(workspace_name=f"{config.cluster.name}-prometheus")
        stack.prometheus = ManagedPrometheus("prometheus", prometheus_args, cluster=context)
        pulumi.export("prometheus_query_endpoint", stack.prometheus.query_endpoint)
        managed = [p for p in pools if p.gpu_management == "managed"]
        if managed:
            managed_gpu.scrape_dcgm_exporters("prometheus-dcgm", context.provider, [stack.prometheus, *managed])
    _serve_models(config, stack, group_name, by_name)
    if config.training:
        _train(config, stack, by_name)
    if config.dynamo:
        _dynamo(config, stack, by_name)
    if config.gateway:
        _gateway(config, stack, group_name)

    pulumi.export("cluster_name", cluster.cluster_name)
    pulumi.export("resource_group_name", cluster.resource_group_name)
    pulumi.export("oidc_issuer_url", cluster.oidc_issuer_url)
    pulumi.export("kubeconfig", cluster.kubeconfig)
    pulumi.export(
        "gpu_pools",
        {
            pool.pool_name: {
                "vm_size": pool.sku.name,
                "gpu_resource_name": pool.gpu_resource_name,
                "gpus_per_node": pool.gpus_per_node,
                "rdma_capable": pool.rdma_capable,
                "node_selector": pool.node_selector,
                "tolerations": pool.tolerations,
            }
            for pool in pools
        },
    )
    return stack


def _gpu_software(config: StackConfig, stack: Stack, context: ClusterContext, by_name: dict[str, GpuNodePool]) -> None:
    """What makes the pools' GPUs and NICs usable: DRANET, DRA, the device plugin and the gates."""
    # Each component gets the typed args the stack config already validated: the config sections are
    # subclasses of the component args (plus the stack's own fields, which the components ignore).
    if config.rdma:
        stack.rdma = RdmaNetwork("rdma", config.rdma, pools=[by_name[p] for p in config.rdma.pools], cluster=context)
    if config.dra:
        dra_args = config.dra
        if stack.rdma:
            # Claims are namespaced: RDMA pods need their GPU templates next to their NIC templates.
            dra_args = config.dra.model_copy(update={"namespace": stack.rdma.namespace, "create_namespace": False})
        stack.dra = DraDeviceClasses(
            "dra",
            dra_args,
            opts=pulumi.ResourceOptions(depends_on=[stack.rdma] if stack.rdma else None),
            pools=[by_name[p] for p in config.dra_pools()],
            cluster=context,
        )
    plugin_pools = [by_name[name] for name in device_plugin_pools(config)]
    if plugin_pools:
        stack.device_plugin = NvidiaDevicePlugin(
            "nvidia-device-plugin", config.device_plugin, pools=plugin_pools, cluster=context
        )
    if config.rdma and config.rdma.gates:
        stack.gates = QualificationGates(
            "qualify",
            # The gates run the images the pool's engines and training job run (gate_images.py).
            config.rdma.gates.model_copy(update=workload_gate_images(config)),
            opts=pulumi.ResourceOptions(depends_on=[r for r in (stack.rdma, stack.dra) if r]),
            network=stack.rdma,
            cluster=context,
            gpu_claims=stack.dra,
        )
        pulumi.export("qualification_jobs", stack.gates.jobs)
        pulumi.export("qualification_verdicts", stack.gates.verdict_command)


def _serve_models(config: StackConfig, stack: Stack, group_name: pulumi.Input[str], pools: dict[str, GpuNodePool]) -> None:
    """vLLM services (with their identities, store access and autoscaling) and KAITO workspaces."""
    cluster = stack.cluster
    if config.model_store:
        stack.model_store = ModelStore("model-store", config.model_store, scope=AzureScope(group_name, config.location))
    for entry in config.kaito:
        stack.kaito[entry.name] = KaitoWorkspace(entry.name, entry, cluster=cluster.context)
    if not config.models:
        return
    settings = pulumi.Config()
    api_key = settings.require_secret("vllm_api_key")
    hf_token = settings.get_secret("hf_token") if any(m.source == "huggingface" for m in config.models) else None
    store = stack.model_store
    monitoring = None
    if any(m.autoscaling for m in config.models):
        keda = WorkloadIdentity("keda", {"namespace": "kube-system", "service_account": "keda-operator"}, cluster=cluster.context)
        keda.grant("Monitoring Data Reader", stack.prometheus.workspace_id, "reads-prometheus")
        monitoring = ScalingMonitor(query_endpoint=stack.prometheus.query_endpoint, keda_client_id=keda.client_id)
    namespaces = _model_namespaces(config, stack)
    inference_crds = _inference_crds(config, cluster.provider)
    for model in config.models:
        identity = None
        if model.source == "blob":
            identity = WorkloadIdentity(
                model.name,
                {"namespace": model.namespace, "service_account": model.name},
                cluster=cluster.context,
                # Named "<model>-identity" before commit ee83cf2; the alias keeps deployed identities
                # (and, through the name prefix, their children) instead of replacing them.
                opts=pulumi.ResourceOptions(aliases=[pulumi.Alias(name=f"{model.name}-identity")]),
            )
        depends = [ns for name, ns in namespaces.items() if name == model.namespace]
        if model.disaggregation and inference_crds:
            depends.append(inference_crds)
        if model.rdma and stack.gates and config.rdma.gates.pool == model.pool:
            depends.append(stack.gates)  # seed 004 step 7: nothing is served before the gates pass on its nodes
        if identity:
            depends.append(store.grant_read(identity))
        stack.models[model.name] = VllmService(
            model.name,
            model.model_copy(update={"create_namespace": False}),  # created above, once for all models sharing it
            opts=pulumi.ResourceOptions(depends_on=depends + [r for r in (stack.dra, stack.rdma) if r]),
            cluster=cluster.context,
            placement=GpuPlacement(pools[model.pool], dra=stack.dra, rdma=stack.rdma),
            secrets=VllmSecrets(api_key, hf_token=hf_token),
            azure=AzureServices(model_store=store, identity=identity, monitoring=monitoring),
        )
    pulumi.export("model_endpoints", {name: service.endpoint for name, service in stack.models.items()})
    pulumi.export("model_fits", {name: exports.fit_summary(service.fit) for name, service in stack.models.items()})
    pulumi.export("model_placements", exports.placements(config))


def _model_namespaces(config: StackConfig, stack: Stack) -> dict[str, k8s.core.v1.Namespace]:
    """The models' namespaces the stack creates (not those the RDMA network or the DRA driver own)."""
    owned = {ns for ns in (stack.rdma and stack.rdma.namespace, stack.dra and stack.dra.namespace) if ns}
    namespaces = {}
    for model in config.models:
        if model.create_namespace and model.namespace not in owned and model.namespace not in namespaces:
            # vLLM pods here run as non-root with no capabilities: the restricted profile admits them.
            namespaces[model.namespace] = k8s.core.v1.Namespace(
                f"namespace-{model.namespace}",
                metadata=restricted_namespace(model.namespace),
                opts=pulumi.ResourceOptions(provider=stack.cluster.provider),
            )
    return namespaces


def _inference_crds(config: StackConfig, provider: pulumi.ProviderResource) -> pulumi.Resource | None:
    """One copy of the Inference Extension's CRDs for every prefill/decode model's InferencePool, applied from the
    release manifest at the chart's version; a yaml.v2 ConfigFile registers each CRD as a child."""
    if not any(m.disaggregation for m in config.models):
        return None
    return k8s.yaml.v2.ConfigFile(
        "inference-extension-crds", file=INFERENCE_CRDS_URL, opts=pulumi.ResourceOptions(provider=provider)
    )


def _train(config: StackConfig, stack: Stack, pools: dict[str, GpuNodePool]) -> None:
    """The KubeRay run: its identity (checkpoints), workers on the RDMA pool, after the pool's gates."""
    job, context = config.training, stack.cluster.context
    identity = WorkloadIdentity(
        f"{job.name}-identity",
        {"namespace": stack.rdma.namespace, "service_account": job.service_account or job.name},
        cluster=context,
    )
    pool_args = next(p for p in config.gpu_pools if p.name == job.pool)
    gated = config.rdma.gates is not None and config.rdma.gates.pool == job.pool
    stack.training = DistributedTraining(
        "training",
        job,
        opts=pulumi.ResourceOptions(depends_on=[r for r in (stack.rdma, stack.dra) if r]),
        cluster=context,
        workers=TrainingWorkers(
            pools[job.pool],
            stack.rdma,
            stack.dra if job.pool in config.dra_pools() else None,
            spot_max_price=pool_args.spot_max_price if pool_args.spot else None,
        ),
        checkpoints=CheckpointStore(stack.model_store, identity),
        gates=stack.gates if gated else None,
    )
    pulumi.export(
        "training",
        {
            "job": stack.training.job_name,
            "status_command": stack.training.status_command,
            "checkpoints": stack.training.checkpoint_uri,
            "cost": stack.training.cost.as_dict(),
        },
    )


def _dynamo(config: StackConfig, stack: Stack, pools: dict[str, GpuNodePool]) -> None:
    """The Dynamo platform and graph on the RDMA pool; the graph waits for the pool's gates where it has them."""
    graph = config.dynamo
    gates = stack.gates if config.rdma.gates is not None and config.rdma.gates.pool == graph.pool else None
    stack.dynamo = DynamoInference(
        "dynamo",
        graph,
        opts=pulumi.ResourceOptions(depends_on=[r for r in (stack.rdma, stack.dra, gates) if r]),
        cluster=stack.cluster.context,
        placement=DynamoPlacement(pools[graph.pool], stack.rdma, stack.dra if graph.pool in config.dra_pools() else None),
        secrets=DynamoSecrets(pulumi.Config().get_secret("hf_token")),
    )
    pulumi.export("dynamo_endpoint", stack.dynamo.endpoint)
    pulumi.export("dynamo_fits", {role: exports.fit_summary(fit) for role, fit in stack.dynamo.fit.items()})


def _gateway(config: StackConfig, stack: Stack, group_name: pulumi.Input[str]) -> None:
    """The single endpoint: semantic router, AI gateway, Azure OpenAI, Grafana."""
    settings = pulumi.Config()
    # With Entra ID tokens there are no API keys to read (AiGatewayArgs.entra_tenant_id).
    client_keys = gateway_client_keys(settings, config.gateway.gateway.client_ids)
    stack.gateway = SemanticRouterGateway(
        "gateway",
        config.gateway,
        # Azure OpenAI, the identities and Grafana go into the stack's resource group, which may not be
        # an existing cluster's.
        cluster=replace(stack.cluster.context, resource_group_name=group_name),
        models=stack.models,
        # Only vLLM services take the key: a Dynamo- or KAITO-only stack does not need it set.
        secrets=GatewaySecrets(
            vllm_api_key=settings.require_secret("vllm_api_key") if stack.models else None, client_keys=client_keys
        ),
        shared=SharedServices(
            kaito=stack.kaito,
            dynamo={stack.dynamo.served_model_name: stack.dynamo} if stack.dynamo else {},
            model_store=stack.model_store,
            prometheus=stack.prometheus,
        ),
    )
    pulumi.export("gateway_endpoint", stack.gateway.endpoint)
    pulumi.export("gateway_address_command", stack.gateway.address_command)
    pulumi.export("gateway_routes", stack.gateway.routes)
    pulumi.export(
        "gateway_cost_per_million", {m: {"prompt": p, "completion": c} for m, (p, c) in stack.gateway.cost_per_million.items()}
    )
    if config.gateway.grafana:
        pulumi.export("grafana_endpoint", stack.gateway.grafana_endpoint)
        pulumi.export("dashboard_import", stack.gateway.dashboard_import)
