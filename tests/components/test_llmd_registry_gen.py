"""tools/llmd_registry.py: on a small synthetic module shaped like llm-d-router, and (where a mirror is at hand) on
llm-d-router at the pinned tag, where it must reproduce the committed table byte for byte."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from aks_gpu_inference.components.serving.vllm_disaggregation import PICKER_RELEASE
from tests.go_module import git_module, tool

REPO = Path(__file__).resolve().parents[2]
MIRROR = Path(os.environ.get("LLMD_ROUTER_MIRROR", "/work/.mirror/llm-d+llm-d-router/repo"))
CR_MIRROR = Path(os.environ.get("CONTROLLER_RUNTIME_MIRROR", "/work/.mirror/kubernetes-sigs+controller-runtime/repo"))

FILES = {
    "go.mod": "module example.com/r\n\ngo 1.24\n",
    "pkg/epp/framework/interface/plugin/registry.go": """package plugin

type StabilityLevel string

const (
\tStabilityAlpha StabilityLevel = "alpha"
\tStabilityBeta StabilityLevel = "beta"
)

func Register(pluginType string, stability StabilityLevel, factory FactoryFunc) {}
func RegisterDeprecated(pluginType string, stability StabilityLevel, factory FactoryFunc, deprecatedIn, scheduledRemovalIn, replacementType string) {}
func RegisterWithPluginDependencies(pluginType string, stability StabilityLevel, factory FactoryFunc, parser ConfigParserFunc) {}
""",
    "pkg/plugins/decider/decider.go": """package decider

import "encoding/json"

const DeciderType = "my-decider"

const defaultTokens = 7

type Config struct {
\tTokens int `json:"tokens"`
\tLabel  string
\thidden int
}

func Factory(name string, raw *json.Decoder, handle any) (any, error) {
\tconfig := Config{Tokens: defaultTokens}
\tif raw != nil {
\t\tif err := raw.Decode(&config); err != nil {
\t\t\treturn nil, err
\t\t}
\t}
\treturn config, nil
}

func IgnoringFactory(name string, _ *json.Decoder, handle any) (any, error) { return nil, nil }
""",
    "pkg/plugins/handler/handler.go": """package handler

import "encoding/json"

const (
\tHandlerType = "my-profile-handler"
\tdefaultProfile = "decode"
)

type Deciders struct {
\tPrefill string `json:"prefill,omitempty" pluginRef:""`
}

type Params struct {
\tProfile  string   `json:"profile"`
\tDeciders Deciders `json:"deciders"`
}

func Factory(name string, raw *json.Decoder, handle any) (any, error) { return Parser(raw, handle) }

func Parser(raw *json.Decoder, handle any) (any, error) {
\tparams := Params{}
\tif raw != nil {
\t\t_ = raw.Decode(&params)
\t}
\tif params.Profile == "" {
\t\tparams.Profile = defaultProfile
\t}
\treturn params, nil
}
""",
    "cmd/epp/runner/runner.go": """package runner

import (
\tfwkplugin "example.com/r/pkg/epp/framework/interface/plugin"
\t"example.com/r/pkg/epp/config/loader"
\t"example.com/r/pkg/plugins/decider"
\t"example.com/r/pkg/plugins/handler"
)

type Runner struct{}

func (r *Runner) registerInTreePlugins() {
\tfwkplugin.Register(decider.DeciderType, fwkplugin.StabilityBeta, decider.Factory)
\tfwkplugin.RegisterDeprecated("old-decider", fwkplugin.StabilityAlpha, decider.IgnoringFactory, "v0.1.0", "v0.3.0", decider.DeciderType)
\tfwkplugin.RegisterWithPluginDependencies(handler.HandlerType, fwkplugin.StabilityBeta, handler.Factory, handler.Parser)
}

func (r *Runner) parse() {
\tloader.RegisterFeatureGate("fastPath", false)
}
""",
    "pkg/epp/config/loader/loader.go": """package loader

var deprecatedSchemeGroupVersion = schema.GroupVersion{Group: "old.example.io", Version: "v1alpha1"}

func RegisterFeatureGate(gate string, isEnabledByDefault bool) {}

func instantiate() { util.TopologicalSort(nil) }
""",
    "apix/config/v1alpha1/types.go": """package v1alpha1

const GroupName = "new.example.io"

var GroupVersion = v1.GroupVersion{Group: GroupName, Version: "v1alpha1"}

type EndpointPickerConfig struct {
\tFeatureGates []string     `json:"featureGates"`
\tPlugins      []PluginSpec `json:"plugins"`
}

type PluginSpec struct {
\tName string `json:"name"`
\tType string `json:"type"`
}
""",
    "pkg/epp/server/options.go": """package server

type Options struct {
\tGRPCPort int
\tSecure   bool
\tAllowExperimentalPlugins bool
}

func NewOptions() *Options { return &Options{GRPCPort: 9002, Secure: true} }

