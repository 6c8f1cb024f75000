"""DynamoInference: NVIDIA Dynamo serving one vLLM model, disaggregated, on an RDMA pool.

The component installs the Dynamo platform of one release (1.6.1: the ``dynamo-platform`` chart, whose
operator applies the nvidia.com CRDs itself; no etcd, since discovery goes through the Kubernetes API, and
no NATS, since KV events go over ZMQ) and creates one ``DynamoGraphDeployment`` (``nvidia.com/v1beta1``): a
CPU frontend (OpenAI HTTP on 8000, KV-aware routing with ``DYN_ROUTER_MODE=kv``) and prefill and decode
vLLM workers on the RDMA pool, each worker a full node with the RdmaNetwork's pod contract (NIC claim,
IPC_LOCK, UCX/NCCL env, the pool's node selector and tolerations, the DRA GPU claim where DRA serves the
pool), moving KV caches over NIXL. The workers keep the weights on a ReadWriteMany claim sized from the
checkpoint (``HF_HOME``), so a restarted worker does not download them again; every port the graph's pods
call each other on is fixed and every address the pod IP (``dynamo_runtime``), so that a NetworkPolicy can
admit them (``peer_ingress``). The memory fit is checked for each worker role before anything
registers. One per cluster: the operator runs cluster-wide.

Sources and what is not verified: ``dynamo_manifests``' module docstring.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

import pulumi
import pulumi_kubernetes as k8s

from .._base import PACKAGE, Children, kubernetes_provider, raise_problems, validate_args
from ..core import catalog, models
from ..core.security import restricted_namespace
from . import dynamo_manifests as manifests
from . import dynamo_runtime as runtime
from .dynamo_args import DynamoInferenceArgs, DynamoPlacement, DynamoSecrets

if TYPE_CHECKING:
    from ..context import ClusterContext
    from ..core.catalog import GpuSku
    from ..gpu.pools import GpuPool


@dataclass(frozen=True)
class FrontendFacts:
    """What a Dynamo graph serves, from its args, pool and namespace alone; ``DynamoInference`` has the same, and the
    gateway's checks read these before the graph exists."""

    namespace: str
    service_name: str
    served_model_name: str
    pod_labels: dict[str, str]
    peer_ingress: list[dict[str, Any]]
    endpoint: str
    pool_sku: GpuSku
    worker_nodes: int


def frontend_facts(args: DynamoInferenceArgs, pool: GpuPool, namespace: str) -> FrontendFacts:
    service = manifests.frontend_service(args)
    return FrontendFacts(
        namespace=namespace,
        service_name=service,
        served_model_name=manifests.served_model_name(args),
        pod_labels=manifests.pod_labels(args, "frontend"),
        peer_ingress=runtime.frontend_peer_ingress(args.name),
        endpoint=f"http://{service}.{namespace}.svc.cluster.local:{manifests.FRONTEND_PORT}/v1",
        pool_sku=pool.sku,
        worker_nodes=args.prefill.replicas + args.decode.replicas,
    )


