"""planner.kube.crd_schema: custom resources checked against their CRDs, as the API server checks them.

The unit tests use small hand-made CRDs. The tests marked ``needs_upstream`` read the pinned upstream CRDs
in ``shared/upstream/crds`` (planner.inputs.upstream.upstream_dir) and skip when that folder is absent.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from aks_gpu_inference.planner.cli import main
from aks_gpu_inference.planner.engine.values import kubernetes_object
from aks_gpu_inference.planner.inputs import upstream
from aks_gpu_inference.planner.kube.crd_cel import CelEngine
from aks_gpu_inference.planner.kube.crd_files import CRDIndex, crd_index, load_crd, parse_crd
from aks_gpu_inference.planner.kube.crd_schema import ValidationResult, validate, validate_object
from tests.conftest import CUSTOM_RESOURCE_GROUPS, REPO, run_stack, stack_config

GROUP = "example.com"


def make_crd(
    spec_schema: dict[str, Any] | None = None,
    *,
    kind: str = "Widget",
    scope: str = "Namespaced",
    root: dict[str, Any] | None = None,
    versions: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A CRD document with one served version v1 whose schema has ``spec: spec_schema``."""
    schema = root or {
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": spec_schema or {"type": "object"},
        },
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{kind.lower()}s.{GROUP}"},
        "spec": {
            "group": GROUP,
            "names": {"kind": kind, "plural": f"{kind.lower()}s", "singular": kind.lower(), "listKind": f"{kind}List"},
            "scope": scope,
            "versions": versions or [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}],
        },
    }


def make_obj(spec: Any = None, *, kind: str = "Widget", version: str = "v1", **metadata: Any) -> dict[str, Any]:
    meta = {"name": "w", "namespace": "default"} | metadata
    obj = {"apiVersion": f"{GROUP}/{version}", "kind": kind, "metadata": {k: v for k, v in meta.items() if v is not None}}
    if spec is not None:
        obj["spec"] = spec
    return obj


def check(spec_schema: dict[str, Any], spec: Any) -> ValidationResult:
    return validate(make_obj(spec), parse_crd(make_crd(spec_schema)))


def errors(spec_schema: dict[str, Any], spec: Any) -> list[str]:
    return check(spec_schema, spec).errors


