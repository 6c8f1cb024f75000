"""Check custom resources against their CustomResourceDefinitions, offline, as the API server would.

``kubernetes-validate`` knows only the built-in kinds. For a custom resource the API server decodes the object,
prunes fields its structural schema does not declare (silently), drops nulls of non-nullable fields, applies
defaults, then validates the OpenAPI v3 schema and the CEL ``x-kubernetes-validations`` rules. This module does
the same walk on a copy of the object and reports, with a JSON path for each:

- errors: wrong type, missing ``required`` field, value outside ``enum``, bounds (``minimum``/``maximum``/
  ``exclusive*``/``multipleOf``, ``min``/``maxLength``, ``min``/``maxItems``, ``min``/``maxProperties``),
  ``pattern`` (Python ``re``), duplicates in ``x-kubernetes-list-type`` set/map lists, ``allOf``/``anyOf``/
  ``oneOf``/``not``, failed CEL rules, unserved ``apiVersion``, metadata (name, namespace by the CRD's scope,
  label and annotation keys), and every field the API server would drop: unknown fields (pruned unless
  ``x-kubernetes-preserve-unknown-fields`` or ``additionalProperties`` keeps them), nulls of non-nullable fields,
  a namespace on a cluster-scoped kind.
- unchecked: what could not be checked here: CEL rules cel-python cannot parse or run (functions it lacks, its
  stricter typing), rules whose subtree already has blocking schema errors (the API server skips CEL then too),
  transition rules with ``optionalOldSelf``, and patterns Python's ``re`` cannot compile. Never errors.

CEL sees ``self`` typed as Kubernetes types it (``number`` as double, ``int-or-string`` as either, ``format``
date-time/duration/byte as timestamp/duration/bytes, reserved or dashed property names escaped as
``__namespace__``/``__dash__``), plus the Kubernetes string/list/IP functions cel-python lacks (``lowerAscii``,
``split``, ``substring``, ``indexOf``, ``isIP``, ...). ``format`` is not checked. Transition rules (``oldSelf``)
do not run on create, so they are skipped.
Pure Python (PyYAML; cel-python is imported only when a rule is evaluated); parsed CRDs, compiled patterns and
compiled CEL programs are cached.
"""

from __future__ import annotations

import base64
import copy
import functools
import ipaddress
import itertools
import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# ---- CRDs ---------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class CRDVersion:
    name: str
    schema: dict[str, Any] | None
    """``schema.openAPIV3Schema``; None for a version without a schema (everything is kept)."""
    served: bool = True
    storage: bool = False
    deprecated: bool = False
    deprecation_warning: str | None = None


@dataclass(frozen=True, eq=False)
class CRD:
    """One CustomResourceDefinition, reduced to what validation needs."""

    group: str
    kind: str
    plural: str
    scope: str
    versions: dict[str, CRDVersion]
    """Every version by name, served or not."""
    source: Path | None = None

    @property
    def namespaced(self) -> bool:
        return self.scope != "Cluster"

    @property
    def served_versions(self) -> tuple[str, ...]:
        return tuple(name for name, v in self.versions.items() if v.served)

    @property
    def api_versions(self) -> tuple[str, ...]:
        return tuple(f"{self.group}/{name}" for name in self.served_versions)

    def schema(self, version: str) -> dict[str, Any] | None:
        v = self.versions.get(version)
        return v.schema if v is not None and v.served else None

    def __repr__(self) -> str:
        return f"CRD({self.group}/{self.kind}, served={list(self.served_versions)}, scope={self.scope})"


def parse_crd(doc: Mapping[str, Any], source: Path | None = None) -> CRD:
    """A CRD from its parsed YAML (``apiextensions.k8s.io/v1``, or v1beta1 with a top-level ``validation``)."""
    if not isinstance(doc, Mapping) or doc.get("kind") != "CustomResourceDefinition":
        raise ValueError(f"{source or 'document'} is not a CustomResourceDefinition")
    spec = doc["spec"]
    names = spec["names"]
    shared_schema = (spec.get("validation") or {}).get("openAPIV3Schema")
    listed = spec.get("versions") or [{"name": spec.get("version"), "served": True, "storage": True}]
    versions = {}
    for v in listed:
        schema = (v.get("schema") or {}).get("openAPIV3Schema") or shared_schema
        versions[v["name"]] = CRDVersion(
            name=v["name"],
            schema=schema,
            served=v.get("served", True) is not False,
            storage=bool(v.get("storage")),
            deprecated=bool(v.get("deprecated")),
            deprecation_warning=v.get("deprecationWarning"),
        )
    return CRD(
        group=spec["group"],
        kind=names["kind"],
        plural=names.get("plural", ""),
        scope=spec.get("scope", "Namespaced"),
        versions=versions,
        source=source,
    )


