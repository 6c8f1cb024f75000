"""Golden files: what each repo stack renders (Kubernetes manifests, Azure resources) is reviewed
in diffs. After an intended change, refresh them with `make snapshots` and read the diff."""

import difflib
import hashlib
import os
import shutil

import pytest
import yaml

from aks_gpu_inference.planner.cli import main
from tests.conftest import REPO, STACKS, planned_stack, skip_without_archives

SNAPSHOTS = REPO / "tests" / "snapshots"
UPDATE = os.environ.get("UPDATE_SNAPSHOTS") == "1"


@pytest.mark.parametrize("stack", STACKS)
def test_rendered_stack_matches_its_snapshot(stack, tmp_path):
    skip_without_archives(planned_stack(stack))  # the snapshots hold what the charts render: skip without the archives
    assert main(["plan", stack, "--project-dir", str(REPO), "--out", str(tmp_path), "--quiet"]) == 0
    for part in ("kubernetes", "azure"):
        rendered = {p.name: golden_text(p.read_text()) for p in sorted((tmp_path / part).iterdir())}
        golden_dir = SNAPSHOTS / stack / part
        if UPDATE:
            shutil.rmtree(golden_dir, ignore_errors=True)
            golden_dir.mkdir(parents=True)
            for name, text in rendered.items():
                (golden_dir / name).write_text(text)
            continue
        golden = {p.name: p.read_text() for p in sorted(golden_dir.iterdir())} if golden_dir.is_dir() else {}
        assert rendered.keys() == golden.keys(), f"{stack}/{part}: files differ from the snapshot (run `make snapshots`)"
        for name, text in rendered.items():
            diff = "".join(difflib.unified_diff(golden[name].splitlines(True), text.splitlines(True), f"snapshot/{name}", name))
            assert not diff, f"{stack}/{part}/{name} differs from its snapshot (run `make snapshots` if intended):\n{diff}"


def golden_text(text: str) -> str:
    """What a snapshot keeps of a manifest: all of it, except a CustomResourceDefinition a chart ships, which is
    upstream's file (not ours to copy into the repository): its names, versions and a digest of what was rendered."""
    obj = yaml.safe_load(text)
    if (obj.get("kind") == "Secret" and "LS0tLS1CRUdJT" in text) or (
        obj.get("kind", "").endswith("WebhookConfiguration") and "caBundle" in text
    ):
        return _without_generated_certificates(obj)
    if obj.get("kind") != "CustomResourceDefinition":
        return text
    spec = obj["spec"]
    summary = {
        "kind": "CustomResourceDefinition",
        "name": obj["metadata"]["name"],
        "group": spec["group"],
        "scope": spec.get("scope"),
        "versions": [v["name"] for v in spec.get("versions", [])],
        "sha256": hashlib.sha256(text.encode()).hexdigest(),
    }
    return yaml.safe_dump(summary, sort_keys=False)


def _without_generated_certificates(obj: dict) -> str:
    """ai-gateway-helm makes a new webhook CA and certificate at every render (genCA, genSignedCert): keep the
    keys, not the random values (``LS0tLS1CRUdJT`` is base64 for ``-----BEGIN``, a PEM block)."""
    for key in obj.get("data") or {}:
        obj["data"][key] = "<generated at render>"
    for webhook in obj.get("webhooks") or []:
        if "caBundle" in webhook.get("clientConfig", {}):
            webhook["clientConfig"]["caBundle"] = "<generated at render>"
    return yaml.safe_dump(obj, sort_keys=False)
