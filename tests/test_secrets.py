"""Secrets are never echoed: under a key named like one, or shaped like a credential under any key, in every
message (refusals, the printed plan, progress) and every file the plan writes (including a refused plan's STALE)."""

from __future__ import annotations

import pytest

from aks_gpu_inference.components.core.errors import ConfigError, FieldProblem, shown
from aks_gpu_inference.components.core.secrets import MASK, credential_shape, is_secret_key, masked, redact
from aks_gpu_inference.components.stack.config import config_from_env
from aks_gpu_inference.planner.report.outdir import PlanOutput
from tests.test_stack_input_errors import P, problems

CREDENTIALS = {
    "sk-live-4eC39HqLyjWDarjtT1zdp7dc": "an API key (sk-...)",
    "sk-proj-abcdefghijklmnopqrstuvwxyz012345": "an API key (sk-...)",
    "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123": "a Hugging Face token",
    "ghp_" + "a1B2c3D4" * 5: "a GitHub token",
    "AKIAIOSFODNN7EXAMPLE": "an AWS access key id",
    "AIza" + "SyA-1234567890abcdefghijklmnopqrstu": "a Google API key",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c": "a JSON Web Token",
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA\n-----END OPENSSH PRIVATE KEY-----": "a private key",
    "Zm9vYmFy" * 10 + "Zm9vYm==": "an Azure storage account key",
    "DefaultEndpointsProtocol=https;AccountName=w;AccountKey=Zm9vYmFy+/==;EndpointSuffix=core.windows.net": (
        "an Azure connection string key"
    ),
    "https://w.blob.core.windows.net/models?sv=2024-11-04&sp=r&sig=Zm9vYmFyYmF6cXV4MTIzNDU2%3D": "a shared access signature",
    "postgres://app:hunter2@db.internal:5432/x": "a password in a URL",
}

NOT_CREDENTIALS = [
    "docker.io/vllm/vllm-openai@sha256:" + "ab12" * 16,  # an image digest
    "0123456789abcdef0123456789abcdef01234567",  # a model revision (a git commit)
    "6f1f5c1e-3b0e-4cf1-9a73-0b8d2c7e5a11",  # a subscription or client id
    "meta-llama/Llama-3.1-8B-Instruct",
    "task-queue-worker-abcdefghijklmnop",  # "sk-" inside a word
    "nvidia.com/gpu",
    "https://huggingface.co/Qwen/Qwen2.5-7B-Instruct",
]


@pytest.mark.parametrize("text, what", CREDENTIALS.items(), ids=list(CREDENTIALS.values()))
def test_credential_shapes_are_recognised_and_masked_inside_text(text, what):
    assert credential_shape(text) == what
    line = f"models[0].extra_args[1]={text} and more"
    clean = redact(line)
    assert MASK in clean and clean.endswith(" and more")
    for secret in (
        "4eC39",
        "abcdefghij",
        "AbCdEf",
        "a1B2c3D4",
        "IOSFODNN",
        "SyA-12345",
        "SflKxwRJ",
        "b3BlbnNz",
        "Zm9vYmFy",
        "hunter2",
    ):
        assert secret not in clean


@pytest.mark.parametrize("text", NOT_CREDENTIALS)
def test_ordinary_values_are_shown(text):
    assert credential_shape(text) is None and redact(text) == text


@pytest.mark.parametrize(
    "key, value, secret",
    [
        ("vllm_api_key", "x", True),
        ("clientSecret", "x", True),
        ("azure-native:clientSecret", "x", True),
        ("HF_TOKEN", "x", True),
        ("db-password", 1234, True),
        ("client_keys", {"agent": "x"}, True),
        ("max_num_batched_tokens", 8192, False),
        ("experts_per_token", 8, False),
        ("token_limit_per_hour", 100000, False),
        ("model_access_secret", "hf-access", False),  # the name of a Kubernetes Secret
        ("enable_prefix_caching", True, False),
        ("model", "meta-llama/Llama-3.1-8B-Instruct", False),
    ],
)
def test_secret_key_names(key, value, secret):
    assert is_secret_key(key, value) is secret


def test_masking_reaches_into_mappings_and_lists():
    value = {"client_keys": {"agent": "plain"}, "ids": ["agent"], "args": ["--api-key", "sk-live-4eC39HqLyjWDarjtT1zdp7dc"]}
    assert masked(value) == {"client_keys": {"agent": MASK}, "ids": ["agent"], "args": ["--api-key", MASK]}
    assert shown("hunter2", "models[0].password") == MASK
    assert "hunter2" not in str(FieldProblem("dynamo.token", "hunter2", "unknown key"))


