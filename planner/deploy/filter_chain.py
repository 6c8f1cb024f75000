"""The HTTP filter chain Envoy Gateway v1.8.2 + Envoy AI Gateway v1.1.0 build for a Gateway listener.

Computed from the plain-dict Kubernetes objects a stack renders (own implementation). Sources, with
EG = envoyproxy/gateway@v1.8.2 and AIGW = envoyproxy/ai-gateway@v1.1.0:
- order: EG internal/xds/translator/httpfilters.go:93-161 (newOrderedHTTPFilter), :170-180 (same order ->
  by name), :191-272 (sortHTTPFilters), :343-358 (isFilterType prefix match, mustGetFilterIndex);
  FilterPosition / EnvoyFilter: EG api/v1alpha1/envoyproxy_types.go:162, 274-375.
- names: one listener-wide filter: api_key_auth.go:79, jwt.go:91, oidc.go:76, cors.go:79, authorization.go:87,
  request_buffer.go:91, fault.go:76, local_ratelimit.go:78, healthcheck.go:90; "<type>/<config name>"
  (utils.go:124-126): basicauth.go:108-110, extauth.go:96-98, extproc.go:94-96, wasm.go:97-99,
  dynamicmodule.go:90-92, custom_response.go:100-102; "lua/<slot>": lua.go:116-118; ratelimit.go:82-112 (the
  listener domain's filter always, plus "ratelimit/<ns>/<name>" per policy with shared rules, :1048-1053).
- config names: EG internal/gatewayapi/helpers.go:712-717 ("<lowercase kind>/<ns>/<name>"),
  envoyextensionpolicy.go:936-948, 1186-1198 (".../extproc/<i>" etc.), securitypolicy.go:2141, 2265-2267,
  backendtrafficpolicy.go:1351-1497 (rateLimit type/global/local), 1995-1996 (responseOverride).
- attachment: a route-level policy wins over the Gateway's (envoyextensionpolicy.go:679-685); the oldest
  policy per target wins (creationTimestamp, then namespace/name: gatewayapi/resource/resource.go).
- EnvoyProxy: the Gateway's parametersRef replaces the GatewayClass's (contexts.go:91-121,
  envoyproxy_merge.go:36-72); its filterOrder goes to the listener (translator.go:364-370).
- AIGW internal/extensionserver/post_translate_modify.go:44 (name), 620-635 (only on listeners serving an
  AIGatewayRoute), 1059-1066 (once), 1084-1130 (insertion point, buffer exception, prefixes). It runs after
  EG's sort (EG xds/translator/translator.go:161-176, after EnvoyPatchPolicy), so filterOrder cannot move it.
  An AIGatewayRoute becomes an HTTPRoute of the same namespace/name and parentRefs (AIGW
  internal/controller/ai_gateway_route.go:189-196, 368): policies attach to it as kind HTTPRoute.

NOT simulated: per-route enabling (ext_authz, basic_auth, ext_proc, wasm, lua, custom_response and
ext_proc/aigateway are listener filters disabled by default and enabled per route: in the chain is not
"runs on every route"); targetSelectors, cross-namespace targetRefs, route-rule sectionName (adds to the
Gateway policy instead of replacing it for one rule), the listener of a Gateway sectionName unless
``listener`` is given, MergeGateways, EnvoyProxy mergeType; global rate limiting disabled in the
EnvoyGateway config (assumed on); route kinds other than HTTPRoute / AIGatewayRoute; compression,
bandwidthLimit, credential injection, geoip, header mutation, session persistence, HTTPRoute CORS filters;
AIGW InferencePool, header_to_metadata and QuotaPolicy filters; EnvoyPatchPolicy (``patched_filters``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

H = "envoy.filters.http."
GW_GROUP, EG_GROUP, AIGW_GROUP = "gateway.networking.k8s.io", "gateway.envoyproxy.io", "aigateway.envoyproxy.io"
AIGW_EXT_PROC = H + "ext_proc/aigateway"  # AIGW post_translate_modify.go:44
ROUTER = H + "router"
_FEATURE = re.compile(r" \(([^()]*)\)")  # describe(): "Kind ns/name (field)" -> "Kind ns/name: field"

# EG httpfilters.go:100-156: (EnvoyFilter type, order, order += mustGetFilterIndex), in switch order.
_ORDER = [
    (H + t, order, indexed)
    for t, order, indexed in [
        ("custom_response", 0, False), ("health_check", 1, False), ("fault", 2, False), ("cors", 3, False),
        ("header_mutation", 4, False), ("ext_authz", 5, False), ("api_key_auth", 6, False),
        ("basic_auth", 7, False), ("oauth2", 8, False), ("jwt_authn", 9, False), ("stateful_session", 10, False),
        ("buffer", 11, False), ("lua", 12, True), ("ext_proc", 100, True), ("wasm", 200, True),
        ("dynamic_modules", 250, True), ("geoip", 300, False), ("rbac", 301, False),
        ("local_ratelimit", 302, False), ("ratelimit", 303, False), ("bandwidth_limit", 304, False),
        ("grpc_web", 305, False), ("grpc_stats", 306, False), ("credential_injector", 307, False),
        ("compressor", 308, False), ("dynamic_forward_proxy", 309, False), ("router", 310, False),
    ]
]  # fmt: skip
# AIGW post_translate_modify.go:1119-1130.
_AIGW_BEFORE = tuple(H + t for t in ("ext_proc", "wasm", "lua", "rbac", "local_ratelimit", "ratelimit",
                                     "custom_response", "credential_injector", "compressor", "router"))  # fmt: skip
# SecurityPolicy field -> (EnvoyFilter type, one filter per owning policy?)  EG securitypolicy_types.go:69-99.
_SP = {"cors": ("cors", False), "extAuth": ("ext_authz", True), "apiKeyAuth": ("api_key_auth", False),
       "basicAuth": ("basic_auth", True), "oidc": ("oauth2", False), "jwt": ("jwt_authn", False),
       "authorization": ("rbac", False)}  # fmt: skip
_BTP = {"responseOverride": ("custom_response", True), "faultInjection": ("fault", False),
        "requestBuffer": ("buffer", False)}  # fmt: skip
# EnvoyExtensionPolicy list field -> (EnvoyFilter type, irConfigName segment); lua is per slot index.
_EEP = {"extProc": ("ext_proc", "extproc"), "wasm": ("wasm", "wasm"), "lua": ("lua", None),
        "dynamicModule": ("dynamic_modules", "dynamic-module")}  # fmt: skip


@dataclass(frozen=True)
class HttpFilter:
    name: str
    kind: str
    source: str


def _meta(o: dict) -> dict:
    return o.get("metadata") or {}


def _ns(o: dict) -> str:
    return _meta(o).get("namespace") or "default"


def _nn(o: dict) -> str:
    return f"{_ns(o)}/{_meta(o).get('name')}"


def _is(o: dict, group: str, kind: str) -> bool:
    return (o.get("apiVersion") or "").rpartition("/")[0] == group and o.get("kind") == kind


def _age(o: dict) -> tuple:  # EG sorts policies by creationTimestamp, then namespace/name
    return (_meta(o).get("creationTimestamp") or "", _ns(o), _meta(o).get("name") or "")


def _order(name: str) -> tuple[int, str]:
    for ftype, order, indexed in _ORDER:
        if name.startswith(ftype):  # isFilterType is a prefix match (httpfilters.go:343-348)
            if indexed:  # mustGetFilterIndex panics on a non-numeric last segment (httpfilters.go:351-358)
                try:
                    order += int(name.rsplit("/", 1)[-1])
                except ValueError as err:
                    raise ValueError(f"cannot get filter index from {name}") from err
            return order, name  # Less: same order -> by name (httpfilters.go:170-180)
    return 50, name


def sort_filters(filters: list[HttpFilter], filter_order: list[dict] | None = None) -> list[HttpFilter]:
    """EG's sortHTTPFilters (httpfilters.go:191-272): default order, then each FilterPosition in turn."""
    chain = sorted(filters, key=lambda f: _order(f.name))
    for pos in filter_order or []:
        current = [f for f in chain if f.name.startswith(pos.get("name", ""))]
        if not current:
            continue
        if pos.get("before") is not None:
            mark = next((f for f in chain if f.name.startswith(pos["before"])), None)
            for f in current if mark is not None else []:
                if f != mark:  # list.MoveBefore(e, mark) is a no-op when e == mark
                    chain.remove(f)
                    chain.insert(chain.index(mark), f)
        elif pos.get("after") is not None:
            marks = [f for f in chain if f.name.startswith(pos["after"])]
            for f in reversed(current) if marks else []:  # MoveAfter last..first, so list order is kept
                if f != marks[-1]:
                    chain.remove(f)
                    chain.insert(chain.index(marks[-1]) + 1, f)
    return chain


