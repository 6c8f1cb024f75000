"""NVIDIA Dynamo 0.8.1: the platform charts' values and the ``DynamoGraphDeployment`` for disaggregated vLLM,
as pure builders returning plain dicts (DynamoInference creates the resources), and the checks the
component runs before anything exists.

Sources (ai-dynamo/dynamo, read through the code index; commits are those the index stores):

- Charts: ``dynamo-crds`` and ``dynamo-platform`` from ``https://helm.ngc.nvidia.com/nvidia/ai-dynamo/charts/``
  (the install guide ``helm fetch .../dynamo-crds-${RELEASE_VERSION}.tgz``, ``--namespace default``, then
  ``.../dynamo-platform-${RELEASE_VERSION}.tgz`` in its own namespace). ``deploy/cloud/helm/platform/Chart.yaml``
  @09783f64 lists the dependencies ``dynamo-operator`` (``dynamo-operator.enabled``), ``nats`` 1.3.2
  (``nats.enabled``), ``etcd`` 12.0.18 from Bitnami (``etcd.enabled``), ``kai-scheduler`` and ``grove``
  (off by default). That stored Chart.yaml says ``0.8.1.post2``; the tag v0.8.1 itself was not readable here.
- Values: ``deploy/cloud/helm/platform/values.yaml`` @0284ad86: ``dynamo-operator.controllerManager.manager.image``
  (``nvcr.io/nvidia/ai-dynamo/kubernetes-operator``, tag empty = chart default), ``controllerManager.tolerations``,
  ``discoveryBackend`` (``kubernetes``), ``etcd.enabled``, ``nats.enabled``, ``nats.config.jetstream.enabled``,
  ``grove.enabled``, ``kai-scheduler.enabled``.
- CRD: ``deploy/cloud/helm/crds/templates/nvidia.com_dynamographdeployments.yaml`` @039eb630: group ``nvidia.com``,
  kind ``DynamoGraphDeployment``, version ``v1alpha1``, namespaced; ``spec.backendFramework`` enum
  sglang/vllm/trtllm, ``spec.envs``, ``spec.services`` (a map of component specs).
- Component spec: ``deploy/cloud/operator/api/v1alpha1/dynamocomponentdeployment_types.go``
  (``DynamoComponentDeploymentSharedSpec``): ``labels``, ``componentType``, ``subComponentType``
  ("for example, prefill"), ``resources``, ``envs``, ``envFromSecret``, ``extraPodSpec`` ("a k8s standard PodSpec"
  plus ``mainContainer``), ``livenessProbe``, ``readinessProbe``, ``replicas``.
- vLLM disaggregation: ``examples/backends/vllm/deploy/disagg.yaml`` @0044eb90: ``Frontend`` with
  ``componentType: frontend``; ``VllmDecodeWorker``/``VllmPrefillWorker`` with ``componentType: worker``,
  ``subComponentType: decode|prefill``, ``resources.limits.gpu``, ``command: [python3, -m, dynamo.vllm]`` and
  ``--is-decode-worker`` / ``--is-prefill-worker``; image ``nvcr.io/nvidia/ai-dynamo/vllm-runtime:<version>``.
- KV routing: the frontend's ``DYN_ROUTER_MODE=kv`` env (``examples/backends/trtllm`` disagg router and the
  router docs: "For Kubernetes, patch only the frontend service env"), the env form of ``dynamo.frontend
  --router-mode kv``.
- NIXL: ``--kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'`` on both roles (the
  Dynamo vLLM disaggregation docs' ``dynamo.vllm`` launch lines).
- Frontend Service: the operator names it ``<graph>-frontend`` on port 8000 (Dynamo's guides port-forward
  ``service/<graph>-frontend 8000:8000``). NOT verified against the 0.8.1 operator source.

Not verified: that the pinned operator copies ``extraPodSpec.resourceClaims`` and the main container's
``resources.claims`` (DRA NIC claims) into the pods it creates, and that it mounts a large ``/dev/shm``
for tensor parallelism. Check a rendered worker pod after a first deploy.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..core import models
from ..core.endpoints import DYNAMO_FRONTEND_PORT, INSTANCE_LABEL
from ..core.errors import FieldProblem
from ..core.labels import NVIDIA_GPU
from .dynamo_args import DynamoInferenceArgs, DynamoPlacement, DynamoSecrets, DynamoWorkerArgs

if TYPE_CHECKING:
    from ..gpu.pod_contract import RdmaPodSpec

DYNAMO_VERSION = "0.8.1"
CHART_REPO = "https://helm.ngc.nvidia.com/nvidia/ai-dynamo"
"""The NGC Helm repository whose ``charts/<chart>-<version>.tgz`` the install guide fetches. Used as a Helm
repository (``repository_opts``) so the planner finds the chart by name and version; that NGC serves an
``index.yaml`` there is NOT verified offline."""
OPERATOR_IMAGE = "nvcr.io/nvidia/ai-dynamo/kubernetes-operator"
API_VERSION = "nvidia.com/v1alpha1"
KIND = "DynamoGraphDeployment"
FRONTEND_PORT = DYNAMO_FRONTEND_PORT
"""The frontend's OpenAI HTTP port (``dynamo.frontend --http-port`` default, ``DYN_HTTP_PORT``)."""
NIXL_KV_TRANSFER = {"kv_connector": "NixlConnector", "kv_role": "kv_both"}
ROLE_LABEL = "aks-gpu-inference/dynamo-role"
"""Our label on every pod of the graph (through the component spec's ``labels``): frontend, prefill, decode."""
SERVICES = {"frontend": "Frontend", "prefill": "VllmPrefillWorker", "decode": "VllmDecodeWorker"}
ROLE_FLAGS = {"prefill": "--is-prefill-worker", "decode": "--is-decode-worker"}


