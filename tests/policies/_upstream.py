"""Upstream manifests under tests/fixtures/upstream/ (each file names its source on its first line) as resources, the
rules' verdicts on them, and the mutations that make a violating upstream pod compliant."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml

from aks_gpu_inference.components.core.labels import AGENTPOOL_LABEL, GPU_TOLERATION
from aks_gpu_inference.policies.manifests import Resource, pod_templates, token_for_manifest
from aks_gpu_inference.policies.rules import evaluate_all

from ._fixtures import HARDENED, RDMA_POOL, RDMA_SKU, agent_pool

UPSTREAM = Path(__file__).resolve().parents[1] / "fixtures" / "upstream"


def source(file: str) -> str:
    """The ``owner/repo@tag:path`` a fixture was taken from."""
    first = (UPSTREAM / file).read_text().splitlines()[0]
    assert first.startswith("# source: "), f"{file} does not name its source on its first line"
    return first.removeprefix("# source: ")


def load(*files: str) -> list[dict[str, Any]]:
    return [doc for file in files for doc in yaml.safe_load_all((UPSTREAM / file).read_text()) if doc]


def resources(docs: list[dict[str, Any]]) -> list[Resource]:
    return [
        Resource(token_for_manifest(d["apiVersion"], d["kind"]), d["metadata"].get("name", "?"), d, f"f:{i}")
        for i, d in enumerate(docs)
    ]


def verdicts(docs: list[dict[str, Any]], *extra: Resource) -> dict[str, list[str]]:
    """Rule -> messages of every finding over the objects (and extra resources such as an agent pool)."""
    found, _ = evaluate_all([*resources(docs), *extra])
    result: dict[str, list[str]] = {}
    for f in found:
        result.setdefault(f.rule.name, []).append(f.violation.message)
    return result


def mandatory(docs: list[dict[str, Any]], *extra: Resource) -> set[str]:
    found, _ = evaluate_all([*resources(docs), *extra])
    return {f.rule.name for f in found if f.level == "mandatory"}


def pods(obj: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The pod specs of an object as the rules find them, to change in place (builders that copy are not followed)."""
    for template in pod_templates(resources([obj])[0]):
        yield template.spec


def rdma_pool() -> Resource:
    """An ND96isr H100 v5 pool named ``ndh100``, tainted for GPUs."""
    return agent_pool(RDMA_POOL, RDMA_SKU, taints=["sku=gpu:NoSchedule"], labels={})


def comply(spec: dict[str, Any], image: str | None = None) -> None:
    """What the pack asks of an RDMA GPU pod, applied to a pod spec: pinned to ``ndh100``, tolerating the GPU taint,
    every regular container hardened (IPC_LOCK only, drop ALL, no escalation) with NCCL_IB_DISABLE=0."""
    spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), AGENTPOOL_LABEL: RDMA_POOL}
    spec["tolerations"] = [*(spec.get("tolerations") or []), dict(GPU_TOLERATION)]
    for container in spec.get("containers", []):
        container["securityContext"] = copy.deepcopy(HARDENED)
        container["env"] = [*(container.get("env") or []), {"name": "NCCL_IB_DISABLE", "value": "0"}]
        if image:
            container["image"] = image


def mutated(docs: list[dict[str, Any]], change: Callable[[dict[str, Any]], None], index: int = -1) -> list[dict[str, Any]]:
    """A deep copy of the objects with ``change`` applied to one of them (the last by default)."""
    copied = copy.deepcopy(docs)
    change(copied[index])
    return copied
