"""llm-d's endpoint picker config and command lines, read the way the pinned picker and sidecar read them.

The rules come from the generated table (``llmd_registry``), so a config the picker would refuse at start is refused
here, naming the plugin: an unknown apiVersion, field, feature gate or plugin type; a parameter its factory's strict
decoder rejects; a reference to a plugin that is not declared (in declaration order where the release instantiates
plugins in order); a profile naming an undeclared plugin; no profile handler, or two; an Alpha plugin without the
flag that admits it. A config that loads but can never send a request to the prefill pods is a warning. Flags
neither program defines stop it at start (pflag exits on an unknown flag), and so do values outside a flag's
accepted set. Pulumi-free: VllmService checks the config it builds, and the planner checks what the charts render.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import yaml

from . import llmd_registry

PREFILL_DECIDERS = ("prefix-based-pd-decider", "always-disagg-pd-decider")
"""The decider types that decide whether a request's prompt goes to a prefill pod."""


class PickerProblem(NamedTuple):
    level: str
    """``blocker`` (the program exits or refuses), ``warning`` (it runs, but not as intended) or ``unchecked``."""
    where: str
    message: str


class _Check:
    def __init__(self, table: dict, where: str):
        self.table, self.where, self.problems = table, where, []

    def add(self, level: str, message: str) -> None:
        self.problems.append(PickerProblem(level, self.where, message))

    def fields(self, type_name: str) -> dict[str, dict]:
        return self.table["types"][type_name.lstrip("*")]["fields"]

    def unknown(self, value: Mapping, type_name: str, path: str) -> list[str]:
        """Keys of ``value`` the struct does not have (encoding/json matches names case-insensitively), recursing
        into nested structs; messages name the full key path."""
        fields = self.fields(type_name)
        by_lower = {name.lower(): entry for name, entry in fields.items() if name}
        if any(entry.get("inline") and entry["type"].endswith(".TypeMeta") for entry in fields.values()):
            by_lower |= {"apiversion": {"type": "string"}, "kind": {"type": "string"}}
        found = []
        for key, item in value.items():
            entry = by_lower.get(str(key).lower())
            if entry is None:
                found.append(f"{path}{key}")
            elif isinstance(item, Mapping) and entry["type"].lstrip("*") in self.table["types"]:
                found += self.unknown(item, entry["type"], f"{path}{key}.")
        return found


def check_config(
    text: str | Mapping, tag: str, args: list[str] | None = None, where: str = "picker config"
) -> list[PickerProblem]:
    """Every reason llm-d-router ``tag``'s picker would refuse ``text`` (YAML or a parsed mapping) or never split a
    request off to prefill. ``args`` are the picker's command line, where Alpha plugins are admitted."""
    check = _Check(llmd_registry.load(tag), where)
    config = yaml.safe_load(text) if isinstance(text, str) else text
    if not isinstance(config, Mapping):
        check.add("blocker", "the config is not a YAML mapping")
        return check.problems
    loader = check.table["loader"]
    _header(check, config, loader)
    declared = _plugins(check, config, loader, args or [])
    _profiles(check, config, declared)
    _handler(check, config, declared)
    return check.problems


def _header(check: _Check, config: Mapping, loader: Mapping) -> None:
    current, *old = loader["api_versions"]
    if config.get("apiVersion") not in loader["api_versions"]:
        check.add(
            "blocker",
            f"apiVersion {config.get('apiVersion')!r} is not one the picker decodes ({', '.join(loader['api_versions'])})",
        )
    elif config.get("apiVersion") in old:
        check.add("warning", f"apiVersion {config['apiVersion']} is deprecated at this release; write {current}")
    if config.get("kind") != loader["kind"]:
        check.add("blocker", f"kind {config.get('kind')!r}: the picker decodes only {loader['kind']}")
    for key in check.unknown(config, loader["root"], ""):
        check.add("blocker", f"unknown field {key!r}: the picker decodes its config strictly and exits")
    for gate in config.get("featureGates") or []:
        name, _, value = str(gate).partition("=")
        if name not in loader["feature_gates"]:
            known = ", ".join(loader["feature_gates"])
            check.add("blocker", f"feature gate {name!r} is unknown or unregistered at this release (known: {known})")
        elif value and value not in ("true", "false"):
            check.add("blocker", f"feature gate {gate!r}: the value after '=' must be true or false")


