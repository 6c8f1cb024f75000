"""A reader for just enough Go to generate tables from upstream source at a tag: top-level type declarations
(structs with their field tags), string constants, and function bodies kept as tokens, across the packages of one
module read with ``git show`` (nothing is copied). Whatever it cannot parse is an error, never a guess.

Used by tools/router_fields.py (the semantic router's config keys) and tools/llmd_registry.py (llm-d's picker and
sidecar). Run from those scripts; not part of the installed package.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections import namedtuple
from collections.abc import Callable
from types import SimpleNamespace as Package  # path, dir, name, decls, methods, consts, funcs
from typing import ClassVar

PREDECLARED = {"bool", "string", "byte", "rune", "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16"}
PREDECLARED |= {"uint32", "uint64", "uintptr", "float32", "float64", "complex64", "complex128", "error", "any"}
OPS = ["<<=", ">>=", "&^=", "...", "&&", "||", "<-", "++", "--", "==", "!=", "<=", ">=", ":=", "+=", "-=", "*=", "/="]
OPS += ["%=", "&=", "|=", "^=", "<<", ">>", "&^", *"+-*/%&|^<>=!()[]{},;.:~"]  # longest first, as the regex tries them
SEMI_AFTER = {"++", "--", ")", "]", "}", "break", "continue", "fallthrough", "return"}  # Go's semicolon insertion
KEYWORDS = {"break", "continue", "fallthrough", "return", "case", "chan", "const", "default", "defer", "else", "for", "func"}
KEYWORDS |= {"go", "goto", "if", "import", "interface", "map", "package", "range", "select", "struct", "switch", "type", "var"}
LEX1 = r"(?P<nl>\n)|(?P<ws>[ \t\r\f]+)|(?P<lc>//[^\n]*)|(?P<bc>/\*.*?\*/)|(?P<raw>`[^`]*`)|(?P<str>\"(?:[^\"\\\n]|\\.)*\")"
LEX2 = r"(?P<chr>'(?:[^'\\\n]|\\.)+')|(?P<num>\.?\d(?:[eEpP][+-]|[\w.])*)|(?P<id>[^\W\d]\w*)"
TOKEN_RE = re.compile(f"{LEX1}|{LEX2}|(?P<op>{'|'.join(map(re.escape, OPS))})|(?P<bad>.)", re.S)
GOOS_FILE = re.compile(r"_(aix|android|darwin|freebsd|illumos|ios|js|linux|netbsd|openbsd|plan9|solaris|windows)(_\w+)?\.go$")
TAG_PAIR = r'([^\x00- :"\x7f]+):("(?:[^"\\]|\\.)*")'  # key:"value", as reflect.StructTag.Lookup scans them
TYPE_START = {"*", "[", "map", "struct", "func", "interface", "chan", "(", "<-"}

Tok = namedtuple("Tok", "kind val line")  # kind: id, kw, op, str, raw, chr, num, semi, eof
Field = namedtuple("Field", "names type tag line")  # names is empty for an embedded field
Decl = namedtuple("Decl", "pkg name type alias generic path line imports")
Const = namedtuple("Const", "name value path line imports")
"""A constant: ``value`` is its string, ``("ref", qualifier or None, name)`` for a copy of another constant, or None."""
Func = namedtuple("Func", "name params result body path line imports")
Var = namedtuple("Var", "name expr path line imports")
"""A package-level variable and the tokens of its initializer (empty without one)."""
"""A plain function: its parameter, result and body tokens (the body without its braces)."""


def _const_value(expr: list[Tok]) -> str | int | float | tuple | None:
    sign = -1 if len(expr) == 2 and expr[0].val == "-" else 1
    if expr and expr[-1].kind == "num" and len(expr) == (2 if sign < 0 else 1):
        number = expr[-1].val.replace("_", "")
        return sign * (float(number) if re.search(r"[.eE]", number) and not number.startswith("0x") else int(number, 0))
    if len(expr) == 1 and expr[0].kind == "str":
        return json.loads(expr[0].val)
    if len(expr) == 1 and expr[0].kind == "raw":
        return expr[0].val[1:-1]
    if len(expr) == 1 and expr[0].kind == "id":
        return ("ref", None, expr[0].val)
    if len(expr) == 3 and expr[0].kind == "id" and expr[1].val == "." and expr[2].kind == "id":
        return ("ref", expr[0].val, expr[2].val)
    return None


class GoParseError(Exception):
    pass


def struct_tag(tag: str, key: str, where: str) -> str | None:
    """reflect.StructTag.Lookup, except that a malformed tag is an error rather than a silent miss."""
    if not re.fullmatch(rf"(?: *{TAG_PAIR})* *", tag):
        raise GoParseError(f"{where}: malformed struct tag {tag!r}")
    return next((json.loads(v) for k, v in re.findall(TAG_PAIR, tag) if k == key), None)  # json.loads ~ strconv.Unquote


class Parser:
    """Just enough of Go's grammar for top-level declarations; function bodies are kept as tokens."""

    generic_leaves = False
    """Whether an instantiated generic type (``lru.Cache[K, V]``) is taken as an opaque leaf rather than refused."""

    def __init__(self, src: str, path: str):
        self.t, self.i, self.path, line = [], 0, path, 1

        def newline() -> None:  # Go's automatic semicolon insertion
            if self.t and (self.t[-1].kind in ("id", "str", "raw", "chr", "num") or self.t[-1].val in SEMI_AFTER):
                self.t.append(Tok("semi", "\n", line))

        for m in TOKEN_RE.finditer(src):
            kind, text = m.lastgroup, m.group()
            if kind == "bad":
                raise GoParseError(f"{path}:{line}: unexpected character {text!r}")
            if kind == "nl" or (kind == "bc" and "\n" in text):
                newline()
            elif kind not in ("ws", "lc", "bc"):
                self.t.append(Tok("kw" if kind == "id" and text in KEYWORDS else "semi" if text == ";" else kind, text, line))
            line += text.count("\n")
        newline()

    def peek(self, k: int = 0) -> Tok:
        return self.t[self.i + k] if self.i + k < len(self.t) else Tok("eof", "", self.t[-1].line if self.t else 0)

    def fail(self, msg: str) -> GoParseError:
        return GoParseError(f"{self.path}:{self.peek().line}: {msg} (at {self.peek().val!r})")

    def next(self, want: str | None = None, kind: str | None = None) -> Tok:
        tok = self.peek()
        if (want is not None and tok.val != want) or (kind is not None and tok.kind != kind):
            raise self.fail(f"expected {want or kind}")
        self.i += 1
        return tok

    def skip_balanced(self) -> None:
        pairs, depth = {"(": ")", "[": "]", "{": "}"}, []
        while True:
            tok = self.next()
            if tok.kind == "eof" or (tok.kind == "op" and tok.val in ")]}" and (not depth or depth.pop() != tok.val)):
                raise self.fail("unbalanced brackets")
            if tok.kind == "op" and tok.val in pairs:
                depth.append(pairs[tok.val])
            if not depth:
                return

    def type(self) -> tuple:
        tok = self.next()
        parse = self._TYPE_FORMS.get(tok.val)
        if parse is not None:
            return parse(self, tok)
        if tok.kind != "id":
            self.i -= 1
            raise self.fail("expected a type")
        qual = tok.val if self.peek().val == "." and self.next() else None
        tok = self.next(kind="id") if qual else tok
        if self.peek().val == "[":
            if not self.generic_leaves:
                raise self.fail(f"generic type instantiation {tok.val}[...] is not supported")
            self.skip_balanced()
            return ("leaf", f"{qual + '.' if qual else ''}{tok.val}[...]")
        return ("name", qual, tok.val)

    def _array(self, _tok: Tok) -> tuple:
        """[]T, or [N]T with N taken verbatim."""
        length = []
        while self.peek().val != "]":
            if self.peek().kind in ("eof", "semi") or self.peek().val in ("[", "{"):
                raise self.fail("unsupported array length")
            length.append(self.next().val)
        self.next("]")
        return ("array", "".join(length), self.type()) if length else ("slice", self.type())

    def _interface(self, _tok: Tok) -> tuple:
        empty = self.peek(1).val == "}"
        self.skip_balanced()
        return ("leaf", "interface{}" if empty else "interface{...}")

    def _chan(self, _tok: Tok) -> tuple:
        """chan T, chan<- T, <-chan T."""
        if self.peek().val in ("chan", "<-"):
            self.next()
        self.type()
        return ("leaf", "chan")

    def _func(self, _tok: Tok) -> tuple:
        """The parameters, then an optional result: a type or a parenthesised list."""
        self.skip_balanced()
        if self.peek().val == "(":
            self.skip_balanced()
        elif self.peek().kind == "id" or self.peek().val in TYPE_START:
            self.type()
        return ("leaf", "func")

    _TYPE_FORMS: ClassVar[dict[str, Callable[[Parser, Tok], tuple]]] = {
        "*": lambda self, _: ("ptr", self.type()),
        "[": _array,
        "map": lambda self, _: ("map", (self.next("["), self.type(), self.next("]"))[1], self.type()),  # map [ K ] V
        "struct": lambda self, tok: ("struct", self.struct_body(), tok.line),
        "interface": _interface,
        "chan": _chan,
        "<-": _chan,
        "func": _func,
        "(": lambda self, _: (self.type(), self.next(")"))[0],
    }
    """How a type that starts with a keyword or an operator goes on."""

    def struct_body(self) -> list[Field]:
        self.next("{")
        fields: list[Field] = []
        while self.peek().val != "}":
            line, nxt = self.peek().line, self.peek(1)
            if self.peek().val == "*" or nxt.val in (".", "}") or nxt.kind in ("semi", "str", "raw"):
                names = []  # embedded field: [*]T or [*]pkg.T
            else:
                names = [self.next(kind="id").val]
                while self.peek().val == "," and self.next():
                    names.append(self.next(kind="id").val)
            typ, tag = self.type(), ""
            if self.peek().kind in ("str", "raw"):
                raw = self.next().val
                tag = raw[1:-1] if raw.startswith("`") else json.loads(raw)
            if self.peek().val != "}":
                self.next(kind="semi")
            fields.append(Field(names, typ, tag, line))
        self.next("}")
        return fields

    def type_spec(self, pkg: Package, imports: dict[str, str]) -> Decl:
        name = self.next(kind="id")
        generic = self.peek().val == "[" and self.peek(1).val != "]" and self.peek(2).val != "]"  # Name[T any]
        if generic:
            self.skip_balanced()
        alias = self.peek().val == "=" and self.next() is not None
        return Decl(pkg, name.val, self.type(), alias, generic, self.path, name.line, imports)

    def group(self, item) -> list:
        """``item`` once, or for each entry of a parenthesised group; each ends a statement."""
        if self.peek().val != "(":
            return [item()]
        self.next()
        out = []
        while self.peek().val != ")":
            out.append(item())
            if self.peek().val != ")":
                self.next(kind="semi")
        self.next(")")
        return out

    def import_spec(self) -> tuple[str, str]:
        alias = self.next().val if self.peek().kind == "id" or self.peek().val == "." else None
        ipath = json.loads(self.next(kind="str").val)
        parts = ipath.split("/")  # an unaliased import's usual name: last element, minus a /vN or .vN version
        last = parts[-2] if len(parts) > 1 and re.fullmatch(r"v\d+", parts[-1]) else parts[-1]
        return alias or re.sub(r"\.v\d+$", "", last), ipath

    def file(self, pkg: Package) -> None:
        self.next("package")
        name = self.next(kind="id").val
        if pkg.name and pkg.name != name:
            raise self.fail(f"package {name} in a folder of package {pkg.name}")
        pkg.name, imports = name, {}
        self.next(kind="semi")
        while self.peek().val == "import":
            self.next()
            imports.update(self.group(self.import_spec))
            if self.peek().kind == "semi":
                self.next()
        while self.peek().kind != "eof":
            self.top_level(self.next(), pkg, imports)

    def top_level(self, tok: Tok, pkg: Package, imports: dict[str, str]) -> None:
        """One top-level declaration starting at ``tok``: types, functions, constants and variables are kept."""
        if tok.val == "type":
            self.type_decls(pkg, imports)
        elif tok.val == "func" and self.peek().val == "(":
            self.method(pkg, imports)
        elif tok.val == "func" and self.peek().kind == "id":
            self.function(pkg, imports)
        elif tok.val in ("const", "var"):
            self.value_decls(tok.val, pkg, imports)
        elif tok.kind == "op" and tok.val in ("(", "[", "{"):
            self.i -= 1
            self.skip_balanced()

    def value_decls(self, keyword: str, pkg: Package, imports: dict[str, str]) -> None:
        """The constants or variables after ``const`` or ``var`` (one, or a parenthesised group)."""
        for names, expr, line in self.group(self.const_spec):
            for name in names:
                if keyword == "const":
                    pkg.consts[name] = Const(name, _const_value(expr) if len(names) == 1 else None, self.path, line, imports)
                else:
                    pkg.vars[name] = Var(name, expr if len(names) == 1 else [], self.path, line, imports)

    def const_spec(self) -> tuple[list[str], list[Tok], int]:
        """``A, B [T] [= expr]`` inside a ``const`` declaration: the names, the expression's tokens, the line."""
        line, names = self.peek().line, [self.next(kind="id").val]
        while self.peek().val == "," and self.next():
            names.append(self.next(kind="id").val)
        if self.peek().val != "=" and self.peek().kind != "semi" and self.peek().val != ")":
            self.type()
        expr: list[Tok] = []
        if self.peek().val == "=" and self.next():
            while self.peek().kind not in ("semi", "eof") and self.peek().val != ")":
                if self.peek().val in ("(", "[", "{"):
                    start = self.i
                    self.skip_balanced()
                    expr += self.t[start : self.i]
                else:
                    expr.append(self.next())
        return names, expr, line

    def function(self, pkg: Package, imports: dict[str, str], prefix: str = "") -> None:
        """A function after ``func`` (a method's after its receiver, named ``prefix`` + name): its parameters,
        result and body kept as tokens."""
        name = self.next(kind="id")
        if self.peek().val == "[":
            self.skip_balanced()  # type parameters
        start = self.i
        self.skip_balanced()
        params = self.t[start + 1 : self.i - 1]
        start = self.i
        while self.peek().val != "{" and self.peek().kind not in ("semi", "eof"):
            if self.peek().val in ("struct", "interface"):
                self.next()
            if self.peek().val in ("(", "[", "{"):
                self.skip_balanced()
            else:
                self.next()
        result = self.t[start : self.i]
        body: list[Tok] = []
        if self.peek().val == "{":
            start = self.i
            self.skip_balanced()
            body = self.t[start + 1 : self.i - 1]
        key = prefix + name.val
        func = Func(key, params, result, body, self.path, name.line, imports)
        if name.val != "init" and pkg.funcs.setdefault(key, func) is not func:
            raise GoParseError(f"{self.path}:{name.line}: func {key} declared twice in {pkg.path}")

    def type_decls(self, pkg: Package, imports: dict[str, str]) -> None:
        """The type declaration (or group) after ``type``, added to the package."""
        for d in self.group(lambda: self.type_spec(pkg, imports)):
            if pkg.decls.setdefault(d.name, d) is not d:
                raise GoParseError(f"{self.path}:{d.line}: type {d.name} declared twice in {pkg.path}")

    def method(self, pkg: Package, imports: dict[str, str]) -> None:
        """A method after ``func``: note its receiver's type, and keep it as function ``Recv.Name``."""
        start = self.i
        self.skip_balanced()
        recv = [t.val for t in self.t[start : self.i]]
        recv = [v for v in (recv[: recv.index("[")] if "[" in recv else recv) if re.fullmatch(r"[^\W\d]\w*", v)]
        if self.peek().kind == "id" and recv:
            pkg.methods.append((recv[-1], self.peek().val, f"{self.path}:{self.peek().line}"))
            self.function(pkg, imports, prefix=f"{recv[-1]}.")


