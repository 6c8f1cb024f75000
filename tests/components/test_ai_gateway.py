"""AiGateway under mocks: the Envoy Gateway and AI Gateway charts, Redis for global budgets, the
Gateway and its policies (API keys, optional Entra JWT, token budgets, buffer size), one route rule
per model, the per-backend objects, NetworkPolicies around the vLLM pods, refusals, and that no key
is ever recorded in plain text."""

import functools
import json
from dataclasses import replace

import kubernetes_validate
import pulumi
import pulumi_kubernetes as k8s
import pytest

from aks_gpu_inference.components._base import ComponentInputError, validate_args
from aks_gpu_inference.components.core import pins
from aks_gpu_inference.components.gateway.ai_gateway import AiGateway
from aks_gpu_inference.components.gateway.ai_gateway_args import (
    AZURE_API_VERSION,
    AiGatewayArgs,
    GatewayBackend,
    GatewayRef,
)
from aks_gpu_inference.components.gateway.ai_gateway_checks import gateway_problems
from aks_gpu_inference.components.gateway.ai_gateway_controllers import (
    AIGW_CHART,
    AIGW_CRDS_CHART,
    EG_CHART,
    aigw_values,
    eg_values,
)
from aks_gpu_inference.components.gateway.ai_gateway_manifests import envoy_proxy_spec
from aks_gpu_inference.components.serving.dynamo_runtime import RESPONSE_STREAM_PORT, frontend_peer_ingress
from aks_gpu_inference.planner.analyzer import analyze
from aks_gpu_inference.planner.engine.values import kubernetes_object
from tests.conftest import cluster_context, of_type, one, refusal_message, run_components

TENANT = "11111111-2222-3333-4444-555555555555"
VLLM_KEY = "sk-vllm-4c1f0b9e-never-in-plain-text"
ALICE_KEY = "sk-alice-8d2e7a61-never-in-plain-text"
BOB_KEY = "sk-bob-19f3c0aa-never-in-plain-text"
ARGS = {"client_ids": ["alice", "bob"]}
KEYS = {"alice": ALICE_KEY, "bob": BOB_KEY}


class FakeVllm:
    service_name = "llama"
    inference_pool = None


class FakeDisaggregatedVllm:
    service_name = "llama-70b"
    inference_pool = "llama-70b-inferencepool"
    pod_labels = {"app.kubernetes.io/name": "vllm", "app.kubernetes.io/instance": "llama-70b"}


def pool(**overrides) -> GatewayBackend:
    backend = GatewayBackend.from_vllm(FakeDisaggregatedVllm(), "llm-d-infra", "llama-3.3-70b", pulumi.Output.secret(VLLM_KEY))
    return GatewayBackend(**{**backend.__dict__, **overrides})


def llama(**overrides) -> GatewayBackend:
    backend = GatewayBackend.from_vllm(
        FakeVllm(), "gpu-inference", "meta-llama/Llama-3.1-8B-Instruct", pulumi.Output.secret(VLLM_KEY)
    )
    return GatewayBackend(**{**backend.__dict__, **overrides})


def gpt(**overrides) -> GatewayBackend:
    fields = {"name": "gpt-4o", "model": "gpt-4o", "kind": "azure-openai", "hostname": "aoai-test.openai.azure.com"}
    return GatewayBackend(**{**fields, **overrides})


def build(args=None, backends=None, keys=None):
    holder = {}

    def program():
        provider = k8s.Provider("k8s", kubeconfig="x")
        secret_keys = {k: pulumi.Output.secret(v) for k, v in (KEYS if keys is None else keys).items()}
        gateway = AiGateway(
            "aigw",
            args or ARGS,
            backends=[llama(), gpt()] if backends is None else backends,
            client_keys=secret_keys,
            cluster=cluster_context(provider=provider),
        )
        holder["gateway"] = gateway
        pulumi.export("endpoint", gateway.endpoint)
        pulumi.export("routes", gateway.routes)

    run = run_components(program)
    return holder["gateway"], run


@pytest.fixture(scope="module")
def default_build():
    return build()


@pytest.fixture(scope="module")
def full_build():
    args = {
        "entra_tenant_id": TENANT,
        "entra_audience": "api://ai-gateway",
        "load_balancer_ip": "10.224.0.200",
        "tracing_endpoint": {"service": "otel-collector", "namespace": "monitoring", "sampling_rate": 10},
        "token_limit_per_hour": 250_000,
    }
    return build(args, keys={})


def obj(run, type_suffix: str, name: str | None = None) -> dict:
    found = [r for r in of_type(run, type_suffix) if name is None or kubernetes_object(r)["metadata"]["name"] == name]
    assert len(found) == 1, f"{type_suffix} {name}: {[r.name for r in of_type(run, type_suffix)]}"
    return kubernetes_object(found[0])


@pytest.fixture(scope="module", autouse=True)
def cached_schemas():
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(kubernetes_validate.utils, "schema_contents", functools.cache(kubernetes_validate.utils.schema_contents))
        yield


# ---- charts ---------------------------------------------------------------------------------------


