"""SemanticRouter under mocks: the chart gets the rendered config, the ext_proc hook targets the Gateway."""

import kubernetes_validate
import pulumi_kubernetes as k8s
import pytest

from aks_gpu_inference.components.gateway import router_config, router_render
from aks_gpu_inference.components.gateway.ai_gateway_args import GatewayRef
from aks_gpu_inference.components.gateway.router_models import RouterModels
from aks_gpu_inference.components.gateway.semantic_router import NAMESPACE, SemanticRouter, router_problems
from aks_gpu_inference.planner.engine.values import kubernetes_object
from tests.conftest import cluster_context, of_type, one, refusal_message, run_components

ARGS = {
    "models": [
        {"name": "llama-8b", "kind": "self-hosted", "endpoint": "llama-8b.gpu-inference.svc.cluster.local:8000"},
        {"name": "gpt-4o", "kind": "azure-openai", "endpoint": "contoso.openai.azure.com:443"},
    ],
    "decisions": [{"name": "hard", "categories": ["math"], "model": "gpt-4o"}],
    "default_model": "llama-8b",
}


def router(args=ARGS, models="prefilled-models", image_registry=None):
    return SemanticRouter(
        "router",
        args,
        gateway=GatewayRef("ai-gateway", "ai-gateway", image_registry),
        models=models,
        cluster=cluster_context(provider=k8s.Provider("k8s", kubeconfig="x")),
    )


def build(args=ARGS, **extra):
    return run_components(lambda: router(args, **extra))


def test_chart_gets_the_rendered_config_and_a_pinned_version():
    run = build()
    chart = one(run, "helm.sh/v4:Chart").inputs
    assert chart["chart"] == router_config.VSR_CHART and chart["version"] == router_config.VSR_CHART_VERSION
    assert chart["namespace"] == NAMESPACE
    assert chart["values"]["config"] == router_render.render(router_config.RouterConfigArgs.model_validate(ARGS))
    assert chart["values"]["image"] == {"repository": "ghcr.io/vllm-project/semantic-router/extproc", "tag": "v0.3.0"}


def test_the_router_never_downloads_from_the_internet():
    """Before: the chart's PVC (class "standard", which AKS lacks) and the router's start-up download from huggingface.co."""
    values = one(build(), "helm.sh/v4:Chart").inputs["values"]
    assert values["persistence"] == {"enabled": True, "existingClaim": "prefilled-models"}
    assert {"name": "HF_HUB_OFFLINE", "value": "1"} in values["extraEnv"]
    run = build(image_registry="acr.azurecr.io")
    image = one(run, "helm.sh/v4:Chart").inputs["values"]["image"]
    assert image == {"repository": "acr.azurecr.io/vllm-project/semantic-router/extproc", "tag": "v0.3.0"}


def test_the_router_is_an_extension_policy_ext_proc_not_a_patch_at_index_zero():
    """Before: an EnvoyPatchPolicy put ext_proc at http_filters/0, ahead of authentication."""
    run = build()
    assert not of_type(run, ":EnvoyPatchPolicy")
    policy = kubernetes_object(one(run, ":EnvoyExtensionPolicy"))
    assert policy["metadata"] == {"name": "ai-gateway-semantic-router", "namespace": "ai-gateway"}
    spec = policy["spec"]
    assert spec["targetRefs"] == [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "ai-gateway"}]
    (ext_proc,) = spec["extProc"]
    assert ext_proc["backendRefs"] == [{"name": "semantic-router", "namespace": NAMESPACE, "port": 50051}]
    assert ext_proc["processingMode"]["request"] == {"body": "Buffered"}, "the router must read the prompt"
    # Streamed answers: the router switches text/event-stream responses to STREAMED through mode override.
    assert ext_proc["processingMode"]["allowModeOverride"] is True
    assert ext_proc["failOpen"] is False
    grant = kubernetes_object(one(run, ":ReferenceGrant"))
    assert grant["metadata"]["namespace"] == NAMESPACE
    assert grant["spec"]["from"] == [
        {"group": "gateway.envoyproxy.io", "kind": "EnvoyExtensionPolicy", "namespace": "ai-gateway"}
    ]
    assert grant["spec"]["to"] == [{"group": "", "kind": "Service", "name": "semantic-router"}]


def test_only_the_gateway_reaches_the_router():
    run = build()
    policy = one(run, "networking.k8s.io/v1:NetworkPolicy")
    sources = [
        rule["from"][0]["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"]
        for rule in policy.inputs["spec"]["ingress"]
    ]
    assert sources == ["envoy-gateway-system", "kube-system"]
    for resource in of_type(run, "networking.k8s.io/v1:NetworkPolicy") + of_type(run, "core/v1:Namespace"):
        kubernetes_validate.validate(kubernetes_object(resource), "1.35", strict=True)


@pytest.mark.parametrize(
    "change, expected",
    [
        ({"default_model": "gpt-5"}, "default_model"),
        (
            {"decisions": [{"name": "hard", "categories": ["math"], "model": "o3"}]},
            "decisions[0].model='o3': decision 'hard' routes to an unknown model",
        ),
    ],
)
def test_bad_router_config_is_refused_before_anything_exists(change, expected):
    message = refusal_message(
        lambda: router({**ARGS, **change}),
        "SemanticRouter",
        "router",
        lambda t: t.startswith("kubernetes:") and not t.startswith("pulumi:"),
    )
    assert expected in message


def test_models_from_a_store_need_the_clusters_issuer_and_region():
    store = object()  # only its presence matters to the check
    assert router_problems("prefilled-models", None) == []
    assert [str(p) for p in router_problems(RouterModels(store), None)] == [
        "cluster=None: required to copy the router's models from a model store (RouterModels)"
    ]
    no_issuer = cluster_context(oidc_issuer_url=None, location=None)
    assert [p.field for p in router_problems(RouterModels(store), no_issuer)] == ["cluster.oidc_issuer_url", "cluster.location"]
    assert router_problems(RouterModels(store), cluster_context()) == []
