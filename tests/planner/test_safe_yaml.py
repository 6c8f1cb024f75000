"""planner.inputs.safe_yaml and planner.inputs.safe_json: what they refuse, how they say it, and what still loads."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from aks_gpu_inference.components.core.errors import ConfigError
from aks_gpu_inference.planner.inputs import safe_json, safe_yaml
from aks_gpu_inference.planner.inputs.stackfile import read_stack
from tests.fuzzing import BIG, MANIFESTS, laughs


def refusal(text, **options) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        safe_yaml.load_all(text, source="t.yaml", **options)
    return caught.value


def test_documents_come_with_their_first_line():
    assert safe_yaml.load_all("a: 1\n---\n# c\nb: [x]\n", source="t.yaml") == [({"a": 1}, 1), ({"b": ["x"]}, 4)]
    assert safe_yaml.load("", source="t.yaml") is None
    with pytest.raises(ConfigError, match="a second document starts here"):
        safe_yaml.load("a: 1\n---\nb: 2\n")


def test_nodes_on_request_give_lines_inside_a_document():
    (doc,) = safe_yaml.load_documents("kind: List\nitems:\n  - a: 1\n  - b: 2\n", source="t.yaml", keep_nodes=True)
    items = next(v for k, v in doc.node.value if k.value == "items")
    assert [n.start_mark.line + 1 for n in items.value] == [3, 4]
    assert safe_yaml.load_documents("a: 1", source="t.yaml")[0].node is None


def test_billion_laughs_is_refused_without_expanding():
    """The node count is computed from the aliases, not by building 102 million nodes."""
    err = refusal(laughs())
    assert err.context == "t.yaml expands aliases too far" and "from 20 to 102,908,576 nodes" in err.problems[0]


def test_aliases_within_the_budget_load_and_the_budget_spans_documents():
    assert safe_yaml.load("base: &b {x: 1}\nc:\n  <<: *b\n  x: 2\nd: *b\n", source="t.yaml") == {
        "base": {"x": 1},
        "c": {"x": 2},
        "d": {"x": 1},
    }
    document = "a: &a [1, 2, 3, 4, 5, 6, 7, 8, 9]\nb: [*a, *a]\n"  # adds 20 nodes
    safe_yaml.load_all("---\n".join([document] * 5), source="t.yaml", max_aliases=100)
    assert "expands aliases too far" in str(refusal("---\n".join([document] * 6), max_aliases=100))


@pytest.mark.parametrize("text", ["a: &a [1, *a]", "a: &a {b: *a}", "- &a [[[*a]]]"])
def test_self_referencing_aliases_are_refused(text):
    err = refusal(text)
    assert err.context == "t.yaml has a recursive alias" and err.problems[0].startswith("t.yaml:1:")


def test_nesting_is_bounded():
    assert "nests too deeply" in str(refusal("a: " + "[" * 101 + "]" * 101))
    safe_yaml.load("a: " + "[" * 99 + "]" * 99, source="t.yaml")
    assert "nests too deeply" in str(refusal("a: " + "[" * 20 + "]" * 20, max_depth=10))
    assert "exceeded maximum nesting depth" in str(refusal("[" * 5000 + "]" * 5000))  # libyaml's own limit
    # depth through aliases counts: each alias nests the anchor's whole subtree again
    assert "nests too deeply" in str(refusal("a: &a [[[[1]]]]\nb: [[[[*a]]]]\n", max_depth=8))


def test_integers_are_bounded_with_their_key_path():
    err = refusal(f"spec:\n  replicas: {BIG}\n")
    assert err.context == "t.yaml has an integer that is too large"
    assert err.problems == [
        "t.yaml:2: spec.replicas: 1000000000000000000000000000000000000... has 401 digits; at most 30 are accepted"
    ]
    assert "40 digits" in str(refusal("a: 0x" + "f" * 40))
    assert safe_yaml.load("a: " + "9" * 30, source="t.yaml") == {"a": int("9" * 30)}


def test_non_finite_floats_only_when_asked():
    assert math.isnan(safe_yaml.load("a: .nan", source="t.yaml")["a"])
    err = refusal("a:\n  - 1.5\n  - .inf\n  - 1.0e+400\n", finite_floats=True)
    assert err.context == "t.yaml has a number that is not finite"
    assert [p.split(":")[1] for p in err.problems] == ["3", "4"] and "a[1]: .inf is inf" in err.problems[0]


def test_duplicate_keys_are_reported_with_lines():
    err = refusal("a: 1\nb:\n  x: 1\n  x: 2\n")
    assert err.problems == ["t.yaml:4: b: duplicate key 'x' at line 4 (first at line 3)"]
    assert "duplicate key '0x1'" in str(refusal("{1: a, 0x1: b}"))  # the same int: one dict key
    assert safe_yaml.load("a: 1\na: 2\n", source="t.yaml", allow_duplicate_keys=True) == {"a": 2}


def test_string_keys_only_when_asked():
    assert safe_yaml.load("1: a", source="t.yaml") == {1: "a"}
    err = refusal("config:\n  tags:\n    1: a\n    ? [x]\n    : b\n    false: c\n", string_keys=True)
    assert err.context == "t.yaml has a key that is not a string"
    assert err.problems == [
        "t.yaml:3: config.tags: key 1 at line 3 is an integer; keys must be strings (quote it: '1')",
        "t.yaml:4: config.tags: the key at line 4 is a list; keys must be strings",
        "t.yaml:6: config.tags: key false at line 6 is a boolean; keys must be strings (quote it: 'false')",
    ]


def test_values_their_tag_cannot_convert_are_refused_not_crashed():
    for text in ["a: 2024-13-45", "a: !!timestamp nope", "a: !!int abc", "a: !!float x", "a: !!bool maybe"]:
        assert refusal(text).context == "t.yaml has a value its tag cannot convert", text
    assert "not valid YAML" in str(refusal("a: !!python/object/apply:os.system [ls]"))


def test_plain_keeps_dates_as_text_and_refuses_what_json_cannot_hold():
    assert safe_yaml.load("a: 2024-01-01", source="t.yaml", plain=True) == {"a": "2024-01-01"}
    assert "tag !!binary is not accepted here" in str(refusal("a: !!binary aGk=", plain=True))
    assert "tag !!set is not accepted here" in str(refusal("a: !!set {x}", plain=True))


def test_size_and_encoding(tmp_path: Path):
    assert "is too large" in str(refusal("a: 1\n" * 100, max_bytes=100))
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"a: 1\nb: caf\xe9\n")
    with pytest.raises(ConfigError) as caught:
        safe_yaml.load_all(path)
    assert caught.value.problems == [f"{path}:2: byte 0xe9 at offset 11 is not valid UTF-8; save the file as UTF-8"]
    path.write_bytes(b"\xef\xbb\xbfa: 1\n")  # a BOM is fine
    assert safe_yaml.load(path) == {"a": 1}


def test_syntax_errors_name_file_line_and_column():
    err = refusal("a: [\n")
    assert err.context == "t.yaml is not valid YAML" and err.problems[0].startswith("t.yaml:2:1: ")


def test_refusals_carry_the_line_of_the_first_problem():
    assert isinstance(refusal("a: [\n"), safe_yaml.InputError)
    assert [refusal(t).line for t in ["a: [\n", "a: 1\nb:\n  c: &x [*x]\n", "x: 1\ny: 2\nx: 3\n", "a: " + BIG]] == [2, 3, 3, 1]
    with pytest.raises(safe_yaml.InputError) as caught:
        safe_json.load_json('{"a": 1,\n "b": NaN}', source="f.json")
    assert caught.value.line == 2


def test_a_manifest_of_a_megabyte_loads_whole():
    text = "\n---\n".join(MANIFESTS.values()).replace("containers: [\n", "containers: []\n").replace("\n spec:", "\nspec:")
    text = "\n---\n".join([text] * (1_000_000 // len(text) + 1))
    documents = safe_yaml.load_all(text, source="big.yaml")
    assert len(documents) > 100 and len(text) > 1_000_000


def test_json_has_the_same_bounds():
    load = safe_json.load_json
    assert load('{"a": [1, 2.5, null]}', source="f.json") == {"a": [1, 2.5, None]}
    cases = {
        "[" * 5000 + "]" * 5000: "nests too deeply",
        "[" * 101 + "]" * 101: "nests too deeply",
        '{"a":\n ' + BIG + "}": "f.json:2: 1000000000000000000000000000000000000... has 401 digits",
        '{"a": NaN}': "NaN is not a JSON number",
        '{"a": 1e999}': "1e999 overflows to inf",
        '{"a": 1,\n "a": 2}': "f.json:2: duplicate key 'a'",
        '{"a": ': "f.json:1:7: Expecting value",
    }
    for text, expected in cases.items():
        with pytest.raises(ConfigError) as caught:
            load(text, source="f.json")
        assert expected in str(caught.value), (text[:20], str(caught.value))


def _project(tmp_path: Path, stack_text: str, project_text: str = "name: demo\n") -> Path:
    (tmp_path / "Pulumi.yaml").write_text(project_text)
    (tmp_path / "Pulumi.s.yaml").write_text(stack_text)
    return tmp_path


def test_stack_files_refuse_what_would_crash_the_plan(tmp_path: Path):
    cases = {
        "config:\n  demo:tags:\n    1: x\n": "config.demo:tags: key 1 at line 3 is an integer",
        "config:\n  demo:tags: &a [*a]\n": "recursive alias",
        f"config:\n  demo:n: {BIG}\n": "config.demo:n: 10000",
        "config:\n  demo:p: .nan\n": "config.demo:p: .nan is nan",
        "config:\n  demo:a: 1\n  demo:a: 2\n": "duplicate key 'demo:a' at line 3 (first at line 2)",
        "config:\n  demo:b: !!binary aGk=\n": "tag !!binary",
    }
    for text, expected in cases.items():
        with pytest.raises(ConfigError) as caught:
            read_stack(_project(tmp_path, text), "s")
        assert expected in str(caught.value), str(caught.value)
    assert read_stack(_project(tmp_path, "config:\n  demo:d: 2024-01-01\n"), "s").config["demo:d"] == "2024-01-01"
    with pytest.raises(ConfigError, match="expected the project name as a string"):
        read_stack(_project(tmp_path, "config: {}\n", "name: [x]\n"), "s")


def test_an_encrypted_client_keys_secret_plans_with_a_placeholder_per_client(tmp_path: Path):
    text = (
        "config:\n  demo:gateway:\n    gateway:\n      client_ids: [agent, batch]\n"
        "  demo:gateway_client_keys:\n    secure: AAABAJxyz\n"
    )
    stack = read_stack(_project(tmp_path, text), "s")
    placeholder = "<secret:demo:gateway_client_keys>"
    assert json.loads(stack.config["demo:gateway_client_keys"]) == {"agent": placeholder, "batch": placeholder}
    assert "demo:gateway_client_keys" in stack.secret_keys and "gateway_client_keys" not in stack.placeholder_secrets