def test_charts_are_pinned_in_their_namespaces(default_build):
    _, run = default_build
    charts = {r.name: r.inputs for r in of_type(run, "helm.sh/v4:Chart")}
    assert {n: (c["chart"], c["version"], c["namespace"]) for n, c in charts.items()} == {
        "aigw-ai-gateway-crds": (AIGW_CRDS_CHART, "v1.1.0", "envoy-ai-gateway-system"),
        "aigw-ai-gateway": (AIGW_CHART, "v1.1.0", "envoy-ai-gateway-system"),
    }
    # Envoy Gateway's certgen Job is a pre-install hook: only a v3 Release runs it (pulumi-kubernetes#3284).
    (release,) = of_type(run, "helm.sh/v3:Release")
    assert release.name == "aigw-envoy-gateway"
    inputs = release.inputs
    assert (inputs["chart"], inputs["version"], inputs["namespace"], inputs["name"]) == (
        EG_CHART,
        "v1.8.2",
        "envoy-gateway-system",
        "envoy-gateway",
    )


def test_envoy_gateway_values_enable_the_ai_gateway_extension_and_redis(default_build):
    _, run = default_build
    chart = next(r for r in of_type(run, "helm.sh/v3:Release") if r.name == "aigw-envoy-gateway")
    eg = chart.inputs["values"]["config"]["envoyGateway"]
    assert eg["extensionApis"] == {"enableEnvoyPatchPolicy": True, "enableBackend": True}
    hooks = eg["extensionManager"]["hooks"]["xdsTranslator"]
    assert hooks["translation"] == {k: {"includeAll": True} for k in ("listener", "route", "cluster", "secret")}
    assert hooks["post"] == ["Translation", "Cluster", "Route"]
    assert eg["extensionManager"]["service"] == {
        "fqdn": {"hostname": "ai-gateway-controller.envoy-ai-gateway-system.svc.cluster.local", "port": 1063}
    }
    assert eg["rateLimit"] == {
        "backend": {"type": "Redis", "redis": {"url": "redis.envoy-gateway-system.svc.cluster.local:6379"}}
    }


def test_controller_chart_waits_for_its_crds_and_envoy_gateway(default_build):
    _, run = default_build
    urns = {r.name: r.urn for r in run.resources}
    controller = next(r for r in run.resources if r.name == "aigw-ai-gateway")
    assert {urns["aigw-ai-gateway-crds"], urns["aigw-envoy-gateway"]} <= set(controller.options["dependsOn"])
    for r in run.resources:
        if r.type.startswith("kubernetes:") and any(
            g in r.type for g in ("gateway.envoyproxy.io", "gateway.networking", "aigateway")
        ):
            assert urns["aigw-ai-gateway"] in r.options["dependsOn"], r.name


def test_an_existing_install_is_used_without_charts_or_redis():
    _, run = build({**ARGS, "install_controllers": False})
    assert not of_type(run, "helm.sh/v4:Chart") and not of_type(run, "apps/v1:Deployment")
    assert [kubernetes_object(r)["metadata"]["name"] for r in of_type(run, "core/v1:Namespace")] == ["ai-gateway"]
    namespace = one(run, "core/v1:Namespace").urn
    gateway_kinds = [r for r in run.resources if r.type.startswith("kubernetes:") and "gateway" in r.type.split(":")[1]]
    assert len(gateway_kinds) >= 8
    for r in gateway_kinds:
        assert namespace in r.options["dependsOn"], r.name
    # The Gateway and its routes, keys and policies are the same as with the charts installed.
    default_kinds = sorted(
        r.type for r in build()[1].resources if r.type.startswith("kubernetes:") and "gateway" in r.type.split(":")[1]
    )
    assert sorted(r.type for r in gateway_kinds) == default_kinds


# ---- built-in kinds -------------------------------------------------------------------------------


BUILT_IN = ("core/v1:Namespace", "core/v1:Secret", "networking.k8s.io/v1:NetworkPolicy", "apps/v1:Deployment", "core/v1:Service")


def test_built_in_objects_validate_strictly_against_kubernetes_1_35(default_build):
    _, run = default_build
    checked = 0
    for suffix in BUILT_IN:
        for r in of_type(run, suffix):
            kubernetes_validate.validate(kubernetes_object(r), "1.35", strict=True)
            checked += 1
    assert checked == 3 + 2 + 2 + 1 + 1


def test_namespaces(default_build):
    _, run = default_build
    names = sorted(kubernetes_object(r)["metadata"]["name"] for r in of_type(run, "core/v1:Namespace"))
    assert names == ["ai-gateway", "envoy-ai-gateway-system", "envoy-gateway-system"]