def insert_aigateway_ext_proc(chain: list[HttpFilter]) -> list[HttpFilter]:
    """AIGW insertAIGatewayExtProcFilter (post_translate_modify.go:1084-1117), once (:1059-1066)."""
    if any(f.name == AIGW_EXT_PROC for f in chain):
        return list(chain)
    index = next((i for i, f in enumerate(chain) if f.name.startswith(_AIGW_BEFORE)), -1)
    if index == -1:
        raise ValueError(f"failed to find insertion point for AI Gateway extproc filter: no filter named {_AIGW_BEFORE}")
    last_buffer = max((i for i, f in enumerate(chain) if f.name.startswith(H + "buffer")), default=-1)
    if last_buffer >= index:  # the buffer-filter exception: right after the last buffer filter
        index = last_buffer + 1
    aigw = HttpFilter(AIGW_EXT_PROC, H + "ext_proc", "AI Gateway extension server")
    return [*chain[:index], aigw, *chain[index:]]


def _routes(objects: list[dict], gw_ns: str, gw_name: str) -> dict[tuple[str, str], bool]:
    """(namespace, name) of each HTTPRoute / AIGatewayRoute whose parentRefs name the Gateway -> is AIGW."""
    routes: dict[tuple[str, str], bool] = {}
    for o in objects:
        ai = _is(o, AIGW_GROUP, "AIGatewayRoute")
        if not (ai or _is(o, GW_GROUP, "HTTPRoute")):
            continue
        for ref in (o.get("spec") or {}).get("parentRefs") or []:
            if (
                ref.get("group", GW_GROUP) == GW_GROUP
                and ref.get("kind", "Gateway") == "Gateway"
                and ref.get("name") == gw_name
                and ref.get("namespace", _ns(o)) == gw_ns
            ):
                key = (_ns(o), _meta(o).get("name"))
                routes[key] = routes.get(key, False) or ai
    return routes