class Resolver:
    def __init__(self, repo: str, tag: str, pkg_dir: str):
        self.repo, self.tag = repo, tag
        self.pkgs, self.pkg_names = {}, {}  # import path -> Package; package name -> import path
        self.structs: dict[str, tuple[list[Field], Decl, str]] = {}  # qualified name -> (fields, decl, "path:line")
        self.touched, self.expanding = set(), set()  # declared types met (for custom_unmarshal); types being expanded
        parts = pkg_dir.strip("/").split("/")
        go_mods = ["/".join([*parts[:n], "go.mod"]) for n in range(len(parts) + 1)]
        found = self.git("ls-tree", "--name-only", tag, "--", *go_mods).split()
        if not found:
            raise GoParseError(f"no go.mod at or above {pkg_dir} at {tag}")
        self.module_dir = max(found, key=len).rpartition("/")[0]  # "" for a go.mod at the repository's root
        go_mod = self.git("show", f"{tag}:{max(found, key=len)}")
        self.module = (re.search(r"^module\s+(\S+)", go_mod, re.M) or [None, None])[1]
        if not self.module:
            raise GoParseError(f"{self.module_dir}/go.mod: no module line")
        replaces = re.findall(r"^\s*(?:replace\s+)?(\S+)(?:\s+\S+)?\s+=>\s+(\.\.?/\S*)\s*$", go_mod, re.M)
        self.replaces = sorted(replaces, key=lambda r: -len(r[0]))

    parser = Parser
    build_tags: frozenset[str] | None = None
    """The tags of the build to read (``linux``, ``amd64``...), or None to refuse any file with a build constraint."""

    def builds(self, name: str, src: str, path: str) -> bool:
        """Whether the file is part of the build: constraints (``//go:build`` and ``_linux.go`` names) are evaluated
        against ``build_tags``, or refused when there are none."""
        goos = GOOS_FILE.search(name)
        constraint = re.search(r"^//go:build\s+(.+)$", src, re.M)
        if not goos and not constraint and not re.search(r"^//\s*\+build\s", src, re.M):
            return True
        if self.build_tags is None or (not constraint and not goos):
            raise GoParseError(f"{path}: has a build constraint; build constraints are not evaluated")
        if goos and goos[1] not in self.build_tags:
            return False
        if constraint is None:
            return True
        expr = re.sub(r"[\w.]+", lambda m: str(m[0] in self.build_tags or m[0].startswith("go1.")), constraint[1])
        expr = expr.replace("&&", " and ").replace("||", " or ").replace("!", " not ")
        if not re.fullmatch(r"[\sA-Za-z()]*", expr):
            raise GoParseError(f"{path}: cannot evaluate //go:build {constraint[1]}")
        return bool(eval(expr, {"__builtins__": {}}))  # only True, False, and, or, not and parentheses remain

    def qual(self, pkg: Package) -> str:
        """How struct names are qualified: the package's name, which must then be unique among the packages read."""
        return pkg.name

    def git(self, *args: str) -> str:
        res = subprocess.run(["git", "-C", self.repo, *args], capture_output=True, text=True)
        if res.returncode != 0:
            raise GoParseError(f"git {' '.join(args)} failed: {res.stderr.strip()}")
        return res.stdout

    def dir_of(self, import_path: str) -> str | None:
        """The folder of an in-module import path (after local replace directives), else None."""
        for mod, target in [*self.replaces, (self.module, ".")]:
            if import_path == mod or import_path.startswith(mod + "/"):
                rel = re.sub(r"^\./|^\.$", "", target.rstrip("/") + import_path[len(mod) :]).lstrip("/")
                return None if rel.startswith("../") else "/".join(p for p in (self.module_dir, rel) if p)
        return None

    def package(self, import_path: str) -> Package:
        if import_path in self.pkgs:
            return self.pkgs[import_path]
        folder = self.dir_of(import_path)  # callers have checked that it is in the module
        pkg = Package(path=import_path, dir=folder, name="", decls={}, methods=[], consts={}, funcs={}, vars={})
        names = self.git("ls-tree", "--name-only", f"{self.tag}:{folder}").split()
        for name in sorted(n for n in names if n.endswith(".go") and not n.endswith("_test.go")):
            path = f"{folder}/{name}"
            src = self.git("show", f"{self.tag}:{path}")
            if not self.builds(name, src, path):
                continue
            try:
                self.parser(src, path).file(pkg)
            except ValueError as exc:  # a string literal json.loads cannot unquote
                raise GoParseError(f"{path}: cannot unquote a string literal: {exc}") from None
        if not pkg.name:
            raise GoParseError(f"{folder}: no Go files at {self.tag}")
        if self.pkg_names.setdefault(self.qual(pkg), import_path) != import_path:
            raise GoParseError(f"package name {pkg.name} used by both {self.pkg_names[self.qual(pkg)]} and {import_path}")
        self.pkgs[import_path] = pkg
        return pkg

    def lookup(self, decl: Decl, qual: str | None, name: str) -> Decl | None:
        where = f"{decl.path}:{decl.line}: {decl.name}"
        if qual is None:
            if name in decl.pkg.decls or name in PREDECLARED:
                return decl.pkg.decls.get(name)
            raise GoParseError(f"{where}: unknown type {name}")
        ipath = decl.imports.get(qual)
        if ipath is None:  # an unaliased in-module import whose package name differs from its folder's
            named = [p for p in decl.imports.values() if self.dir_of(p) and self.package(p).name == qual]
            ipath = named[0] if len(named) == 1 else None
        if ipath is None or self.dir_of(ipath) is None:
            raise GoParseError(f"{where}: {qual}.{name} ({ipath or 'not imported'}) is outside module {self.module}")
        if name not in self.package(ipath).decls:
            raise GoParseError(f"{where}: {ipath} has no type {name}")
        return self.package(ipath).decls[name]

    def named(self, target: Decl) -> str:
        """The type expression for a reference to a declared type (a struct name, or the expansion of the rest)."""
        qname, source = f"{self.qual(target.pkg)}.{target.name}", f"{target.path}:{target.line}"
        self.touched.add(qname)
        if target.generic:
            raise GoParseError(f"{source}: generic type {target.name} is not supported")
        if not target.alias and target.type[0] == "struct":
            return self.register(qname, target.type[1], target, source)
        if qname in self.expanding:
            raise GoParseError(f"{source}: recursive non-struct type {target.name}")
        self.expanding.add(qname)
        expr = self.expr(target.type, target, target.name + ".elem")
        self.expanding.discard(qname)
        if not target.alias and expr in self.structs:  # `type X Y` with Y a struct: X has Y's fields
            return self.register(qname, self.structs[expr][0], self.structs[expr][1], source)
        return expr

    def register(self, qname: str, fields: list[Field], decl: Decl, source: str) -> str:
        if self.structs.setdefault(qname, (fields, decl, source))[0] is not fields:
            raise GoParseError(f"{source}: two struct types would be named {qname}")
        return qname

    def expr(self, t: tuple, decl: Decl, ctx: str) -> str:
        """Type expression text; ``ctx`` names an anonymous struct literal after where it sits."""
        if t[0] == "name":
            target = self.lookup(decl, t[1], t[2])
            return ("interface{}" if t[2] == "any" else t[2]) if target is None else self.named(target)
        if t[0] in ("ptr", "slice"):
            return ("*" if t[0] == "ptr" else "[]") + self.expr(t[1], decl, ctx)
        if t[0] == "array":
            return f"[{t[1]}]" + self.expr(t[2], decl, ctx)
        if t[0] == "map":
            return f"map[{self.expr(t[1], decl, ctx + '.key')}]" + self.expr(t[2], decl, ctx)
        if t[0] == "struct":
            return self.register(f"{self.qual(decl.pkg)}.{ctx}", t[1], decl, f"{decl.path}:{t[2]}")
        return t[1]  # leaf