def test_redis_is_pinned_non_root_ephemeral_and_private(default_build):
    _, run = default_build
    deployment = obj(run, "apps/v1:Deployment", "redis")
    assert deployment["metadata"]["namespace"] == "envoy-gateway-system"
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["image"] == pins.image("redis") == "docker.io/library/redis:" + pins.image_pin("redis").tag
    assert container["args"] == ["--save", "", "--appendonly", "no"]
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] == 999
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "readOnlyRootFilesystem": True,
    }
    service = obj(run, "core/v1:Service", "redis")
    assert service["spec"]["ports"] == [{"name": "redis", "port": 6379, "targetPort": "redis", "protocol": "TCP"}]
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    policy = obj(run, "NetworkPolicy", "redis")
    assert policy["metadata"]["namespace"] == "envoy-gateway-system"
    assert policy["spec"]["ingress"] == [{"from": [{"podSelector": {}}], "ports": [{"protocol": "TCP", "port": 6379}]}]


def test_client_keys_become_one_masked_secret(default_build):
    _, run = default_build
    secret = obj(run, "core/v1:Secret", "ai-gateway-client-keys")
    assert secret["metadata"]["namespace"] == "ai-gateway" and secret["type"] == "Opaque"
    assert secret["stringData"] == {"alice": "<secret>", "bob": "<secret>"}


def test_vllm_key_secret_for_the_self_hosted_backend_only(default_build):
    _, run = default_build
    secret = obj(run, "core/v1:Secret", "llama-api-key")
    assert secret["stringData"] == {"apiKey": "<secret>"}
    assert len(of_type(run, "core/v1:Secret")) == 2, "the Azure OpenAI token Secret is the refresher's, not created here"


def test_network_policy_admits_only_the_gateway_data_plane_and_metrics(default_build):
    _, run = default_build
    policy = obj(run, "NetworkPolicy", "ai-gateway-only-llama")
    assert policy["metadata"]["namespace"] == "gpu-inference"
    assert policy["spec"] == {
        "podSelector": {"matchLabels": {"app.kubernetes.io/instance": "llama"}},
        "policyTypes": ["Ingress"],
        "ingress": [
            {
                "from": [
                    {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "envoy-gateway-system"}}},
                    {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}}},
                ],
                "ports": [{"protocol": "TCP", "port": 8000}],
            }
        ],
    }


def test_one_network_policy_per_model_namespace_and_selector():
    second = llama(name="llama-b", model="llama-b", hostname="llama.models.svc.cluster.local")
    _, run = build(backends=[llama(), llama(name="llama-alias", model="alias"), second])
    policies = {
        (p["metadata"]["namespace"], p["metadata"]["name"]) for p in map(kubernetes_object, of_type(run, "NetworkPolicy"))
    }
    assert policies == {
        ("envoy-gateway-system", "redis"),
        ("gpu-inference", "ai-gateway-only-llama"),
        ("models", "ai-gateway-only-llama"),
    }


# ---- gateway and policies -------------------------------------------------------------------------


def test_gateway_class_envoy_proxy_and_gateway(default_build):
    _, run = default_build
    gc = obj(run, "GatewayClass")
    assert gc == {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "GatewayClass",
        "metadata": {"name": "ai-gateway"},
        "spec": {"controllerName": "gateway.envoyproxy.io/gatewayclass-controller"},
    }
    proxy = obj(run, "EnvoyProxy")
    assert proxy["apiVersion"] == "gateway.envoyproxy.io/v1alpha1"
    assert proxy["spec"] == {
        "provider": {
            "type": "Kubernetes",
            "kubernetes": {
                "envoyService": {"annotations": {"service.beta.kubernetes.io/azure-load-balancer-internal": "true"}},
                "envoyDeployment": {"container": {"image": "docker.io/envoyproxy/envoy:distroless-v1.38.3"}},
            },
        },
        # Before: no filter order, so AI Gateway's ext_proc ran ahead of the router and rate limiting last.
        "filterOrder": [
            {"name": "envoy.filters.http.ratelimit", "before": "envoy.filters.http.ext_proc"},
            {"name": "envoy.filters.http.buffer", "after": "envoy.filters.http.ext_proc"},
        ],
    }
    gateway = obj(run, "gateway.networking.k8s.io/v1:Gateway")
    assert gateway["metadata"] == {"name": "ai-gateway", "namespace": "ai-gateway"}
    assert gateway["spec"] == {
        "gatewayClassName": "ai-gateway",
        "listeners": [{"name": "http", "protocol": "HTTP", "port": 80}],
        "infrastructure": {"parametersRef": {"group": "gateway.envoyproxy.io", "kind": "EnvoyProxy", "name": "ai-gateway"}},
    }


def test_public_load_balancer_when_asked():
    _, run = build({**ARGS, "internal_load_balancer": False})
    assert obj(run, "EnvoyProxy")["spec"]["provider"]["kubernetes"]["envoyService"]["annotations"] == {}


def test_tracing_and_fixed_address(full_build):
    gateway, run = full_build
    spec = obj(run, "EnvoyProxy")["spec"]
    assert spec["telemetry"] == {
        "tracing": {
            "samplingRate": 10,
            "provider": {
                "type": "OpenTelemetry",
                "backendRefs": [{"name": "otel-collector", "namespace": "monitoring", "port": 4317}],
            },
        }
    }
    assert spec["provider"]["kubernetes"]["envoyService"]["annotations"] == {
        "service.beta.kubernetes.io/azure-load-balancer-internal": "true",
        "service.beta.kubernetes.io/azure-load-balancer-ipv4": "10.224.0.200",
    }
    assert gateway.endpoint == "http://10.224.0.200/v1"