def _attached(objects, kind, gw_ns, gw_name, routes, listener):
    """(Gateway-level policy or None, {route: route-level policy}, [route-rule-level policies]); the
    oldest policy per target wins, a listener-targeted one over a Gateway-targeted one."""
    gateway: list[tuple] = []
    by_route: dict = {}
    rules: dict = {}
    for o in sorted((o for o in objects if _is(o, EG_GROUP, kind)), key=_age):
        spec = o.get("spec") or {}
        for ref in [*(spec.get("targetRefs") or []), *([spec["targetRef"]] if spec.get("targetRef") else [])]:
            group, section = ref.get("group", GW_GROUP), ref.get("sectionName")
            if group == GW_GROUP and ref.get("kind") == "Gateway" and ref.get("name") == gw_name:
                if _ns(o) == gw_ns and (section is None or listener in (None, section)):
                    gateway.append((section is None, _age(o), o))
            elif group == GW_GROUP and ref.get("kind") == "HTTPRoute" and (_ns(o), ref.get("name")) in routes:
                key = (_ns(o), ref.get("name"))
                if section is None:
                    by_route.setdefault(key, o)
                else:
                    rules.setdefault((key, section), o)
    return (min(gateway, key=lambda g: g[:2])[2] if gateway else None), by_route, list(rules.values())


def _features(policy: dict, parent: dict | None) -> dict[str, tuple[object, dict]]:
    """field -> (value, owning policy); with spec.mergeType the parent supplies the fields the route lacks."""
    owned = {k: (v, policy) for k, v in (policy.get("spec") or {}).items()}
    if parent is not None and (policy.get("spec") or {}).get("mergeType"):
        owned = {**{k: (v, parent) for k, v in (parent.get("spec") or {}).items()}, **owned}
    return owned


def _filters_for(kind: str, feats: dict[str, tuple[object, dict]]) -> list[HttpFilter]:
    out = []
    for field, (value, owner) in feats.items():
        src = f"{kind} {_nn(owner)} ({field})"
        config = f"{kind.lower()}/{_nn(owner)}"  # irConfigName (gatewayapi/helpers.go:712-717)
        table = _SP if kind == "SecurityPolicy" else _BTP if kind == "BackendTrafficPolicy" else {}
        if field in table and value not in (None, []) and not (field == "jwt" and not value.get("providers")):
            ftype, per_policy = table[field]
            out.append(HttpFilter(H + ftype + (f"/{config}" if per_policy else ""), H + ftype, src))
        elif kind == "EnvoyExtensionPolicy" and field in _EEP:
            ftype, segment = _EEP[field]
            for i, _ in enumerate(value or []):
                name = H + ftype + (f"/{config}/{segment}/{i}" if segment else f"/{i}")
                out.append(HttpFilter(name, H + ftype, f"{src[:-1]}[{i}])"))
        elif kind == "BackendTrafficPolicy" and field == "rateLimit" and value is not None:
            rl_type = value.get("type")
            if rl_type == "Local" or (rl_type is None and value.get("local")):
                out.append(HttpFilter(H + "local_ratelimit", H + "local_ratelimit", f"{src[:-1]}.local)"))
            if rl_type == "Global" or (rl_type is None and value.get("global")):
                out.append(HttpFilter(H + "ratelimit", H + "ratelimit", f"{src[:-1]}.global)"))
                if any(r.get("shared") for r in (value.get("global") or {}).get("rules") or []):
                    name = f"{H}ratelimit/{_nn(owner)}"  # domain of the shared rules: "<ns>/<name>"
                    out.append(HttpFilter(name, H + "ratelimit", f"{src[:-1]}.global shared)"))
    return out


