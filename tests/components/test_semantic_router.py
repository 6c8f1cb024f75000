"""SemanticRouter under mocks: the chart gets the rendered config, the ext_proc hook targets the Gateway."""

import kubernetes_validate
import pulumi_kubernetes as k8s
import pytest

from components import router_config
from components.semantic_router import NAMESPACE, SemanticRouter
from planner.render import kubernetes_object
from tests.conftest import of_type, one, refusal_message, run_components

ARGS = {
    "models": [
        {"name": "llama-8b", "kind": "self-hosted", "endpoint": "llama-8b.gpu-inference.svc.cluster.local:8000"},
        {"name": "gpt-4o", "kind": "azure-openai", "endpoint": "contoso.openai.azure.com:443"},
    ],
    "decisions": [{"name": "hard", "categories": ["math"], "model": "gpt-4o"}],
    "default_model": "llama-8b",
}


def build(args=ARGS):
    return run_components(lambda: SemanticRouter("router", args, "ai-gateway", "ai-gateway", k8s.Provider("k8s", kubeconfig="x")))


def test_chart_gets_the_rendered_config_and_a_pinned_version():
    run = build()
    chart = one(run, "helm.sh/v4:Chart").inputs
    assert chart["chart"] == router_config.VSR_CHART and chart["version"] == router_config.VSR_CHART_VERSION
    assert chart["namespace"] == NAMESPACE
    assert chart["values"]["config"] == router_config.render(router_config.RouterConfigArgs.model_validate(ARGS))


def test_ext_proc_is_the_first_filter_on_the_gateway_listener():
    run = build()
    policy = one(run, ":EnvoyPatchPolicy").inputs
    assert policy["spec"]["targetRef"] == {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "ai-gateway"}
    listener, cluster = policy["spec"]["jsonPatches"]
    assert listener["name"] == "ai-gateway/ai-gateway/http"
    assert listener["operation"]["path"] == "/default_filter_chain/filters/0/typed_config/http_filters/0"
    mode = listener["operation"]["value"]["typedConfig"]["processing_mode"]
    assert mode["request_body_mode"] == "BUFFERED", "the router must read the prompt"
    address = cluster["operation"]["value"]["load_assignment"]["endpoints"][0]["lb_endpoints"][0]["endpoint"]["address"]
    assert address["socket_address"] == {"address": f"semantic-router.{NAMESPACE}.svc.cluster.local", "port_value": 50051}


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
        ({"decisions": [{"name": "hard", "categories": ["math"], "model": "o3"}]}, "unknown model 'o3'"),
    ],
)
def test_bad_router_config_is_refused_before_anything_exists(change, expected):
    message = refusal_message(
        lambda: SemanticRouter("router", {**ARGS, **change}, "ai-gateway", "ai-gateway", k8s.Provider("k8s", kubeconfig="x")),
        "SemanticRouter",
        "router",
        lambda t: t.startswith("kubernetes:") and not t.startswith("pulumi:"),
    )
    assert expected in message