def test_client_traffic_policy_raises_the_buffer_limit(default_build):
    _, run = default_build
    assert obj(run, "ClientTrafficPolicy")["spec"] == {
        "targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "ai-gateway"}],
        "connection": {"bufferLimit": "50Mi"},
        # A client cannot pose as another for budgets or the router's cache.
        "headers": {"earlyRequestHeaders": {"remove": ["x-authz-user-id"]}},
    }


def test_security_policy_requires_an_api_key(default_build):
    _, run = default_build
    spec = obj(run, ":SecurityPolicy")["spec"]
    assert spec == {
        "targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "ai-gateway"}],
        "apiKeyAuth": {
            "credentialRefs": [{"name": "ai-gateway-client-keys"}],
            "extractFrom": [{"headers": ["authorization"]}],
            "forwardClientIDHeader": "x-authz-user-id",
            "sanitize": True,
        },
    }
    policy = one(run, ":SecurityPolicy")
    keys = next(r for r in run.resources if r.name == "aigw-client-keys")
    assert keys.urn in policy.options["dependsOn"]


def test_entra_tokens_replace_api_keys(full_build):
    """Before: with a tenant, jwt was added beside apiKeyAuth on the same header, so no call could pass both."""
    _, run = full_build
    spec = obj(run, ":SecurityPolicy")["spec"]
    assert "apiKeyAuth" not in spec
    assert spec["jwt"] == {
        "providers": [
            {
                "name": "entra",
                "issuer": f"https://login.microsoftonline.com/{TENANT}/v2.0",
                "audiences": ["api://ai-gateway"],
                "remoteJWKS": {"uri": f"https://login.microsoftonline.com/{TENANT}/discovery/v2.0/keys"},
                "claimToHeaders": [{"claim": "oid", "header": "x-authz-user-id"}],
            }
        ]
    }
    assert not [r for r in run.resources if r.name == "aigw-client-keys"], "no API keys Secret with Entra"


def test_api_keys_and_entra_together_are_refused():
    with pytest.raises(ValueError, match="instead of API keys; drop client_ids"):
        AiGatewayArgs(client_ids=["alice"], entra_tenant_id=TENANT, entra_audience="api://x")


@pytest.mark.parametrize("built, limit", [("default_build", 1_000_000), ("full_build", 250_000)])
def test_token_budget_per_client_per_hour(request, built, limit):
    _, run = request.getfixturevalue(built)
    spec = obj(run, ":BackendTrafficPolicy")["spec"]
    assert spec == {
        "targetRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "ai-gateway"}],
        "requestBuffer": {"limit": "50Mi"},
        "rateLimit": {
            "type": "Global",
            "global": {
                "rules": [
                    {
                        "clientSelectors": [{"headers": [{"name": "x-authz-user-id", "type": "Distinct"}]}],
                        "limit": {"requests": limit, "unit": "Hour"},
                        # Before: no shared, so each client had a bucket per model route.
                        "shared": True,
                        "cost": {
                            "request": {"from": "Number", "number": 0},
                            "response": {
                                "from": "Metadata",
                                "metadata": {"namespace": "io.envoy.ai_gateway", "key": "llm_total_token"},
                            },
                        },
                    }
                ]
            },
        },
    }


# ---- backends and route ---------------------------------------------------------------------------


def test_self_hosted_backend_objects(default_build):
    _, run = default_build
    assert obj(run, "gateway.envoyproxy.io/v1alpha1:Backend", "llama")["spec"] == {
        "endpoints": [{"fqdn": {"hostname": "llama.gpu-inference.svc.cluster.local", "port": 8000}}]
    }
    assert obj(run, "AIServiceBackend", "llama")["spec"] == {
        "schema": {"name": "OpenAI"},
        "backendRef": {"name": "llama", "kind": "Backend", "group": "gateway.envoyproxy.io"},
    }
    assert obj(run, "BackendSecurityPolicy", "llama")["spec"] == {
        "targetRefs": [{"group": "aigateway.envoyproxy.io", "kind": "AIServiceBackend", "name": "llama"}],
        "type": "APIKey",
        "apiKey": {"secretRef": {"name": "llama-api-key"}},
    }
    names = [kubernetes_object(r)["metadata"]["name"] for r in of_type(run, "BackendTLSPolicy")]
    assert names == ["gpt-4o"], "plain HTTP inside the cluster: no TLS policy for vLLM"


