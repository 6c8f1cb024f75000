"""The Entra token refresher: its script against local fake endpoints, and the component's objects."""

import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import parse_qs

import kubernetes_validate
import pulumi
import pulumi_kubernetes as k8s
import pytest

from aks_gpu_inference.components._base import ComponentInputError, validate_args
from aks_gpu_inference.components.azure.workload_identity import WorkloadIdentity
from aks_gpu_inference.components.core import pins
from aks_gpu_inference.components.gateway.token_refresher import (
    SCRIPT,
    EntraTokenRefresher,
    EntraTokenRefresherArgs,
    refresher_problems,
)
from aks_gpu_inference.planner.engine.values import kubernetes_object
from tests.conftest import cluster_context, of_type, refusal_message, run_components


class FakeEndpoints(BaseHTTPRequestHandler):
    """Entra's token endpoint and the Kubernetes API, both on loopback."""

    seen: list = []
    fail_token = False

    def do_POST(self):  # token endpoint
        form = parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
        FakeEndpoints.seen.append(("token", self.path, form))
        if FakeEndpoints.fail_token:
            self.send_response(401)
            self.end_headers()
            return
        self._reply({"access_token": "eyJ-fresh-token", "expires_in": 3599})

    def do_PATCH(self):  # Kubernetes API
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        FakeEndpoints.seen.append(("patch", self.path, body, self.headers["Authorization"], self.headers["Content-Type"]))
        self._reply({})

    def _reply(self, payload):
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def endpoints(tmp_path):
    server = HTTPServer(("127.0.0.1", 0), FakeEndpoints)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    FakeEndpoints.seen, FakeEndpoints.fail_token = [], False
    (tmp_path / "federated").write_text("projected-sa-jwt\n")
    (tmp_path / "sa").mkdir()
    (tmp_path / "sa" / "token").write_text("in-cluster-token")
    base = f"http://127.0.0.1:{server.server_port}"
    env = {
        "AZURE_AUTHORITY_HOST": f"{base}/",
        "AZURE_TENANT_ID": "tenant-1",
        "AZURE_CLIENT_ID": "client-1",
        "AZURE_FEDERATED_TOKEN_FILE": str(tmp_path / "federated"),
        "TOKEN_SCOPE": "https://cognitiveservices.azure.com/.default",
        "KUBERNETES_API": base,
        "SERVICE_ACCOUNT_DIR": str(tmp_path / "sa"),
        "SECRET_NAMESPACE": "ai-gateway",
        "SECRET_NAMES": "azure-openai-entra-token,gpt-mini-entra-token",
        "SECRET_KEY": "apiKey",
    }
    yield env
    server.shutdown()


def run_script(env):
    return subprocess.run(
        [sys.executable, str(SCRIPT)], env={"PATH": "/usr/bin:/bin", **env}, capture_output=True, text=True, timeout=60
    )


def test_script_exchanges_the_federated_token_and_patches_the_secret(endpoints):
    result = run_script(endpoints)
    assert result.returncode == 0, result.stderr
    assert "refreshed ai-gateway/azure-openai-entra-token, ai-gateway/gpt-mini-entra-token" in result.stdout
    (_, path, form), (_, url, body, auth, content_type), (_, second_url, second_body, *_) = FakeEndpoints.seen
    assert second_url.endswith("/secrets/gpt-mini-entra-token") and second_body == body
    assert path == "/tenant-1/oauth2/v2.0/token"
    assert form["client_assertion"] == ["projected-sa-jwt"] and form["client_id"] == ["client-1"]
    assert form["grant_type"] == ["client_credentials"]
    assert form["client_assertion_type"] == ["urn:ietf:params:oauth:client-assertion-type:jwt-bearer"]
    assert form["scope"] == ["https://cognitiveservices.azure.com/.default"]
    assert url == "/api/v1/namespaces/ai-gateway/secrets/azure-openai-entra-token"
    assert body == {"stringData": {"apiKey": "eyJ-fresh-token"}}
    assert auth == "Bearer in-cluster-token" and content_type == "application/merge-patch+json"


