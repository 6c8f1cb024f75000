"""Rules never crash on values of the wrong type (found by fuzzing `aks-gpu scan`): they judge what they can
and leave the rest to schema validation."""

from aks_gpu_inference.policies.manifests import Resource, token_for_manifest
from aks_gpu_inference.policies.rules import evaluate_all


def resources(*objects):
    return [
        Resource(token_for_manifest(o["apiVersion"], o["kind"]), o["metadata"]["name"], o, f"f.yaml:{i}")
        for i, o in enumerate(objects)
    ]


def test_a_claim_template_name_that_is_a_mapping():
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {
            "resourceClaims": [{"name": "x", "resourceClaimTemplateName": {"a": 1}}],
            "containers": [{"name": "c", "image": "i:1"}],
        },
    }
    findings, _ = evaluate_all(resources(pod))
    assert [f.rule.name for f in findings] == [], "the pod requests no GPUs or NICs and runs a pinned image"


def test_a_storage_class_parameter_key_that_is_not_a_string():
    storage = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": "s"},
        "provisioner": "disk.csi.azure.com",
        "parameters": {True: "x"},
    }
    findings, _ = evaluate_all(resources(storage))
    assert [f.rule.name for f in findings] == ["azure-disk-caching-none"]