def test_azure_openai_backend_objects(default_build):
    _, run = default_build
    assert obj(run, "gateway.envoyproxy.io/v1alpha1:Backend", "gpt-4o")["spec"] == {
        "endpoints": [{"fqdn": {"hostname": "aoai-test.openai.azure.com", "port": 443}}]
    }
    tls = obj(run, "BackendTLSPolicy", "gpt-4o")
    assert tls["apiVersion"] == "gateway.networking.k8s.io/v1"
    assert tls["spec"] == {
        "targetRefs": [{"group": "gateway.envoyproxy.io", "kind": "Backend", "name": "gpt-4o"}],
        "validation": {"wellKnownCACertificates": "System", "hostname": "aoai-test.openai.azure.com"},
    }
    assert obj(run, "AIServiceBackend", "gpt-4o")["spec"]["schema"] == {"name": "AzureOpenAI", "version": AZURE_API_VERSION}
    assert obj(run, "BackendSecurityPolicy", "gpt-4o")["spec"]["apiKey"] == {"secretRef": {"name": "gpt-4o-entra-token"}}


def test_api_version_override():
    _, run = build(backends=[gpt(api_version="2024-10-21")])
    assert obj(run, "AIServiceBackend", "gpt-4o")["spec"]["schema"] == {"name": "AzureOpenAI", "version": "2024-10-21"}


def test_one_route_rule_per_model_with_token_costs(default_build):
    _, run = default_build
    route = obj(run, "AIGatewayRoute")
    assert route["apiVersion"] == "aigateway.envoyproxy.io/v1beta1"
    assert route["metadata"] == {"name": "ai-gateway", "namespace": "ai-gateway"}
    assert route["spec"] == {
        "parentRefs": [{"name": "ai-gateway", "kind": "Gateway"}],
        "rules": [
            {
                "matches": [
                    {"headers": [{"type": "Exact", "name": "x-ai-eg-model", "value": "meta-llama/Llama-3.1-8B-Instruct"}]}
                ],
                "backendRefs": [{"name": "llama"}],
                # Before: no timeouts, so AI Gateway's 60 s default cut long streamed answers.
                "timeouts": {"request": "600s"},
            },
            {
                "matches": [{"headers": [{"type": "Exact", "name": "x-ai-eg-model", "value": "gpt-4o"}]}],
                "backendRefs": [{"name": "gpt-4o"}],
                "timeouts": {"request": "600s"},
            },
        ],
        "llmRequestCosts": [
            {"metadataKey": "llm_input_token", "type": "InputToken"},
            {"metadataKey": "llm_output_token", "type": "OutputToken"},
            {"metadataKey": "llm_total_token", "type": "TotalToken"},
        ],
    }


def test_outputs(default_build):
    gateway, run = default_build
    assert run.outputs["routes"] == {"meta-llama/Llama-3.1-8B-Instruct": "llama", "gpt-4o": "gpt-4o"}
    assert gateway.endpoint is None
    assert gateway.address_command == "kubectl get gateway ai-gateway -n ai-gateway -o jsonpath='{.status.addresses[0].value}'"


def test_every_child_is_under_the_component_through_the_provider(default_build):
    _, run = default_build
    component = one(run, "aks-gpu:index:AiGateway")
    provider = one(run, "pulumi:providers:kubernetes").urn
    children = [r for r in run.resources if r.parent == component.urn]
    # 3 namespaces, Redis (3), 3 charts, 6 gateway objects + client keys, llama 4 (with its key), gpt-4o 4, route, 1 policy.
    assert len(children) == 26
    for r in children:
        assert r.options["provider"] == provider, r.name


def test_no_secret_value_is_recorded_anywhere(full_build, default_build):
    for _, run in (full_build, default_build):
        recorded = json.dumps([r.inputs for r in run.resources], default=str) + json.dumps(run.outputs, default=str)
        for key in (VLLM_KEY, ALICE_KEY, BOB_KEY):
            assert key not in recorded


# ---- refusals -------------------------------------------------------------------------------------


def refusal(args, backends=None, keys=None) -> str:
    """What AiGateway would refuse, checked as it checks: the args model, then backends and keys."""
    try:
        checked = validate_args(AiGatewayArgs, args, "AiGateway", "aigw")
    except ComponentInputError as err:
        return str(err)
    backends = [llama(), gpt()] if backends is None else backends
    return "\n".join(str(p) for p in gateway_problems(checked, backends, KEYS if keys is None else keys))