def chart_url(chart: str, version: str) -> str:
    """The chart archive of ``chart`` (``dynamo-crds`` or ``dynamo-platform``) at ``version``."""
    return f"{CHART_REPO}/charts/{chart}-{version}.tgz"


def platform_values(args: DynamoInferenceArgs, tolerations: list[dict[str, str]] | None = None) -> dict[str, Any]:
    """Values of ``dynamo-platform``: the operator at the pinned tag, etcd and NATS as asked, no Grove/KAI."""
    p = args.platform
    values: dict[str, Any] = {
        "dynamo-operator": {
            "enabled": True,
            "controllerManager": {
                "tolerations": list(tolerations or []),
                "manager": {"image": {"repository": OPERATOR_IMAGE, "tag": p.chart_version}},
            },
        },
        "etcd": {"enabled": p.etcd},
        "nats": {"enabled": p.nats, "config": {"jetstream": {"enabled": True}}},
        "grove": {"enabled": False},
        "kai-scheduler": {"enabled": False},
    }
    return _merge(values, p.extra_values)


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        out[key] = _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def pod_labels(args: DynamoInferenceArgs, role: str) -> dict[str, str]:
    """The labels we put on a role's pods; ``{INSTANCE_LABEL: name, ROLE_LABEL: role}``."""
    return {INSTANCE_LABEL: args.name, ROLE_LABEL: role}


def worker_args(args: DynamoInferenceArgs, role: str) -> list[str]:
    """The ``dynamo.vllm`` arguments of a prefill or decode worker."""
    w: DynamoWorkerArgs = getattr(args, role)
    out = ["--model", args.model, "--served-model-name", served_model_name(args), ROLE_FLAGS[role]]
    out += ["--tensor-parallel-size", str(w.tensor_parallel_size), "--gpu-memory-utilization", str(w.gpu_memory_utilization)]
    if w.max_model_len:
        out += ["--max-model-len", str(w.max_model_len)]
    out += ["--kv-transfer-config", json.dumps(NIXL_KV_TRANSFER, separators=(",", ":"))]
    return out + list(w.extra_args)


def served_model_name(args: DynamoInferenceArgs) -> str:
    return args.served_model_name or args.model


def _frontend(args: DynamoInferenceArgs) -> dict[str, Any]:
    return {
        "componentType": "frontend",
        "replicas": args.frontend_replicas,
        "labels": pod_labels(args, "frontend"),
        "envs": [{"name": "DYN_ROUTER_MODE", "value": "kv"}],
        "resources": {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"cpu": "1", "memory": "2Gi"}},
        "extraPodSpec": {"mainContainer": {"image": args.runtime_image}},
    }