def crds_in_text(text: str, source: Path | None = None) -> list[CRD]:
    """Every CustomResourceDefinition in a YAML stream (leading ``#`` comment lines are fine)."""
    return [
        parse_crd(doc, source)
        for doc in yaml.load_all(text, Loader=_LOADER)
        if isinstance(doc, Mapping) and doc.get("kind") == "CustomResourceDefinition"
    ]


@functools.cache
def _load_crds_cached(path: str, _mtime_ns: int, _size: int) -> tuple[CRD, ...]:
    return tuple(crds_in_text(Path(path).read_text(encoding="utf-8"), Path(path)))


def load_crds(path: str | Path) -> tuple[CRD, ...]:
    """The CRDs of one YAML file, parsed once per file version (cached by path, mtime and size)."""
    p = Path(path).resolve()
    st = p.stat()
    return _load_crds_cached(str(p), st.st_mtime_ns, st.st_size)


def load_crd(path: str | Path) -> CRD:
    """The single CRD of a file such as ``shared/upstream/crds/<group>_<plural>.yaml``."""
    found = load_crds(path)
    if len(found) != 1:
        raise ValueError(f"{path}: expected one CustomResourceDefinition, found {len(found)}")
    return found[0]


_SPEC_VERSIONS = re.compile(r"^[ \t]+versions:[ \t]*$", re.M)


def _scan_keys(path: Path) -> list[tuple[str, str]]:
    """(group, kind) of the CRDs in a file, cheaply: only the part before ``spec.versions`` is parsed."""
    text = path.read_text(encoding="utf-8")
    if len(re.findall(r"^kind:\s*CustomResourceDefinition\s*$", text, re.M)) == 1:
        cut = _SPEC_VERSIONS.search(text)
        if cut is not None:
            try:
                docs = [d for d in yaml.load_all(text[: cut.start()], Loader=_LOADER) if isinstance(d, Mapping)]
                (doc,) = [d for d in docs if d.get("kind") == "CustomResourceDefinition"]
                return [(doc["spec"]["group"], doc["spec"]["names"]["kind"])]
            except (yaml.YAMLError, KeyError, TypeError, ValueError):
                pass
    return [(crd.group, crd.kind) for crd in load_crds(path)]


class CRDIndex:
    """CRD files by (group, kind). Files are scanned cheaply up front and parsed in full on first use."""

    def __init__(self, files: Iterable[str | Path]):
        self._files: dict[tuple[str, str], Path] = {}
        for f in sorted(Path(f).resolve() for f in files):
            for key in _scan_keys(f):
                self._files.setdefault(key, f)

    @classmethod
    def from_dir(cls, directory: str | Path) -> CRDIndex:
        return crd_index(directory)

    def __contains__(self, key: object) -> bool:
        return key in self._files

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(sorted(self._files))

    def __len__(self) -> int:
        return len(self._files)

    def path(self, group: str, kind: str) -> Path | None:
        return self._files.get((group, kind))

    def get(self, group: str, kind: str) -> CRD | None:
        path = self._files.get((group, kind))
        if path is None:
            return None
        return next(c for c in load_crds(path) if (c.group, c.kind) == (group, kind))

    def for_object(self, obj: Mapping[str, Any]) -> CRD | None:
        """The CRD of a manifest, by the group of its ``apiVersion`` and its ``kind``; None for built-in kinds."""
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if not isinstance(api_version, str) or "/" not in api_version or not isinstance(kind, str):
            return None
        return self.get(api_version.split("/", 1)[0], kind)

    def validate(self, obj: Mapping[str, Any]) -> ValidationResult | None:
        """:func:`validate` against the object's CRD; None when the index has no CRD for it."""
        crd = self.for_object(obj)
        return None if crd is None else validate(obj, crd)


@functools.lru_cache(maxsize=16)
def _index_cached(directory: str, _listing: tuple[tuple[str, int], ...]) -> CRDIndex:
    return CRDIndex(Path(directory) / name for name, _ in _listing)


def crd_index(directory: str | Path) -> CRDIndex:
    """An index of the ``*.yaml``/``*.yml`` CRD files of a folder (cached while the folder's files are unchanged)."""
    d = Path(directory).resolve()
    listing = tuple(sorted((p.name, p.stat().st_mtime_ns) for p in d.iterdir() if p.suffix in (".yaml", ".yml")))
    return _index_cached(str(d), listing)


# ---- results ------------------------------------------------------------------------------------


@dataclass
class ValidationResult:
    errors: list[str] = field(default_factory=list)
    """What the API server would reject or silently drop, each ``<json path>: <problem>``."""
    unchecked: list[str] = field(default_factory=list)
    """What was not checked (CEL rules cel-python cannot run, patterns Python cannot compile); never errors."""
    warnings: list[str] = field(default_factory=list)
    """What the API server would warn about (a deprecated version)."""

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def unchecked_rules(self) -> list[str]:
        return [u for u in self.unchecked if " CEL " in u or u.startswith("CEL ")]


# ---- value helpers ------------------------------------------------------------------------------

