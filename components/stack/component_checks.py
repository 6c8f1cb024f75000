"""Every component's own check of the stack's input, run in one pass on facts before the first resource is registered.

Under ``pulumi up`` a registered resource is being created, and the components check their arguments when the program
reaches them, after dozens of others (the resource group, the cluster, its pools). So the stack first derives, from
its typed config alone, what each component will be (``pool_facts``, ``network_facts``, ``dra_facts``,
``service_facts``, ``workspace_facts``, ``frontend_facts``: the same functions the components take their attributes
from) and calls each component's validator with those facts in place of the resources, blaming the stack file's key
path (``training.checkpoint_prefix``). Components keep calling their own validators, so a program that composes them
by hand gets the same refusals, later. What only the stack itself passes (the router's identity, Grafana's
Prometheus) cannot be wrong in a stack file and is not checked here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pulumi

from .._base import ComponentInputError
from ..azure.aks_cluster import cluster_facts, cluster_problems
from ..azure.model_store import store_facts, store_problems
from ..azure.monitoring import ManagedPrometheusArgs, prometheus_problems
from ..azure.pool_facts import PoolFacts, pool_facts
from ..azure.workload_identity import WorkloadIdentityArgs
from ..context import AzureScope, ClusterContext
from ..core.errors import FieldProblem
from ..gateway.ai_gateway_checks import gateway_problems
from ..gateway.semantic_router_gateway_args import (
    GatewaySecrets,
    SharedServices,
    frontier_backends,
    router_config_args,
    self_hosted_backends,
    semantic_router_gateway_problems,
)
from ..gpu.device_plugin import device_plugin_problems
from ..gpu.dra_device_classes_args import dra_device_classes_problems
from ..gpu.dra_manifests import DraFacts, dra_facts
from ..gpu.qualification_gates import qualification_gates_problems
from ..gpu.rdma_network import NetworkFacts, network_facts, rdma_network_problems
from ..serving.dynamo_args import DynamoPlacement, DynamoSecrets
from ..serving.dynamo_inference import frontend_facts
from ..serving.dynamo_manifests import dynamo_inference_problems
from ..serving.kaito_workspace import kaito_workspace_problems, workspace_facts
from ..serving.service_facts import service_facts
from ..serving.vllm_checks import vllm_service_problems
from ..serving.vllm_service_args import AzureServices, GpuPlacement, ScalingMonitor, VllmSecrets
from ..training.distributed_training_args import CheckpointStore, TrainingWorkers
from ..training.training_checks import distributed_training_problems
from .config import StackConfig
from .gate_images import workload_gate_images

PENDING = "<known once it exists>"
"""Stands in for a value only Azure gives (the cluster's OIDC issuer, its resource ID, a Prometheus endpoint): the
checks ask only whether there will be one."""


def component_problems(config: StackConfig, secrets: Callable[[str], bool] | None = None) -> list[str]:
    """Every refusal the stack's components would make, as ``key.path=value: problem`` lines; empty if none.

    ``secrets(name)`` says whether the stack secret ``name`` is set (default: asks the Pulumi config)."""
    return _Checks(config, secrets or _secret_is_set).run()


def _secret_is_set(name: str) -> bool:
    return pulumi.Config().get_secret(name) is not None


class _Checks:
    def __init__(self, config: StackConfig, has: Callable[[str], bool]):
        self.config, self.has = config, has
        self.problems: list[str] = []
        scope = AzureScope(config.resource_group.name, config.location)
        self.scope = scope
        self.cluster: ClusterContext = cluster_facts(config.cluster, scope, pending=PENDING)
        self.pools: dict[str, PoolFacts] = {p.name: pool_facts(p) for p in config.gpu_pools}
        self.rdma: NetworkFacts | None = None
        self.dra: DraFacts | None = None

    def blame(self, section: str, problems: Sequence[FieldProblem]) -> None:
        self.problems += [str(FieldProblem(f"{section}.{p.field}", p.value, p.problem)) for p in problems]

    def run(self) -> list[str]:
        config = self.config
        self.blame("cluster", cluster_problems(config.cluster, self.scope))
        self._gpu_software()
        if config.model_store:
            self.blame("model_store", store_problems(config.model_store, self.scope))
        prometheus = config.cluster.managed_prometheus and not config.cluster.existing
        if prometheus:
            args = config.prometheus or ManagedPrometheusArgs(workspace_name=f"{config.cluster.name}-prometheus")
            self.blame("prometheus", prometheus_problems("prometheus", args, self.cluster))
        for index in range(len(config.kaito)):
            self.blame(f"kaito[{index}]", kaito_workspace_problems(self.cluster))
        self._models(prometheus)
        if config.training and config.training.pool in self.pools and self.rdma:
            self._training()
        if config.dynamo and config.dynamo.pool in self.pools and self.rdma:
            self._dynamo()
        if config.gateway:
            self._gateway()
        return self.problems

    def _gpu_software(self) -> None:
        config, pools, version = self.config, self.pools, self.cluster.kubernetes_version
        if config.rdma:
            members = [pools[p] for p in config.rdma.pools if p in pools]
            self.blame("rdma", rdma_network_problems(config.rdma, members, version))
            self.rdma = network_facts(config.rdma, members)
        if config.dra:
            namespace = self.rdma.namespace if self.rdma else config.dra.namespace
            members = [pools[p] for p in config.dra_pools() if p in pools]
            self.blame("dra", dra_device_classes_problems(config.dra, members, version))
            self.dra = dra_facts(namespace, config.dra.gpu_counts, members)
        served = config.dra_pools()
        plugin = [
            p
            for p in pools.values()
            if p.sku.gpu_vendor == "nvidia" and p.driver == "aks" and p.gpu_management != "managed" and p.pool_name not in served
        ]
        if plugin:
            self.blame("device_plugin", device_plugin_problems(plugin))
        if config.rdma and config.rdma.gates and self.rdma:
            gates = config.rdma.gates.model_copy(update=workload_gate_images(config))
            self.blame("rdma.gates", qualification_gates_problems(gates, self.rdma, self.dra))

    def _models(self, prometheus: bool) -> None:
        config = self.config
        store = store_facts(config.model_store) if config.model_store else None
        monitoring = ScalingMonitor(query_endpoint=PENDING, keda_client_id=PENDING) if prometheus else None
        # Asked only where the program reads it, so the plan lists no placeholder the stack does not use.
        from_hub = any(m.source == "huggingface" for m in config.models)
        hub_token = PENDING if from_hub and self.has("hf_token") else None
        for index, model in enumerate(config.models):
            if model.pool not in self.pools:
                continue  # refused by the stack config, naming the pools
            identity = WorkloadIdentityArgs(namespace=model.namespace, service_account=model.name)
            placement = GpuPlacement(self.pools[model.pool], dra=self.dra, rdma=self.rdma)
            azure = AzureServices(model_store=store, identity=identity if model.source == "blob" else None, monitoring=monitoring)
            problems = vllm_service_problems(model, placement, VllmSecrets(PENDING, hf_token=hub_token), azure)
            self.blame(f"models[{index}]", problems)

    def _training(self) -> None:
        config, job = self.config, self.config.training
        pool = self.pools[job.pool]
        pool_args = next(p for p in config.gpu_pools if p.name == job.pool)
        workers = TrainingWorkers(
            pool,
            self.rdma,
            self.dra if job.pool in config.dra_pools() else None,
            spot_max_price=pool_args.spot_max_price if pool_args.spot else None,
        )
        if config.model_store is None:
            return  # refused by the stack config: checkpoints go to the model store
        identity = WorkloadIdentityArgs(namespace=self.rdma.namespace, service_account=job.service_account or job.name)
        self.blame(
            "training", distributed_training_problems(job, workers, CheckpointStore(store_facts(config.model_store), identity))
        )

    def _dynamo(self) -> None:
        config, graph = self.config, self.config.dynamo
        claims = self.dra if graph.pool in config.dra_pools() else None
        placement = DynamoPlacement(self.pools[graph.pool], self.rdma, claims)
        secrets = DynamoSecrets(PENDING if self.has("hf_token") else None)
        self.blame("dynamo", dynamo_inference_problems(graph, placement, secrets))

    def _gateway(self) -> None:
        config, gateway = self.config, self.config.gateway
        models = {m.name: service_facts(m, self.pools[m.pool]) for m in config.models if m.pool in self.pools}
        kaito = {w.name: workspace_facts(w) for w in config.kaito}
        dynamo = {}
        if config.dynamo and config.dynamo.pool in self.pools and self.rdma:
            front = frontend_facts(config.dynamo, self.pools[config.dynamo.pool], self.rdma.namespace)
            dynamo = {front.served_model_name: front}
        shared = SharedServices(
            kaito=kaito,
            dynamo=dynamo,
            model_store=store_facts(config.model_store) if config.model_store else None,
            prometheus=PENDING if config.cluster.managed_prometheus and not config.cluster.existing else None,
        )
        api_key = PENDING if models else None
        clients = {client: PENDING for client in gateway.gateway.client_ids}
        region = config.location
        before = len(self.problems)
        self.blame(
            "gateway", semantic_router_gateway_problems(gateway, models, GatewaySecrets(api_key, clients), shared, region=region)
        )
        if len(self.problems) > before:
            return  # the router config and backends below are built from what was just refused
        try:
            router_config_args("gateway", gateway, models, shared, region=region)
        except ComponentInputError as err:
            self.problems += err.problems  # the gateway's own key paths already
            return
        backends = self_hosted_backends(models, shared, api_key) + frontier_backends(gateway)
        self.blame("gateway.gateway", gateway_problems(gateway.gateway, backends, clients))
