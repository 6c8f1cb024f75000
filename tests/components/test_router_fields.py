"""Tests for the vSR config-key check (components/gateway/router_fields) and its generator (tools/router_fields.py).

The committed key table is all these tests need; the upstream mirror and the chart values are optional extras.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from aks_gpu_inference.components.gateway.router_fields import load, unknown_fields
from aks_gpu_inference.planner.inputs.upstream import missing_reason, upstream_dir
from tests.go_module import git_module, tool

REPO = Path(__file__).resolve().parents[2]
TABLE = REPO / "components" / "gateway" / "router_fields" / "v0.3.0.json"
MIRROR = Path(os.environ.get("VSR_MIRROR", "/work/.mirror/vllm-project+semantic-router/repo"))


def _generator():
    return tool("router_fields")


def _minimal() -> dict:
    return {
        "version": "v0.3",
        "listeners": [{"name": "http-8888", "address": "0.0.0.0", "port": 8888, "timeout": "300s"}],
        "providers": {
            "defaults": {
                "default_model": "m1",
                "reasoning_families": {"qwen3": {"type": "chat_template_kwargs", "parameter": "enable_thinking"}},
            },
            "models": [{"name": "m1", "backend_refs": [{"name": "b", "endpoint": "vllm:8000", "protocol": "http", "weight": 1}]}],
        },
        "routing": {
            "modelCards": [{"name": "m1"}],
            "signals": {"domains": [{"name": "math", "description": "maths", "mmlu_categories": ["math"]}]},
            "decisions": [
                {
                    "name": "math",
                    "priority": 10,
                    "rules": {"operator": "AND", "conditions": [{"type": "domain", "name": "math"}]},
                    "modelRefs": [{"model": "m1", "use_reasoning": False}],
                    "plugins": [{"type": "system_prompt", "configuration": {"anything": {"goes": 1}}}],
                }
            ],
        },
        "global": {"stores": {"semantic_cache": {"enabled": True}}, "router": {"strategy": "priority"}},
    }


# (a) a correct config passes; opaque plugin configuration is not checked (StructuredPayload has no yaml fields)
def test_minimal_config_has_no_unknown_fields():
    assert unknown_fields(_minimal()) == []


# (b) v0.3.0 knows semantic_cache, memory, vector_store under global.stores (canonical_global.go:51-55)
def test_response_cache_under_stores_is_unknown():
    cfg = _minimal()
    cfg["global"]["stores"] = {"response_cache": {"enabled": True}, "semantic_cahce": {"enabled": True}}
    assert unknown_fields(cfg) == [
        "global.stores.response_cache: unknown field (known: memory, semantic_cache, vector_store)",
        "global.stores.semantic_cahce: unknown field (known: memory, semantic_cache, vector_store); did you mean 'semantic_cache'?",
    ]


def test_hint_only_within_edit_distance_three():
    cfg = {"routing": {"decisoins": [], "signalz_xyz": {}}}
    msgs = unknown_fields(cfg)
    assert msgs[0].endswith("did you mean 'decisions'?")
    assert "did you mean" not in msgs[1]


# (c) a key put under the wrong parent is reported at its full path
def test_misplaced_key_reported_with_path():
    cfg = _minimal()
    cfg["providers"]["decisions"] = cfg["routing"].pop("decisions")
    [msg] = unknown_fields(cfg)
    assert msg == "providers.decisions: unknown field (known: defaults, models)"


# (d) list indexes in paths, through slices of structs and the recursive RuleNode
def test_list_index_paths():
    cfg = _minimal()
    decision = cfg["routing"]["decisions"][0]
    cfg["routing"]["decisions"] = [decision, dict(decision), {**decision, "rulez": {}}]
    cfg["routing"]["decisions"][1] = {**decision, "rules": {"operator": "OR", "conditions": [{"type": "domain"}, {"typo": "x"}]}}
    cfg["providers"]["models"][0]["backend_refs"][0]["wieght"] = 2
    assert unknown_fields(cfg) == [
        # canonical_providers.go:30-45
        "providers.models[0].backend_refs[0].wieght: unknown field (known: api_key, api_key_env, api_version, auth_header, "
        "auth_prefix, base_url, chat_path, endpoint, extra_headers, name, protocol, provider, type, weight); did you mean 'weight'?",
        "routing.decisions[1].rules.conditions[1].typo: unknown field (known: conditions, name, operator, type); did you mean 'type'?",
        "routing.decisions[2].rulez: unknown field (known: algorithm, candidateIterations, description, emits, "
        "modelRefs, name, plugins, priority, rules, tier); did you mean 'rules'?",
    ]


# (e) map[string]ReasoningFamilyConfig: values are checked under their own (arbitrary) keys
def test_map_of_struct_recursion():
    cfg = _minimal()
    cfg["providers"]["defaults"]["reasoning_families"]["deepseek"] = {"type": "chat_template_kwargs", "param": "thinking"}
    assert unknown_fields(cfg) == [
        "providers.defaults.reasoning_families.deepseek.param: unknown field (known: parameter, type)",
    ]


def test_inline_fields_are_promoted():
    # CanonicalPromptGuardModule inlines PromptGuardConfig (canonical_global.go:103-106)
    cfg = {
        "global": {
            "model_catalog": {"modules": {"prompt_guard": {"enabled": True, "threshold": 0.7, "model_ref": "x", "bogus": 1}}}
        }
    }
    [msg] = unknown_fields(cfg)
    assert msg.startswith(
        "global.model_catalog.modules.prompt_guard.bogus: unknown field (known: enabled, jailbreak_mapping_path,"
    )


def test_wrong_shapes_are_ignored_like_go():
    # nestedStringMap turns a non-mapping into an empty map, which the walker skips; yaml.v2 reports type errors.
    cfg = {"routing": ["not", "a", "map"], "providers": {"models": {"name": "x"}}, "global": {1: "int key dropped"}}
    assert unknown_fields(cfg) == []
    assert unknown_fields({1: "top-level keys are strings in Go"}) == [
        "1: unknown field (known: global, listeners, providers, routing, version)",
    ]
    with pytest.raises(TypeError):
        unknown_fields(["not a mapping"])
    with pytest.raises(ValueError, match=r"have: v0\.3\.0"):
        load("9.9.9")


# (f) the table matches what validate.go's collectKnownFields reads from the v0.3.0 sources
def test_table_spot_checks():
    table = load()
    assert table["root"] == "config.CanonicalConfig"
    assert table["source"].startswith("vllm-project/semantic-router@v0.3.0 (commit 9afc5a421886")
    types = table["types"]
    # canonical_config.go:11-19; globalOverrideRaw has yaml:"-"
    assert types["config.CanonicalConfig"]["fields"] == {
        "version": "string",
        "listeners": "[]config.Listener",
        "providers": "config.CanonicalProviders",
        "routing": "config.CanonicalRouting",
        "global": "*config.CanonicalGlobal",
    }
    # canonical_global.go:51-55
    assert types["config.CanonicalStoreGlobal"]["fields"] == {
        "semantic_cache": "config.SemanticCache",
        "memory": "config.MemoryConfig",
        "vector_store": "*config.VectorStoreConfig",
    }
    # decision_config.go:4-18; Rules is RuleCombination, an alias of RuleNode (decision_config.go:150-153)
    decision = types["config.Decision"]["fields"]
    assert decision["rules"] == "config.RuleNode"
    assert decision["modelRefs"] == "[]config.ModelRef"
    assert set(decision) == {
        "name",
        "description",
        "priority",
        "tier",
        "rules",
        "modelRefs",
        "algorithm",
        "plugins",
        "candidateIterations",
        "emits",
    }
    # decision_config.go:125-136: ModelRef inlines ModelReasoningControl
    assert set(types["config.ModelRef"]["fields"]) == {
        "model",
        "lora_name",
        "weight",
        "use_reasoning",
        "reasoning_description",
        "reasoning_effort",
    }
    # canonical_global.go:103-106 + model_config_types.go:131-140
    assert set(types["config.CanonicalPromptGuardModule"]["fields"]) == {
        "model_ref",
        "enabled",
        "model_id",
        "threshold",
        "use_cpu",
        "use_modernbert",
        "use_mmbert_32k",
        "jailbreak_mapping_path",
        "use_vllm",
    }
    # structured_payload.go:15-17: only `Raw json.RawMessage yaml:"-"`, so opaque; custom UnmarshalYAML at :56
    assert types["config.StructuredPayload"]["fields"] == {}
    assert table["custom_unmarshal"] == [
        {
            "type": "config.StructuredPayload",
            "method": "UnmarshalYAML",
            "source": "src/semantic-router/pkg/config/structured_payload.go:56",
        }
    ]
    # every name in a type expression is either a listed struct or a Go leaf type
    for entry in types.values():
        for expr in entry["fields"].values():
            for name in expr.replace("map[", " ").replace("]", " ").replace("*", " ").replace("[", " ").split():
                assert name in types or "." not in name, (expr, name)


def test_table_is_deterministic_json():
    text = TABLE.read_text(encoding="utf-8")
    assert text == json.dumps(json.loads(text), indent=1, sort_keys=True) + "\n"


# (g) the chart's own sample config (first document, key `config`) is clean
@pytest.mark.skipif(upstream_dir() is None, reason=missing_reason() if upstream_dir() is None else "")
def test_chart_values_config_has_no_unknown_fields():
    values = upstream_dir() / "charts" / "semantic-router" / "0.3.0" / "values.yaml"
    if not values.is_file():
        pytest.skip(f"{values} is absent")
    with values.open(encoding="utf-8") as fh:
        first = next(yaml.safe_load_all(fh))
    config = first["config"]
    assert unknown_fields(config) == []
    # and the walker does reach deep into it
    config["routing"]["decisions"][0]["modelRefs"][0]["nmae"] = "x"
    config["providers"]["defaults"]["reasoning_families"]["qwen3"]["paramter"] = "x"
    config["global"]["services"]["api"]["batch_classification"]["metrics"]["sample_rat"] = 1
    assert [m.split(":")[0] for m in unknown_fields(config)] == [
        "providers.defaults.reasoning_families.qwen3.paramter",
        "routing.decisions[0].modelRefs[0].nmae",
        "global.services.api.batch_classification.metrics.sample_rat",
    ]


# ---- generator (tools/router_fields.py), on small synthetic Go modules; needs only git ----

GO_MOD = "module example.com/m\n\ngo 1.24\n\nreplace example.com/m/pkg/config => ./pkg/config\n"
CONFIG_GO = """package config

