#!/usr/bin/env python3
"""Generate the vSR config-key table (components/gateway/router_fields/v<version>.json) from the router's Go config types.

Reads src/semantic-router/pkg/config at a tag (``git show``; nothing is copied) and writes, per struct reachable from
CanonicalConfig, the YAML keys the router's collectKnownFields (pkg/config/validate.go) accepts: yaml:"-" skipped,
untagged fields lower-cased, ",inline"/untagged embedded structs promoted (non-struct ones dropped, as in Go),
unexported fields counted (reflect lists them). Aliases and non-struct defined types are expanded, so each name left
in a type expression is a listed struct or a leaf. Whatever it cannot parse is an error (exit 1), never a guess.
Example: python tools/router_fields.py --repo semantic-router.git --tag v0.3.0 --out components/gateway/router_fields/v0.3.0.json
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # tools/ is a folder of scripts, not a package
from golang import GoParseError, Resolver, struct_tag

UNMARSHALERS = ("UnmarshalYAML", "UnmarshalText")  # yaml.v2 honours both (the second for scalars)


class YamlResolver(Resolver):
    """The struct keys as yaml.v2 (and the router's collectKnownFields) read them."""

    def known_fields(self, qname: str, stack: tuple[str, ...] = ()) -> tuple[dict[str, str], list[str]]:
        """collectKnownFields: yaml key -> type expression, plus the structs promoted into it."""
        if qname in stack:
            raise GoParseError(f"inline cycle through {qname}")
        fields, decl, _ = self.structs[qname]
        ctx = qname.split(".", 1)[1]
        known: dict[str, str] = {}
        inlined: list[str] = []
        for f in fields:
            tag = struct_tag(f.tag, "yaml", f"{decl.path}:{f.line}") or ""
            if tag == "-":
                continue
            name, _, opts = tag.partition(",")
            if "inline" in opts or (name == "" and not f.names):  # Go: strings.Contains(opts, "inline") || anonymous
                inner = self.expr(f.type, decl, f"{ctx}.{(f.names or ['embedded'])[0]}").lstrip("*")
                if inner in self.structs:  # a non-struct inline/embedded field adds no key, as in Go
                    sub, sub_inlined = self.known_fields(inner, (*stack, qname))
                    known.update(sub)
                    inlined += [inner, *sub_inlined]
                continue
            base = f.type[1] if f.type[0] == "ptr" else f.type
            for fname in f.names or [base[2]]:  # embedded with an explicit yaml name: Go's name is the type's
                known[name or fname.lower()] = self.expr(f.type, decl, f"{ctx}.{fname}")  # exported or not, as in Go
        return known, inlined

    def run(self, pkg_dir: str, root: str) -> dict:
        pkg = self.package(self.module + pkg_dir.strip("/")[len(self.module_dir) :])
        if root not in pkg.decls:
            raise GoParseError(f"{pkg_dir} has no type {root}")
        root_q = self.named(pkg.decls[root])
        todo, types = [root_q], {}
        while todo:
            qname = todo.pop()
            if qname in types:
                continue
            known, inlined = self.known_fields(qname)
            types[qname] = {"fields": known, "source": self.structs[qname][2]}
            types[qname].update({"inlined": sorted(set(inlined))} if inlined else {})
            todo += [n for expr in known.values() for n in re.findall(r"[\w.]+", expr) if n in self.structs]
        methods = sorted((f"{p.name}.{recv}", meth, src) for p in self.pkgs.values() for recv, meth, src in p.methods)
        custom = [{"type": t, "method": m, "source": src} for t, m, src in methods if m in UNMARSHALERS and t in self.touched]
        return {"root": root_q, "types": types, "custom_unmarshal": custom}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", required=True, help="semantic-router git work tree or bare mirror")
    ap.add_argument("--tag", required=True, help="tag or commit to read, e.g. v0.3.0")
    ap.add_argument("--out", required=True, help="JSON file to write")
    ap.add_argument("--package", default="src/semantic-router/pkg/config", help="folder of the root type's package")
    ap.add_argument("--root", default="CanonicalConfig", help="root struct type (default: %(default)s)")
    args = ap.parse_args(argv)
    try:
        res = YamlResolver(args.repo, args.tag, args.package)
        sha = res.git("rev-parse", f"{args.tag}^{{commit}}").strip()
        out = res.run(args.package, args.root)
    except GoParseError as exc:
        print(f"router_fields: error: {exc}", file=sys.stderr)
        return 1
    source = f"vllm-project/semantic-router@{args.tag} (commit {sha}): {args.package.strip('/')}"
    doc = {"source": source, "generated_by": "tools/router_fields.py", **out}
    with open(args.out, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    print(f"router_fields: {len(out['types'])} struct types from {out['root']} -> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