def test_script_fails_loudly_when_entra_refuses(endpoints):
    FakeEndpoints.fail_token = True
    result = run_script(endpoints)
    assert result.returncode == 1 and "token refresh failed" in result.stderr
    assert [s[0] for s in FakeEndpoints.seen] == ["token"], "nothing is written after a failed exchange"


def test_component_objects():
    def program():
        identity = WorkloadIdentity(
            "refresher-identity",
            {"namespace": "ai-gateway", "service_account": "aoai-token"},
            cluster=cluster_context(resource_group_name="rg", location="eastus", oidc_issuer_url="https://issuer"),
        )
        EntraTokenRefresher(
            "aoai-token",
            {"namespace": "ai-gateway", "secret_names": ["azure-openai-entra-token"]},
            pulumi.ResourceOptions(provider=k8s.Provider("k8s", kubeconfig="x")),
            identity=identity,
        )

    run = run_components(program)
    (role,) = of_type(run, "rbac.authorization.k8s.io/v1:Role")
    assert role.inputs["rules"] == [
        {"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["azure-openai-entra-token"], "verbs": ["get", "patch"]}
    ]
    (secret,) = of_type(run, "core/v1:Secret")
    assert secret.options["ignoreChanges"] == ["stringData", "data"]
    (cron,) = of_type(run, "batch/v1:CronJob")
    pod = cron.inputs["spec"]["jobTemplate"]["spec"]["template"]
    assert pod["metadata"]["labels"]["azure.workload.identity/use"] == "true"
    assert pod["spec"]["serviceAccountName"] == "aoai-token"
    assert pod["spec"]["containers"][0]["image"] == pins.image("python")
    (config_map,) = of_type(run, "core/v1:ConfigMap")
    assert config_map.inputs["data"]["refresh_token.py"] == SCRIPT.read_text()
    assert len(of_type(run, "batch/v1:Job")) == 1
    for resource in run.resources:
        if resource.is_kubernetes:
            kubernetes_validate.validate(kubernetes_object(resource), "1.35", strict=True)


class FakeIdentity:
    namespace, service_account = "ai-gateway", "aoai-token"
    subject = "system:serviceaccount:ai-gateway:aoai-token"


ARGS = {"namespace": "ai-gateway", "secret_names": ["azure-openai-entra-token"]}


def test_the_identity_must_be_federated_with_the_refreshers_service_account():
    args = EntraTokenRefresherArgs(**ARGS)
    assert refresher_problems(args, "aoai-token", FakeIdentity()) == []
    (problem,) = refresher_problems(args, "token-refresher", FakeIdentity())
    assert str(problem) == (
        "identity='system:serviceaccount:ai-gateway:aoai-token': federate the identity with "
        "system:serviceaccount:ai-gateway:token-refresher, the refresher's service account"
    )


@pytest.mark.parametrize(
    "change, expected",
    [
        # Before: an empty list rendered a Role without resourceNames, which grants every Secret.
        ({"secret_names": []}, "secret_names=[]"),
        ({"secret_names": ["Bad_Name"]}, "Secret names are DNS subdomains"),
        ({"image": "python"}, "image='python': pin the image to a version tag or digest: it has no tag (means latest)"),
        ({"namespace": "AI"}, "namespace='AI'"),
        ({"scopes": "x"}, "scopes='x': unknown key"),
    ],
)
def test_bad_args_are_refused(change, expected):
    with pytest.raises(ComponentInputError) as caught:
        validate_args(EntraTokenRefresherArgs, {**ARGS, **change}, "EntraTokenRefresher", "aoai-token")
    assert expected in str(caught.value)


def test_a_refused_refresher_registers_nothing():
    def program():
        identity = WorkloadIdentity(
            "refresher-identity",
            {"namespace": "ai-gateway", "service_account": "someone-else"},
            cluster=cluster_context(resource_group_name="rg", location="eastus", oidc_issuer_url="https://issuer"),
        )
        EntraTokenRefresher("aoai-token", ARGS, identity=identity)

    message = refusal_message(program, "EntraTokenRefresher", "aoai-token", lambda t: t.startswith("kubernetes:"))
    assert "federate the identity with system:serviceaccount:ai-gateway:aoai-token" in message
