"""Throughput of the guardrail rules: ``policies.rules.evaluate`` over a few thousand generated objects.

The objects mix what a GPU inference stack holds: Deployments, Pods, StatefulSets, Jobs and CronJobs that
request GPUs (device-plugin and MIG resources) and claim dranet.net RDMA NICs, ResourceClaimTemplates, a
DeviceClass, StorageClasses, and the Azure side (AgentPools, ManagedClusters with inline pools) that the
pool joins need. About a third of them break a rule, so the rules also build their messages.

Prints objects, rules and object-evaluations (objects x rules) per second, best of a few repeats, against
the 10,000/s target. Prints only; always exits 0. ``kubernetes_objects`` is reused by scan_vs_checkov.py.
"""

from __future__ import annotations

import argparse
import gc
import random
import time
from collections import Counter

from aks_gpu_inference.components.core.labels import (
    AGENTPOOL_LABEL,
    DRANET_DRIVER,
    GPU_TAINT,
    GPU_TOLERATION,
    MIG_PREFIX,
    NVIDIA_GPU,
    RDMA_DEVICE_CLASS,
    RDMA_LABEL,
)
from aks_gpu_inference.policies.manifests import Resource, StackIndex, token_for_manifest
from aks_gpu_inference.policies.rules import RULES, evaluate

TARGET = 10_000  # object-evaluations per second
NAMESPACES = [f"team-{i:02d}" for i in range(10)]
POOLS = {  # agent pool name -> (vmSize, gpuInstanceProfile)
    "h100": ("Standard_ND96isr_H100_v5", None),
    "h200": ("Standard_ND96isr_H200_v5", None),
    "a100": ("Standard_NC24ads_A100_v4", None),
    "a100mig": ("Standard_NC24ads_A100_v4", "MIG1g"),
    "t4": ("Standard_NC4as_T4_v3", None),
    "nc40": ("Standard_NC40ads_H100_v5", None),  # RDMA pods sometimes land here: not RDMA-capable
}
IMAGES = [
    "vllm/vllm-openai:v0.6.3",
    "ghcr.io/llm-d/llm-d:v0.3.0",
    "nvcr.io/nvidia/tritonserver:24.08-py3",
    "busybox:latest",
    "vllm/vllm-openai",
]
WORKLOADS = ["Deployment", "Deployment", "Pod", "StatefulSet", "Job", "CronJob"]


def _container(rng: random.Random, index: int, rdma: bool, pool: str) -> dict:
    container: dict = {"name": f"engine-{index}", "image": rng.choice(IMAGES), "args": ["--port", "8000"]}
    mig = POOLS[pool][1]
    gpus = {f"{MIG_PREFIX}1g.10gb" if mig and rng.random() < 0.8 else NVIDIA_GPU: rng.choice([1, 2, 4, 8])}
    container["resources"] = {"requests": {"cpu": "4", "memory": "16Gi", **gpus}, "limits": dict(gpus)}
    if rdma:
        container["resources"]["claims"] = [{"name": "rdma-nics"}]
        ok = rng.random() < 0.7
        container["securityContext"] = {
            "allowPrivilegeEscalation": False if ok else None,
            "capabilities": {"add": ["IPC_LOCK"] if ok else ["IPC_LOCK", "NET_ADMIN"], "drop": ["ALL"]},
        }
        container["env"] = [{"name": "NCCL_IB_DISABLE", "value": "0" if ok else "1"}, {"name": "UCX_TLS", "value": "rc_x,self"}]
        if not ok:
            container["command"] = ["sh", "-c", "ulimit -l unlimited && exec vllm serve"]
    elif rng.random() < 0.05:
        container["securityContext"] = {"privileged": True}
    return container


def _pod_spec(rng: random.Random, rdma: bool, role: str | None) -> dict:
    pool = rng.choice(["h100", "h200", "nc40"] if rdma else ["a100", "a100mig", "t4", "h100"])
    spec: dict = {
        "nodeSelector": {AGENTPOOL_LABEL: pool},
        "containers": [_container(rng, i, rdma, pool) for i in range(rng.choice([1, 1, 2]))],
    }
    if rng.random() < 0.9:
        spec["tolerations"] = [dict(GPU_TOLERATION)]
    if rdma:
        spec["resourceClaims"] = [{"name": "rdma-nics", "resourceClaimTemplateName": "nd-rdma-full-node"}]
    if role and rng.random() < 0.7:
        spec["affinity"] = {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"llm-d.ai/role": role}}, "topologyKey": "kubernetes.io/hostname"}
                ]
            }
        }
    return spec


def _workload(rng: random.Random, kind: str, name: str, namespace: str) -> dict:
    rdma = rng.random() < 0.3
    role = rng.choice(["prefill", "decode", None, None]) if kind in ("Deployment", "StatefulSet") else None
    labels = {"app": name, **({"llm-d.ai/role": role} if role else {})}
    template = {"metadata": {"labels": labels}, "spec": _pod_spec(rng, rdma, role)}
    metadata = {"name": name, "namespace": namespace}
    if kind == "Pod":
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {**metadata, "labels": labels}, "spec": template["spec"]}
    if kind == "Job":
        template["spec"]["restartPolicy"] = "Never"
        return {"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata, "spec": {"template": template}}
    if kind == "CronJob":
        template["spec"]["restartPolicy"] = "Never"
        job = {"template": template}
        return {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": metadata,
            "spec": {"schedule": "0 2 * * *", "jobTemplate": {"spec": job}},
        }
    spec = {"replicas": rng.choice([1, 2]), "selector": {"matchLabels": labels}, "template": template}
    if kind == "StatefulSet":
        spec["serviceName"] = name
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": metadata, "spec": spec}


def _claim_template(namespace: str) -> dict:
    request = {"name": "rdma-nics", "exactly": {"deviceClassName": RDMA_DEVICE_CLASS, "count": 8}}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "nd-rdma-full-node", "namespace": namespace},
        "spec": {"spec": {"devices": {"requests": [request]}}},
    }


