#!/usr/bin/env python3
"""Generate the llm-d picker and sidecar table (components/serving/llmd_registry/<tag>.json) from llm-d-router's Go source.

Reads llm-d/llm-d-router at a tag (``git show``; nothing is copied) and writes what the endpoint picker's config
loader and the disagg sidecar accept at that release:

- ``loader``: the apiVersions and kind of EndpointPickerConfig, its fields (strict decoding), the feature gates the
  runner registers (with defaults), whether plugins are instantiated in dependency order or in declaration order,
  and the flag that admits Alpha plugins;
- ``plugins``: every type ``registerInTreePlugins`` registers, with its stability, deprecation, whether it is a
  default data producer, and its parameters: the struct(s) its factory (or its dependency parser) decodes into,
  each field's JSON name and type, which fields name another plugin (``pluginRef`` tags) and the defaults set in
  composite literals or ``if x.F == "" { x.F = C }``; a factory that takes ``_ *json.Decoder`` ignores parameters;
- ``epp_flags`` and ``sidecar_flags``: every command-line flag with its type, default and accepted values where the
  program validates them against a ``supported*`` set (controller-runtime's zap flags read from its own source at the
  version go.mod requires, given ``--controller-runtime``);
- ``watches``: the kinds the picker's controllers reconcile (its RBAC must grant them).

Whatever it cannot read is recorded as such (``"mode": "unreadable"`` with why) or is an error (exit 1), never a
guess. Example:

    python tools/llmd_registry.py --repo /work/.mirror/llm-d+llm-d-router/repo --tag v0.10.0 \\
        --controller-runtime /work/.mirror/kubernetes-sigs+controller-runtime/repo \\
        --out components/serving/llmd_registry/v0.10.0.json
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # tools/ is a folder of scripts, not a package
from golang import Func, GoParseError, Parser, Resolver, Tok, struct_tag

RUNNER = "cmd/epp/runner"
LOADER = "pkg/epp/config/loader"
CONFIG_API = "apix/config/v1alpha1"
EPP_OPTIONS = "pkg/epp/server"
SIDECAR_OPTIONS = "pkg/sidecar/proxy"
CONTROLLERS = "pkg/epp/controller"
REGISTRY = "pkg/epp/framework/interface/plugin"
ZAP = "sigs.k8s.io/controller-runtime/pkg/log/zap"
FLAG_KINDS = {
    "String": "string", "Int": "int", "Bool": "bool", "Duration": "duration", "Float64": "float",
    "IntSlice": "[]int", "StringSlice": "[]string", "Int64": "int", "Uint": "int",
}  # fmt: skip
ZERO = {"string": "", "int": 0, "bool": False, "duration": "0s", "float": 0.0, "[]int": None, "[]string": None}
"""Go's zero value of each flag type, which an Options field has when NewOptions does not set it."""


def text(toks: list[Tok]) -> str:
    return " ".join(t.val for t in toks)


def split_args(toks: list[Tok]) -> list[list[Tok]]:
    """The comma-separated arguments of a call's token list (inside its parentheses)."""
    args: list[list[Tok]] = [[]]
    depth = 0
    for tok in toks:
        if tok.val in "([{":
            depth += 1
        elif tok.val in ")]}":
            depth -= 1
        if tok.val == "," and depth == 0:
            args.append([])
        elif tok.kind != "semi" or depth:
            args[-1].append(tok)
    return [a for a in args if a]


def calls(body: list[Tok], name: str) -> list[tuple[int, list[list[Tok]]]]:
    """``(index, args)`` of every call ``... name(args)`` in ``body`` (``name`` may be ``recv.Method``)."""
    parts, found = name.split("."), []
    for i in range(len(body) - len(parts) * 2):
        window = [t.val for t in body[i : i + len(parts) * 2 - 1 : 2]]
        dots = [t.val for t in body[i + 1 : i + len(parts) * 2 - 1 : 2]]
        if window == parts and all(d == "." for d in dots) and body[i + len(parts) * 2 - 1].val == "(":
            start, depth = i + len(parts) * 2 - 1, 0
            for j in range(start, len(body)):
                depth += body[j].val in "([{"
                depth -= body[j].val in ")]}"
                if depth == 0:
                    found.append((i, split_args(body[start + 1 : j])))
                    break
    return found


