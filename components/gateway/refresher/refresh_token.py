"""Fetch an Entra ID access token with the pod's workload identity and store it in a Kubernetes Secret.

Runs in a CronJob. Standard library only, so the image is a plain pinned Python. Envoy AI Gateway
has no managed-identity support for Azure OpenAI yet (envoyproxy/ai-gateway#2378), so it sends this
short-lived token as a bearer credential instead of a long-lived API key.
"""

import json
import os
import ssl
import sys
import urllib.parse
import urllib.request

SERVICE_ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"


def fetch_token() -> str:
    """Client-credentials flow with the projected service-account token as the client assertion."""
    authority = os.environ.get("AZURE_AUTHORITY_HOST", "https://login.microsoftonline.com/").rstrip("/")
    with open(os.environ["AZURE_FEDERATED_TOKEN_FILE"]) as assertion_file:
        assertion = assertion_file.read().strip()
    body = urllib.parse.urlencode(
        {
            "client_id": os.environ["AZURE_CLIENT_ID"],
            "scope": os.environ["TOKEN_SCOPE"],
            "grant_type": "client_credentials",
            "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
            "client_assertion": assertion,
        }
    ).encode()
    url = f"{authority}/{os.environ['AZURE_TENANT_ID']}/oauth2/v2.0/token"
    with urllib.request.urlopen(url, body, timeout=30) as response:
        return json.load(response)["access_token"]


def store(token: str, secret_name: str) -> None:
    """Merge-patch the token into one Secret through the in-cluster API."""
    api = os.environ.get("KUBERNETES_API") or (
        f"https://{os.environ['KUBERNETES_SERVICE_HOST']}:{os.environ['KUBERNETES_SERVICE_PORT']}"
    )
    service_account = os.environ.get("SERVICE_ACCOUNT_DIR", SERVICE_ACCOUNT)
    with open(f"{service_account}/token") as token_file:
        credential = token_file.read().strip()
    url = f"{api}/api/v1/namespaces/{os.environ['SECRET_NAMESPACE']}/secrets/{secret_name}"
    request = urllib.request.Request(
        url,
        data=json.dumps({"stringData": {os.environ["SECRET_KEY"]: token}}).encode(),
        method="PATCH",
        headers={"Authorization": f"Bearer {credential}", "Content-Type": "application/merge-patch+json"},
    )
    context = ssl.create_default_context(cafile=f"{service_account}/ca.crt") if url.startswith("https") else None
    with urllib.request.urlopen(request, context=context, timeout=30):
        pass


def main() -> int:
    names = [n for n in os.environ["SECRET_NAMES"].split(",") if n]
    try:
        token = fetch_token()
        for name in names:
            store(token, name)
    except Exception as err:  # the Job's exit code is the alert; say why
        print(f"token refresh failed: {err}", file=sys.stderr)
        return 1
    print("refreshed " + ", ".join(f"{os.environ['SECRET_NAMESPACE']}/{n}" for n in names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