import (
\t"time"

\tx "example.com/m/pkg/extra"
)

// Root is the root.
type Root struct {
\tA, B   string `json:"a" yaml:"a_key,omitempty"`
\tNoTag  int
\tSkip   *Other `yaml:"-"`
\tPtrs   []*Other `yaml:"ptrs"`
\tByName map[string]Other `yaml:"by_name"`
\tByPtr  map[string]*Other `yaml:"by_ptr"`
\tAlias  OtherAlias `yaml:"alias"`
\tDef    OtherDef `yaml:"def"`
\tList   Others `yaml:"list"`
\tExt    x.Thing `yaml:"ext"`
\tWait   time.Duration `yaml:"-"`
\tAnon   struct {
\t\tInner string `yaml:"inner"`
\t} `yaml:"anon"`
\tEmbedded
\t*Promoted `yaml:",inline"`
\tNamedEmb `yaml:"named_emb"`
\tNonStruct `yaml:",inline"`
\tfn      func(a, b int) (string, error)
\tch      <-chan struct{}
\tany     interface{ M() } `yaml:"iface"`
}

type (
\tOther      struct{ V bool }
\tOtherAlias = Other
\tOtherDef   Other
\tOthers     []Other
\tNonStruct  map[string]string
)

type Embedded struct{ E1 string `yaml:"e1"` }
type Promoted struct{ P1 string `yaml:"p1"` }
type NamedEmb struct{ N1 string }