class LenientParser(Parser):
    generic_leaves = True  # a plugin's internal caches (lru.Cache[K, V]) are never among its parameters


class Reader(Resolver):
    """A module read at a tag: packages by folder, constants, functions and structs with their JSON fields."""

    parser = LenientParser
    build_tags = frozenset({"linux", "amd64", "unix", "gc", "cgo"})  # the picker's and sidecar's release images

    def expr(self, t: tuple, decl, ctx: str) -> str:
        """A type from another module (llm-d-kv-cache, apimachinery) is a leaf ``external:pkg.T``: its fields are not
        read here, and the check says so instead of guessing them."""
        if t[0] == "name" and t[1] is not None:
            ipath = decl.imports.get(t[1])
            if ipath is not None and self.dir_of(ipath) is None:
                return f"external:{ipath}.{t[2]}"
        return super().expr(t, decl, ctx)

    def qual(self, pkg) -> str:
        """Structs are qualified by their package's folder: several plugin packages share a name."""
        return pkg.dir.removeprefix("pkg/epp/framework/plugins/")

    def pkg_at(self, folder: str):
        return self.package(f"{self.module}/{folder}")

    def import_of(self, func: Func | Any, qual: str) -> str | None:
        return func.imports.get(qual) or next(
            (p for p in func.imports.values() if self.dir_of(p) and self.package(p).name == qual), None
        )

    def const(self, pkg, name: str, qual: str | None = None, imports: dict | None = None) -> str:
        """A string (or number) constant's value, following copies of other constants."""
        if qual is not None:
            ipath = (imports or {}).get(qual) or next(
                (p for p in (imports or {}).values() if self.dir_of(p) and self.package(p).name == qual), None
            )
            if ipath is None or self.dir_of(ipath) is None:
                raise GoParseError(f"{qual}.{name}: not a constant of module {self.module}")
            pkg = self.package(ipath)
        c = pkg.consts.get(name)
        if c is None:
            raise GoParseError(f"{pkg.path}: no constant {name}")
        if isinstance(c.value, tuple):
            return self.const(pkg, c.value[2], c.value[1], c.imports)
        if c.value is None:
            raise GoParseError(f"{c.path}:{c.line}: constant {name} is not a literal")
        return c.value

    def value(self, pkg, toks: list[Tok], imports: dict) -> Any:
        """A literal, a constant (``C`` or ``pkg.C``) or ``true``/``false``; ``...`` text for anything else."""
        if len(toks) == 1:
            tok = toks[0]
            if tok.kind == "str":
                return json.loads(tok.val)
            if tok.kind == "num":
                return float(tok.val) if re.search(r"[.eE]", tok.val) else int(tok.val, 0)
            if tok.val in ("true", "false"):
                return tok.val == "true"
            if tok.val == "nil":
                return None
            if tok.kind == "id" and tok.val in pkg.consts:
                return self._const_value(pkg, tok.val)
        if len(toks) == 3 and toks[1].val == "." and toks[0].kind == toks[2].kind == "id":
            try:
                return self.const(pkg, toks[2].val, toks[0].val, imports)
            except GoParseError:
                pass
        return {"expr": text(toks)}

    def _const_value(self, pkg, name: str) -> Any:
        try:
            return self.const(pkg, name)
        except GoParseError:
            return {"expr": name}

    def json_fields(self, qname: str, stack: tuple[str, ...] = ()) -> dict[str, dict]:
        """encoding/json's view of a struct: field name -> {type, ref}; untagged embedded structs promoted."""
        if qname in stack:
            raise GoParseError(f"embedding cycle through {qname}")
        fields, decl, _ = self.structs[qname]
        ctx, out = qname.split(".", 1)[1], {}
        for f in fields:
            where = f"{decl.path}:{f.line}"
            tag = struct_tag(f.tag, "json", where)
            name = (tag or "").partition(",")[0]
            if tag == "-":
                continue
            expr = self.expr(f.type, decl, f"{ctx}.{(f.names or ['embedded'])[0]}")
            if not f.names and not name and expr.lstrip("*") in self.structs:
                out.update(self.json_fields(expr.lstrip("*"), (*stack, qname)))
                continue
            if not f.names and not name and expr.lstrip("*").startswith("external:"):
                out[""] = {"type": expr, "go": "", "inline": True}  # promoted fields of another module's type
                continue
            for go_name in f.names or [expr.lstrip("*").rsplit(".", 1)[-1]]:
                if not go_name[0].isupper():
                    continue  # unexported: encoding/json neither reads nor writes it
                entry = {"type": expr, "go": go_name}
                if struct_tag(f.tag, "pluginRef", where) is not None:
                    entry["ref"] = True
                out[name or go_name] = entry
        return out