_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_OBJECT_META_FIELDS = frozenset(
    {
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "managedFields",
    }
)
_ANNOTATIONS_LIMIT = 256 * 1024


def _is_int(v: Any) -> bool:
    if isinstance(v, bool):
        return False
    return isinstance(v, int) or (isinstance(v, float) and math.isfinite(v) and v.is_integer())


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


_TYPE_CHECKS = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": _is_int,
    "number": _is_number,
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def _json_type(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    return type(v).__name__


def _show(v: Any, limit: int = 80) -> str:
    try:
        text = json.dumps(v, sort_keys=True, default=str)
    except (TypeError, ValueError):
        text = repr(v)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _canonical(v: Any) -> Any:
    """A hashable form in which JSON-equal values are equal (1 == 1.0, but True != 1)."""
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return (type(v).__name__, v)
    if _is_number(v):
        return ("number", float(v))
    if isinstance(v, list):
        return ("array", tuple(_canonical(x) for x in v))
    if isinstance(v, dict):
        return ("object", tuple(sorted((k, _canonical(x)) for k, x in v.items())))
    return ("other", repr(v))


def _json_equal(a: Any, b: Any) -> bool:
    return _canonical(a) == _canonical(b)


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _where(path: str) -> str:
    return path or "<root>"


# Go RE2 syntax that Python's re rejects or reads differently; such patterns are reported as not checked.
_RE2_ONLY = re.compile(r"\[\[:\^?[a-z]+:\]\]|\\[pPzCQE]|\\x\{|\(\?[a-zA-Z]*U")


@functools.cache
def _pattern(pattern: str) -> re.Pattern[str] | str:
    """The compiled pattern, or why it cannot be checked with Python's re."""
    if _RE2_ONLY.search(pattern):
        return "uses RE2 syntax Python's re does not share"
    try:
        return re.compile(pattern)
    except (re.error, OverflowError, RecursionError) as err:
        return f"does not compile with Python's re ({err})"


def _qualified_name_problem(key: str) -> str | None:
    prefix, _, name = key.rpartition("/")
    if "/" in key and (not prefix or len(prefix) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(prefix)):
        return f"prefix {prefix!r} must be a lowercase DNS subdomain"
    if not name or len(name) > 63 or not _QUALIFIED_NAME.fullmatch(name):
        return "name part must be 1-63 characters of [A-Za-z0-9-_.], starting and ending with a letter or digit"
    return None


# ---- CEL ----------------------------------------------------------------------------------------

_OLD_SELF = re.compile(r"\boldSelf\b")
_CEL_RESERVED = frozenset(
    [
        "true",
        "false",
        "null",
        "in",
        "as",
        "break",
        "const",
        "continue",
        "else",
        "for",
        "function",
        "if",
        "import",
        "let",
        "loop",
        "package",
        "namespace",
        "return",
        "var",
        "void",
        "while",
    ]
)
_CEL_NAME = re.compile(r"[a-zA-Z_.\-/][a-zA-Z0-9_.\-/]*")


def _cel_field_name(name: str) -> str | None:
    """How a CEL rule refers to a property (Kubernetes' escaping); None when it cannot."""
    if name in _CEL_RESERVED:
        return f"__{name}__"
    if not _CEL_NAME.fullmatch(name):
        return None
    return name.replace("__", "__underscores__").replace(".", "__dot__").replace("-", "__dash__").replace("/", "__slash__")


class _Cel:
    """cel-python, loaded on first use: one environment, compiled programs cached by rule text."""

    _instance: _Cel | None = None

    def __init__(self) -> None:
        import celpy
        from celpy import celtypes

        self.celpy, self.ct = celpy, celtypes
        self.env = celpy.Environment()
        self.functions = _extension_functions(celtypes)
        self.programs: dict[str, tuple[Any, str | None]] = {}

    @classmethod
    def get(cls) -> _Cel:
        if cls._instance is None:
            cls._instance = cls()
        return cls._instance

    def program(self, rule: str) -> tuple[Any, str | None]:
        cached = self.programs.get(rule)
        if cached is None:
            try:
                cached = (self.env.program(self.env.compile(rule), functions=self.functions), None)
            except Exception as err:  # CELParseError and anything the parser raises
                first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
                cached = (None, f"does not compile in cel-python: {first}")
            self.programs[rule] = cached
        return cached

    def evaluate(self, program: Any, activation: dict[str, Any]) -> tuple[str, Any]:
        """("value", result), ("error", why) for what the API server also rejects, or ("unsupported", why)."""
        try:
            result = program.evaluate(activation)
        except self.celpy.CELEvalError as err:
            result = err
        except Exception as err:
            return "unsupported", f"cel-python raised {type(err).__name__}: {str(err)[:160]}"
        if isinstance(result, self.celpy.CELEvalError):
            messages = _error_messages(result)
            if missing := [m for m in messages if re.match(r"undeclared reference to '([^']+)'", m)]:
                name = re.match(r"undeclared reference to '([^']+)'", missing[0]).group(1)
                return "unsupported", f"uses {name!r}, which cel-python does not provide"
            keys = [found.group(1) for m in messages if (found := re.match(r"no such (?:member|key)[^']*'([^']+)'", m))]
            if keys and len(keys) == len(messages):
                # Every failing branch read an absent field: cel-go fails the same way ("no such key").
                return "error", f"no such key: {', '.join(dict.fromkeys(keys))}"
            return "unsupported", f"cel-python could not evaluate it: {messages[0][:160] if messages else result}"
        return "value", result

    def to_cel(self, value: Any, s: Mapping[str, Any] | None, top: bool = False) -> Any:
        """``value`` typed as the Kubernetes CEL environment types it for schema ``s``."""
        ct = self.ct
        if value is None:
            return None
        if s is None:
            return self.celpy.json_to_cel(value)
        if isinstance(value, bool):
            return ct.BoolType(value)
        if _is_number(value):
            if s.get("type") == "number":
                return ct.DoubleType(float(value))
            if _is_int(value) and (s.get("type") == "integer" or s.get("x-kubernetes-int-or-string")):
                return ct.IntType(int(value))
            return self.celpy.json_to_cel(value)
        if isinstance(value, str):
            fmt = s.get("format") if s.get("type") == "string" else None
            try:
                if fmt in ("date-time", "datetime", "date"):
                    return ct.TimestampType(value if fmt != "date" else f"{value}T00:00:00Z")
                if fmt == "duration":
                    return ct.DurationType(value)
                if fmt == "byte":
                    return ct.BytesType(base64.b64decode(value, validate=True))
            except Exception:
                pass
            return ct.StringType(value)
        if isinstance(value, list):
            items = s.get("items") if isinstance(s.get("items"), Mapping) else None
            return ct.ListType([self.to_cel(v, items) for v in value])
        if isinstance(value, dict):
            props = s.get("properties") or {}
            extra = s.get("additionalProperties")
            resource = top or s.get("x-kubernetes-embedded-resource") is True
            out = {}
            for key, v in value.items():
                sub = props.get(key)
                if resource and key == "metadata" and isinstance(v, dict):
                    # Only name and generateName of the metadata are visible to rules.
                    meta = {k: v[k] for k in ("name", "generateName") if isinstance(v.get(k), str)}
                    out[ct.StringType(key)] = self.celpy.json_to_cel(meta)
                elif sub is not None:
                    name = _cel_field_name(key)
                    if name is not None:
                        out[ct.StringType(name)] = self.to_cel(v, sub)
                elif resource and key in ("apiVersion", "kind"):
                    out[ct.StringType(key)] = self.to_cel(v, None)
                elif isinstance(extra, Mapping):
                    out[ct.StringType(key)] = self.to_cel(v, extra)
                elif extra is True:
                    out[ct.StringType(key)] = self.celpy.json_to_cel(v)
                # else: a field kept by x-kubernetes-preserve-unknown-fields, not visible to rules
            return ct.MapType(out)
        return self.celpy.json_to_cel(value)


_NESTED_ERROR = re.compile(r"""CELEvalError\(\*\((["'])(.*?)\1, <class""")


def _error_messages(err: BaseException) -> list[str]:
    """The leaf messages of a cel-python error. When both operands of ``||``/``&&`` fail, cel-python reports
    "no matching overload ... applied to (CELEvalError, CELEvalError)" and keeps the operands' errors as text."""
    message = str(err.args[0]) if err.args else str(err)
    if "CELEvalError" not in message:
        return [message]
    text = " ".join(str(a) for a in err.args[1:]).replace("\\", "")
    nested = [m for _, m in _NESTED_ERROR.findall(text)]
    leaves = [m for m in nested if "CELEvalError" not in m]
    return leaves or [message]


def _extension_functions(ct: Any) -> dict[str, Any]:
    """The Kubernetes CEL library functions the pinned CRDs use that cel-python lacks (strings, lists, isIP, isCIDR)."""

    def _ascii(text: str, upper: bool) -> str:
        return "".join(
            chr(ord(c) + (-32 if upper else 32)) if ("a" <= c <= "z" if upper else "A" <= c <= "Z") else c for c in text
        )

    def lower_ascii(s):
        return ct.StringType(_ascii(str(s), upper=False))

    def upper_ascii(s):
        return ct.StringType(_ascii(str(s), upper=True))

    def split(s, sep, n=None):
        s, sep = str(s), str(sep)
        n = -1 if n is None else int(n)
        if n == 0:
            return ct.ListType([])
        if sep == "":
            parts = list(s) if n < 0 or n >= len(s) else [*list(s[: n - 1]), s[n - 1 :]]
        else:
            parts = s.split(sep) if n < 0 else s.split(sep, n - 1)
        return ct.ListType([ct.StringType(p) for p in parts])

    def substring(s, start, end=None):
        s, start = str(s), int(start)
        end = len(s) if end is None else int(end)
        if not 0 <= start <= end <= len(s):
            raise IndexError(f"substring({start}, {end}) out of range for a string of length {len(s)}")
        return ct.StringType(s[start:end])

    def index_of(target, what, offset=0):
        if isinstance(target, list):
            for i, x in enumerate(target):
                if _json_equal(x, what):
                    return ct.IntType(i)
            return ct.IntType(-1)
        return ct.IntType(str(target).find(str(what), int(offset)))

    def last_index_of(target, what, offset=None):
        if isinstance(target, list):
            for i in range(len(target) - 1, -1, -1):
                if _json_equal(target[i], what):
                    return ct.IntType(i)
            return ct.IntType(-1)
        end = None if offset is None else int(offset) + len(str(what))
        return ct.IntType(str(target).rfind(str(what), 0, end))

    def char_at(s, i):
        s, i = str(s), int(i)
        if not 0 <= i <= len(s):
            raise IndexError(f"charAt({i}) out of range")
        return ct.StringType(s[i : i + 1])

    def trim(s):
        return ct.StringType(str(s).strip())

    def replace(s, old, new, n=-1):
        return ct.StringType(str(s).replace(str(old), str(new), int(n)))

    def join(items, sep=""):
        return ct.StringType(str(sep).join(str(x) for x in items))

    def is_ip(s):
        text = str(s)
        if "%" in text:
            return ct.BoolType(False)
        try:
            address = ipaddress.ip_address(text)
        except ValueError:
            return ct.BoolType(False)
        return ct.BoolType(not (isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None))

    def is_cidr(s):
        try:
            ipaddress.ip_network(str(s), strict=False)
        except ValueError:
            return ct.BoolType(False)
        return ct.BoolType("/" in str(s))

    def is_sorted(items):
        values = list(items)
        return ct.BoolType(all(a <= b for a, b in itertools.pairwise(values)))

    return {
        "lowerAscii": lower_ascii,
        "upperAscii": upper_ascii,
        "split": split,
        "substring": substring,
        "indexOf": index_of,
        "lastIndexOf": last_index_of,
        "charAt": char_at,
        "trim": trim,
        "replace": replace,
        "join": join,
        "isIP": is_ip,
        "isCIDR": is_cidr,
        "isSorted": is_sorted,
    }


# ---- validation ---------------------------------------------------------------------------------


def validate(obj: Mapping[str, Any], crd: CRD | Mapping[str, Any]) -> ValidationResult:
    """Check one custom resource against its CRD (a :class:`CRD` or the CRD's parsed YAML).

    The object is not changed: pruning and defaulting happen on a copy, as the API server's decoding does.
    """
    if not isinstance(crd, CRD):
        crd = parse_crd(crd)
    return _Run(crd).run(obj)


class _Run:
    def __init__(self, crd: CRD):
        self.crd = crd
        self.result = ValidationResult()
        self.errors = self.result.errors
        self.blocking = 0
        self._noted: set[str] = set()

    # -- reporting --

    def error(self, path: str, message: str, blocking: bool = False) -> None:
        self.errors.append(f"{_where(path)}: {message}")
        if blocking:
            self.blocking += 1

    def note(self, path: str, message: str) -> None:
        text = f"{_where(path)}: {message}"
        if text not in self._noted:
            self._noted.add(text)
            self.result.unchecked.append(text)

    def collect(self, value: Any, s: Mapping[str, Any], path: str) -> list[str]:
        """The errors of ``value`` against ``s`` (a junctor branch), kept out of the result."""
        saved, saved_blocking = self.errors, self.blocking
        self.errors = []
        try:
            self.check(value, s, path, structural=False)
            return self.errors
        finally:
            self.errors, self.blocking = saved, saved_blocking

    # -- the object --

    def run(self, obj: Mapping[str, Any]) -> ValidationResult:
        crd = self.crd
        if not isinstance(obj, Mapping):
            self.error("", f"a custom resource is an object, got {_json_type(obj)}")
            return self.result
        obj = copy.deepcopy(dict(obj))
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if kind != crd.kind:
            self.error("kind", f"expected {crd.kind!r} (the CRD's kind), got {_show(kind)}")
        group, _, version = api_version.partition("/") if isinstance(api_version, str) else ("", "", "")
        if group != crd.group or version not in crd.served_versions:
            self.error(
                "apiVersion",
                f"{_show(api_version)} is not served by the {crd.kind} CRD (served: {', '.join(crd.api_versions) or 'none'})",
            )
            return self.result
        info = crd.versions[version]
        if info.deprecated:
            self.result.warnings.append(f"apiVersion: {info.deprecation_warning or f'{api_version} {crd.kind} is deprecated'}")
        schema = info.schema or {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        meta_schema = (schema.get("properties") or {}).get("metadata")
        self.check_metadata(obj, "metadata", top=True, schema=meta_schema)
        self.check(obj, schema, "", top=True)
        return self.result

    def check_metadata(self, parent: dict, path: str, top: bool, schema: Mapping[str, Any] | None) -> None:
        meta = parent.get("metadata")
        if meta is None:
            if top:
                self.error(path, "required field is missing", blocking=True)
            parent.pop("metadata", None)
            return
        if not isinstance(meta, dict):
            self.error(path, f"must be of type object, got {_json_type(meta)}", blocking=True)
            return
        for key in list(meta):
            if key not in _OBJECT_META_FIELDS:
                self.error(_child(path, key), "unknown field (not in ObjectMeta; the API server drops it)")
                del meta[key]
        name, generate = meta.get("name"), meta.get("generateName")
        for key in ("name", "generateName", "namespace"):
            if key in meta and not isinstance(meta[key], str):
                self.error(_child(path, key), f"must be of type string, got {_json_type(meta[key])}", blocking=True)
        if top:
            if not name and not generate:
                self.error(_child(path, "name"), "required field is missing (or set metadata.generateName)", blocking=True)
            elif isinstance(name, str) and (len(name) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(name)):
                self.error(
                    _child(path, "name"),
                    f"{name!r} is not a lowercase DNS-1123 subdomain (a-z, 0-9, '-', '.'; at most 253 characters)",
                )
            namespace = meta.get("namespace")
            if self.crd.namespaced:
                if not namespace:
                    self.error(_child(path, "namespace"), f"required: {self.crd.kind} is namespaced", blocking=True)
                elif isinstance(namespace, str) and (len(namespace) > 63 or not _DNS1123_LABEL.fullmatch(namespace)):
                    self.error(_child(path, "namespace"), f"{namespace!r} is not a DNS-1123 label")
            elif namespace:
                self.error(
                    _child(path, "namespace"),
                    f"{self.crd.kind} is cluster-scoped: the API server ignores the namespace {namespace!r}",
                )
        for key in ("labels", "annotations"):
            mapping = meta.get(key)
            if mapping is None:
                continue
            where = _child(path, key)
            if not isinstance(mapping, dict):
                self.error(where, f"must be a map of strings, got {_json_type(mapping)}", blocking=True)
                continue
            for k, v in mapping.items():
                if problem := _qualified_name_problem(k):
                    self.error(f"{where}[{k}]", f"invalid key: {problem}")
                if not isinstance(v, str):
                    self.error(f"{where}[{k}]", f"must be of type string, got {_json_type(v)}", blocking=True)
                elif key == "labels" and (len(v) > 63 or (v and not _QUALIFIED_NAME.fullmatch(v))):
                    self.error(f"{where}[{k}]", f"invalid label value {_show(v)}: at most 63 characters of [A-Za-z0-9-_.]")
            if key == "annotations":
                size = sum(len(k) + len(v) for k, v in mapping.items() if isinstance(v, str))
                if size > _ANNOTATIONS_LIMIT:
                    self.error(where, f"annotations total {size} bytes, over the 262144-byte limit", blocking=True)
        finalizers = meta.get("finalizers")
        if finalizers is not None and not (isinstance(finalizers, list) and all(isinstance(f, str) for f in finalizers)):
            self.error(_child(path, "finalizers"), "must be a list of strings", blocking=True)
        if schema:
            # A CRD may constrain only metadata.name and metadata.generateName.
            props = schema.get("properties") or {}
            for key in ("name", "generateName"):
                if isinstance(meta.get(key), str) and isinstance(props.get(key), Mapping):
                    self.check(meta[key], props[key], _child(path, key), structural=False)

    # -- one value against one schema --

    def check(self, value: Any, s: Mapping[str, Any], path: str, structural: bool = True, top: bool = False) -> None:
        """Validate ``value`` at ``path``. Structural: also prune, default and run CEL (mutates the copy)."""
        if not isinstance(s, Mapping):
            return
        if value is None:
            if not s.get("nullable") and (s.get("type") or s.get("x-kubernetes-int-or-string")):
                self.error(path, f"must be of type {s.get('type') or 'integer or string'}, got null", blocking=True)
            return
        entry = self.blocking
        if s.get("x-kubernetes-int-or-string"):
            if not (_is_int(value) or isinstance(value, str)):
                self.error(path, f"must be an integer or a string, got {_json_type(value)} {_show(value)}", blocking=True)
                return
        else:
            t = s.get("type")
            check_type = _TYPE_CHECKS.get(t) if isinstance(t, str) else None
            if check_type is not None and not check_type(value):
                self.error(path, f"must be of type {t}, got {_json_type(value)} {_show(value)}", blocking=True)
                return
        if "enum" in s and isinstance(s["enum"], list) and not any(_json_equal(value, e) for e in s["enum"]):
            allowed = ", ".join(_show(e, 40) for e in s["enum"][:20]) + (", ..." if len(s["enum"]) > 20 else "")
            self.error(path, f"unsupported value {_show(value)}: must be one of {allowed}", blocking=True)
        if _is_number(value):
            self.check_number(value, s, path)
        elif isinstance(value, str):
            self.check_string(value, s, path)
        elif isinstance(value, list):
            self.check_array(value, s, path, structural)
        elif isinstance(value, dict):
            self.check_object(value, s, path, structural, top)
        self.check_junctors(value, s, path)
        rules = s.get("x-kubernetes-validations")
        if structural and rules:
            if self.blocking > entry:
                self.note(path, f"{len(rules)} CEL rule(s) not checked: schema errors here block them (as in the API server)")
            else:
                self.check_rules(value, s, path, rules, top)

    def check_number(self, value: float, s: Mapping[str, Any], path: str) -> None:
        low, high = s.get("minimum"), s.get("maximum")
        ex_low, ex_high = s.get("exclusiveMinimum"), s.get("exclusiveMaximum")
        if _is_number(low):
            if ex_low is True and not value > low:
                self.error(path, f"{_show(value)} must be greater than {_show(low)}")
            elif ex_low is not True and not value >= low:
                self.error(path, f"{_show(value)} must be greater than or equal to {_show(low)}")
        if _is_number(high):
            if ex_high is True and not value < high:
                self.error(path, f"{_show(value)} must be less than {_show(high)}")
            elif ex_high is not True and not value <= high:
                self.error(path, f"{_show(value)} must be less than or equal to {_show(high)}")
        if _is_number(ex_low) and not isinstance(ex_low, bool) and not value > ex_low:
            self.error(path, f"{_show(value)} must be greater than {_show(ex_low)}")
        if _is_number(ex_high) and not isinstance(ex_high, bool) and not value < ex_high:
            self.error(path, f"{_show(value)} must be less than {_show(ex_high)}")
        step = s.get("multipleOf")
        if _is_number(step) and step > 0:
            ratio = value / step
            if not math.isclose(ratio, round(ratio), rel_tol=0, abs_tol=1e-9):
                self.error(path, f"{_show(value)} must be a multiple of {_show(step)}")

    def check_string(self, value: str, s: Mapping[str, Any], path: str) -> None:
        low, high = s.get("minLength"), s.get("maxLength")
        if _is_int(low) and len(value) < low:
            self.error(path, f"{_show(value)} is shorter than {int(low)} characters")
        if _is_int(high) and len(value) > high:
            self.error(path, f"{_show(value)} is longer than {int(high)} characters ({len(value)})", blocking=True)
        pattern = s.get("pattern")
        if isinstance(pattern, str):
            compiled = _pattern(pattern)
            if isinstance(compiled, str):
                self.note(path, f"pattern {pattern!r} not checked: {compiled}")
            elif not compiled.search(value):
                self.error(path, f"{_show(value)} does not match the pattern {pattern!r}")

    def check_array(self, value: list, s: Mapping[str, Any], path: str, structural: bool) -> None:
        low, high = s.get("minItems"), s.get("maxItems")
        if _is_int(low) and len(value) < low:
            self.error(path, f"has {len(value)} items, fewer than the minimum {int(low)}")
        if _is_int(high) and len(value) > high:
            self.error(path, f"has {len(value)} items, more than the maximum {int(high)}", blocking=True)
        items = s.get("items")
        if isinstance(items, Mapping):
            for i, item in enumerate(value):
                self.check(item, items, f"{path}[{i}]", structural)
        list_type = s.get("x-kubernetes-list-type")
        if list_type == "set" or s.get("uniqueItems") is True:
            seen: dict[Any, int] = {}
            for i, item in enumerate(value):
                key = _canonical(item)
                if key in seen:
                    self.error(f"{path}[{i}]", f"duplicate value {_show(item)} (also at [{seen[key]}]; the list is a set)")
                else:
                    seen[key] = i
        elif list_type == "map":
            keys = [k for k in s.get("x-kubernetes-list-map-keys") or [] if isinstance(k, str)]
            seen = {}
            for i, item in enumerate(value):
                if not isinstance(item, dict) or not keys:
                    continue
                key = tuple(_canonical(item.get(k)) for k in keys)
                if key in seen:
                    shown = ", ".join(f"{k}={_show(item.get(k))}" for k in keys)
                    self.error(f"{path}[{i}]", f"duplicate entry for key {shown} (also at [{seen[key]}]; the list is a map)")
                else:
                    seen[key] = i

    def check_object(self, value: dict, s: Mapping[str, Any], path: str, structural: bool, top: bool) -> None:
        props = s.get("properties") if isinstance(s.get("properties"), Mapping) else {}
        extra = s.get("additionalProperties")
        keeps_unknown = s.get("x-kubernetes-preserve-unknown-fields") is True
        embedded = s.get("x-kubernetes-embedded-resource") is True
        implicit = ("apiVersion", "kind", "metadata") if (top or embedded) else ()
        for key in list(value):
            if key == "metadata" and implicit:
                continue  # ObjectMeta, checked by check_metadata
            sub = props.get(key)
            where = _child(path, key)
            if sub is None:
                if key in implicit:
                    continue
                if isinstance(extra, Mapping):
                    sub, where = extra, f"{path}[{key}]"
                elif extra is True or keeps_unknown or (extra is None and not structural):
                    continue
                else:
                    if structural:
                        self.error(where, "unknown field (not in the CRD schema; the API server prunes it)")
                        del value[key]
                    else:
                        self.error(where, "additional properties are not allowed")
                    continue
            if not structural:
                self.check(value[key], sub, where, structural=False)
                continue
            if value[key] is None and not sub.get("nullable"):
                if "default" in sub:
                    value[key] = copy.deepcopy(sub["default"])
                else:
                    self.error(where, "null for a field that is not nullable (the API server drops it)")
                    del value[key]
                    continue
            self.check(value[key], sub, where)
        if structural:
            for key, sub in props.items():
                if key not in value and isinstance(sub, Mapping) and "default" in sub:
                    value[key] = copy.deepcopy(sub["default"])
                    self.check(value[key], sub, _child(path, key))
            if embedded:
                for key in ("apiVersion", "kind"):
                    if key not in props and not (isinstance(value.get(key), str) and value.get(key)):
                        self.error(_child(path, key), "required in an embedded resource", blocking=True)
                self.check_metadata(value, _child(path, "metadata"), top=False, schema=None)
        for key in s.get("required") or []:
            if key not in value:
                self.error(_child(path, key), "required field is missing", blocking=True)
        low, high = s.get("minProperties"), s.get("maxProperties")
        if _is_int(low) and len(value) < low:
            self.error(path, f"has {len(value)} properties, fewer than the minimum {int(low)}")
        if _is_int(high) and len(value) > high:
            self.error(path, f"has {len(value)} properties, more than the maximum {int(high)}", blocking=True)

    def check_junctors(self, value: Any, s: Mapping[str, Any], path: str) -> None:
        for sub in s.get("allOf") or []:
            self.check(value, sub, path, structural=False)
        if any_of := s.get("anyOf"):
            failures = [self.collect(value, sub, path) for sub in any_of]
            if all(failures):
                self.error(path, "matches none of the anyOf schemas: " + " | ".join("; ".join(f) for f in failures))
        if one_of := s.get("oneOf"):
            failures = [self.collect(value, sub, path) for sub in one_of]
            matched = sum(not f for f in failures)
            if matched == 0:
                self.error(path, "matches none of the oneOf schemas: " + " | ".join("; ".join(f) for f in failures))
            elif matched > 1:
                self.error(path, f"matches {matched} of the oneOf schemas, must match exactly one")
        if isinstance(s.get("not"), Mapping) and not self.collect(value, s["not"], path):
            self.error(path, "must not match the schema under 'not'")

    def check_rules(self, value: Any, s: Mapping[str, Any], path: str, rules: list, top: bool) -> None:
        cel = _Cel.get()
        activation = None
        for spec in rules:
            rule = spec.get("rule") if isinstance(spec, Mapping) else None
            if not isinstance(rule, str):
                continue
            short = rule if len(rule) <= 160 else rule[:157] + "..."
            if _OLD_SELF.search(rule):
                if spec.get("optionalOldSelf"):
                    self.note(path, f"CEL transition rule with optionalOldSelf not checked: {short}")
                continue  # a transition rule: not evaluated on create
            program, why = cel.program(rule)
            if program is None:
                self.note(path, f"CEL rule not checked ({why}): {short}")
                continue
            if activation is None:
                activation = {"self": cel.to_cel(value, s, top=top)}
            outcome, detail = cel.evaluate(program, activation)
            if outcome == "unsupported":
                self.note(path, f"CEL rule not checked ({detail}): {short}")
            elif outcome == "error":
                self.error(path, f"CEL rule could not be evaluated ({detail}; the API server rejects this too): {short}")
            elif not isinstance(detail, (bool, cel.ct.BoolType)):
                self.note(path, f"CEL rule not checked (evaluates to {type(detail).__name__}, not bool): {short}")
            elif not detail:
                where = path
                if isinstance(spec.get("fieldPath"), str) and spec["fieldPath"]:
                    where = (path + spec["fieldPath"]).lstrip(".")
                self.error(where, f"{self.rule_message(spec, activation)} (CEL rule: {short})")

    def rule_message(self, spec: Mapping[str, Any], activation: dict[str, Any]) -> str:
        expression = spec.get("messageExpression")
        if isinstance(expression, str):
            cel = _Cel.get()
            program, _ = cel.program(expression)
            if program is not None:
                outcome, detail = cel.evaluate(program, activation)
                if outcome == "value" and isinstance(detail, str) and detail.strip():
                    return str(detail)
        message = spec.get("message")
        return message if isinstance(message, str) and message else "failed rule"
