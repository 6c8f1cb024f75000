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
compiled CEL programs are cached. The parts: ``crd_files`` (CRDs and their index), ``crd_metadata``
(ObjectMeta), ``crd_cel`` and ``cel_library`` (the rules), ``json_values``; this module walks the schema.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from aks_gpu_inference.planner.kube.crd_files import CRD, CRDIndex, parse_crd
from aks_gpu_inference.planner.kube.crd_metadata import OBJECT_META_FIELDS, meta_problems
from aks_gpu_inference.planner.kube.crd_rules import RuleChecks
from aks_gpu_inference.planner.kube.json_values import TYPE_CHECKS, child, is_int, is_number, json_equal, json_type, show
from aks_gpu_inference.planner.kube.schema_keywords import (
    compiled_pattern,
    duplicate_problems,
    number_problems,
    property_problems,
)


@dataclass
class ValidationResult:
    """What ``validate`` found: errors, what it could not check, and warnings."""

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


def _where(path: str) -> str:
    return path or "<root>"


def validate(obj: Mapping[str, Any], crd: CRD | Mapping[str, Any]) -> ValidationResult:
    """Check one custom resource against its CRD (a :class:`CRD` or the CRD's parsed YAML).

    The object is not changed: pruning and defaulting happen on a copy, as the API server's decoding does.
    """
    if not isinstance(crd, CRD):
        crd = parse_crd(crd)
    return _Run(crd).run(obj)