def struct_of(reader: Reader, pkg, func: Func, var: str) -> tuple[str | None, dict]:
    """The declared struct a local variable of ``func`` holds, and the defaults its initializer sets."""
    body = func.body
    for i, tok in enumerate(body[:-2]):
        if tok.val == "var" and body[i + 1].val == var:
            return _named_struct(reader, pkg, func, body[i + 2 :]), {}
        if tok.val == var and body[i + 1].val in (":=", "="):
            return _initializer(reader, pkg, func, body[i + 2 :])
    for param in split_args(func.params):
        if param and param[0].val == var:
            return _named_struct(reader, pkg, func, param[1:]), {}
    return None, {}


def _named_struct(reader: Reader, pkg, func: Func, toks: list[Tok]) -> str | None:
    toks = [t for t in toks if t.val not in ("*", "&")]
    if not toks or toks[0].kind != "id":
        return None
    qual, name = (toks[0].val, toks[2].val) if len(toks) > 2 and toks[1].val == "." else (None, toks[0].val)
    decl_pkg = (
        reader.package(reader.import_of(func, qual))
        if qual and reader.import_of(func, qual) and reader.dir_of(reader.import_of(func, qual))
        else (pkg if qual is None else None)
    )
    if decl_pkg is None or name not in decl_pkg.decls:
        return None
    return reader.named(decl_pkg.decls[name])


def _initializer(reader: Reader, pkg, func: Func, rhs: list[Tok]) -> tuple[str | None, dict]:
    """``T{...}``, ``&T{...}``, ``f()`` (its returned literal) or a package variable's literal."""
    rhs = rhs[1:] if rhs and rhs[0].val == "&" else rhs
    end = next((i for i, t in enumerate(rhs) if t.kind == "semi"), len(rhs))
    rhs = rhs[:end]
    if len(rhs) >= 3 and rhs[0].kind == "id" and rhs[1].val == "(" and rhs[0].val in pkg.funcs:
        callee = pkg.funcs[rhs[0].val]
        returns = [i for i, t in enumerate(callee.body) if t.val == "return"]
        for at in returns:
            qname, defaults = _initializer(reader, pkg, callee, callee.body[at + 1 :])
            if qname:
                return qname, defaults
        return _named_struct(reader, pkg, callee, callee.result), {}
    if len(rhs) == 1 and rhs[0].kind == "id" and rhs[0].val in pkg.vars:
        var = pkg.vars[rhs[0].val]
        return _initializer(reader, pkg, Func(var.name, [], [], var.expr, var.path, var.line, var.imports), var.expr)
    brace = next((i for i, t in enumerate(rhs) if t.val == "{"), None)
    if brace is None:
        return None, {}
    qname = _named_struct(reader, pkg, func, rhs[:brace])
    return qname, literal_defaults(reader, pkg, func, qname, rhs[brace:]) if qname else {}


def literal_defaults(reader: Reader, pkg, func: Func, qname: str, toks: list[Tok]) -> dict[str, Any]:
    """``{Field: value, ...}`` of struct ``qname`` as JSON field -> value (nested literals flattened with dots)."""
    by_go = {e["go"]: (name, e) for name, e in reader.json_fields(qname).items()}
    out: dict[str, Any] = {}
    for entry in split_args(toks[1:-1]):
        if len(entry) < 3 or entry[1].val != ":" or entry[0].val not in by_go:
            continue
        name, field = by_go[entry[0].val]
        value = entry[2:]
        inner = field["type"].lstrip("*")
        if value[-1].val == "}" and inner in reader.structs:
            brace = next(i for i, t in enumerate(value) if t.val == "{")
            out.update({f"{name}.{k}": v for k, v in literal_defaults(reader, pkg, func, inner, value[brace:]).items()})
        else:
            out[name] = reader.value(pkg, value, func.imports)
    return out