def _worker(args: DynamoInferenceArgs, role: str, contract: RdmaPodSpec, hf_secret: str) -> dict[str, Any]:
    """A worker role on the RDMA pool: the pod contract (NIC claims, IPC_LOCK, UCX/NCCL env, placement)
    merged into ``extraPodSpec``, one full node's GPUs through ``resources.limits.gpu``."""
    w: DynamoWorkerArgs = getattr(args, role)
    main = {
        "name": "main",
        "image": args.runtime_image,
        "workingDir": "/workspace/examples/backends/vllm",
        "command": ["python3", "-m", "dynamo.vllm"],
        "args": worker_args(args, role),
    }
    pod = contract.apply({"containers": [main]})
    spec = {k: v for k, v in pod.items() if k != "containers"}
    container = pod["containers"][0]
    container.pop("name")
    return {
        "componentType": "worker",
        "subComponentType": role,
        "replicas": w.replicas,
        "labels": pod_labels(args, role),
        "envFromSecret": hf_secret,
        "resources": {"limits": {"gpu": str(w.tensor_parallel_size)}},
        "extraPodSpec": {**spec, "mainContainer": container},
    }


def graph_deployment(args: DynamoInferenceArgs, namespace: str, contract: RdmaPodSpec) -> dict[str, Any]:
    """The ``DynamoGraphDeployment``: Frontend (KV router) plus prefill and decode workers over NIXL."""
    secret = hf_secret_name(args)
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": args.name, "namespace": namespace, "labels": {INSTANCE_LABEL: args.name}},
        "spec": {
            "backendFramework": "vllm",
            "services": {
                SERVICES["frontend"]: _frontend(args),
                SERVICES["prefill"]: _worker(args, "prefill", contract, secret),
                SERVICES["decode"]: _worker(args, "decode", contract, secret),
            },
        },
    }


def hf_secret_name(args: DynamoInferenceArgs) -> str:
    return f"{args.name}-hf-token"


def frontend_service(args: DynamoInferenceArgs) -> str:
    """The Service the operator makes for the Frontend (naming not verified, see the module docstring)."""
    return f"{args.name}-frontend"


# ---- checks -------------------------------------------------------------------------------------


def worker_fit(args: DynamoInferenceArgs, role: str, vm_size: str) -> models.FitResult:
    """The GPU-memory fit of one worker of ``role`` on one VM of ``vm_size``."""
    w: DynamoWorkerArgs = getattr(args, role)
    return models.fit(
        args.model, vm_size, w.tensor_parallel_size, max_model_len=w.max_model_len,
        gpu_memory_utilization=w.gpu_memory_utilization,
    )  # fmt: skip


def dynamo_inference_problems(
    args: DynamoInferenceArgs, placement: DynamoPlacement, secrets: DynamoSecrets
) -> list[FieldProblem]:
    """Every reason ``DynamoInference`` refuses these inputs; empty when it can deploy them."""
    pool, rdma = placement.pool, placement.rdma
    problems = []
    if pool.pool_name not in rdma.nics:
        problems.append(FieldProblem("placement.pool", pool.pool_name, "not an RDMA pool of the given RdmaNetwork"))
    if pool.gpu_resource_name != NVIDIA_GPU:
        problem = f"Dynamo's resources.limits.gpu is {NVIDIA_GPU}; pool {pool.pool_name} gives {pool.gpu_resource_name}"
        problems.append(FieldProblem("placement.pool", pool.pool_name, problem))
    if args.platform.namespace == rdma.namespace:
        problem = f"{rdma.namespace!r} is the privileged RDMA namespace; run the operator elsewhere"
        problems.append(FieldProblem("platform.namespace", args.platform.namespace, problem))
    if secrets.hf_token is None:
        problems.append(FieldProblem("hf_token", None, "give the Hugging Face token (a Pulumi secret)"))
    nodes = args.prefill.replicas + args.decode.replicas
    if nodes > pool.max_nodes:
        problems.append(
            FieldProblem("replicas", nodes, f"prefill + decode take one node each; {pool.pool_name} has at most {pool.max_nodes}")
        )
    try:
        models.resolve(args.model)
    except ValueError as err:
        return [*problems, FieldProblem("model", args.model, str(err).replace("\n", " "))]
    for role in ("prefill", "decode"):
        tp = getattr(args, role).tensor_parallel_size
        if tp > pool.sku.gpus:
            problems.append(
                FieldProblem(f"{role}.tensor_parallel_size", tp, f"{pool.sku.name} has {pool.sku.gpus} GPUs per node")
            )
            continue
        fit = worker_fit(args, role, pool.sku.name)
        if not fit.fits:
            advice = "; ".join(s.text for s in fit.suggestions) or "choose a larger GPU size"
            problem = f"a {role} worker cannot load on {pool.sku.name}: {fit.problem}. Smallest changes that fit: {advice}"
            problems.append(FieldProblem(f"{role}.tensor_parallel_size", tp, problem))
    return problems