class _Run(RuleChecks):
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
            self.error("", f"a custom resource is an object, got {json_type(obj)}")
            return self.result
        obj = copy.deepcopy(dict(obj))
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if kind != crd.kind:
            self.error("kind", f"expected {crd.kind!r} (the CRD's kind), got {show(kind)}")
        group, _, version = api_version.partition("/") if isinstance(api_version, str) else ("", "", "")
        if group != crd.group or version not in crd.served_versions:
            self.error(
                "apiVersion",
                f"{show(api_version)} is not served by the {crd.kind} CRD (served: {', '.join(crd.api_versions) or 'none'})",
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
        """ObjectMeta of the object (``top``) or of an embedded resource; unknown fields are dropped."""
        meta = parent.get("metadata")
        if meta is None:
            if top:
                self.error(path, "required field is missing", blocking=True)
            parent.pop("metadata", None)
            return
        if not isinstance(meta, dict):
            self.error(path, f"must be of type object, got {json_type(meta)}", blocking=True)
            return
        for key in [k for k in meta if k not in OBJECT_META_FIELDS]:
            self.error(child(path, key), "unknown field (not in ObjectMeta; the API server drops it)")
            del meta[key]
        for where, message, blocking in meta_problems(meta, path, self.crd, top):
            self.error(where, message, blocking=blocking)
        # A CRD may constrain only metadata.name and metadata.generateName.
        props = (schema or {}).get("properties") or {}
        for key in ("name", "generateName"):
            if isinstance(meta.get(key), str) and isinstance(props.get(key), Mapping):
                self.check(meta[key], props[key], child(path, key), structural=False)

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
        if not self.check_type(value, s, path):
            return
        if "enum" in s and isinstance(s["enum"], list) and not any(json_equal(value, e) for e in s["enum"]):
            allowed = ", ".join(show(e, 40) for e in s["enum"][:20]) + (", ..." if len(s["enum"]) > 20 else "")
            self.error(path, f"unsupported value {show(value)}: must be one of {allowed}", blocking=True)
        self.check_value(value, s, path, structural, top)
        self.check_junctors(value, s, path)
        rules = s.get("x-kubernetes-validations")
        if structural and rules:
            if self.blocking > entry:
                self.note(path, f"{len(rules)} CEL rule(s) not checked: schema errors here block them (as in the API server)")
            else:
                self.check_rules(value, s, path, rules, top)

    def check_type(self, value: Any, s: Mapping[str, Any], path: str) -> bool:
        """Whether ``value`` has the schema's type (or is an int or a string for int-or-string); reports it if not."""
        if s.get("x-kubernetes-int-or-string"):
            if is_int(value) or isinstance(value, str):
                return True
            self.error(path, f"must be an integer or a string, got {json_type(value)} {show(value)}", blocking=True)
            return False
        t = s.get("type")
        check_type = TYPE_CHECKS.get(t) if isinstance(t, str) else None
        if check_type is None or check_type(value):
            return True
        self.error(path, f"must be of type {t}, got {json_type(value)} {show(value)}", blocking=True)
        return False

    def check_value(self, value: Any, s: Mapping[str, Any], path: str, structural: bool, top: bool) -> None:
        """The keywords of the value's own type."""
        if is_number(value):
            for message in number_problems(value, s):
                self.error(path, message)
        elif isinstance(value, str):
            self.check_string(value, s, path)
        elif isinstance(value, list):
            self.check_array(value, s, path, structural)
        elif isinstance(value, dict):
            self.check_object(value, s, path, structural, top)

    def check_string(self, value: str, s: Mapping[str, Any], path: str) -> None:
        low, high = s.get("minLength"), s.get("maxLength")
        if is_int(low) and len(value) < low:
            self.error(path, f"{show(value)} is shorter than {int(low)} characters")
        if is_int(high) and len(value) > high:
            self.error(path, f"{show(value)} is longer than {int(high)} characters ({len(value)})", blocking=True)
        pattern = s.get("pattern")
        if isinstance(pattern, str):
            compiled = compiled_pattern(pattern)
            if isinstance(compiled, str):
                self.note(path, f"pattern {pattern!r} not checked: {compiled}")
            elif not compiled.search(value):
                self.error(path, f"{show(value)} does not match the pattern {pattern!r}")

    def check_array(self, value: list, s: Mapping[str, Any], path: str, structural: bool) -> None:
        low, high = s.get("minItems"), s.get("maxItems")
        if is_int(low) and len(value) < low:
            self.error(path, f"has {len(value)} items, fewer than the minimum {int(low)}")
        if is_int(high) and len(value) > high:
            self.error(path, f"has {len(value)} items, more than the maximum {int(high)}", blocking=True)
        items = s.get("items")
        if isinstance(items, Mapping):
            for i, item in enumerate(value):
                self.check(item, items, f"{path}[{i}]", structural)
        for where, message in duplicate_problems(value, s, path):
            self.error(where, message)

    def check_object(self, value: dict, s: Mapping[str, Any], path: str, structural: bool, top: bool) -> None:
        props = s.get("properties") if isinstance(s.get("properties"), Mapping) else {}
        embedded = s.get("x-kubernetes-embedded-resource") is True
        implicit = ("apiVersion", "kind", "metadata") if (top or embedded) else ()
        for key in list(value):
            if key == "metadata" and implicit:
                continue  # ObjectMeta, checked by check_metadata
            sub, where = self.property_schema(value, key, s, path, structural, implicit)
            if sub is None:
                continue
            if not structural:
                self.check(value[key], sub, where, structural=False)
            elif not self.dropped_null(value, key, sub, where):
                self.check(value[key], sub, where)
        if structural:
            self.default_and_embed(value, props, path, embedded)
        for where, message, blocking in property_problems(value, s, path):
            self.error(where, message, blocking=blocking)

    def property_schema(
        self, value: dict, key: str, s: Mapping[str, Any], path: str, structural: bool, implicit: tuple[str, ...]
    ) -> tuple[Mapping[str, Any] | None, str]:
        """The schema of ``value[key]`` and its path; (None, path) when it is not checked: kept unchecked, or
        unknown (reported and, when structural, pruned)."""
        props = s.get("properties") if isinstance(s.get("properties"), Mapping) else {}
        extra = s.get("additionalProperties")
        where = child(path, key)
        if props.get(key) is not None:
            return props[key], where
        if key in implicit:
            return None, where
        if isinstance(extra, Mapping):
            return extra, f"{path}[{key}]"
        if extra is True or s.get("x-kubernetes-preserve-unknown-fields") is True or (extra is None and not structural):
            return None, where
        if structural:
            self.error(where, "unknown field (not in the CRD schema; the API server prunes it)")
            del value[key]
        else:
            self.error(where, "additional properties are not allowed")
        return None, where

    def dropped_null(self, value: dict, key: str, sub: Mapping[str, Any], where: str) -> bool:
        """A null of a field that is not nullable: its default replaces it, else it is reported and dropped."""
        if value[key] is not None or sub.get("nullable"):
            return False
        if "default" in sub:
            value[key] = copy.deepcopy(sub["default"])
            return False
        self.error(where, "null for a field that is not nullable (the API server drops it)")
        del value[key]
        return True

    def default_and_embed(self, value: dict, props: Mapping[str, Any], path: str, embedded: bool) -> None:
        """Defaults of absent fields (checked in turn); an embedded resource's apiVersion, kind and metadata."""
        for key, sub in props.items():
            if key not in value and isinstance(sub, Mapping) and "default" in sub:
                value[key] = copy.deepcopy(sub["default"])
                self.check(value[key], sub, child(path, key))
        if embedded:
            for key in ("apiVersion", "kind"):
                if key not in props and not (isinstance(value.get(key), str) and value.get(key)):
                    self.error(child(path, key), "required in an embedded resource", blocking=True)
            self.check_metadata(value, child(path, "metadata"), top=False, schema=None)

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


def validate_object(index: CRDIndex, obj: Mapping[str, Any]) -> ValidationResult | None:
    """:func:`validate` against the object's CRD in ``index``; None when the index has no CRD for it."""
    crd = index.for_object(obj)
    return None if crd is None else validate(obj, crd)
