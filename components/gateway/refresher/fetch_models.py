"""Copy the semantic router's classifier models from the model store (Azure Blob) onto its volume.

Runs in a Job before the router starts, as a workload identity with Storage Blob Data Reader on the
container, so the router never downloads from the internet (it skips its own download when every
model directory has ``config.json`` and weights: vllm-project/semantic-router@v0.3.0
src/semantic-router/pkg/modeldownload/ensure.go). Standard library only. Blobs already on the
volume with the same size are kept, so a re-run copies only what changed.

Environment: the workload identity variables, ``TOKEN_SCOPE``, ``BLOB_ENDPOINT``
(``https://<account>.blob.core.windows.net/``), ``CONTAINER``, ``PREFIX`` (``<path>/``), ``MODELS``
(comma-separated directory names) and ``DEST`` (the volume's mount path).
"""

import os
import sys
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ElementTree

from refresh_token import fetch_token


def _get(url: str, token: str):
    # Blob service REST version sent as x-ms-version (Entra bearer tokens need 2017-11-09 or later), from the pins table.
    headers = {"Authorization": f"Bearer {token}", "x-ms-version": os.environ["BLOB_API_VERSION"]}
    request = urllib.request.Request(url, headers=headers)
    return urllib.request.urlopen(request, timeout=60)


def list_blobs(endpoint: str, container: str, prefix: str, token: str) -> list[tuple[str, int]]:
    """(name, size) of every blob under ``prefix``, following continuation markers."""
    found, marker = [], ""
    while True:
        query = {"restype": "container", "comp": "list", "prefix": prefix, "marker": marker}
        with _get(f"{endpoint}{container}?{urllib.parse.urlencode(query)}", token) as response:
            root = ElementTree.parse(response).getroot()
        for blob in root.iter("Blob"):
            found.append((blob.findtext("Name"), int(blob.findtext("Properties/Content-Length") or 0)))
        marker = root.findtext("NextMarker") or ""
        if not marker:
            return found


def copy_model(endpoint: str, container: str, prefix: str, model: str, dest: str, token: str) -> int:
    """Download one model directory; returns how many files were fetched."""
    fetched = 0
    for name, size in list_blobs(endpoint, container, f"{prefix}{model}/", token):
        target = os.path.join(dest, model, name[len(prefix) + len(model) + 1 :])
        if os.path.exists(target) and os.path.getsize(target) == size:
            continue
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with _get(f"{endpoint}{container}/{urllib.parse.quote(name)}", token) as response, open(target + ".part", "wb") as out:
            while chunk := response.read(1 << 20):
                out.write(chunk)
        os.replace(target + ".part", target)
        fetched += 1
    return fetched


def main() -> int:
    env = os.environ
    models = [m for m in env["MODELS"].split(",") if m]
    try:
        token = fetch_token()
        for model in models:
            count = copy_model(env["BLOB_ENDPOINT"], env["CONTAINER"], env["PREFIX"], model, env["DEST"], token)
            print(f"{model}: {count} file(s) copied")
    except Exception as err:  # the Job's exit code is the alert; say why
        print(f"copying the router models failed: {err}", file=sys.stderr)
        return 1
    missing = [m for m in models if not os.path.exists(os.path.join(env["DEST"], m, "config.json"))]
    if missing:
        where = f"{env['BLOB_ENDPOINT']}{env['CONTAINER']}/{env['PREFIX']}"
        print(f"no config.json for {', '.join(missing)}: upload each model directory to {where}<model>/", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
