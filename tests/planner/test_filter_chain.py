"""planner.deploy.filter_chain: the listener's HTTP filter chain as Envoy Gateway v1.8.2 + AI Gateway v1.1.0 build it."""

from __future__ import annotations

import pytest

from aks_gpu_inference.planner.deploy.filter_chain import (
    AIGW_EXT_PROC,
    HttpFilter,
    describe,
    insert_aigateway_ext_proc,
    listener_chain,
    patched_filters,
    position,
    sort_filters,
)

NS, GW = "ai-gateway", "ai-gateway"
H = "envoy.filters.http."
EG = "gateway.envoyproxy.io/v1alpha1"
ROUTER_EXT_PROC = f"{H}ext_proc/envoyextensionpolicy/{NS}/{GW}-semantic-router/extproc/0"
GATEWAY_REF = [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": GW}]


def obj(api: str, kind: str, name: str, spec: dict, ns: str = NS) -> dict:
    return {"apiVersion": api, "kind": kind, "metadata": {"name": name, "namespace": ns}, "spec": spec}


def gateway(name: str = GW, proxy: str | None = None) -> dict:
    spec: dict = {"gatewayClassName": "eg", "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}]}
    if proxy:
        spec["infrastructure"] = {"parametersRef": {"group": "gateway.envoyproxy.io", "kind": "EnvoyProxy", "name": proxy}}
    return obj("gateway.networking.k8s.io/v1", "Gateway", name, spec)


def envoy_proxy(filter_order: list[dict]) -> dict:
    return obj(EG, "EnvoyProxy", GW, {"filterOrder": filter_order})


def security(spec: dict, name: str = GW, targets: list[dict] = GATEWAY_REF) -> dict:
    return obj(EG, "SecurityPolicy", name, {"targetRefs": targets, **spec})


API_KEY = {"apiKeyAuth": {"credentialRefs": [{"name": "keys"}], "extractFrom": [{"headers": ["authorization"]}]}}
JWT = {"jwt": {"providers": [{"name": "entra", "remoteJWKS": {"uri": "https://login.example/keys"}}]}}


def traffic(spec: dict, name: str = GW, targets: list[dict] = GATEWAY_REF) -> dict:
    return obj(EG, "BackendTrafficPolicy", name, {"targetRefs": targets, **spec})


def global_rate_limit(shared: bool = False) -> dict:
    rule = {
        "clientSelectors": [{"headers": [{"name": "x-client", "type": "Distinct"}]}],
        "limit": {"requests": 10, "unit": "Hour"},
    }
    return {"rateLimit": {"type": "Global", "global": {"rules": [{**rule, "shared": shared}]}}}


def extension(name: str = f"{GW}-semantic-router", targets: list[dict] = GATEWAY_REF, count: int = 1) -> dict:
    ext = {"backendRefs": [{"name": "semantic-router", "namespace": "semantic-router", "port": 50051}]}
    return obj(EG, "EnvoyExtensionPolicy", name, {"targetRefs": targets, "extProc": [ext] * count})


def ai_route(name: str = GW, parent: str = GW) -> dict:
    spec = {"parentRefs": [{"name": parent, "kind": "Gateway"}], "rules": [{"backendRefs": [{"name": "vllm"}]}]}
    return obj("aigateway.envoyproxy.io/v1beta1", "AIGatewayRoute", name, spec)


def http_route(name: str, parent: str = GW) -> dict:
    spec = {"parentRefs": [{"name": parent}], "rules": [{"backendRefs": [{"name": "svc", "port": 80}]}]}
    return obj("gateway.networking.k8s.io/v1", "HTTPRoute", name, spec)


def names(objects: list[dict]) -> list[str]:
    return [f.name for f in listener_chain(objects, NS, GW)]


STACK = [gateway(), security(API_KEY), traffic(global_rate_limit()), extension(), ai_route()]


def test_default_order_puts_the_ai_gateway_before_the_router_and_rate_limit_last():
    # Without filterOrder: EG sorts api_key_auth (6) < ext_proc (100+i) < ratelimit (303) < router (310), and
    # AI Gateway inserts its ext_proc before the first ext_proc: the semantic router would run after the AI
    # Gateway and before rate limiting.
    assert names(STACK) == [f"{H}api_key_auth", AIGW_EXT_PROC, ROUTER_EXT_PROC, f"{H}ratelimit", f"{H}router"]
    chain = listener_chain(STACK, NS, GW)
    assert position(chain, AIGW_EXT_PROC) < position(chain, ROUTER_EXT_PROC) < position(chain, f"{H}ratelimit")
    assert chain[0] == HttpFilter(f"{H}api_key_auth", f"{H}api_key_auth", f"SecurityPolicy {NS}/{GW} (apiKeyAuth)")
    assert chain[1].source == "AI Gateway extension server"
    assert chain[-1].source == "Envoy Gateway"


FILTER_ORDER = [
    {"name": f"{H}ratelimit", "before": f"{H}ext_proc"},
    {"name": f"{H}buffer", "after": f"{H}ext_proc"},
]


def test_filter_order_runs_the_router_after_auth_and_rate_limit_and_before_the_ai_gateway():
    objects = [
        gateway(proxy=GW),
        envoy_proxy(FILTER_ORDER),
        security(API_KEY),
        traffic({**global_rate_limit(), "requestBuffer": {"limit": "50Mi"}}),
        extension(),
        ai_route(),
    ]
    chain = listener_chain(objects, NS, GW)
    assert [f.name for f in chain] == [
        f"{H}api_key_auth",
        f"{H}ratelimit",
        ROUTER_EXT_PROC,
        f"{H}buffer",
        AIGW_EXT_PROC,
        f"{H}router",
    ]
    router = position(chain, ROUTER_EXT_PROC)
    assert position(chain, f"{H}api_key_auth") < router and position(chain, f"{H}ratelimit") < router
    assert router < position(chain, AIGW_EXT_PROC)
    assert describe(chain)[0] == f"1. {H}api_key_auth  (SecurityPolicy {NS}/{GW}: apiKeyAuth)"
    assert describe(chain)[3] == f"4. {H}buffer  (BackendTrafficPolicy {NS}/{GW}: requestBuffer)"


def test_shared_rate_limit_rules_add_a_second_ratelimit_filter_that_filter_order_moves_too():
    # The listener-domain filter is always created, plus one per policy with shared rules (ratelimit.go:82-112).
    shared = traffic({**global_rate_limit(shared=True), "requestBuffer": {"limit": "50Mi"}})
    objects = [gateway(proxy=GW), envoy_proxy(FILTER_ORDER), security(API_KEY), shared, extension(), ai_route()]
    assert names(objects) == [
        f"{H}api_key_auth",
        f"{H}ratelimit",
        f"{H}ratelimit/{NS}/{GW}",
        ROUTER_EXT_PROC,
        f"{H}buffer",
        AIGW_EXT_PROC,
        f"{H}router",
    ]


def test_without_a_buffer_filter_the_ai_gateway_lands_before_rate_limit_and_the_router():
    # filterOrder moves ratelimit ahead of the ext_procs; ratelimit is one of AI Gateway's insertion prefixes,
    # so with no buffer filter after it, AI Gateway's ext_proc goes right before ratelimit.
    objects = [
        gateway(proxy=GW),
        envoy_proxy(FILTER_ORDER),
        security(API_KEY),
        traffic(global_rate_limit()),
        extension(),
        ai_route(),
    ]
    assert names(objects) == [f"{H}api_key_auth", AIGW_EXT_PROC, f"{H}ratelimit", ROUTER_EXT_PROC, f"{H}router"]


def test_jwt_and_api_key_are_two_filters_api_key_first():
    both = names([gateway(), security({**API_KEY, **JWT}), http_route("r")])
    assert both == [f"{H}api_key_auth", f"{H}jwt_authn", f"{H}router"]
    # Two policies on two routes contribute the same two listener-wide filters.
    split = [gateway(), security(API_KEY), http_route("a"), http_route("b")]
    split.append(security(JWT, name="b-jwt", targets=[{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "b"}]))
    assert names(split) == [f"{H}api_key_auth", f"{H}jwt_authn", f"{H}router"]


def test_other_gateways_policies_are_ignored_and_no_ai_route_means_no_ai_gateway_filter():
    other = [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "other"}]
    objects = [gateway(), gateway("other"), security(API_KEY, name="other", targets=other), extension(), http_route("r")]
    objects.append(ai_route("elsewhere", parent="other"))
    assert names(objects) == [ROUTER_EXT_PROC, f"{H}router"]
    # The same policy in another namespace does not attach either (targetRefs are local).
    foreign = obj(EG, "SecurityPolicy", GW, {"targetRefs": GATEWAY_REF, **API_KEY}, ns="elsewhere")
    assert names([gateway(), foreign, http_route("r")]) == [f"{H}router"]


def test_no_route_means_no_route_filters():
    # EG builds the filters from the listener's routes: a Gateway policy with no route attached adds nothing.
    assert names([gateway(), security(API_KEY), extension()]) == [f"{H}router"]


def test_ext_proc_sorts_by_index_then_name_and_keeps_each_policys_list_order():
    # Route a gets EnvoyExtensionPolicy "b-ext" (2 entries); route z has none and gets the Gateway's "a-ext"
    # (2 entries). Order = 100 + index, ties by name: a/0, b/0, a/1, b/1.
    route_a = [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "a"}]
    objects = [gateway(), http_route("a"), http_route("z"), extension("a-ext", count=2), extension("b-ext", route_a, count=2)]
    prefix = f"{H}ext_proc/envoyextensionpolicy/{NS}"
    expected = [f"{prefix}/{p}-ext/extproc/{i}" for i in (0, 1) for p in ("a", "b")]
    assert names(objects) == [*expected, f"{H}router"]
    # Same order (50, unknown type): by name.
    unknown = [HttpFilter(f"{H}zz", f"{H}zz", "x"), HttpFilter(f"{H}aa", f"{H}aa", "x")]
    assert [f.name for f in sort_filters(unknown)] == [f"{H}aa", f"{H}zz"]