def _plugins(check: _Check, config: Mapping, loader: Mapping, args: list[str]) -> dict[str, dict]:
    """The declared plugins by name (type, parameters after defaults, given parameters); refuses what the loader does."""
    experimental = any(a in (f"--{loader['experimental_flag']}", f"--{loader['experimental_flag']}=true") for a in args)
    declared: dict[str, dict] = {}
    for index, spec in enumerate(config.get("plugins") or []):
        plugin = _plugin(check, index, spec, loader, experimental)
        if plugin is None:
            continue
        if plugin["name"] in declared:
            check.add("blocker", f"plugin name {plugin['name']!r} is declared twice")
        if loader["plugin_order"] == "declaration":  # a plugin may name only those declared before it
            _references(check, plugin["name"], plugin, declared)
        declared[plugin["name"]] = plugin
    if loader["plugin_order"] == "dependencies":  # the loader orders plugins by their references first
        for name, plugin in declared.items():
            _references(check, name, plugin, declared)
    return declared


def _plugin(check: _Check, index: int, spec: Any, loader: Mapping, experimental: bool) -> dict | None:
    """One entry of ``plugins``: its type registered, its fields and parameters known; None when it has no type."""
    if not isinstance(spec, Mapping) or not spec.get("type"):
        check.add("blocker", f"plugins[{index}] has no type")
        return None
    kind, name = spec["type"], spec.get("name") or spec["type"]
    spec_type = check.fields(loader["root"])["plugins"]["type"].removeprefix("[]")
    for key in check.unknown(spec, spec_type, f"plugins[{index}]."):
        check.add("blocker", f"unknown field {key!r} in plugin {name!r}")
    entry = check.table["plugins"].get(kind)
    if entry is None:
        close = sorted(t for t in check.table["plugins"] if t.split("-")[0] == kind.split("-")[0])[:3]
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        check.add("blocker", f"plugin {name!r}: type {kind!r} is not registered in this picker{hint}")
        return None
    if entry["stability"] == "Alpha" and not experimental:
        check.add("blocker", f"plugin {name!r} ({kind}) is Alpha: the picker needs --{loader['experimental_flag']}")
    if entry.get("deprecated"):
        gone = entry["deprecated"]
        check.add("warning", f"plugin {name!r}: {kind} is deprecated since {gone['in']}; use {gone['replacement']}")
    parameters = _parameters(check, name, entry, spec.get("parameters"))
    return {"name": name, "type": kind, "parameters": parameters, "entry": entry, "given": _flatten(spec.get("parameters") or {})}


def _parameters(check: _Check, name: str, entry: Mapping, given: Any) -> dict[str, Any]:
    """The plugin's parameters after the factory's defaults, refusing keys its strict decoder rejects."""
    params = entry["parameters"]
    if params["mode"] == "ignored":
        if given:
            check.add("warning", f"plugin {name!r}: {entry['factory']} ignores its parameters ({', '.join(map(str, given))})")
        return {}
    if params["mode"] != "schema":
        if given:
            check.add("unchecked", f"plugin {name!r}: its parameters were not checked ({params.get('why')})")
        return dict(given or {})
    if given is not None and not isinstance(given, Mapping):
        check.add("blocker", f"plugin {name!r}: parameters must be a mapping")
        return {}
    rejected = [check.unknown(given or {}, schema, "") for schema in params["schemas"]]
    if all(rejected):
        for key in rejected[0]:
            check.add("blocker", f"plugin {name!r}: unknown parameter {key!r} ({entry['factory']} decodes strictly)")
    merged = dict(params.get("defaults") or {})
    merged.update(_flatten(given or {}))
    return merged