def _storage_class(rng: random.Random, name: str) -> dict:
    parameters = {"skuName": "Premium_LRS", **({"cachingMode": "None"} if rng.random() < 0.7 else {})}
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": "disk.csi.azure.com",
        "parameters": parameters,
    }


def kubernetes_objects(count: int, seed: int = 7) -> list[dict]:
    """``count`` plain Kubernetes manifests: one DeviceClass, a claim template per namespace, ~1 in 12
    StorageClasses, the rest GPU workloads (a third of those claim RDMA NICs)."""
    rng = random.Random(seed)
    objects: list[dict] = [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": RDMA_DEVICE_CLASS},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRANET_DRIVER}"'}}]},
        },
        *(_claim_template(ns) for ns in NAMESPACES),
    ]
    while len(objects) < count:
        i = len(objects)
        if i % 12 == 0:
            objects.append(_storage_class(rng, f"disk-{i:05d}"))
        else:
            objects.append(_workload(rng, WORKLOADS[i % len(WORKLOADS)], f"model-{i:05d}", NAMESPACES[i % len(NAMESPACES)]))
    return objects[:count]


def azure_resources(clusters: int) -> list[Resource]:
    """Per cluster a ManagedCluster (inline system pool; some without NodeImage) and one AgentPool per
    name in POOLS (some untainted, one retired size, RDMA labels on the ND sizes)."""
    resources = []
    for c in range(clusters):
        channel = "NodeImage" if c % 4 else "Unmanaged"
        cluster = {
            "resourceName": f"aks-{c}",
            "autoUpgradeProfile": {"nodeOSUpgradeChannel": channel},
            "agentPoolProfiles": [{"name": "system", "vmSize": "Standard_D4ds_v5", "mode": "System", "count": 2}],
        }
        resources.append(Resource("azure-native:containerservice:ManagedCluster", f"aks-{c}", cluster, f"urn:aks-{c}"))
        for p, (name, (vm_size, mig)) in enumerate(POOLS.items()):
            pool = {
                "agentPoolName": name,
                "vmSize": "Standard_NC6s_v3" if (c, p) == (0, 4) else vm_size,
                "mode": "User",
                "nodeTaints": [GPU_TAINT] if (c + p) % 5 else [],
                "nodeLabels": {RDMA_LABEL: "true"} if "ND96" in vm_size else {},
                **({"gpuInstanceProfile": mig} if mig else {}),
            }
            resources.append(Resource("azure-native:containerservice:AgentPool", f"{name}-{c}", pool, f"urn:{name}-{c}"))
    return resources


def stack(count: int) -> list[Resource]:
    azure = azure_resources(max(1, count // 400))
    manifests = kubernetes_objects(count - len(azure))
    kube = [
        Resource(token_for_manifest(m["apiVersion"], m["kind"]), m["metadata"]["name"], m, f"bench.yaml:{i + 1}")
        for i, m in enumerate(manifests)
    ]
    return kube + azure


def best_of(repeats: int, run) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeats):
        gc.collect()
        started = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - started)
    return best, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--objects", type=int, nargs="+", default=[1000, 4000], help="stack sizes to time (default: 1000 4000)")
    parser.add_argument("--repeats", type=int, default=5, help="repeats per size; the best is reported (default: 5)")
    args = parser.parse_args()

    evaluate(stack(200))  # warm-up: catalog load, regex cache
    print(f"policies.rules.evaluate: {len(RULES)} rules, best of {args.repeats}; target {TARGET:,} object-evaluations/s")
    for count in args.objects:
        resources = stack(count)
        kinds = Counter(r.type.rsplit(":", 1)[-1] for r in resources)
        seconds, findings = best_of(args.repeats, lambda resources=resources: evaluate(resources))
        rate = len(resources) * len(RULES) / seconds
        levels = Counter(f.level for f in findings)
        print(
            f"\n{len(resources):,} objects ({', '.join(f'{n} {k}' for k, n in kinds.most_common())})\n"
            f"  {seconds * 1000:,.1f} ms: {len(resources) / seconds:,.0f} objects/s, {rate:,.0f} object-evaluations/s "
            f"= {rate / TARGET:,.1f}x the target ({'meets' if rate >= TARGET else 'MISSES'} it)\n"
            f"  findings: {levels['mandatory']:,} mandatory, {levels['advisory']:,} advisory"
        )
        index_seconds, index = best_of(args.repeats, lambda resources=resources: StackIndex.build(resources))
        per_rule = sorted(
            ((best_of(args.repeats, lambda rule=rule, index=index: rule.run(index))[0], rule.name) for rule in RULES),
            reverse=True,
        )
        print(
            f"  StackIndex.build {index_seconds * 1000:.1f} ms; slowest rules: "
            + ", ".join(f"{n} {s * 1000:.1f} ms" for s, n in per_rule[:4])
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
