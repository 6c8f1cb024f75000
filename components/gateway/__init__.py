"""The request path: Envoy AI Gateway, the vLLM semantic router and its models, the Entra token refresher,
tracing, and SemanticRouterGateway, which composes them."""

from .._lazy import exporter

_EXPORTS = {
    "AiGateway": ".ai_gateway",
    "AiGatewayArgs": ".ai_gateway",
    "GatewayBackend": ".ai_gateway",
    "SemanticRouter": ".semantic_router",
    "RouterConfigArgs": ".router_config",
    "EntraTokenRefresher": ".token_refresher",
    "TraceCollector": ".tracing",
    "TracingEndpoint": ".ai_gateway",
    "SemanticRouterGateway": ".semantic_router_gateway",
    "SemanticRouterGatewayArgs": ".semantic_router_gateway",
}

__all__ = sorted(_EXPORTS)
__getattr__ = exporter(__name__, _EXPORTS)