@pytest.mark.parametrize(
    "mutate, where",
    [
        (lambda c: c["models"][0].update(vllm_api_key="sk-live-4eC39HqLyjWDarjtT1zdp7dc"), "models[0].vllm_api_key="),
        (lambda c: c["models"][0].update(api_token="plain-words-not-shaped"), "models[0].api_token="),
        (lambda c: c.update(dynamo={"hf_token": "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123"}), "dynamo.hf_token="),
        (lambda c: c["gateway"].update(gateway={"client_keys": {"agent": "k3y-plain"}}), "gateway.gateway.client_keys="),
        (
            lambda c: c["models"][0].update(extra_args=["--api-key", "sk-live-4eC39HqLyjWDarjtT1zdp7dc"]),
            "models[0].extra_args[1]=",
        ),
        (lambda c: c["cluster"].update(password="hunter2hunter2"), "cluster.password="),
    ],
)
def test_a_secret_under_any_key_is_refused_with_its_path_and_never_shown(mutate, where):
    found = problems(mutate)
    line = next(p for p in found if p.startswith(where))
    shown_value = {"agent": MASK} if where.endswith("client_keys=") else MASK  # a mapping of secrets keeps its ids
    assert line.startswith(f"{where}{shown_value if isinstance(shown_value, str) else repr(shown_value)}:"), line
    joined = "\n".join(found)
    for secret in ("sk-live-4eC39", "plain-words", "hf_AbCd", "k3y-plain", "hunter2"):
        assert secret not in joined


def test_a_secret_where_a_stack_secret_belongs_names_its_command():
    (line,) = problems(lambda c: c["models"][0].update(vllm_api_key="sk-live-4eC39HqLyjWDarjtT1zdp7dc"))
    assert "pulumi config set --secret vllm_api_key" in line and "rotate it" in line


def test_plain_text_provider_credentials_are_flagged_with_the_fix():
    env = {f"{P}location": "eastus", "azure-native:clientSecret": "s3cr3t-value", "azure-native:clientId": "6f1f5c1e"}
    with pytest.raises(ConfigError) as caught:
        config_from_env(env, secret_keys=[])
    text = str(caught.value)
    assert "s3cr3t-value" not in text and "6f1f5c1e" not in text.split("clientSecret")[0]
    assert "azure-native:clientSecret: a credential stored in plain text" in text
    assert "pulumi config set --secret azure-native:clientSecret" in text
    assert "clientId" not in text  # an id is not a secret
    assert config_from_env(env | {}, secret_keys=["azure-native:clientSecret"]) == {"location": "eastus"}


@pytest.mark.slow
def test_plan_refusal_and_its_stale_file_never_hold_the_secret(tmp_path):
    from tests.test_stack_input_errors import REPO, main, shutil, stack_config, yaml

    project = tmp_path / "project"
    project.mkdir()
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(REPO / name, project / name)
    out = tmp_path / "out"
    args = ["plan", "x", "--project-dir", str(project), "--out", str(out), "-q"]
    (project / "Pulumi.x.yaml").write_text(yaml.safe_dump({"config": stack_config("dev")}))
    assert main(args) == 0  # an earlier plan, made stale by the refused one
    config = stack_config("dev")
    config[f"{P}models"][0]["vllm_api_key"] = "sk-live-4eC39HqLyjWDarjtT1zdp7dc"
    config["azure-native:clientSecret"] = "s3cr3t-value"
    (project / "Pulumi.x.yaml").write_text(yaml.safe_dump({"config": config}))
    assert main(args) == 2
    written = "".join(p.read_text() for p in out.rglob("*") if p.is_file())
    assert "STALE" in {p.name for p in out.iterdir()}
    assert "sk-live" not in written and "s3cr3t" not in written


def test_a_credential_written_into_a_plan_file_is_masked_before_the_plan_is_in_place(tmp_path):
    output = PlanOutput(tmp_path / "out")
    staging = output.prepare()
    (staging / "kubernetes").mkdir()
    (staging / "kubernetes" / "x.yaml").write_text("env:\n- name: KEY\n  value: sk-live-4eC39HqLyjWDarjtT1zdp7dc\n")
    output.commit()
    assert (tmp_path / "out" / "kubernetes" / "x.yaml").read_text() == f"env:\n- name: KEY\n  value: {MASK}\n"


def test_every_command_prints_through_the_redactor(capsys):
    from aks_gpu_inference.planner.cli import main

    assert main(["fit", "sk-live-4eC39HqLyjWDarjtT1zdp7dc"]) == 2
    out, err = capsys.readouterr()
    assert MASK in out + err and "4eC39" not in out + err