def defaults_when_empty(reader: Reader, pkg, func: Func, var: str, qname: str) -> dict[str, Any]:
    """``if v.A.B == "" { v.A.B = C }`` (or ``== 0``): JSON path -> the default set there."""
    body, out = func.body, {}
    for i, tok in enumerate(body):
        if tok.val != "if" or body[i + 1].val != var:
            continue
        j, path = i + 2, []
        while body[j].val == "." and body[j + 1].kind == "id":
            path.append(body[j + 1].val)
            j += 2
        if not path or body[j].val != "==" or body[j + 1].val not in ('""', "0") or body[j + 2].val != "{":
            continue
        k = j + 3
        target = [var] + [x for p in path for x in (".", p)]
        if [t.val for t in body[k : k + len(target)]] == target and body[k + len(target)].val == "=":
            end = next(m for m in range(k, len(body)) if body[m].val == "}" or body[m].kind == "semi")
            json_path = _json_path(reader, qname, path)
            if json_path:
                out[json_path] = reader.value(pkg, body[k + len(target) + 1 : end], func.imports)
    return out


def _json_path(reader: Reader, qname: str, go_path: list[str]) -> str | None:
    names = []
    for go in go_path:
        fields = {e["go"]: (n, e) for n, e in reader.json_fields(qname).items()}
        if go not in fields:
            return None
        name, entry = fields[go]
        names.append(name)
        qname = entry["type"].lstrip("*")
    return ".".join(names)


def parameters(reader: Reader, pkg, func: Func, decoder: str | None = None, depth: int = 0) -> dict:
    """What a factory (or dependency parser) does with its ``*json.Decoder``: ignores it, decodes it into one or more
    structs (alternatives, tried in turn), or something this reader cannot follow."""
    if decoder is None:
        decoders = [p[0].val for p in split_args(func.params) if text(p[1:]).replace(" ", "") == "*json.Decoder"]
        if len(decoders) != 1:
            return {"mode": "unreadable", "why": f"{func.name} takes no single *json.Decoder"}
        decoder = decoders[0]
    if decoder == "_":
        return {"mode": "ignored"}
    found = _decoded(reader, pkg, func)
    if found is not None:
        return found
    for name in sorted({t.val for t in func.body if t.kind == "id" and t.val in pkg.funcs and t.val != func.name}):
        for _, args in calls(func.body, name):
            positions = [n for n, a in enumerate(args) if text(a) == decoder]
            if positions and depth < 3:
                inner = split_args(pkg.funcs[name].params)[positions[0]][0].val
                result = parameters(reader, pkg, pkg.funcs[name], inner, depth + 1)
                if result["mode"] != "unreadable":
                    return result
    return {"mode": "unreadable", "why": f"{func.name} passes its decoder somewhere this reader does not follow"}


def _decoded(reader: Reader, pkg, func: Func) -> dict | None:
    """The structs ``func`` decodes into with ``x.Decode(&v)``, with their defaults; None when it decodes none."""
    schemas, defaults = [], {}
    for at, args in calls(func.body, "Decode"):
        if at < 2 or len(args) != 1 or args[0][0].val != "&":
            continue
        var = args[0][1].val
        qname, initial = struct_of(reader, pkg, func, var)
        if qname is None:
            kind = text(_declared_type(func, var))
            if "RawMessage" in kind:
                continue  # re-decoded below with StrictDecoder(raw)
            return {"mode": "external", "type": kind or var, "why": f"{func.name} decodes into {kind or var}, outside the module"}
        schemas.append(qname)
        defaults.update(initial)
        defaults.update(defaults_when_empty(reader, pkg, func, var, qname))
    return {"mode": "schema", "schemas": list(dict.fromkeys(schemas)), "defaults": defaults} if schemas else None


def _declared_type(func: Func, var: str) -> list[Tok]:
    body = func.body
    for i, tok in enumerate(body[:-2]):
        if tok.val == "var" and body[i + 1].val == var:
            end = next(j for j in range(i, len(body)) if body[j].kind == "semi")
            return body[i + 2 : end]
    return []