def _envoy_proxy(objects: list[dict], gateway: dict | None) -> dict | None:
    def find(ref: dict | None, ns: str | None) -> dict | None:
        if not ref or ref.get("group") != EG_GROUP or ref.get("kind") != "EnvoyProxy":
            return None
        ns = ref.get("namespace", ns)
        return next((o for o in objects if _is(o, EG_GROUP, "EnvoyProxy") and _nn(o) == f"{ns}/{ref.get('name')}"), None)

    if gateway is None:
        return None
    spec = gateway.get("spec") or {}
    own = find((spec.get("infrastructure") or {}).get("parametersRef"), _ns(gateway))
    if own is not None:
        return own
    cls = next((o for o in objects if _is(o, GW_GROUP, "GatewayClass")
                and _meta(o).get("name") == spec.get("gatewayClassName")), None)  # fmt: skip
    return find((cls.get("spec") or {}).get("parametersRef"), None) if cls else None


def listener_chain(
    objects: list[dict], gateway_namespace: str, gateway_name: str, listener: str | None = None
) -> list[HttpFilter]:
    """The HTTP filters of the Gateway's listener, in the order Envoy runs them (router last)."""
    routes = _routes(objects, gateway_namespace, gateway_name)
    found: dict[str, HttpFilter] = {}

    def add(f: HttpFilter) -> None:
        old = found.setdefault(f.name, f)
        if f.source not in old.source.split("; "):  # one listener filter, several policies (sources joined)
            found[f.name] = HttpFilter(f.name, f.kind, f"{old.source}; {f.source}")

    for kind in ("SecurityPolicy", "BackendTrafficPolicy", "EnvoyExtensionPolicy"):
        parent, by_route, rules = _attached(objects, kind, gateway_namespace, gateway_name, routes, listener)
        chosen = [by_route.get(key) or parent for key in sorted(routes)] + rules  # per route: route's, else Gateway's
        for f in (f for policy in chosen if policy for f in _filters_for(kind, _features(policy, parent))):
            add(f)
    ctp, _, _ = _attached(objects, "ClientTrafficPolicy", gateway_namespace, gateway_name, routes, listener)
    if ctp is not None and (ctp.get("spec") or {}).get("healthCheck"):
        add(HttpFilter(H + "health_check", H + "health_check", f"ClientTrafficPolicy {_nn(ctp)} (healthCheck)"))
    add(HttpFilter(ROUTER, ROUTER, "Envoy Gateway"))
    gateway = next((o for o in objects if _is(o, GW_GROUP, "Gateway") and _nn(o) == f"{gateway_namespace}/{gateway_name}"), None)
    proxy = _envoy_proxy(objects, gateway)
    chain = sort_filters(list(found.values()), ((proxy or {}).get("spec") or {}).get("filterOrder"))
    return insert_aigateway_ext_proc(chain) if any(routes.values()) else chain


def describe(chain: list[HttpFilter]) -> list[str]:
    """``1. envoy.filters.http.api_key_auth  (SecurityPolicy ai-gateway/ai-gateway: apiKeyAuth)``."""
    return [f"{i}. {f.name}  (" + _FEATURE.sub(r": \1", f.source) + ")" for i, f in enumerate(chain, 1)]


def position(chain: list[HttpFilter], prefix: str) -> int:
    """Index of the first filter whose name starts with ``prefix``, -1 if none."""
    return next((i for i, f in enumerate(chain) if f.name.startswith(prefix)), -1)


def patched_filters(objects: list[dict]) -> list[str]:
    """Warnings for EnvoyPatchPolicy JSON patches that touch a listener's http_filters: where such a patch
    lands depends on an index into the chain, so the chain above does not include it."""
    warnings = []
    for o in objects:
        spec = o.get("spec") or {}
        if not _is(o, EG_GROUP, "EnvoyPatchPolicy") or spec.get("type") != "JSONPatch":
            continue
        for i, patch in enumerate(spec.get("jsonPatches") or []):
            op = patch.get("operation") or {}
            where = " ".join(str(op[k]) for k in ("path", "jsonPath", "from") if op.get(k))
            if "Listener" in (patch.get("type") or "") and "http_filters" in where + str(op.get("value")):
                value = op.get("value")
                name = value.get("name") if isinstance(value, dict) else None
                warnings.append(
                    f"EnvoyPatchPolicy {_nn(o)} jsonPatches[{i}]: {op.get('op')} {where} on listener "
                    f"{patch.get('name')}{f' ({name})' if name else ''}: applied after Envoy Gateway sorts the "
                    "chain and before AI Gateway inserts its ext_proc; not simulated"
                )
    return warnings