@pytest.mark.parametrize(
    "args, backends, keys, expected",
    [
        (
            {"client_ids": []},
            None,
            {},
            "client_ids=[]: give at least one client (or entra_tenant_id): the gateway refuses anonymous requests",
        ),
        ({}, None, {}, "client_ids=[]: give at least one client (or entra_tenant_id)"),
        (
            ARGS,
            [llama(), llama(name="other")],
            None,
            "backends.model=['meta-llama/Llama-3.1-8B-Instruct']: backend models must be unique",
        ),
        (ARGS, [llama(), llama(model="other")], None, "backends.name=['llama']: backend names must be unique"),
        ({**ARGS, "redis_image": "redis"}, None, None, "redis_image='redis': pin the Redis image to a version tag or digest"),
        ({**ARGS, "redis_image": "redis:latest"}, None, None, "pin the Redis image"),
        ({**ARGS, "eg_version": "latest"}, None, None, "eg_version='latest'"),
        ({**ARGS, "aigw_version": "1.1"}, None, None, "aigw_version='1.1'"),
        (ARGS, None, {"alice": "k"}, "no API key for client(s) bob"),
        (ARGS, None, {**KEYS, "eve": "k"}, "keys for clients not in client_ids: eve"),
        ({"client_ids": ["alice", "alice"]}, None, {"alice": "k"}, "client ids repeat: alice"),
        ({**ARGS, "entra_tenant_id": TENANT}, None, None, "Entra ID tokens need both entra_tenant_id and entra_audience"),
        (ARGS, [], None, "backends=[]: give at least one backend"),
        (ARGS, [llama(api_key_secret=None)], None, "self-hosted vLLM requires its API key"),
        (ARGS, [llama(pod_selector=None)], None, "give the serving pods' labels"),
        (ARGS, [llama(hostname="vllm.example.com")], None, "in-cluster backends are <service>.<namespace>.svc.cluster.local"),
        (ARGS, [gpt(api_key_secret="k")], None, "Azure OpenAI is called with Entra tokens from the Secret 'gpt-4o-entra-token'"),
        (ARGS, [gpt(port=8443)], None, "Azure OpenAI is served over HTTPS on 443"),
        (ARGS, [gpt(hostname="example.com")], None, "an Azure OpenAI endpoint"),
        (ARGS, [llama(name="Llama")], None, "backends[0].name='Llama'"),
        (ARGS, [llama(api_version="2024-10-21")], None, "only the AzureOpenAI schema takes an api-version"),
        (ARGS, [pool(inference_pool=None)], None, "backends[0].inference_pool=None: an inference-pool backend names its pool"),
        (ARGS, [pool(picker_pod_selector=None)], None, "backends[0].picker_pod_selector=None: an inference-pool backend"),
        (ARGS, [pool(inference_pool="Pool_1")], None, "backends[0].inference_pool='Pool_1': a Kubernetes object name"),
        (ARGS, [pool(api_key_secret=None)], None, "backends[0].api_key_secret=None: self-hosted vLLM requires its API key"),
        (ARGS, [llama(inference_pool="p")], None, "backends[0].inference_pool='p': only an inference-pool backend takes it"),
        ({**ARGS, "extra": 1}, None, None, "extra=1: unknown key"),
    ],
)
def test_bad_input_is_refused(args, backends, keys, expected):
    assert expected in refusal(args, backends, keys)


def test_every_problem_is_reported_at_once():
    """Before: the first problem stopped the check, so each fix revealed the next."""
    message = refusal(ARGS, [llama(name="Llama", api_key_secret=None), gpt(port=8443, api_key_secret="k")], {"alice": "k"})
    for expected in (
        "client_keys=<secret, not shown>: no API key for client(s) bob",
        "backends[0].name='Llama'",
        "backends[0].api_key_secret=None: self-hosted vLLM requires its API key",
        "backends[1].api_key_secret=<secret, not shown>: Azure OpenAI is called with Entra tokens",
        "backends[1].port=8443: Azure OpenAI is served over HTTPS on 443",
    ):
        assert expected in message
    both = refusal({"entra_tenant_id": TENANT, "client_ids": ["alice"]})
    assert "Entra ID tokens need both" in both and "drop client_ids" in both
    assert gateway_problems(AiGatewayArgs.model_validate(ARGS), [llama(), gpt()], KEYS) == []


@pytest.mark.parametrize(
    "args, backends, expected",
    [
        ({**ARGS, "redis_image": "redis"}, None, "redis_image='redis': pin the Redis image"),
        (ARGS, [llama(api_key_secret=None), gpt(port=8443)], "backends[1].port=8443: Azure OpenAI is served over HTTPS on 443"),
    ],
)
def test_a_refused_gateway_registers_nothing(args, backends, expected):
    def program():
        AiGateway("aigw", args, backends=[llama(), gpt()] if backends is None else backends, client_keys=KEYS)

    message = refusal_message(program, "AiGateway", "aigw", lambda t: t.startswith("kubernetes:"))
    assert expected in message


def test_the_provider_in_opts_wins_over_the_clusters():
    def program():
        mine = k8s.Provider("mine", kubeconfig="x")
        AiGateway(
            "aigw",
            ARGS,
            pulumi.ResourceOptions(provider=mine),
            backends=[llama(), gpt()],
            client_keys=KEYS,
            cluster=cluster_context(provider=k8s.Provider("cluster", kubeconfig="x")),
        )

    run = run_components(program)
    mine = next(r.urn for r in of_type(run, "pulumi:providers:kubernetes") if r.name == "mine")
    children = [r for r in run.resources if r.parent == one(run, "aks-gpu:index:AiGateway").urn]
    assert children and {r.options["provider"] for r in children} == {mine}


def test_the_gateway_ref_names_the_gateway_and_its_registry(default_build):
    gateway, _ = default_build
    assert gateway.ref == GatewayRef("ai-gateway", "ai-gateway", None)
    args = AiGatewayArgs(client_ids=["alice"], gateway_name="edge", namespace="llm", image_registry="acr.azurecr.io")
    assert args.ref == GatewayRef("edge", "llm", "acr.azurecr.io")


