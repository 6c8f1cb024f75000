"""What a vLLM service is, from its args and its pool alone (``service_facts``): its names, endpoint, the labels of its
pods, its pool's size, the GPUs it runs per output engine, its fallback. ``VllmService`` takes its attributes from
these facts, and the gateway's own checks read the same before any model exists (``components/stack/component_checks.py``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from ..core import catalog
from ..core.endpoints import VLLM_PORT
from ..gpu.pools import GpuPool
from .vllm_disaggregation import engine_roles, inference_pool_name
from .vllm_manifests import service_labels
from .vllm_service_args import VllmServiceArgs


class ServedModel(Protocol):
    """What a gateway reads of a self-hosted model: a ``VllmService``, or its ``ServiceFacts`` before it exists."""

    @property
    def service_name(self) -> str: ...
    @property
    def namespace(self) -> str: ...
    @property
    def served_model_name(self) -> str: ...
    @property
    def fallback(self) -> str | None: ...
    @property
    def pool_sku(self) -> catalog.GpuSku: ...
    @property
    def endpoint(self) -> str: ...
    @property
    def inference_pool(self) -> str | None: ...
    @property
    def pod_labels(self) -> Mapping[str, str]: ...
    @property
    def gpus_per_decoder(self) -> float: ...


@dataclass(frozen=True)
class ServiceFacts:
    service_name: str
    namespace: str
    served_model_name: str
    fallback: str | None
    pool_sku: catalog.GpuSku
    service_account: str
    endpoint: str
    inference_pool: str | None
    pod_labels: dict[str, str]
    gpus_per_decoder: float
    """GPUs the service runs per engine that writes output tokens, for its cost per token: the tensor-parallel size,
    times the engines per decode engine when prefill and decode run apart."""


def service_facts(args: VllmServiceArgs, pool: GpuPool) -> ServiceFacts:
    roles = engine_roles(args)
    return ServiceFacts(
        service_name=args.name,
        namespace=args.namespace,
        served_model_name=args.served_model_name or args.model,
        fallback=args.fallback,
        pool_sku=pool.sku,
        service_account=args.name,
        endpoint=f"http://{args.name}.{args.namespace}.svc.cluster.local:{VLLM_PORT}/v1",
        inference_pool=inference_pool_name(args.name) if args.disaggregation else None,
        pod_labels=service_labels(args),
        gpus_per_decoder=args.tensor_parallel_size * sum(roles.values()) / roles.get("decode", sum(roles.values())),
    )
