"""The pure check of what an ``AiGateway`` is given, before anything exists: the client keys against the client ids,
and each backend (its name, model, host, port, credentials, pods) and its fallback."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core.errors import FieldProblem
from ..core.names import DNS_LABEL, DNS_SUBDOMAIN
from .ai_gateway_args import MAX_BACKEND_NAME, AiGatewayArgs, GatewayBackend


def gateway_problems(args: AiGatewayArgs, backends: list[GatewayBackend], client_keys: Mapping[str, Any]) -> list[FieldProblem]:
    """Every problem with the keys and backends given to an ``AiGateway`` with ``args``; none if it can be built."""
    problems = _client_key_problems(args, client_keys)
    if not backends:
        problems.append(FieldProblem("backends", [], "give at least one backend to route to"))
    for field_name, values in (("model", [b.model for b in backends]), ("name", [b.name for b in backends])):
        repeated = sorted({v for v in values if values.count(v) > 1})
        if repeated:
            problems.append(FieldProblem(f"backends.{field_name}", repeated, f"backend {field_name}s must be unique"))
    for i, backend in enumerate(backends):
        problems += backend_problems(f"backends[{i}]", backend)
    return problems + fallback_problems(backends)


FALLBACK_MECHANISM = (
    "AI Gateway v1.1.0 falls back between prioritised backendRefs of one route rule, and its CRD refuses an "
    "InferencePool beside another backend in a rule (envoyproxy/ai-gateway@v1.1.0:api/v1beta1/ai_gateway_route.go "
    "'cannot mix InferencePool and AIServiceBackend references in the same rule')"
)


def fallback_problems(backends: list[GatewayBackend]) -> list[FieldProblem]:
    """A fallback names another backend's model, and neither end is an InferencePool (``FALLBACK_MECHANISM``)."""
    by_model = {b.model: b for b in backends}
    problems = []
    for i, b in enumerate(backends):
        if b.fallback is None:
            continue
        where, target = f"backends[{i}].fallback", by_model.get(b.fallback)
        if b.fallback == b.model:
            problems.append(FieldProblem(where, b.fallback, "a backend cannot fall back to itself; name another model"))
        elif target is None:
            problems.append(FieldProblem(where, b.fallback, f"not a model of the gateway ({', '.join(sorted(by_model))})"))
        elif "inference-pool" in (b.kind, target.kind):
            pool = b.model if b.kind == "inference-pool" else b.fallback
            why = f"{pool!r} is served through an InferencePool (prefill/decode): {FALLBACK_MECHANISM}"
            problems.append(FieldProblem(where, b.fallback, why))
    return problems


def _client_key_problems(args: AiGatewayArgs, client_keys: Mapping[str, Any]) -> list[FieldProblem]:
    problems = []
    missing = [c for c in args.client_ids if c not in client_keys]
    if missing:
        problems.append(FieldProblem("client_keys", sorted(client_keys), f"no API key for client(s) {', '.join(missing)}"))
    extra = sorted(set(client_keys) - set(args.client_ids))
    if extra:
        problems.append(
            FieldProblem("client_keys", sorted(client_keys), f"keys for clients not in client_ids: {', '.join(extra)}")
        )
    return problems


def backend_problems(where: str, b: GatewayBackend) -> list[FieldProblem]:
    """Every problem with one backend; ``where`` prefixes the field names (``backends[0]``)."""
    problems = []
    if not DNS_LABEL.match(b.name) or len(b.name) > MAX_BACKEND_NAME:
        problems.append(
            FieldProblem(f"{where}.name", b.name, "a DNS label of at most 50 characters (it names Kubernetes objects)")
        )
    if not b.model:
        problems.append(FieldProblem(f"{where}.model", b.model, "give the model name clients send"))
    if not DNS_SUBDOMAIN.match(b.hostname):
        problems.append(FieldProblem(f"{where}.hostname", b.hostname, "a DNS name without scheme, port or path"))
    if not 1 <= b.effective_port <= 65535:
        problems.append(FieldProblem(f"{where}.port", b.port, "a TCP port (1-65535)"))
    problems += _in_cluster_problems(where, b) if b.in_cluster else _azure_openai_problems(where, b)
    if b.effective_schema == "OpenAI" and b.api_version is not None:
        problems.append(FieldProblem(f"{where}.api_version", b.api_version, "only the AzureOpenAI schema takes an api-version"))
    return problems


def _in_cluster_problems(where: str, b: GatewayBackend) -> list[FieldProblem]:
    problems = []
    if b.kind in ("self-hosted", "inference-pool") and b.api_key_secret is None:
        problems.append(FieldProblem(f"{where}.api_key_secret", None, "self-hosted vLLM requires its API key (a Pulumi secret)"))
    pool_fields = {"inference_pool": b.inference_pool, "picker_pod_selector": b.picker_pod_selector}
    for key, value in pool_fields.items():
        if b.kind == "inference-pool" and not value:
            problems.append(FieldProblem(f"{where}.{key}", value, "an inference-pool backend names its pool and picker pods"))
        elif b.kind != "inference-pool" and value:
            problems.append(FieldProblem(f"{where}.{key}", value, "only an inference-pool backend takes it"))
    if b.inference_pool and not DNS_SUBDOMAIN.match(b.inference_pool):
        problems.append(FieldProblem(f"{where}.inference_pool", b.inference_pool, "a Kubernetes object name (DNS subdomain)"))
    if b.namespace is None:
        problems.append(
            FieldProblem(f"{where}.hostname", b.hostname, "in-cluster backends are <service>.<namespace>.svc.cluster.local")
        )
    if not b.pod_selector:
        problems.append(
            FieldProblem(
                f"{where}.pod_selector",
                b.pod_selector,
                "give the serving pods' labels: ingress to them is limited to the gateway",
            )
        )
    if b.kind in ("kaito", "dynamo") and b.api_key_secret is not None:
        server = "KAITO's inference server" if b.kind == "kaito" else "Dynamo's frontend"
        problems.append(FieldProblem(f"{where}.api_key_secret", "set", f"{server} takes no API key"))
    return problems


def _azure_openai_problems(where: str, b: GatewayBackend) -> list[FieldProblem]:
    problems = []
    if b.api_key_secret is not None:
        problems.append(
            FieldProblem(
                f"{where}.api_key_secret",
                "set",
                f"Azure OpenAI is called with Entra tokens from the Secret {b.secret_name!r}, not account keys",
            )
        )
    if not b.hostname.endswith(".openai.azure.com"):
        problems.append(FieldProblem(f"{where}.hostname", b.hostname, "an Azure OpenAI endpoint, <account>.openai.azure.com"))
    if b.effective_port != 443:
        problems.append(FieldProblem(f"{where}.port", b.port, "Azure OpenAI is served over HTTPS on 443"))
    return problems
