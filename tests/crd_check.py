"""Rendered custom resources in the tests: their check against the pinned CRDs (``../shared/upstream/crds``,
through the planner's own validator) and the check that names between the gateway's objects resolve."""

from __future__ import annotations

import functools
import tarfile
import tempfile
from pathlib import Path

import pytest

from aks_gpu_inference.planner.inputs.upstream import crds_dir, missing_reason
from aks_gpu_inference.planner.kube.crd_files import CRDIndex
from aks_gpu_inference.planner.kube.crd_schema import validate_object
from tests.conftest import is_custom_resource


def pinned_crds() -> CRDIndex:
    """The index of the pinned CRDs, then of those only a pinned chart ships (the NVIDIA DRA driver's ComputeDomain,
    in its archive's ``crds/``); skips the calling test when ``shared/upstream`` is absent."""
    directory = crds_dir()
    if directory is None:
        pytest.skip(missing_reason())
    return _with_chart_crds(str(directory))


@functools.cache
def _with_chart_crds(directory: str) -> CRDIndex:
    files = sorted(p for p in Path(directory).iterdir() if p.suffix in (".yaml", ".yml"))
    archives = Path(directory).parent / "chart-archives"
    extracted = Path(tempfile.mkdtemp(prefix="aks-gpu-chart-crds-"))
    for archive in sorted(archives.glob("dra-driver-nvidia-gpu-*.tgz")) if archives.is_dir() else []:
        with tarfile.open(archive) as tar:
            for member in tar.getmembers():
                if member.isfile() and "/crds/" in member.name and member.name.endswith((".yaml", ".yml")):
                    target = extracted / f"{archive.stem}-{Path(member.name).name}"
                    target.write_bytes(tar.extractfile(member).read())
                    files.append(target)
    return CRDIndex(files)


def crd_errors(obj: dict) -> list[str]:
    """What the API server would refuse or silently drop in ``obj``, each ``<json path>: <problem>``."""
    result = validate_object(pinned_crds(), obj)
    assert result is not None, f"no pinned CRD for {obj['apiVersion']} {obj['kind']}"
    return result.errors


def custom_resources(objects: list[dict]) -> list[dict]:
    return [obj for obj in objects if is_custom_resource(obj)]


def policy_targets(spec: dict) -> list[dict]:
    """An Envoy Gateway policy's targets: ``targetRef`` or ``targetRefs`` (PolicyTargetReferences)."""
    return [spec["targetRef"]] if spec.get("targetRef") else list(spec.get("targetRefs") or [])


def check_gateway_references(objects: list[dict]) -> None:
    """Names between the gateway's objects resolve, in the namespace each reference is local to."""
    found = custom_resources(objects)
    if not any(o["kind"] == "Gateway" for o in found):
        return
    for obj in found:
        check = _REFERENCE_CHECKS.get(obj["kind"])
        if check:
            check(obj, found)


CHART_MADE = {"InferencePool"}
"""Kinds only a chart creates (the inferencepool chart), absent from the program's own objects: the planner's
request-path check follows references to them through the real render (tests/planner/test_inference_pool_path.py)."""


def _named(found: list[dict], kind: str, namespace: str | None) -> set[str]:
    return {o["metadata"]["name"] for o in found if o["kind"] == kind and o["metadata"].get("namespace") == namespace}


def _gateway_references(obj: dict, found: list[dict]) -> None:
    spec = obj["spec"]
    assert spec["gatewayClassName"] in {o["metadata"]["name"] for o in found if o["kind"] == "GatewayClass"}
    ref = spec["infrastructure"]["parametersRef"]
    assert (ref["group"], ref["kind"]) == ("gateway.envoyproxy.io", "EnvoyProxy")
    assert ref["name"] in _named(found, "EnvoyProxy", obj["metadata"]["namespace"]), (
        "the Gateway's parametersRef names an EnvoyProxy beside it"
    )


def _policy_references(obj: dict, found: list[dict]) -> None:
    kind = obj["kind"]
    targets = policy_targets(obj["spec"])
    assert targets, f"{kind} {obj['metadata']['name']} targets nothing"
    for t in targets:
        assert (t["group"], t["kind"]) == ("gateway.networking.k8s.io", "Gateway"), f"{kind} targets {t}"
        assert t["name"] in _named(found, "Gateway", obj["metadata"].get("namespace")), (
            f"{kind} targets a Gateway that does not exist: {t['name']}"
        )


def _route_references(obj: dict, found: list[dict]) -> None:
    ns = obj["metadata"].get("namespace")
    spec = obj["spec"]
    for parent in spec.get("parentRefs") or []:
        assert parent["name"] in _named(found, "Gateway", parent.get("namespace") or ns)
    for rule in spec["rules"]:
        for backend in rule.get("backendRefs") or []:
            kind = "AIServiceBackend"
            if backend.get("group") is not None or backend.get("kind") is not None:
                assert (backend.get("group"), backend.get("kind")) == ("inference.networking.k8s.io", "InferencePool")
                continue  # in CHART_MADE
            assert backend["name"] in _named(found, kind, backend.get("namespace") or ns), backend["name"]


def _ai_service_backend_references(obj: dict, found: list[dict]) -> None:
    ref = obj["spec"]["backendRef"]
    namespace = ref.get("namespace") or obj["metadata"].get("namespace")
    assert ref["name"] in _named(found, "Backend", namespace), f"no Backend {ref['name']}"


def _backend_security_policy_references(obj: dict, found: list[dict]) -> None:
    for t in obj["spec"].get("targetRefs") or []:
        if t["kind"] in CHART_MADE:
            continue
        assert t["name"] in _named(found, t["kind"], obj["metadata"].get("namespace")), (
            f"BackendSecurityPolicy targets a missing {t['kind']} {t['name']}"
        )


def _backend_tls_policy_references(obj: dict, found: list[dict]) -> None:
    spec = obj["spec"]
    for t in spec["targetRefs"]:
        (backend,) = [o for o in found if o["kind"] == t["kind"] and o["metadata"]["name"] == t["name"]]
        hosts = {e["fqdn"]["hostname"] for e in backend["spec"]["endpoints"]}
        assert spec["validation"]["hostname"] in hosts, "TLS is verified against the name the Backend dials"


_REFERENCE_CHECKS = {
    "Gateway": _gateway_references,
    "SecurityPolicy": _policy_references,
    "BackendTrafficPolicy": _policy_references,
    "ClientTrafficPolicy": _policy_references,
    "EnvoyExtensionPolicy": _policy_references,
    "AIGatewayRoute": _route_references,
    "AIServiceBackend": _ai_service_backend_references,
    "BackendSecurityPolicy": _backend_security_policy_references,
    "BackendTLSPolicy": _backend_tls_policy_references,
}
"""Per kind, the check that the names it references exist."""