def registrations(reader: Reader) -> dict[str, dict]:
    """Every plugin type ``Runner.registerInTreePlugins`` registers, with what it is registered as."""
    runner, registry = reader.pkg_at(RUNNER), reader.pkg_at(REGISTRY)
    func = runner.funcs.get("Runner.registerInTreePlugins")
    if func is None:
        raise GoParseError(f"{RUNNER}: no Runner.registerInTreePlugins")
    plugins: dict[str, dict] = {}
    registers = sorted(n for n in registry.funcs if n.startswith("Register"))
    for register in registers:
        names = [p[0].val for p in split_args(registry.funcs[register].params)]
        for at, args in calls(func.body, f"{registry.name}.{register}") + calls(func.body, f"fwkplugin.{register}"):
            named = dict(zip(names, args, strict=True))
            kind = reader.value(runner, named["pluginType"], func.imports)
            if not isinstance(kind, str):
                raise GoParseError(f"{func.path}:{func.body[at].line}: plugin type {text(named['pluginType'])} is not a constant")
            entry = {
                "stability": named["stability"][-1].val.removeprefix("Stability"),
                "registered_at": f"{func.path}:{func.body[at].line}",
                "factory": text(named["factory"]).replace(" ", ""),
            }
            if "deprecatedIn" in named:
                entry["deprecated"] = {
                    k: reader.value(runner, named[arg], func.imports)
                    for k, arg in (("in", "deprecatedIn"), ("removal", "scheduledRemovalIn"), ("replacement", "replacementType"))
                }
            if "key" in named:
                entry["default_producer"] = True
            source = named.get("parser") or named["factory"]
            entry["dependencies"] = "parser" in named
            entry["parameters"] = _plugin_parameters(reader, func, source)
            plugins.setdefault(kind, entry)  # registered twice (the same factory): the first registration stands
    return dict(sorted(plugins.items()))


def _plugin_parameters(reader: Reader, caller: Func, ref: list[Tok]) -> dict:
    if len(ref) != 3 or ref[1].val != ".":
        return {"mode": "unreadable", "why": f"factory {text(ref)} is not pkg.Func"}
    ipath = reader.import_of(caller, ref[0].val)
    if ipath is None or reader.dir_of(ipath) is None:
        return {"mode": "unreadable", "why": f"factory {text(ref)} is outside the module"}
    pkg = reader.package(ipath)
    func = pkg.funcs.get(ref[2].val)
    if func is None:
        return {"mode": "unreadable", "why": f"{ipath} has no function {ref[2].val}"}
    result = parameters(reader, pkg, func)
    result["source"] = f"{func.path}:{func.line}"
    return result


def group_version(var) -> str:
    """``Group`` and ``Version`` of a ``schema.GroupVersion{Group: ..., Version: ...}`` variable's literal."""
    found = {}
    for i, tok in enumerate(var.expr[:-2]):
        if tok.val in ("Group", "Version") and var.expr[i + 1].val == ":":
            found[tok.val] = var.expr[i + 2]
    return found


def loader_facts(reader: Reader) -> dict:
    api, loader, runner = reader.pkg_at(CONFIG_API), reader.pkg_at(LOADER), reader.pkg_at(RUNNER)
    current = group_version(api.vars["GroupVersion"])
    group = reader.value(api, [current["Group"]], api.vars["GroupVersion"].imports)
    versions = [f"{group}/{reader.value(api, [current['Version']], {})}"]
    old = group_version(loader.vars["deprecatedSchemeGroupVersion"])
    versions.append(f"{json.loads(old['Group'].val)}/{json.loads(old['Version'].val)}")
    gates = {}
    for func in runner.funcs.values():
        for _, args in calls(func.body, "loader.RegisterFeatureGate"):
            gates[reader.value(runner, args[0], func.imports)] = reader.value(runner, args[1], func.imports)
    load_plugins = " ".join(text(f.body) for f in loader.funcs.values())
    options = reader.pkg_at(EPP_OPTIONS).funcs["Options.AddFlags"]
    experimental = next(
        reader.value(reader.pkg_at(EPP_OPTIONS), args[1], options.imports)
        for _, args in calls(options.body, "fs.BoolVar")
        if text(args[0]).endswith("AllowExperimentalPlugins")
    )
    return {
        "api_versions": versions,
        "kind": "EndpointPickerConfig",
        "root": reader.named(api.decls["EndpointPickerConfig"]),
        "feature_gates": dict(sorted(gates.items())),
        "plugin_order": "dependencies" if "TopologicalSort" in load_plugins else "declaration",
        "experimental_flag": experimental,
        "strict": True,
    }