class DynamoInference(pulumi.ComponentResource):
    """Dynamo's frontend over disaggregated vLLM workers (``endpoint``: ``http://<name>-frontend.<ns>.svc.cluster.local:8000/v1``).

    Outputs: ``endpoint``, ``service_name`` (the frontend Service), ``namespace``, ``served_model_name``,
    ``pod_labels`` (the frontend pods' labels, for a NetworkPolicy), ``peer_ingress`` (the ingress rules a
    NetworkPolicy on the frontend must also have: its workers' response streams), ``fit`` (per worker role),
    ``pool_sku`` and ``worker_nodes`` (the VM size and number of nodes the workers take, one each: what it costs).
    """

    endpoint: str
    service_name: str
    namespace: str
    served_model_name: str
    pod_labels: dict[str, str]
    peer_ingress: list[dict]
    fit: dict[str, models.FitResult]
    pool_sku: catalog.GpuSku
    worker_nodes: int
    platform: k8s.helm.v4.Chart
    model_cache: k8s.core.v1.PersistentVolumeClaim
    graph: k8s.apiextensions.CustomResource

    def __init__(
        self,
        name: str,
        args: DynamoInferenceArgs | dict,
        opts: pulumi.ResourceOptions | None = None,
        *,
        cluster: ClusterContext,
        placement: DynamoPlacement,
        secrets: DynamoSecrets,
    ):
        """
        :param name: Logical name; children are named ``<name>-crds``, ``<name>-platform``, ``<name>-graph`` and so on.
        :param args: Settings, a ``DynamoInferenceArgs`` or a dict of its fields.
        :param opts: Standard Pulumi resource options; a Kubernetes ``provider`` here wins over the cluster's.
            Children wait for its ``depends_on`` too.
        :param cluster: The cluster (``AksCluster.context``); its Kubernetes provider is used.
        :param placement: The RDMA pool the workers run on, its RdmaNetwork (whose namespace the graph uses) and,
            where DRA serves the pool, the DraDeviceClasses whose full-node GPU claim the workers take.
        :param secrets: The Hugging Face token the workers download the weights with.
        """
        args = validate_args(DynamoInferenceArgs, args, "DynamoInference", name)
        raise_problems("DynamoInference", name, manifests.dynamo_inference_problems(args, placement, secrets))
        super().__init__(f"{PACKAGE}:index:DynamoInference", name, None, opts)
        children = Children(self, opts, kubernetes_provider(opts, cluster.provider))
        pool, network = placement.pool, placement.rdma
        for fact in fields(facts := frontend_facts(args, pool, network.namespace)):
            setattr(self, fact.name, getattr(facts, fact.name))
        self.fit = {role: manifests.worker_fit(args, role, pool.sku.name) for role in ("prefill", "decode")}
        for role, fit in self.fit.items():
            if fit.warning:
                pulumi.log.warn(f"DynamoInference {name!r} {role}: {fit.warning}")
        if warning := manifests.hub_token_warning(args, secrets):
            pulumi.log.warn(f"DynamoInference {name!r}: {warning}")

        self.platform = self._platform(name, args, children)
        secret = None
        if secrets.hf_token is not None:
            secret = k8s.core.v1.Secret(
                f"{name}-hf-token",
                metadata={"name": manifests.hf_secret_name(args), "namespace": self.namespace, "labels": {**self.pod_labels}},
                type="Opaque",
                string_data={"HF_TOKEN": pulumi.Output.secret(secrets.hf_token)},
                opts=children.opts(network),
            )
        claim = manifests.model_cache_claim(args, self.namespace)
        self.model_cache = k8s.core.v1.PersistentVolumeClaim(
            f"{name}-model-cache", metadata=claim["metadata"], spec=claim["spec"], opts=children.opts(network)
        )
        contract = network.pod_spec(pool.pool_name, gpu_claim_template=manifests.gpu_claim_template(placement))
        graph = manifests.graph_deployment(args, self.namespace, contract, hub_token=secret is not None)
        self.graph = k8s.apiextensions.CustomResource(
            f"{name}-graph",
            api_version=graph["apiVersion"],
            kind=graph["kind"],
            metadata=graph["metadata"],
            spec=graph["spec"],
            opts=children.opts(self.platform, secret, self.model_cache, network, *filter(None, [placement.gpu_claims])),
        )
        self.register_outputs(
            {
                "endpoint": self.endpoint,
                "service_name": self.service_name,
                "namespace": self.namespace,
                "served_model_name": self.served_model_name,
            }
        )

    def _platform(self, name: str, args: DynamoInferenceArgs, children: Children) -> k8s.helm.v4.Chart:
        """The platform chart in its own restricted namespace: the operator (which applies the nvidia.com CRDs
        from its init container) and its webhooks; nothing of it runs as root."""
        p = args.platform
        namespace = None
        if p.create_namespace:
            namespace = k8s.core.v1.Namespace(
                f"{name}-platform-namespace", metadata=restricted_namespace(p.namespace), opts=children.opts()
            )
        return k8s.helm.v4.Chart(
            f"{name}-platform",
            chart="dynamo-platform",
            version=p.chart_version,
            repository_opts={"repo": manifests.CHART_REPO},
            namespace=p.namespace,
            values=manifests.platform_values(args),
            opts=children.opts(namespace),
        )