def obj_schema(required: list[str] | None = None, **properties: dict[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def one_error(result: list[str], *fragments: str) -> str:
    assert len(result) == 1, result
    assert all(f in result[0] for f in fragments), result[0]
    return result[0]


# ---- loading and indexing -----------------------------------------------------------------------

CRD_FILE = """\
# source: example/widgets@v1.0.0:config/crd/example.com_widgets.yaml
# note: a comment line, as the shared/upstream files have
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names:
    kind: Widget
    plural: widgets
  scope: Cluster
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
  - name: v1beta1
    served: true
    storage: false
    deprecated: true
    deprecationWarning: example.com/v1beta1 Widget is deprecated; use example.com/v1
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
  - name: v1alpha1
    served: false
    storage: false
"""


def test_a_crd_file_with_leading_comment_lines_loads(tmp_path):
    path = tmp_path / "example.com_widgets.yaml"
    path.write_text(CRD_FILE)
    crd = load_crd(path)
    assert (crd.group, crd.kind, crd.plural, crd.scope) == ("example.com", "Widget", "widgets", "Cluster")
    assert crd.served_versions == ("v1", "v1beta1") and not crd.namespaced
    assert crd.api_versions == ("example.com/v1", "example.com/v1beta1")
    assert crd.schema("v1alpha1") is None and crd.schema("v1")["properties"]["spec"]["properties"]["size"]
    assert load_crd(path) is crd, "parsed once per file version"


def test_an_index_finds_crds_by_group_and_kind(tmp_path):
    (tmp_path / "example.com_widgets.yaml").write_text(CRD_FILE)
    (tmp_path / "example.com_gadgets.yaml").write_text(yaml.safe_dump(make_crd(kind="Gadget")))
    (tmp_path / "README.md").write_text("not a CRD")
    index = crd_index(tmp_path)
    assert list(index) == [("example.com", "Gadget"), ("example.com", "Widget")] and len(index) == 2
    assert ("example.com", "Widget") in index and ("example.com", "Sprocket") not in index
    assert index.get("example.com", "Widget").scope == "Cluster"
    assert index.for_object({"apiVersion": "example.com/v1", "kind": "Gadget"}).kind == "Gadget"
    assert index.for_object({"apiVersion": "v1", "kind": "ConfigMap"}) is None
    assert validate_object(index, {"apiVersion": "apps/v1", "kind": "Deployment"}) is None
    assert crd_index(tmp_path) is index, "cached while the folder is unchanged"
    assert CRDIndex.from_dir(tmp_path) is index


def test_validate_takes_a_parsed_crd_or_its_yaml_and_leaves_the_object_alone():
    crd = make_crd(obj_schema(size={"type": "integer", "default": 3}, extra={"type": "string"}))
    obj = make_obj({"unknown": 1})
    before = copy.deepcopy(obj)
    assert (
        validate(obj, crd).errors
        == validate(obj, parse_crd(crd)).errors
        == ["spec.unknown: unknown field (not in the CRD schema; the API server prunes it)"]
    )
    assert obj == before, "pruning and defaulting work on a copy"


def test_parse_crd_refuses_other_documents():
    with pytest.raises(ValueError, match="not a CustomResourceDefinition"):
        parse_crd({"apiVersion": "v1", "kind": "ConfigMap"})


# ---- apiVersion, kind, metadata -----------------------------------------------------------------


def test_api_version_must_be_served(tmp_path):
    (tmp_path / "w.yaml").write_text(CRD_FILE)
    crd = load_crd(tmp_path / "w.yaml")
    assert validate({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}, crd).ok
    for api_version in ("example.com/v1alpha1", "example.com/v2", "other.io/v1", None):
        result = validate({"apiVersion": api_version, "kind": "Widget", "metadata": {"name": "w"}}, crd)
        one_error(result.errors, "apiVersion: ", "is not served", "served: example.com/v1, example.com/v1beta1")
    deprecated = validate({"apiVersion": "example.com/v1beta1", "kind": "Widget", "metadata": {"name": "w"}}, crd)
    assert deprecated.ok and deprecated.warnings == ["apiVersion: example.com/v1beta1 Widget is deprecated; use example.com/v1"]


def test_kind_must_be_the_crds():
    one_error(validate(make_obj(kind="Gadget"), make_crd()).errors, "kind: expected 'Widget'")


def test_metadata_name_and_namespace_follow_the_scope():
    namespaced, cluster = make_crd(), make_crd(scope="Cluster")
    assert validate(make_obj(), namespaced).ok
    assert validate(make_obj(name=None, generateName="w-"), namespaced).ok
    one_error(validate(make_obj(name=None), namespaced).errors, "metadata.name: required")
    one_error(validate(make_obj(namespace=None), namespaced).errors, "metadata.namespace: required: Widget is namespaced")
    one_error(validate(make_obj(name="Not_A_Name"), namespaced).errors, "metadata.name: ", "DNS-1123 subdomain")
    one_error(validate(make_obj(namespace="a.b"), namespaced).errors, "metadata.namespace: 'a.b' is not a DNS-1123 label")
    assert validate(make_obj(namespace=None), cluster).ok
    one_error(validate(make_obj(), cluster).errors, "metadata.namespace: Widget is cluster-scoped")
    missing = validate({"apiVersion": f"{GROUP}/v1", "kind": "Widget"}, namespaced)
    one_error(missing.errors, "metadata: required field is missing")


def test_metadata_labels_annotations_and_unknown_fields():
    good = make_obj(labels={"app.kubernetes.io/name": "x", "tier": ""}, annotations={"example.com/note": "any text"})
    assert validate(good, make_crd()).ok
    result = validate(
        make_obj(labels={"bad key!": "x", "ok": "not ok!", "n": 5}, annotations={"/x": "y"}, lables={"a": "b"}), make_crd()
    )
    assert result.errors == [
        "metadata.lables: unknown field (not in ObjectMeta; the API server drops it)",
        "metadata.labels[bad key!]: invalid key: name part must be 1-63 characters of [A-Za-z0-9-_.], starting and ending with a letter or digit",
        'metadata.labels[ok]: invalid label value "not ok!": at most 63 characters of [A-Za-z0-9-_.]',
        "metadata.labels[n]: must be of type string, got integer",
        "metadata.annotations[/x]: invalid key: prefix '' must be a lowercase DNS subdomain",
    ]


def test_a_crd_can_constrain_metadata_name():
    root = {
        "type": "object",
        "properties": {"metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 5}}}},
    }
    assert validate(make_obj(name="short"), make_crd(root=root)).ok
    one_error(validate(make_obj(name="longer"), make_crd(root=root)).errors, "metadata.name: ", "longer than 5 characters")


# ---- types ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "type_, good, bad",
    [
        ("string", ["", "x"], [1, True, None, [], {}]),
        ("integer", [0, -3, 5.0], [1.5, "1", True, None, float("inf")]),
        ("number", [0, 1.5, -2], ["1", False, None]),
        ("boolean", [True, False], [0, "true", None]),
        ("array", [[], [1, "x"]], [{}, "x", None]),
        ("object", [{}], [[], "x", None]),
    ],
)
def test_types(type_, good, bad):
    schema = obj_schema(v={"type": type_, "x-kubernetes-preserve-unknown-fields": True} if type_ == "object" else {"type": type_})
    for value in good:
        assert errors(schema, {"v": value}) == [], value
    for value in bad:
        result = errors(schema, {"v": value})
        if value is None:
            one_error(result, "spec.v: null for a field that is not nullable (the API server drops it)")
        else:
            one_error(result, f"spec.v: must be of type {type_}, got ")


def test_nested_paths_name_list_indexes_and_map_keys():
    ref = obj_schema(["name"], name={"type": "string", "minLength": 1}, port={"type": "integer"})
    rule = obj_schema(backendRefs={"type": "array", "items": ref})
    schema = obj_schema(
        rules={"type": "array", "items": rule},
        labels={"type": "object", "additionalProperties": {"type": "string"}},
    )
    spec = {"rules": [{"backendRefs": [{"name": "a"}, {"name": ""}]}], "labels": {"app": "x", "tier": 3}}
    assert errors(schema, spec) == [
        'spec.rules[0].backendRefs[1].name: "" is shorter than 1 characters',
        "spec.labels[tier]: must be of type string, got integer 3",
    ]


def test_required():
    schema = obj_schema(["name"], name={"type": "string"})
    assert errors(schema, {"name": "x"}) == []
    one_error(errors(schema, {}), "spec.name: required field is missing")


def test_enum_compares_json_values():
    schema = obj_schema(mode={"type": "string", "enum": ["A", "B"]}, n={"type": "integer", "enum": [1, 2]})
    assert errors(schema, {"mode": "A", "n": 2.0}) == []
    one_error(errors(schema, {"mode": "C"}), 'spec.mode: unsupported value "C": must be one of "A", "B"')
    flag = obj_schema(flag={"enum": [1]})
    one_error(errors(flag, {"flag": True}), "spec.flag: unsupported value true", "must be one of 1")


def test_unknown_fields_are_reported_unless_kept():
    schema = obj_schema(
        known={"type": "string"},
        free={"type": "object", "x-kubernetes-preserve-unknown-fields": True, "properties": {"a": {"type": "integer"}}},
        anything={"x-kubernetes-preserve-unknown-fields": True},
        open={"type": "object", "additionalProperties": True},
    )
    spec = {"known": "x", "free": {"a": 1, "b": 2}, "anything": {"x": [1]}, "open": {"k": {"z": 1}}}
    assert errors(schema, spec) == []
    one_error(
        errors(schema, spec | {"knwon": "x"}), "spec.knwon: unknown field (not in the CRD schema; the API server prunes it)"
    )
    one_error(errors(schema, spec | {"free": {"a": "1"}}), 'spec.free.a: must be of type integer, got string "1"')
    top = validate(make_obj({}) | {"status": {}}, make_crd())
    one_error(top.errors, "status: unknown field")


def test_additional_properties_schemas_check_every_value():
    schema = obj_schema(limits={"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}})
    assert errors(schema, {"limits": {"a": 1, "b": 0}}) == []
    one_error(errors(schema, {"limits": {"a": -1}}), "spec.limits[a]: -1 must be greater than or equal to 0")


def test_int_or_string():
    schema = obj_schema(port={"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]})
    for value in (8080, "http", 80.0):
        assert errors(schema, {"port": value}) == [], value
    for value in (1.5, True, [80], {}):
        one_error(errors(schema, {"port": value}), "spec.port: must be an integer or a string")


def test_nullable_and_defaults():
    schema = obj_schema(
        ["mode"],
        maybe={"type": "string", "nullable": True},
        mode={"type": "string", "default": "A"},
        nested={"type": "object", "default": {}, "properties": {"x": {"type": "integer", "default": 1}}},
    )
    assert errors(schema, {"maybe": None}) == []
    assert errors(schema, {"mode": None}) == [], "a null with a default is defaulted"
    result = errors(obj_schema(["v"], v={"type": "string"}), {"v": None})
    assert result == [
        "spec.v: null for a field that is not nullable (the API server drops it)",
        "spec.v: required field is missing",
    ]
    items = obj_schema(xs={"type": "array", "items": {"type": "string"}})
    one_error(errors(items, {"xs": ["a", None]}), "spec.xs[1]: must be of type string, got null")


def test_numbers_bounds():
    schema = obj_schema(
        a={"type": "integer", "minimum": 1, "maximum": 3},
        b={"type": "number", "minimum": 0, "exclusiveMinimum": True, "maximum": 1, "exclusiveMaximum": True},
        c={"type": "integer", "multipleOf": 5},
    )
    assert errors(schema, {"a": 1, "b": 0.5, "c": 10}) == []
    assert errors(schema, {"a": 3}) == []
    one_error(errors(schema, {"a": 0}), "spec.a: 0 must be greater than or equal to 1")
    one_error(errors(schema, {"a": 4}), "spec.a: 4 must be less than or equal to 3")
    one_error(errors(schema, {"b": 0}), "spec.b: 0 must be greater than 0")
    one_error(errors(schema, {"b": 1}), "spec.b: 1 must be less than 1")
    one_error(errors(schema, {"c": 7}), "spec.c: 7 must be a multiple of 5")


def test_string_lengths_pattern_and_format():
    schema = obj_schema(
        s={"type": "string", "minLength": 2, "maxLength": 3},
        p={"type": "string", "pattern": "^[a-z]+$"},
        f={"type": "string", "format": "date-time"},
    )
    assert errors(schema, {"s": "ab", "p": "abc", "f": "not a date: format is not checked"}) == []
    one_error(errors(schema, {"s": "a"}), 'spec.s: "a" is shorter than 2 characters')
    one_error(errors(schema, {"s": "abcd"}), 'spec.s: "abcd" is longer than 3 characters')
    one_error(errors(schema, {"p": "ABC"}), "spec.p: \"ABC\" does not match the pattern '^[a-z]+$'")


def test_a_pattern_python_cannot_compile_is_noted_not_an_error():
    for pattern in (r"^\p{L}+$", "^[[:alpha:]]+$", "(unclosed"):
        result = check(obj_schema(p={"type": "string", "pattern": pattern}), {"p": "x"})
        assert result.errors == []
        one_error(result.unchecked, f"spec.p: pattern {pattern!r} not checked")


def test_array_bounds_and_list_types():
    schema = obj_schema(
        xs={"type": "array", "minItems": 1, "maxItems": 2, "items": {"type": "string"}},
        tags={"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        ports={
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name", "protocol"],
            "items": obj_schema(
                ["name"], name={"type": "string"}, protocol={"type": "string", "default": "TCP"}, port={"type": "integer"}
            ),
        },
    )
    ports = [{"name": "a", "port": 1}, {"name": "a", "protocol": "UDP", "port": 1}]
    assert errors(schema, {"xs": ["a"], "tags": ["a", "b"], "ports": ports}) == []
    one_error(errors(schema, {"xs": []}), "spec.xs: has 0 items, fewer than the minimum 1")
    one_error(errors(schema, {"xs": ["a", "b", "c"]}), "spec.xs: has 3 items, more than the maximum 2")
    one_error(errors(schema, {"tags": ["a", "a"]}), 'spec.tags[1]: duplicate value "a" (also at [0]; the list is a set)')
    duplicate = [{"name": "a"}, {"name": "a", "protocol": "TCP"}]
    one_error(errors(schema, {"ports": duplicate}), 'spec.ports[1]: duplicate entry for key name="a", protocol="TCP"')


def test_object_property_counts():
    schema = obj_schema(m={"type": "object", "minProperties": 1, "maxProperties": 2, "additionalProperties": {"type": "string"}})
    assert errors(schema, {"m": {"a": "x"}}) == []
    one_error(errors(schema, {"m": {}}), "spec.m: has 0 properties, fewer than the minimum 1")
    one_error(errors(schema, {"m": {"a": "", "b": "", "c": ""}}), "spec.m: has 3 properties, more than the maximum 2")


def test_all_of_any_of_one_of_not():
    schema = obj_schema(
        a={"type": "string", "allOf": [{"minLength": 2}, {"pattern": "^x"}]},
        b={
            "type": "object",
            "properties": {"p": {"type": "string"}, "q": {"type": "string"}},
            "anyOf": [{"required": ["p"]}, {"required": ["q"]}],
        },
        c={
            "type": "object",
            "properties": {"p": {"type": "string"}, "q": {"type": "string"}},
            "oneOf": [{"required": ["p"]}, {"required": ["q"]}],
        },
        d={"type": "string", "not": {"enum": ["forbidden"]}},
    )
    assert errors(schema, {"a": "xy", "b": {"q": "1"}, "c": {"p": "1"}, "d": "fine"}) == []
    assert errors(schema, {"a": "y"}) == [
        'spec.a: "y" is shorter than 2 characters',
        "spec.a: \"y\" does not match the pattern '^x'",
    ]
    one_error(errors(schema, {"b": {}}), "spec.b: matches none of the anyOf schemas: spec.b.p: required field is missing |")
    one_error(errors(schema, {"c": {}}), "spec.c: matches none of the oneOf schemas")
    one_error(errors(schema, {"c": {"p": "1", "q": "2"}}), "spec.c: matches 2 of the oneOf schemas, must match exactly one")
    one_error(errors(schema, {"d": "forbidden"}), "spec.d: must not match the schema under 'not'")


def test_embedded_resources_need_api_version_and_kind():
    schema = obj_schema(
        template={"type": "object", "x-kubernetes-embedded-resource": True, "x-kubernetes-preserve-unknown-fields": True}
    )
    good = {"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"a": "b"}}, "spec": {"any": "thing"}}
    assert errors(schema, {"template": good}) == []
    assert errors(schema, {"template": {"spec": {}, "metadata": {"nmae": "x"}}}) == [
        "spec.template.apiVersion: required in an embedded resource",
        "spec.template.kind: required in an embedded resource",
        "spec.template.metadata.nmae: unknown field (not in ObjectMeta; the API server drops it)",
    ]


# ---- CEL ------------------------------------------------------------------------------------------


def cel(rule: str, **extra: Any) -> dict[str, Any]:
    return {"rule": rule, **extra}


def test_cel_rules_pass_and_fail_with_their_message_and_field_path():
    schema = obj_schema(
        low={"type": "integer"},
        high={"type": "integer"},
        name={"type": "string"},
    ) | {
        "x-kubernetes-validations": [
            cel("self.low <= self.high", message="low must not exceed high", fieldPath=".low"),
            cel("self.name.startsWith('a')", messageExpression="'name ' + self.name + ' must start with a'"),
            cel("size(self.name) < 10"),
        ]
    }
    assert errors(schema, {"low": 1, "high": 2, "name": "abc"}) == []
    assert errors(schema, {"low": 3, "high": 2, "name": "bcdefghijkl"}) == [
        "spec.low: low must not exceed high (CEL rule: self.low <= self.high)",
        "spec: name bcdefghijkl must start with a (CEL rule: self.name.startsWith('a'))",
        "spec: failed rule (CEL rule: size(self.name) < 10)",
    ]


def test_cel_sees_defaults_lists_maps_and_typed_numbers():
    schema = obj_schema(
        mode={"type": "string", "default": "Fixed"},
        ratio={"type": "number"},
        items={"type": "array", "items": {"type": "string"}, "x-kubernetes-validations": [cel("self.all(x, x != '')")]},
        labels={"type": "object", "additionalProperties": {"type": "string"}},
        port={"x-kubernetes-int-or-string": True},
    ) | {
        "x-kubernetes-validations": [
            cel("self.mode == 'Fixed'"),
            cel("!has(self.ratio) || self.ratio > 0.5"),
            cel("!has(self.labels) || 'app' in self.labels"),
            cel("!has(self.port) || (type(self.port) == int ? self.port > 0 : self.port.endsWith('%'))"),
        ]
    }
    assert errors(schema, {"ratio": 1, "items": ["a"], "labels": {"app": "x"}, "port": 80}) == []
    assert errors(schema, {"port": "50%"}) == []
    assert errors(schema, {"ratio": 0, "items": [""], "labels": {}, "port": "50"}) == [
        "spec.items: failed rule (CEL rule: self.all(x, x != ''))",
        "spec: failed rule (CEL rule: !has(self.ratio) || self.ratio > 0.5)",
        "spec: failed rule (CEL rule: !has(self.labels) || 'app' in self.labels)",
        "spec: failed rule (CEL rule: !has(self.port) || (type(self.port) == int ? self.port > 0 : self.port.endsWith('%')))",
    ]


def test_cel_escapes_property_names_as_kubernetes_does():
    schema = obj_schema(**{"namespace": {"type": "string"}, "x-y": {"type": "string"}}) | {
        "x-kubernetes-validations": [cel("self.__namespace__ == 'ns' && self.x__dash__y == 'z'")]
    }
    assert errors(schema, {"namespace": "ns", "x-y": "z"}) == []
    assert len(errors(schema, {"namespace": "other", "x-y": "z"})) == 1


def test_cel_at_the_root_sees_metadata_name():
    root = {
        "type": "object",
        "properties": {"metadata": {"type": "object"}, "spec": {"type": "object"}},
        "x-kubernetes-validations": [cel("self.metadata.name.size() <= 3", message="short names only")],
    }
    assert validate(make_obj(name="abc"), make_crd(root=root)).ok
    one_error(validate(make_obj(name="abcd"), make_crd(root=root)).errors, "<root>: short names only")


def test_kubernetes_string_functions_cel_python_lacks_are_provided():
    schema = obj_schema(s={"type": "string"}, ip={"type": "string"}) | {
        "x-kubernetes-validations": [
            cel("self.s.lowerAscii() == 'abc'"),
            cel("self.s.split('B').size() == 2 && self.s.substring(1, 2) == 'B' && self.s.indexOf('C') == 2"),
            cel("isIP(self.ip)"),
        ]
    }
    assert check(schema, {"s": "ABC", "ip": "10.0.0.1"}) == ValidationResult()
    assert len(errors(schema, {"s": "ABD", "ip": "10.0.0"})) == 3


def test_cel_reading_an_absent_field_is_an_error_as_in_the_api_server():
    schema = obj_schema(a={"type": "string"}, b={"type": "string"}) | {
        "x-kubernetes-validations": [cel("self.a == 'x' || self.b == 'y'")]
    }
    assert errors(schema, {"a": "x"}) == []
    one_error(errors(schema, {}), "spec: CEL rule could not be evaluated (no such key: a, b;")


def test_cel_rules_cel_python_cannot_run_are_unchecked_not_errors():
    schema = obj_schema(a={"type": "string"}, n={"type": "number"}) | {
        "x-kubernetes-validations": [
            cel("self.a.?b.hasValue()"),  # optional syntax: cel-python cannot parse it
            cel("self.a.reverse() == 'a'"),  # not a function cel-python (or this module) provides
            cel("oldSelf == self"),  # a transition rule: not evaluated on create
            cel("self.a == oldSelf.a", optionalOldSelf=True),
        ]
    }
    result = check(schema, {"a": "a"})
    assert result.errors == []
    assert [u.split(" (")[0] for u in result.unchecked] == [
        "spec: CEL rule not checked",
        "spec: CEL rule not checked",
        "spec: CEL transition rule with optionalOldSelf not checked: self.a == oldSelf.a",
    ]
    assert "does not compile in cel-python" in result.unchecked[0]
    assert "uses 'reverse', which cel-python does not provide" in result.unchecked[1]
    assert result.unchecked_rules == result.unchecked


def test_schema_errors_below_a_rule_block_it_as_in_the_api_server():
    schema = obj_schema(n={"type": "integer"}) | {"x-kubernetes-validations": [cel("self.n > 0")]}
    result = check(schema, {"n": "1"})
    one_error(result.errors, 'spec.n: must be of type integer, got string "1"')
    one_error(result.unchecked, "spec: 1 CEL rule(s) not checked: schema errors here block them")


def test_compiled_cel_programs_are_cached():
    engine = CelEngine.get()
    assert engine.program("self.x > 1")[0] is engine.program("self.x > 1")[0]
    assert CelEngine.get() is engine


# ---- planner.upstream -----------------------------------------------------------------------------


def test_upstream_dir_can_be_overridden(monkeypatch, tmp_path):
    monkeypatch.setenv(upstream.ENV_VAR, str(tmp_path))
    assert upstream.upstream_dir() == tmp_path.resolve()
    assert upstream.crds_dir() is None
    (tmp_path / "crds").mkdir()
    assert upstream.crds_dir() == tmp_path.resolve() / "crds"
    monkeypatch.setenv(upstream.ENV_VAR, str(tmp_path / "absent"))
    assert upstream.upstream_dir() is None
    assert "is not a folder" in upstream.missing_reason()
    monkeypatch.delenv(upstream.ENV_VAR)
    assert upstream.DEFAULT.resolve() == (REPO / ".." / "shared" / "upstream").resolve()


# ---- the pinned upstream CRDs and the repo's stacks -----------------------------------------------

CRDS = upstream.crds_dir()
needs_upstream = pytest.mark.skipif(CRDS is None, reason=f"shared/upstream/crds not found: {upstream.missing_reason()}")


@pytest.fixture(scope="module")
def index() -> CRDIndex:
    assert CRDS is not None
    return crd_index(CRDS)


@needs_upstream
def test_the_upstream_crds_are_indexed_by_group_and_kind(index):
    files = sorted(CRDS.glob("*.yaml"))
    assert len(index) == len(files) >= 40
    for group, kind in index:
        assert index.path(group, kind).name.startswith(f"{group}_"), (group, kind)
    for group, kind in [("gateway.networking.k8s.io", "Gateway"), ("keda.sh", "ScaledObject"), ("kaito.sh", "Workspace")]:
        assert (group, kind) in index
    assert index.get("gateway.networking.k8s.io", "HTTPRoute").served_versions == ("v1", "v1beta1")
    assert not index.get("gateway.networking.k8s.io", "GatewayClass").namespaced


STACKS_PLANNED = ("dev", "prod")


@pytest.fixture(scope="module")
def planned(tmp_path_factory) -> dict[str, Path]:
    """out/<stack>/ of each stack, planned through the command line (exit 1, for policy verdicts, is fine)."""
    results = {}
    for stack in STACKS_PLANNED:
        out = tmp_path_factory.mktemp(f"plan-{stack}")
        assert main(["plan", stack, "--project-dir", str(REPO), "--out", str(out), "-q"]) in (0, 1)
        results[stack] = out
    return results


@pytest.fixture(scope="module")
def rendered(planned) -> dict[str, dict[str, dict]]:
    """Every manifest of out/<stack>/kubernetes/, by stack and file name."""
    return {
        stack: {p.name: yaml.safe_load(p.read_text()) for p in sorted((out / "kubernetes").glob("*.yaml"))}
        for stack, out in planned.items()
    }


def custom_resources(index: CRDIndex, manifests: dict[str, dict]) -> dict[str, dict]:
    return {name: obj for name, obj in manifests.items() if index.for_object(obj) is not None}


def crd_failures(index: CRDIndex, manifests: dict[str, dict]) -> list[str]:
    return [f"{name}: {e}" for name, obj in manifests.items() if (r := validate_object(index, obj)) is not None for e in r.errors]


@needs_upstream
def test_every_rendered_custom_resource_has_its_crd_upstream(index, rendered):
    for stack, manifests in rendered.items():
        groups = {obj["apiVersion"].split("/")[0] for obj in manifests.values()}
        custom = {name for name, obj in manifests.items() if obj["apiVersion"].split("/")[0] in CUSTOM_RESOURCE_GROUPS}
        assert custom, f"{stack} renders no custom resources"
        assert set(custom_resources(index, manifests)) == custom, f"{stack}: a custom resource without a CRD upstream"
        assert groups - CUSTOM_RESOURCE_GROUPS, "built-in kinds are rendered too, and have no CRD here"


@needs_upstream
@pytest.mark.parametrize("stack", STACKS_PLANNED)
def test_every_rendered_custom_resource_matches_its_crd(index, rendered, stack):
    failures = crd_failures(index, rendered[stack])
    assert failures == [], "custom resources the API server would reject or prune:\n" + "\n".join(failures)


@needs_upstream
def test_the_scale_to_zero_render_matches_its_crds(index):
    """The only render with a cron trigger (tests/components/test_custom_resources.py's scale_to_zero_objects)."""
    config = stack_config("dev")
    config["aks-gpu-inference:models"][0]["autoscaling"] = {
        "min_replicas": 0,
        "max_replicas": 2,
        "scale_to_zero": True,
        "active_hours": {"start": "0 8 * * 1-5", "end": "0 20 * * 1-5", "timezone": "Europe/Amsterdam"},
    }
    run = run_stack(config, "dev")
    objects = [kubernetes_object(r) for r in run.resources if r.is_kubernetes and not r.type.startswith("kubernetes:helm.sh/")]
    manifests = {f"{o['kind']}/{o['metadata'].get('namespace')}/{o['metadata']['name']}": o for o in objects}
    (scaler,) = [o for o in objects if o["kind"] == "ScaledObject"]
    assert [t["type"] for t in scaler["spec"]["triggers"]] == ["prometheus", "cron"]
    assert crd_failures(index, manifests) == []


# What the CRDs catch of the misspellings and wrong values tests/components/test_custom_resources.py refuses
# with its hand-written models: each is a real field of a rendered object, renamed or replaced.
MISSPELLED = [
    ("ScaledObject", ("spec",), "specs"),
    ("ScaledObject", ("spec", "minReplicaCount"), "minReplicasCount"),
    ("ScaledObject", ("spec", "cooldownPeriod"), "coolDownPeriod"),
    ("ScaledObject", ("spec", "scaleTargetRef", "name"), "deploymentName"),
    ("ScaledObject", ("spec", "triggers", 0, "authenticationRef"), "authRef"),
    ("TriggerAuthentication", ("spec", "podIdentity"), "podIdentities"),
    ("TriggerAuthentication", ("spec", "podIdentity", "identityId"), "identityID"),
    ("PodMonitor", ("spec", "podMetricsEndpoints"), "podMetricsEndpoint"),
    ("PodMonitor", ("spec", "selector", "matchLabels"), "matchLabel"),
    ("PodMonitor", ("spec", "podMetricsEndpoints", 0, "path"), "metricsPath"),
    ("Workspace", ("resource",), "resources"),
    ("Workspace", ("resource", "instanceType"), "instancetype"),
    ("Workspace", ("resource", "labelSelector", "matchLabels"), "matchlabels"),
    ("Workspace", ("inference", "preset", "name"), "presetName"),
    ("Gateway", ("spec", "infrastructure", "parametersRef"), "parameterRef"),
    ("GatewayClass", ("spec", "controllerName"), "controller"),
    ("BackendTLSPolicy", ("spec", "validation", "wellKnownCACertificates"), "wellKnownCACerts"),
    ("EnvoyProxy", ("spec", "provider", "kubernetes", "envoyService"), "envoyServices"),
    ("ClientTrafficPolicy", ("spec", "connection", "bufferLimit"), "bufferLimits"),
    ("SecurityPolicy", ("spec", "apiKeyAuth", "forwardClientIDHeader"), "forwardClientIdHeader"),
    ("BackendTrafficPolicy", ("spec", "rateLimit", "global", "rules", 0, "clientSelectors"), "clientSelector"),
    ("Backend", ("spec", "endpoints", 0, "fqdn", "hostname"), "host"),
    ("EnvoyExtensionPolicy", ("spec", "extProc", 0, "processingMode"), "processing"),
    ("AIGatewayRoute", ("spec", "llmRequestCosts"), "llmRequestCost"),
    ("AIServiceBackend", ("spec", "schema"), "apiSchema"),
    ("BackendSecurityPolicy", ("spec", "apiKey", "secretRef"), "secretName"),
]

WRONG_VALUES = [
    ("ScaledObject", ("spec", "triggers", 0, "metadata", "threshold"), 5, "must be of type string"),
    ("ScaledObject", ("spec", "minReplicaCount"), "1", "must be of type integer"),
    ("TriggerAuthentication", ("spec", "podIdentity", "provider"), "azure", 'unsupported value "azure"'),
    ("PodMonitor", ("spec", "podMetricsEndpoints", 0, "port"), 8000, "must be of type string"),
    ("PodMonitor", ("spec", "podMetricsEndpoints", 0, "interval"), "30 seconds", "does not match the pattern"),
    ("PodMonitor", ("spec", "labelLimit"), "63", "must be of type integer"),
    ("PodMonitor", ("spec", "podTargetLabels"), "app.kubernetes.io/instance", "must be of type array"),
    ("Gateway", ("spec", "listeners", 0, "port"), "80", "must be of type integer"),
    ("AIServiceBackend", ("spec", "backendRef", "kind"), "Service", "must be a Backend resource of Envoy Gateway"),
    ("AIServiceBackend", ("spec", "schema", "name"), "Azure", 'unsupported value "Azure"'),
    ("BackendSecurityPolicy", ("spec", "type"), "AzureAPIKey", "only azureAPIKey field should be set"),
    ("BackendTrafficPolicy", ("spec", "rateLimit", "global", "rules", 0, "limit", "unit"), "Hours", 'unsupported value "Hours"'),
    ("BackendTLSPolicy", ("spec", "validation", "wellKnownCACertificates"), None, "must specify either CACertificateRefs"),
    ("EnvoyExtensionPolicy", ("spec", "extProc", 0, "processingMode", "request", "body"), "Buffer", 'unsupported value "Buffer"'),
]


def rendered_sample(rendered: dict[str, dict[str, dict]], kind: str) -> dict:
    found = [obj for manifests in rendered.values() for obj in manifests.values() if obj["kind"] == kind]
    assert found, f"no {kind} rendered"
    return copy.deepcopy(found[0])


def parent_of(obj: dict, path: tuple) -> Any:
    for part in path[:-1]:
        obj = obj[part]
    return obj


def json_path(path: tuple) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")


@needs_upstream
@pytest.mark.parametrize("kind, path, misspelling", MISSPELLED)
def test_a_misspelled_field_is_an_unknown_field(index, rendered, kind, path, misspelling):
    obj = rendered_sample(rendered, kind)
    parent = parent_of(obj, path)
    parent[misspelling] = parent.pop(path[-1])
    result = validate_object(index, obj)
    expected = f"{json_path((*path[:-1], misspelling))}: unknown field (not in the CRD schema; the API server prunes it)"
    assert expected in result.errors


@needs_upstream
@pytest.mark.parametrize("kind, path, value, expected", WRONG_VALUES)
def test_a_wrong_value_is_refused_by_the_crd(index, rendered, kind, path, value, expected):
    obj = rendered_sample(rendered, kind)
    parent_of(obj, path)[path[-1]] = value
    result = validate_object(index, obj)
    assert any(expected in e for e in result.errors), result.errors