def flags(reader: Reader, folder: str, method: str, zap: Reader | None) -> dict[str, dict]:
    """Every flag ``method`` (``Options.AddFlags``) binds: name -> type, default, accepted values."""
    pkg = reader.pkg_at(folder)
    func = pkg.funcs[method]
    defaults = _option_defaults(reader, pkg)
    choices = _choices(reader, pkg)
    out: dict[str, dict] = {}
    for kind, flag_type in FLAG_KINDS.items():
        for suffix, name_at in (("Var", 1), ("VarP", 1)):
            for _, args in calls(func.body, f"fs.{kind}{suffix}"):
                field = text(args[0]).replace(" ", "").removeprefix("&opts.")
                name = reader.value(pkg, args[name_at], func.imports)
                default_at = name_at + (2 if suffix == "VarP" else 1)
                default = reader.value(pkg, args[default_at], func.imports)
                if isinstance(default, dict) and text(args[default_at]).replace(" ", "") == f"opts.{field}":
                    # The field's value when AddFlags runs: NewOptions' literal, else Go's zero value.
                    default = defaults.get(field, ZERO[flag_type])
                out[name] = {"type": flag_type, "default": default, **({"choices": choices[field]} if field in choices else {})}
    for _, args in calls(func.body, "opts.LoggingOptions.AddFlags"):
        logging_pkg = reader.package(next(p for p in pkg.funcs[method].imports.values() if p.endswith("/logging")))
        out.update(flags(reader, reader.dir_of(logging_pkg.path), "LoggingOptions.AddFlags", zap))
        del args
    if ".BindFlags" in text(func.body).replace(" ", "") and zap is not None:
        out.update(zap_flags(zap))
    return dict(sorted(out.items()))


def _option_defaults(reader: Reader, pkg) -> dict[str, Any]:
    """Go field -> default, from ``NewOptions``' composite literal (nested literals flattened by field name)."""
    func = pkg.funcs.get("NewOptions")
    if func is None:
        return {}
    out: dict[str, Any] = {}
    for i, tok in enumerate(func.body[:-2]):
        if tok.kind == "id" and func.body[i + 1].val == ":" and func.body[i - 1].val in ("{", ","):
            end = i + 2
            depth = 0
            while end < len(func.body) and not (depth == 0 and func.body[end].val in (",", "}")):
                depth += func.body[end].val in "([{"
                depth -= func.body[end].val in ")]}"
                end += 1
            value = func.body[i + 2 : end]
            if value[0].val != "{" and not (len(value) > 1 and value[-1].val == "}"):
                local = len(value) == 1 and value[0].val in locals_of(func)
                out.setdefault(tok.val, {"expr": value[0].val} if local else reader.value(pkg, value, func.imports))
    return out


def locals_of(func: Func) -> set[str]:
    """Names a function body declares (``x := ...``, ``var x``): they shadow package constants of the same name."""
    body = func.body
    return {body[i - 1].val for i in range(1, len(body)) if body[i].val == ":="} | {
        body[i + 1].val for i in range(len(body) - 1) if body[i].val == "var"
    }


def _choices(reader: Reader, pkg) -> dict[str, list]:
    """Go field -> the keys of the ``supported*`` map ``Validate`` checks it against."""
    sets = {}
    for name, var in pkg.vars.items():
        if name.startswith("supported") and var.expr[:1] and var.expr[0].val == "map":
            brace = next(i for i, t in enumerate(var.expr) if t.val == "{" and var.expr[i - 1].val != "struct")
            keys = [
                e[0 : e.index(next(t for t in e if t.val == ":"))]
                for e in split_args(var.expr[brace + 1 : -1])
                if any(t.val == ":" for t in e)
            ]
            sets[name] = [reader.value(pkg, k, var.imports) for k in keys]
    found: dict[str, list] = {}
    for func in pkg.funcs.values():
        body = func.body
        for i, tok in enumerate(body[:-4]):
            if tok.val in sets and body[i + 1].val == "[" and body[i + 2].val == "opts" and body[i + 3].val == ".":
                found[body[i + 4].val] = sets[tok.val]
            if (
                tok.val == "("
                and body[i + 1].val == "opts"
                and body[i + 2].val == "."
                and body[i + 4].val == ","
                and body[i + 5].val in sets
            ):
                found[body[i + 3].val] = sets[body[i + 5].val]
    return found