def test_route_policy_replaces_the_gateway_policy_on_its_route():
    route_r = [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "r"}]
    objects = [gateway(), security(API_KEY), security(JWT, name="r-jwt", targets=route_r), http_route("r")]
    assert names(objects) == [f"{H}jwt_authn", f"{H}router"]
    # With mergeType the route policy keeps the Gateway's fields it does not set.
    merged = security({**JWT, "mergeType": "StrategicMerge"}, name="r-jwt", targets=route_r)
    assert names([gateway(), security(API_KEY), merged, http_route("r")]) == [f"{H}api_key_auth", f"{H}jwt_authn", f"{H}router"]


def test_per_policy_filter_names():
    objects = [
        gateway(),
        http_route("r"),
        security({"basicAuth": {"users": {"name": "u"}}, "extAuth": {"grpc": {}}, "cors": {}, "authorization": {}}),
        traffic({"responseOverride": [{"match": {}}], "faultInjection": {"abort": {}}, "rateLimit": {"local": {"rules": []}}}),
        obj(EG, "EnvoyExtensionPolicy", "x", {"targetRefs": GATEWAY_REF, "lua": [{}, {}], "wasm": [{}]}),
        obj(EG, "ClientTrafficPolicy", "ctp", {"targetRefs": GATEWAY_REF, "healthCheck": {"path": "/ready"}}),
    ]
    assert names(objects) == [
        f"{H}custom_response/backendtrafficpolicy/{NS}/{GW}",
        f"{H}health_check",
        f"{H}fault",
        f"{H}cors",
        f"{H}ext_authz/securitypolicy/{NS}/{GW}",
        f"{H}basic_auth/securitypolicy/{NS}/{GW}",
        f"{H}lua/0",
        f"{H}lua/1",
        f"{H}wasm/envoyextensionpolicy/{NS}/x/wasm/0",
        f"{H}rbac",
        f"{H}local_ratelimit",
        f"{H}router",
    ]