func (opts *Options) AddFlags(fs *pflag.FlagSet) {
\tfs.IntVar(&opts.GRPCPort, "grpc-port", opts.GRPCPort, "gRPC port.")
\tfs.BoolVar(&opts.Secure, "secure-serving", opts.Secure, "TLS.")
\tfs.BoolVar(&opts.AllowExperimentalPlugins, "allow-experimental-plugins", opts.AllowExperimentalPlugins, "Alpha.")
}
""",
    "pkg/sidecar/proxy/options.go": """package proxy

const (
\tkvConnector = "kv-connector"
\tKVConnectorA = "nixlv2"
\tKVConnectorB = "other"
)

var supportedKVConnectors = map[string]struct{}{
\tKVConnectorA: {},
\tKVConnectorB: {},
}

type Options struct{ KVConnector string }

func NewOptions() *Options { return &Options{KVConnector: KVConnectorA} }

func (opts *Options) AddFlags(fs *pflag.FlagSet) {
\tfs.StringVar(&opts.KVConnector, kvConnector, opts.KVConnector, "protocol")
}

func (opts *Options) Validate() error {
\tif _, ok := supportedKVConnectors[opts.KVConnector]; !ok {
\t\treturn nil
\t}
\treturn nil
}
""",
    "pkg/epp/controller/pods.go": """package controller

import corev1 "k8s.io/api/core/v1"

func (c *PodReconciler) SetupWithManager() { ctrl.NewControllerManagedBy(mgr).For(&corev1.Pod{}) }
""",
}


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("llmd")
    out = tmp / "out.json"
    assert tool("llmd_registry").main(["--repo", str(git_module(tmp, FILES)), "--tag", "v1", "--out", str(out)]) == 0
    return json.loads(out.read_text())


def test_plugins_with_stability_deprecation_and_parameters(generated):
    plugins = generated["plugins"]
    assert sorted(plugins) == ["my-decider", "my-profile-handler", "old-decider"]
    decider = plugins["my-decider"]
    assert decider["stability"] == "Beta" and decider["registered_at"] == "cmd/epp/runner/runner.go:13"
    assert decider["parameters"]["mode"] == "schema" and decider["parameters"]["defaults"] == {"tokens": 7}
    (schema,) = decider["parameters"]["schemas"]
    assert sorted(generated["types"][schema]["fields"]) == ["Label", "tokens"], "untagged exported kept, unexported dropped"
    old = plugins["old-decider"]
    assert old["parameters"]["mode"] == "ignored" and old["stability"] == "Alpha"
    assert old["deprecated"] == {"in": "v0.1.0", "removal": "v0.3.0", "replacement": "my-decider"}


def test_plugin_references_and_defaults_set_when_empty(generated):
    handler = generated["plugins"]["my-profile-handler"]
    assert handler["dependencies"] is True and handler["parameters"]["defaults"] == {"profile": "decode"}
    (schema,) = handler["parameters"]["schemas"]
    deciders = generated["types"][schema]["fields"]["deciders"]["type"]
    assert generated["types"][deciders]["fields"]["prefill"] == {"go": "Prefill", "ref": True, "type": "string"}


def test_loader_flags_and_watches(generated):
    loader = generated["loader"]
    assert loader["api_versions"] == ["new.example.io/v1alpha1", "old.example.io/v1alpha1"]
    assert loader["feature_gates"] == {"fastPath": False}
    assert loader["plugin_order"] == "dependencies" and loader["experimental_flag"] == "allow-experimental-plugins"
    assert generated["epp_flags"]["grpc-port"] == {"default": 9002, "type": "int"}
    assert generated["epp_flags"]["secure-serving"] == {"default": True, "type": "bool"}
    assert generated["sidecar_flags"]["kv-connector"] == {"choices": ["nixlv2", "other"], "default": "nixlv2", "type": "string"}
    assert [w["kind"] for w in generated["watches"]] == ["Pod"]


def test_what_cannot_be_read_is_an_error_not_a_guess(tmp_path):
    files = dict(FILES)
    files["cmd/epp/runner/runner.go"] = files["cmd/epp/runner/runner.go"].replace(
        "decider.DeciderType, fwkplugin.StabilityBeta", "pickType(), fwkplugin.StabilityBeta"
    )
    out = tmp_path / "out.json"
    assert tool("llmd_registry").main(["--repo", str(git_module(tmp_path, files)), "--tag", "v1", "--out", str(out)]) == 1
    assert not out.exists()


@pytest.mark.skipif(
    not (MIRROR.is_dir() and CR_MIRROR.is_dir()),
    reason=f"no llm-d-router mirror at {MIRROR} (set $LLMD_ROUTER_MIRROR and $CONTROLLER_RUNTIME_MIRROR)",
)
@pytest.mark.slow
def test_the_committed_table_is_what_the_generator_makes_at_the_pinned_tag(tmp_path):
    out = tmp_path / "table.json"
    argv = ["--repo", str(MIRROR), "--tag", PICKER_RELEASE, "--controller-runtime", str(CR_MIRROR), "--out", str(out)]
    assert tool("llmd_registry").main(argv) == 0
    committed = REPO / "components" / "serving" / "llmd_registry" / f"{PICKER_RELEASE}.json"
    assert out.read_text() == committed.read_text()
