"""The request path: Envoy AI Gateway, the vLLM semantic router and its models, the Entra token refresher,
tracing, and SemanticRouterGateway, which composes them."""

from .._lazy import exporter

_EXPORTS = {
    "AiGateway": ".ai_gateway",
    "AiGatewayArgs": ".ai_gateway_args",
    "GatewayBackend": ".ai_gateway_args",
    "GatewayRef": ".ai_gateway_args",
    "TracingEndpoint": ".ai_gateway_args",
    "SemanticRouter": ".semantic_router",
    "RouterConfigArgs": ".router_config",
    "RouterModel": ".router_config",
    "RouterDecision": ".router_config",
    "RouterGuards": ".router_config",
    "SemanticCache": ".router_config",
    "RouterModels": ".router_models",
    "EntraTokenRefresher": ".token_refresher",
    "EntraTokenRefresherArgs": ".token_refresher",
    "TraceCollector": ".tracing",
    "TraceCollectorArgs": ".tracing",
    "SemanticRouterGateway": ".semantic_router_gateway",
    "SemanticRouterGatewayArgs": ".semantic_router_gateway_args",
    "GatewaySecrets": ".semantic_router_gateway_args",
    "SharedServices": ".semantic_router_gateway_args",
}

__all__ = sorted(_EXPORTS)
__getattr__ = exporter(__name__, _EXPORTS)