def test_custom_response_is_an_insertion_point_so_the_ai_gateway_goes_first():
    # custom_response sorts first (order 0) and is in afterExtProcFilterPrefixes: AI Gateway's ext_proc then
    # lands ahead of authentication.
    overrides = traffic({**global_rate_limit(), "responseOverride": [{"match": {"statusCodes": [{"value": 500}]}}]})
    chain = names([gateway(), security(API_KEY), overrides, extension(), ai_route()])
    assert chain[:3] == [AIGW_EXT_PROC, f"{H}custom_response/backendtrafficpolicy/{NS}/{GW}", f"{H}api_key_auth"]


def test_the_oldest_policy_on_a_target_wins():
    late = security(JWT, name="a-late")
    late["metadata"]["creationTimestamp"] = "2025-02-01T00:00:00Z"
    early = security(API_KEY, name="z-early")
    early["metadata"]["creationTimestamp"] = "2025-01-01T00:00:00Z"
    assert names([gateway(), late, early, http_route("r")]) == [f"{H}api_key_auth", f"{H}router"]
    # Without timestamps: by namespace/name.
    assert names([gateway(), security(JWT, name="a"), security(API_KEY, name="b"), http_route("r")]) == [
        f"{H}jwt_authn",
        f"{H}router",
    ]