def _flatten(value: Mapping, prefix: str = "") -> dict[str, Any]:
    out = {}
    for key, item in value.items():
        if isinstance(item, Mapping):
            out.update(_flatten(item, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = item
    return out


def _ref_paths(check: _Check, type_name: str, prefix: str = "") -> list[str]:
    out = []
    for name, field in check.fields(type_name).items():
        if field.get("ref"):
            out.append(prefix + name)
        elif field["type"].lstrip("*") in check.table["types"]:
            out += _ref_paths(check, field["type"], f"{prefix}{name}.")
    return out


def _references(check: _Check, name: str, plugin: Mapping, declared: Mapping) -> None:
    """Each parameter that names a plugin (a ``pluginRef`` field, or its default) must name a declared one."""
    entry = plugin["entry"]
    if entry["parameters"]["mode"] != "schema":
        return
    for schema in entry["parameters"]["schemas"]:
        for path in _ref_paths(check, schema):
            target = plugin["parameters"].get(path)
            if isinstance(target, str) and target and target not in declared:
                how = "" if path in plugin["given"] else " (its default)"
                check.add("blocker", f"plugin {name!r} refers to plugin {target!r} through {path}{how}, which is not declared")


def _profiles(check: _Check, config: Mapping, declared: Mapping) -> None:
    names = set()
    for profile in config.get("schedulingProfiles") or []:
        name = profile.get("name") if isinstance(profile, Mapping) else None
        if not name or name in names:
            check.add("blocker", f"scheduling profile names must be unique and non-empty ({name!r})")
        names.add(name)
        for ref in (profile or {}).get("plugins") or []:
            target = ref.get("pluginRef") if isinstance(ref, Mapping) else None
            if target not in declared:
                check.add("blocker", f"profile {name!r} refers to plugin {target!r}, which is not declared")


def _handler(check: _Check, config: Mapping, declared: Mapping) -> None:
    """One profile handler; and, for a disaggregating one, a way for a request to reach the prefill profile."""
    handlers = {n: p for n, p in declared.items() if p["type"].endswith("-profile-handler")}
    profiles = {p.get("name"): p for p in config.get("schedulingProfiles") or [] if isinstance(p, Mapping)}
    if len(handlers) > 1:
        check.add("blocker", f"multiple profile handlers found ({', '.join(handlers)})")
    if not handlers and len(profiles) > 1:
        check.add("blocker", "no profile handler configured for several scheduling profiles")
    for name, handler in handlers.items():
        if handler["type"] == "single-profile-handler" and len(profiles) > 1:
            check.add("blocker", f"{name}: SingleProfileHandler cannot support multiple scheduling profiles")
        params = handler["parameters"]
        decider = params.get("deciders.prefill") or params.get("prefillDeciderPluginName") or params.get("deciderPluginName")
        if handler["type"] in ("disagg-profile-handler", "pd-profile-handler"):
            _reaches_prefill(check, name, decider, params, profiles, declared)


def _reaches_prefill(
    check: _Check, handler: str, decider: str | None, params: Mapping, profiles: Mapping, declared: Mapping
) -> None:
    prefill = params.get("profiles.prefill") or params.get("prefillProfile") or "prefill"
    decode = params.get("profiles.decode") or params.get("decodeProfile") or "decode"
    if not decider:
        check.add("warning", f"{handler} names no prefill decider: P/D is disabled and every request runs on decode")
        return
    chosen = declared.get(decider)
    if chosen is None or chosen["type"] not in PREFILL_DECIDERS:
        return  # an undeclared decider is a blocker already; another type is not judged here
    if prefill not in profiles:
        check.add("warning", f"{handler}: no scheduling profile {prefill!r}, so no request is ever sent to a prefill pod")
    if chosen["type"] == "prefix-based-pd-decider":
        if not chosen["parameters"].get("nonCachedTokens"):
            check.add("warning", f"{decider}: nonCachedTokens is 0, which never splits prefill off (set it above 0)")
        for profile in (prefill, decode):
            refs = [r.get("pluginRef") for r in (profiles.get(profile) or {}).get("plugins") or [] if isinstance(r, Mapping)]
            if not any(declared.get(r, {}).get("type") == "prefix-cache-scorer" for r in refs):
                check.add("warning", f"{decider} needs a prefix-cache-scorer in profile {profile!r} to judge what is cached")


def check_args(args: list[str], flags: Mapping[str, Mapping], program: str, where: str) -> list[PickerProblem]:
    """Flags ``program`` does not define (pflag exits on them) and values outside a flag's accepted set."""
    problems, i = [], 0
    while i < len(args):
        arg = str(args[i])
        i += 1
        if not arg.startswith("-") or arg in ("-", "--"):
            continue
        name, has_value, value = arg.lstrip("-").partition("=")
        flag = flags.get(name)
        if flag is None:
            problems.append(PickerProblem("blocker", where, f"{program} defines no flag --{name}; it exits at start"))
            continue
        if not has_value and flag["type"] != "bool" and i < len(args):
            value, i = str(args[i]), i + 1
        if flag["type"] == "bool" and has_value and value not in ("true", "false", "1", "0", "t", "f", "TRUE", "FALSE"):
            problems.append(PickerProblem("blocker", where, f"{program}: --{name}={value} is not a boolean"))
        if flag["type"] == "int" and not value.lstrip("-").isdigit():
            problems.append(PickerProblem("blocker", where, f"{program}: --{name} takes a number, not {value!r}"))
        choices = flag.get("choices")
        values = value.split(",") if flag["type"].startswith("[]") else [value]
        if choices and any(v not in choices for v in values):
            problems.append(PickerProblem("blocker", where, f"{program}: --{name}={value} is not one of {', '.join(choices)}"))
    return problems