def test_policy_pack_has_no_objection(default_build):
    _, run = default_build
    assert analyze(run) == []


class FakeKaito:
    service_name = "phi"
    namespace = "kaito-models"
    served_model_name = "phi-4-mini-instruct"
    pod_labels = {"kaito.sh/workspace": "phi"}


def test_a_kaito_workspace_is_a_backend_without_a_key():
    """Before: only VllmService could be a gateway backend."""
    kaito = GatewayBackend.from_kaito(FakeKaito())
    _, run = build(backends=[llama(), kaito])
    assert obj(run, "gateway.envoyproxy.io/v1alpha1:Backend", "kaito-phi")["spec"] == {
        "endpoints": [{"fqdn": {"hostname": "phi.kaito-models.svc.cluster.local", "port": 80}}]
    }
    assert obj(run, "AIServiceBackend", "kaito-phi")["spec"]["schema"] == {"name": "OpenAI"}
    assert [kubernetes_object(r)["metadata"]["name"] for r in of_type(run, "BackendSecurityPolicy")] == ["llama"]
    rules = obj(run, "AIGatewayRoute")["spec"]["rules"]
    assert rules[1]["matches"][0]["headers"][0]["value"] == "phi-4-mini-instruct"
    policy = next(
        kubernetes_object(r)
        for r in of_type(run, "NetworkPolicy")
        if kubernetes_object(r)["metadata"]["namespace"] == "kaito-models"
    )
    assert policy["spec"]["podSelector"] == {"matchLabels": {"kaito.sh/workspace": "phi"}}
    assert policy["spec"]["ingress"][0]["ports"] == [{"protocol": "TCP", "port": 5000}], "the pods' port, not the Service's 80"


class FakeDynamo:
    service_name = "llama-frontend"
    namespace = "llm-d-infra"
    served_model_name = "meta-llama/Llama-3.3-70B-Instruct"
    pod_labels = {"app.kubernetes.io/instance": "llama-frontend"}
    peer_ingress = frontend_peer_ingress("llama")


def test_a_dynamo_frontend_is_a_backend_without_a_key():
    dynamo = GatewayBackend.from_dynamo(FakeDynamo())
    assert (dynamo.kind, dynamo.effective_port, dynamo.secret_name, dynamo.namespace) == ("dynamo", 8000, None, "llm-d-infra")
    _, run = build(backends=[llama(), dynamo])
    assert obj(run, "gateway.envoyproxy.io/v1alpha1:Backend", "dynamo-llama-frontend")["spec"] == {
        "endpoints": [{"fqdn": {"hostname": "llama-frontend.llm-d-infra.svc.cluster.local", "port": 8000}}]
    }
    assert [kubernetes_object(r)["metadata"]["name"] for r in of_type(run, "BackendSecurityPolicy")] == ["llama"]
    rules = obj(run, "AIGatewayRoute")["spec"]["rules"]
    assert rules[1]["matches"][0]["headers"][0]["value"] == "meta-llama/Llama-3.3-70B-Instruct"
    policy = next(
        kubernetes_object(r)
        for r in of_type(run, "NetworkPolicy")
        if kubernetes_object(r)["metadata"]["namespace"] == "llm-d-infra"
    )
    assert policy["spec"]["podSelector"] == {"matchLabels": {"app.kubernetes.io/instance": "llama-frontend"}}
    # The gateway on 8000, and the graph's workers calling home with their response streams on the fixed port.
    gateway_rule, workers_rule = policy["spec"]["ingress"]
    assert gateway_rule["ports"] == [{"protocol": "TCP", "port": 8000}]
    assert workers_rule == {
        "from": [
            {
                "podSelector": {
                    "matchLabels": {"app.kubernetes.io/instance": "llama"},
                    "matchExpressions": [
                        {"key": "aks-gpu-inference/dynamo-role", "operator": "In", "values": ["prefill", "decode"]}
                    ],
                }
            }
        ],
        "ports": [{"protocol": "TCP", "port": RESPONSE_STREAM_PORT}],
    }
    keyed = replace(dynamo, api_key_secret="k")
    assert [p.problem for p in gateway_problems(AiGatewayArgs(client_ids=["alice"]), [llama(), keyed], {"alice": "k"})] == [
        "Dynamo's frontend takes no API key"
    ]


def test_one_setting_moves_every_gateway_image_to_a_private_registry():
    args = AiGatewayArgs(client_ids=["alice"], image_registry="acr.azurecr.io")
    values = eg_values(args)["global"]["images"]
    assert {k: v["image"] for k, v in values.items()} == {
        "envoyGateway": "acr.azurecr.io/envoyproxy/gateway:v1.8.2",
        "ratelimit": "acr.azurecr.io/envoyproxy/ratelimit:1e50889b",
        "envoyProxy": "acr.azurecr.io/envoyproxy/envoy:distroless-v1.38.3",
    }
    aigw = aigw_values(args)
    assert aigw["controller"]["image"] == {"repository": "acr.azurecr.io/envoyproxy/ai-gateway-controller", "tag": "v1.1.0"}
    assert aigw["extProc"]["image"] == {"repository": "acr.azurecr.io/envoyproxy/ai-gateway-extproc", "tag": "v1.1.0"}
    proxy = envoy_proxy_spec(args)["provider"]["kubernetes"]["envoyDeployment"]["container"]["image"]
    assert proxy == "acr.azurecr.io/envoyproxy/envoy:distroless-v1.38.3"
    with pytest.raises(ValueError, match="registry host"):
        AiGatewayArgs(client_ids=["alice"], image_registry="https://acr.azurecr.io/x")