def test_filter_order_skips_missing_types_and_keeps_list_order():
    f = [HttpFilter(n, n, "t") for n in (f"{H}ext_proc/p/extproc/0", f"{H}ext_proc/p/extproc/1", f"{H}cors", f"{H}router")]
    # No buffer filter: skipped. No wasm filter to move before: skipped.
    order = [{"name": f"{H}buffer", "after": f"{H}router"}, {"name": f"{H}cors", "before": f"{H}wasm"}]
    assert [x.name for x in sort_filters(f, order)] == [f[2].name, f[0].name, f[1].name, f[3].name]
    # Both ext_proc filters move, in order, after the last router filter... and before the first cors.
    assert [x.name for x in sort_filters(f, [{"name": f"{H}ext_proc", "after": f"{H}router"}])][-2:] == [f[0].name, f[1].name]
    assert [x.name for x in sort_filters(f, [{"name": f"{H}cors", "after": f"{H}ext_proc"}])][:3] == [
        f[0].name,
        f[1].name,
        f[2].name,
    ]


def test_gateway_class_envoy_proxy_applies_when_the_gateway_has_none():
    cls = obj("gateway.networking.k8s.io/v1", "GatewayClass", "eg", {"parametersRef": {
        "group": "gateway.envoyproxy.io", "kind": "EnvoyProxy", "name": GW, "namespace": NS}})  # fmt: skip
    objects = [
        gateway(),
        cls,
        envoy_proxy(FILTER_ORDER),
        security(API_KEY),
        traffic(global_rate_limit()),
        extension(),
        ai_route(),
    ]
    assert names(objects)[:3] == [f"{H}api_key_auth", AIGW_EXT_PROC, f"{H}ratelimit"]
    # The Gateway's own EnvoyProxy replaces the GatewayClass's (Replace is the default merge).
    objects += [gateway(proxy="plain"), obj(EG, "EnvoyProxy", "plain", {})]
    objects.remove(objects[0])
    assert names(objects)[:3] == [f"{H}api_key_auth", AIGW_EXT_PROC, ROUTER_EXT_PROC]


def test_no_insertion_point_raises_like_the_extension_server():
    chain = [HttpFilter(f"{H}api_key_auth", f"{H}api_key_auth", "t"), HttpFilter(f"{H}buffer", f"{H}buffer", "t")]
    with pytest.raises(ValueError, match="failed to find insertion point for AI Gateway extproc filter"):
        insert_aigateway_ext_proc(chain)
    # Inserted once: an existing ext_proc/aigateway is left alone.
    once = insert_aigateway_ext_proc([*chain, HttpFilter(f"{H}router", f"{H}router", "t")])
    assert [f.name for f in insert_aigateway_ext_proc(once)] == [f"{H}api_key_auth", f"{H}buffer", AIGW_EXT_PROC, f"{H}router"]


def test_position():
    chain = listener_chain(STACK, NS, GW)
    assert position(chain, f"{H}ext_proc") == 1
    assert position(chain, f"{H}wasm") == -1


def test_patched_filters_warns_about_json_patches_to_http_filters():
    patch = obj(EG, "EnvoyPatchPolicy", "lua-patch", {
        "targetRef": {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": GW},
        "type": "JSONPatch",
        "jsonPatches": [
            {"type": "type.googleapis.com/envoy.config.listener.v3.Listener", "name": f"{NS}/{GW}/http",
             "operation": {"op": "add", "path": "/default_filter_chain/filters/0/typed_config/http_filters/0",
                           "value": {"name": "envoy.filters.http.lua"}}},
            {"type": "type.googleapis.com/envoy.config.cluster.v3.Cluster", "name": "c",
             "operation": {"op": "replace", "path": "/connect_timeout", "value": "5s"}},
        ],
    })  # fmt: skip
    warnings = patched_filters([patch, *STACK])
    assert len(warnings) == 1
    assert "EnvoyPatchPolicy ai-gateway/lua-patch jsonPatches[0]: add" in warnings[0]
    assert "(envoy.filters.http.lua)" in warnings[0]
    assert patched_filters(STACK) == []