func (o *Other) UnmarshalYAML(unmarshal func(interface{}) error) error { return nil }
"""
EXTRA_GO = 'package extra\n\ntype Thing struct {\n\tT []string `yaml:"t"`\n}\n'


def _git_module(tmp_path: Path, files: dict[str, str]) -> Path:
    return git_module(tmp_path, files)


def _generate(repo: Path, tmp_path: Path, root: str = "Root") -> tuple[int, dict | None]:
    out = tmp_path / "out.json"
    rc = _generator().main(["--repo", str(repo), "--tag", "v1", "--out", str(out), "--package", "src/pkg/config", "--root", root])
    return rc, (json.loads(out.read_text()) if rc == 0 else None)


def test_generator_on_synthetic_module(tmp_path):
    repo = _git_module(
        tmp_path, {"src/go.mod": GO_MOD, "src/pkg/config/config.go": CONFIG_GO, "src/pkg/extra/extra.go": EXTRA_GO}
    )
    rc, doc = _generate(repo, tmp_path)
    assert rc == 0
    root = doc["types"]["config.Root"]
    assert root["fields"] == {
        "a_key": "string",  # A and B share the tag, so one key
        "notag": "int",
        "ptrs": "[]*config.Other",
        "by_name": "map[string]config.Other",
        "by_ptr": "map[string]*config.Other",
        "alias": "config.Other",
        "def": "config.OtherDef",
        "list": "[]config.Other",
        "ext": "extra.Thing",
        "anon": "config.Root.Anon",
        "e1": "string",
        "p1": "string",
        "named_emb": "config.NamedEmb",
        "fn": "func",
        "ch": "chan",
        "iface": "interface{...}",
    }
    assert root["source"] == "src/pkg/config/config.go:10"
    assert root["inlined"] == ["config.Embedded", "config.Promoted"]
    assert doc["types"]["config.OtherDef"]["fields"] == {"v": "bool"}
    assert doc["types"]["config.Root.Anon"]["fields"] == {"inner": "string"}
    assert doc["types"]["extra.Thing"]["fields"] == {"t": "[]string"}
    assert doc["custom_unmarshal"] == [
        {"type": "config.Other", "method": "UnmarshalYAML", "source": "src/pkg/config/config.go:46"}
    ]


@pytest.mark.parametrize(
    ("snippet", "error"),
    [
        ('type Root struct {\n\tW time.Time `yaml:"w"`\n}\n', "outside module"),
        ('type Root struct {\n\tG Gen[int] `yaml:"g"`\n}\ntype Gen[T any] struct{ V T }\n', "generic type instantiation"),
        ('type Root struct {\n\tM Missing `yaml:"m"`\n}\n', "unknown type Missing"),
        ('type Root struct {\n\tM string `yaml:"m" bad`\n}\n', "malformed struct tag"),
        ("type Root struct {\n\tM string @\n}\n", "unexpected character"),
    ],
)
def test_generator_fails_loudly(tmp_path, capsys, snippet, error):
    src = 'package config\n\nimport "time"\n\nvar _ = time.Second\n\n' + snippet
    repo = _git_module(tmp_path, {"src/go.mod": GO_MOD, "src/pkg/config/config.go": src})
    rc, _ = _generate(repo, tmp_path)
    assert rc == 1
    assert error in capsys.readouterr().err


@pytest.mark.skipif(not MIRROR.is_dir(), reason=f"no semantic-router mirror at {MIRROR} (set $VSR_MIRROR)")
def test_committed_table_matches_generator(tmp_path):
    out = tmp_path / "v0.3.0.json"
    assert _generator().main(["--repo", str(MIRROR), "--tag", "v0.3.0", "--out", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == TABLE.read_text(encoding="utf-8")