def test_the_ai_gateway_controller_has_resource_requests():
    """Before: the chart's resources: {} left the controller without requests."""
    values = aigw_values(AiGatewayArgs(client_ids=["alice"]))
    assert values["controller"]["resources"]["requests"] == {"cpu": "100m", "memory": "256Mi"}


def test_gateway_namespaces_enforce_restricted(default_build):
    _, run = default_build
    namespaces = {kubernetes_object(r)["metadata"]["name"]: kubernetes_object(r)["metadata"] for r in of_type(run, ":Namespace")}
    assert set(namespaces) == {"ai-gateway", "envoy-gateway-system", "envoy-ai-gateway-system"}
    for metadata in namespaces.values():
        assert metadata["labels"] == {"pod-security.kubernetes.io/enforce": "restricted"}


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("MyAcr.azurecr.io", "registry hosts are lower case in an image reference: write 'myacr.azurecr.io'"),
        ("https://myacr.azurecr.io", "without scheme or path"),
        ("my_acr", "lower-case letters, digits, '-' and dots, an optional :port"),
    ],
)
def test_a_registry_host_refusal_says_what_is_wrong_with_it(host, expected):
    from aks_gpu_inference.components.core.images import registry_problem

    assert expected in registry_problem(host)
    assert registry_problem("myacr.azurecr.io:5000") is None


def test_a_prefill_decode_vllm_is_routed_to_its_inference_pool():
    """Seed 004 behind the gateway: the route names the InferencePool, whose picker chooses decode and prefill pods."""
    backend = pool()
    assert (backend.kind, backend.hostname, backend.namespace) == (
        "inference-pool",
        "llama-70b-inferencepool-epp.llm-d-infra.svc.cluster.local",
        "llm-d-infra",
    )
    _, run = build(backends=[backend, gpt()])
    rule = obj(run, "AIGatewayRoute")["spec"]["rules"][0]
    assert rule["backendRefs"] == [
        {
            "group": "inference.networking.k8s.io",
            "kind": "InferencePool",
            "name": "llama-70b-inferencepool",
            "namespace": "llm-d-infra",
        }
    ]
    assert [kubernetes_object(r)["metadata"]["name"] for r in of_type(run, "AIServiceBackend")] == ["gpt-4o"]
    policy = obj(run, "BackendSecurityPolicy", "llama-70b")
    assert policy["metadata"]["namespace"] == "llm-d-infra", "AI Gateway looks for it beside the pool"
    assert policy["spec"]["targetRefs"] == [
        {"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": "llama-70b-inferencepool"}
    ]
    key = next(kubernetes_object(r) for r in of_type(run, "core/v1:Secret") if r.name == "aigw-llama-70b-api-key")
    assert key["metadata"] == {"name": "llama-70b-api-key", "namespace": "llm-d-infra"}
    grant = obj(run, "ReferenceGrant", "llama-70b")
    assert grant["metadata"]["namespace"] == "llm-d-infra"
    assert {(f["kind"], f["namespace"]) for f in grant["spec"]["from"]} == {
        ("AIGatewayRoute", "ai-gateway"),
        ("HTTPRoute", "ai-gateway"),
    }


def test_an_inference_pools_pods_admit_each_other_and_the_picker():
    _, run = build(backends=[pool(), gpt()])
    (policy,) = [kubernetes_object(r) for r in of_type(run, "NetworkPolicy") if r.name.startswith("aigw-netpol-llm-d")]
    gateway, peers, picker = policy["spec"]["ingress"]
    assert gateway["ports"] == [{"protocol": "TCP", "port": 8000}]
    assert peers == {"from": [{"podSelector": {"matchLabels": FakeDisaggregatedVllm.pod_labels}}]}, "any port: NIXL side channels"
    assert picker["from"] == [{"podSelector": {"matchLabels": {"inferencepool": "llama-70b-inferencepool-epp"}}}]
    assert picker["ports"] == [{"protocol": "TCP", "port": 8000}]


def test_envoy_gateway_serves_inference_pools_only_when_a_backend_is_one():
    def backend_resources(run):
        (release,) = of_type(run, "helm.sh/v3:Release")
        return release.inputs["values"]["config"]["envoyGateway"]["extensionManager"].get("backendResources")

    assert backend_resources(build(backends=[pool(), gpt()])[1]) == [
        {"group": "inference.networking.k8s.io", "kind": "InferencePool", "version": "v1"}
    ]
    assert backend_resources(build()[1]) is None, "without the CRD Envoy Gateway could not watch the kind"