def zap_flags(zap: Reader) -> dict[str, dict]:
    pkg = zap.package(ZAP)
    func = pkg.funcs["Options.BindFlags"]
    out = {}
    for kind, flag_type in {"Bool": "bool", "String": "string"}.items():
        for _, args in calls(func.body, f"fs.{kind}Var"):
            out[zap.value(pkg, args[1], func.imports)] = {"type": flag_type, "default": zap.value(pkg, args[2], func.imports)}
    for _, args in calls(func.body, "fs.Var"):
        out[zap.value(pkg, args[1], func.imports)] = {"type": "string", "default": None}
    return out


def watches(reader: Reader) -> list[dict]:
    pkg = reader.pkg_at(CONTROLLERS)
    out = []
    for func in pkg.funcs.values():
        for at in range(len(func.body) - 6):
            b = func.body
            if b[at].val == "For" and b[at + 1].val == "(" and b[at + 2].val == "&" and b[at + 4].val == ".":
                out.append(
                    {
                        "kind": b[at + 5].val,
                        "package": reader.import_of(func, b[at + 3].val),
                        "source": f"{func.path}:{b[at].line}",
                    }
                )
    return sorted(out, key=lambda w: w["kind"])


def types_used(reader: Reader, plugins: dict, root: str) -> dict[str, dict]:
    """The struct types reachable from the config root and the plugins' parameter schemas, with their JSON fields."""
    todo = [root, *(s for p in plugins.values() for s in p["parameters"].get("schemas", []))]
    types: dict[str, dict] = {}
    while todo:
        qname = todo.pop()
        if qname in types or qname not in reader.structs:
            continue
        fields = reader.json_fields(qname)
        types[qname] = {"fields": fields, "source": reader.structs[qname][2]}
        todo += [n for f in fields.values() for n in re.findall(r"[\w./-]+", f["type"]) if n in reader.structs]
    return dict(sorted(types.items()))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", required=True, help="llm-d/llm-d-router git work tree or bare mirror")
    ap.add_argument("--tag", required=True, help="tag to read, e.g. v0.10.0")
    ap.add_argument("--controller-runtime", help="kubernetes-sigs/controller-runtime mirror, for the zap logging flags")
    ap.add_argument("--out", required=True, help="JSON file to write")
    args = ap.parse_args(argv)
    try:
        reader = Reader(args.repo, args.tag, RUNNER)
        sha = reader.git("rev-parse", f"{args.tag}^{{commit}}").strip()
        zap = None
        if args.controller_runtime:
            version = re.search(r"sigs\.k8s\.io/controller-runtime (v\S+)", reader.git("show", f"{args.tag}:go.mod"))[1]
            zap = Reader(args.controller_runtime, version, "pkg/log/zap")
        plugins = registrations(reader)
        doc = {
            "source": f"llm-d/llm-d-router@{args.tag} (commit {sha})",
            "generated_by": "tools/llmd_registry.py",
            "loader": loader_facts(reader),
            "plugins": plugins,
            "epp_flags": flags(reader, EPP_OPTIONS, "Options.AddFlags", zap),
            "sidecar_flags": flags(reader, SIDECAR_OPTIONS, "Options.AddFlags", zap),
            "watches": watches(reader),
        }
        doc["types"] = types_used(reader, plugins, doc["loader"]["root"])
    except GoParseError as exc:
        print(f"llmd_registry: error: {exc}", file=sys.stderr)
        return 1
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    readable = sum(p["parameters"]["mode"] != "unreadable" for p in plugins.values())
    print(f"llmd_registry: {len(plugins)} plugin types ({readable} with readable parameters) -> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
