"""NVIDIA Dynamo 1.6.1: the platform chart's values and the ``DynamoGraphDeployment`` (``nvidia.com/v1beta1``)
for disaggregated vLLM, as pure builders returning plain dicts (DynamoInference creates the resources), and
the checks the component runs before anything exists.

Sources, by how exact they are:

- **The ai-dynamo 1.6.1 wheel (PyPI, 2026-10-27), exact.** Its DGD templates
  (``dynamo/profiler/templates/dgd/vllm/disagg.yaml``): ``spec.components[]`` with ``name``, ``type``
  (frontend, prefill, decode), ``replicas`` and a ``podTemplate`` whose container ``main`` carries the image,
  ``command: [python3, -m, dynamo.vllm]``, ``--disaggregation-mode prefill|decode`` and ``nvidia.com/gpu``
  limits. ``dynamo/vllm/args.py``: the pre-1.x ``--is-prefill-worker`` flags are gone, and a prefill worker
  needs an explicit ``--kv-transfer-config`` ("the default is no longer nixl"; ``kv_producer`` / ``kv_consumer``
  as the wheel's profiler writes them); KV events are published only with ``--kv-events-config``.
  ``dynamo/frontend``: HTTP port 8000 (``DYN_HTTP_PORT``), ``DYN_ROUTER_MODE=kv``. The event plane
  (``DYN_EVENT_PLANE``) defaults to zmq "for all discovery backends"; set explicitly here. vLLM 0.31.0.
- **The operator (Go, ai-dynamo/dynamo through the code index; commits of unknown release, runtime gates
  up to 1.6):** ``internal/dynamo/graph.go`` @003d1ee5: the frontend Service is ``<graph>-<component name
  lower-cased>`` on port 8000 (``http``); the user's podTemplate spec is merged over the operator's base
  (resourceClaims, tolerations, nodeSelector, volumes and the ``main`` container's resources, claims
  included, are kept); ``podTemplate.metadata.labels`` are kept; a pod securityContext set by the user
  replaces the operator's default (``fsGroup: 1000``); ``sharedMemorySize`` (component level, default 8Gi)
  becomes a memory-backed ``/dev/shm``; the operator injects ``DYN_DISCOVERY_BACKEND=kubernetes``.
  ``ResolveGPUCount`` counts GPUs from ``nvidia.com/gpu`` or, without it, from the DRA claims.
- **The platform chart:** rendered by Helm from ``shared/upstream/chart-archives/dynamo-platform-1.6.1.tgz``,
  upstream ``main`` of 2026-08-21 packaged as 1.6.1 (``shared/upstream/DYNAMO.md``): not the release itself,
  which the plan says.
- **The CRD:** applied at run time by the operator's ``crd-apply`` init container from the operator image;
  the graph is validated against ``shared/upstream/crds/nvidia.com_dynamographdeployments.yaml``, the same
  2026-08-21 snapshot.

The runtime's own network (ports, the variables that fix them, which pod calls which): ``dynamo_runtime``.

Not verified on a cluster: the operator's handling of the DRA NIC claims in a real pod, and the runtime
image's user (the frontend is therefore not claimed non-root).
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

from ..core import models, pins
from ..core.endpoints import DYNAMO_FRONTEND_PORT, INSTANCE_LABEL, dynamo_component_service
from ..core.errors import FieldProblem
from ..core.hub_access import missing_token_problem, missing_token_warning
from ..core.labels import NVIDIA_GPU
from ..core.security import restricted_container
from ..gpu.pod_contract import full_node_gpu_problems, full_node_gpu_template
from . import dynamo_runtime as runtime
from .dynamo_args import DynamoInferenceArgs, DynamoPlacement, DynamoSecrets, DynamoWorkerArgs

if TYPE_CHECKING:
    from ..gpu.pod_contract import RdmaPodSpec

DYNAMO_VERSION = pins.chart("dynamo-platform").version
CHART_REPO = pins.chart("dynamo-platform").repository
"""The NGC Helm repository whose ``charts/<chart>-<version>.tgz`` the install guide fetches. Used as a Helm
repository (``repository_opts``) so the planner finds the chart by name and version; that NGC serves an
``index.yaml`` there is NOT verified offline."""
OPERATOR_IMAGE = pins.image_pin("dynamo-operator").name
API_VERSION = pins.api_version("DynamoGraphDeployment")
KIND = "DynamoGraphDeployment"
FRONTEND_PORT = DYNAMO_FRONTEND_PORT
"""The frontend's OpenAI HTTP port (``dynamo.frontend --http-port`` default, ``DYN_HTTP_PORT``; the operator's
frontend Service port)."""
MAIN_CONTAINER = "main"
"""The container the operator injects its defaults into; every other container is a sidecar."""
COMPONENTS = {"frontend": "frontend", "prefill": "prefill", "decode": "decode"}
"""``spec.components[].name`` per role; the component ``type`` is the role itself."""
NIXL_KV_TRANSFER = {
    "prefill": {"kv_connector": "NixlConnector", "kv_role": "kv_producer"},
    "decode": {"kv_connector": "NixlConnector", "kv_role": "kv_consumer"},
}
"""vLLM's KV connector per role: 1.6.1 no longer defaults to NIXL, and a prefill worker without one refuses to start."""
KV_EVENTS = {"publisher": "zmq", "topic": "kv-events", "endpoint": "tcp://*:20080", "enable_kv_cache_events": True}
"""vLLM publishes its KV-cache events here; the worker relays them to the frontend's KV router. Without it
the router has no events to route on (vLLM publishes none by default)."""
EVENT_PLANE = {"DYN_EVENT_PLANE": "zmq"}
"""KV events travel over ZMQ between the pods, not NATS: the platform installs no NATS. Explicit because the
chart's comments still say NATS is the default."""
FRONTEND_ENV = {"DYN_ROUTER_MODE": "kv", **EVENT_PLANE}
WORKER_ENV = dict(EVENT_PLANE)
MODEL_CACHE = "/model-cache"
"""Where the workers' weights cache is mounted and ``HF_HOME`` points (as in Dynamo's AKS recipes,
recipes/qwen3-32b/vllm/cloud-providers/deploy-aks-ib.yaml: ``HF_HOME=/model-cache``)."""
CACHE_HEADROOM = 1.25
"""The cache holds the checkpoint plus tokenizer, config and the partial files of a download in progress."""
GIB = 2**30
ROLE_LABEL = runtime.ROLE_LABEL


def chart_url(chart: str, version: str) -> str:
    """The chart archive of ``chart`` (``dynamo-crds`` or ``dynamo-platform``) at ``version``."""
    return f"{CHART_REPO}/charts/{chart}-{version}.tgz"


def platform_values(args: DynamoInferenceArgs) -> dict[str, Any]:
    """Values of ``dynamo-platform``: the operator at the pinned tag, restricted, applying its CRDs itself;
    no etcd (discovery through the Kubernetes API), no NATS (KV events over ZMQ), no Grove or KAI."""
    p = args.platform
    values: dict[str, Any] = {
        # The chart refuses the pre-1.4 keys nats.enabled, etcd.enabled ... (templates/validate-values.yaml).
        "global": {
            "etcd": {"install": False},
            "nats": {"install": False},
            "grove": {"install": False, "enabled": False},
            "kai-scheduler": {"install": False, "enabled": False},
        },
        "dynamo-operator": {
            "enabled": True,
            # The operator's crd-apply init container installs the nvidia.com CRDs; the chart has no crds/.
            "upgradeCRD": True,
            "discoveryBackend": "kubernetes",
            "controllerManager": {
                "manager": {
                    "image": {"repository": OPERATOR_IMAGE, "tag": p.chart_version},
                    # The chart's default lacks a seccomp profile, which Pod Security "restricted" requires;
                    # this map replaces the chart's whole (also the crd-apply init container's).
                    "containerSecurityContext": {
                        **restricted_container(read_only_root=False),
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                },
            },
        },
    }
    return _merge(values, p.extra_values)


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        out[key] = _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def pod_labels(args: DynamoInferenceArgs, role: str) -> dict[str, str]:
    """The labels we put on a role's pods (``podTemplate.metadata.labels``, which the operator keeps);
    ``{INSTANCE_LABEL: name, ROLE_LABEL: role}``."""
    return {INSTANCE_LABEL: args.name, ROLE_LABEL: role}


def worker_args(args: DynamoInferenceArgs, role: str) -> list[str]:
    """The ``dynamo.vllm`` arguments of a prefill or decode worker."""
    w: DynamoWorkerArgs = getattr(args, role)
    out = ["--model", args.model, "--served-model-name", served_model_name(args), "--disaggregation-mode", role]
    out += ["--tensor-parallel-size", str(w.tensor_parallel_size), "--gpu-memory-utilization", str(w.gpu_memory_utilization)]
    if w.max_model_len:
        out += ["--max-model-len", str(w.max_model_len)]
    out += ["--kv-transfer-config", _json(NIXL_KV_TRANSFER[role]), "--kv-events-config", _json(KV_EVENTS)]
    return out + list(w.extra_args)


def _json(value: dict[str, Any]) -> str:
    return json.dumps(value, separators=(",", ":"))


def served_model_name(args: DynamoInferenceArgs) -> str:
    return args.served_model_name or args.model


def _env(values: dict[str, str]) -> list[dict[str, str]]:
    return [{"name": k, "value": v} for k, v in values.items()]


def _frontend(args: DynamoInferenceArgs) -> dict[str, Any]:
    """The CPU frontend: OpenAI HTTP server and KV router, non-privileged, on the CPU pools."""
    main = {
        "name": MAIN_CONTAINER,
        "image": args.runtime_image,
        "command": ["python3"],
        "args": ["-m", "dynamo.frontend"],
        "env": _env(FRONTEND_ENV) + runtime.frontend_env(),
        "resources": {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"cpu": "2", "memory": "4Gi"}},
        # The runtime image's user is not verified here, so runAsNonRoot is not claimed; nothing else is granted.
        "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
    }
    return {
        "name": COMPONENTS["frontend"],
        "type": "frontend",
        "replicas": args.frontend_replicas,
        "podTemplate": {
            "metadata": {"labels": pod_labels(args, "frontend")},
            # Setting a securityContext stops the operator adding its own (fsGroup 1000 only): keep that one.
            "spec": {"securityContext": {"fsGroup": 1000, "seccompProfile": {"type": "RuntimeDefault"}}, "containers": [main]},
        },
    }


def _worker(args: DynamoInferenceArgs, role: str, contract: RdmaPodSpec, hf_secret: str | None) -> dict[str, Any]:
    """A worker role on the RDMA pool: the pod contract (NIC claims, IPC_LOCK, UCX/NCCL env, placement) in
    its ``podTemplate``, the node's GPUs as ``nvidia.com/gpu`` or the DRA GPU claim the contract carries."""
    w: DynamoWorkerArgs = getattr(args, role)
    resources: dict[str, Any] = {}
    if "gpus" not in contract.claims:
        resources["limits"] = {NVIDIA_GPU: str(w.tensor_parallel_size)}
    main = {
        "name": MAIN_CONTAINER,
        "image": args.runtime_image,
        "workingDir": "/workspace/examples/backends/vllm",
        "command": ["python3", "-m", "dynamo.vllm"],
        "args": worker_args(args, role),
        "env": _env({**WORKER_ENV, "HF_HOME": MODEL_CACHE}) + runtime.worker_env(),
        **({"envFrom": [{"secretRef": {"name": hf_secret}}]} if hf_secret else {}),
        "resources": resources,
        "volumeMounts": [{"name": "model-cache", "mountPath": MODEL_CACHE}],
    }
    volume = {"name": "model-cache", "persistentVolumeClaim": {"claimName": model_cache_name(args)}}
    spec = contract.apply({"containers": [main], "volumes": [volume]})
    return {
        "name": COMPONENTS[role],
        "type": role,
        "replicas": w.replicas,
        # The operator mounts this much memory-backed /dev/shm (default 8Gi); NCCL across 8 GPUs wants more.
        "sharedMemorySize": f"{max(8, 4 * w.tensor_parallel_size)}Gi",
        "podTemplate": {"metadata": {"labels": pod_labels(args, role)}, "spec": spec},
    }


def graph_deployment(args: DynamoInferenceArgs, namespace: str, contract: RdmaPodSpec, hub_token: bool = True) -> dict[str, Any]:
    """The ``DynamoGraphDeployment``: frontend (KV router) plus prefill and decode workers over NIXL; the workers read
    ``HF_TOKEN`` from the Secret ``hf_secret_name`` when there is a ``hub_token``."""
    secret = hf_secret_name(args) if hub_token else None
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": args.name, "namespace": namespace, "labels": {INSTANCE_LABEL: args.name}},
        "spec": {
            "backendFramework": "vllm",
            "components": [
                _frontend(args),
                _worker(args, "prefill", contract, secret),
                _worker(args, "decode", contract, secret),
            ],
        },
    }


def _facts_or_none(model: str) -> models.ModelFactsArgs | None:
    try:
        return models.resolve(model)
    except ValueError:  # an unknown model: refused below with the catalog's close ids
        return None


def hub_token_warning(args: DynamoInferenceArgs, secrets: DynamoSecrets) -> str | None:
    """A warning when the workers download without a token and the catalog cannot say the model is open."""
    return missing_token_warning(args.model, _facts_or_none(args.model)) if secrets.hf_token is None else None


def hf_secret_name(args: DynamoInferenceArgs) -> str:
    return f"{args.name}-hf-token"


def model_cache_name(args: DynamoInferenceArgs) -> str:
    return f"{args.name}-model-cache"


def checkpoint_gib(args: DynamoInferenceArgs) -> float:
    """The model's weights as published, in GiB (the catalog's weight bytes: 131.5 GiB for a 70B model in bf16)."""
    return models.resolve(args.model).weight_bytes("auto") / GIB


def model_cache_gib(args: DynamoInferenceArgs) -> int:
    """The cache claim's size: the explicit one, else the checkpoint plus headroom, at least 100 GiB."""
    return args.model_cache.size_gib or max(100, math.ceil(checkpoint_gib(args) * CACHE_HEADROOM))


def model_cache_claim(args: DynamoInferenceArgs, namespace: str) -> dict[str, Any]:
    """The PersistentVolumeClaim the workers keep the weights in (metadata and spec)."""
    cache = args.model_cache
    return {
        "metadata": {"name": model_cache_name(args), "namespace": namespace, "labels": {INSTANCE_LABEL: args.name}},
        "spec": {
            "accessModes": [cache.access_mode],
            "storageClassName": cache.storage_class,
            "resources": {"requests": {"storage": f"{model_cache_gib(args)}Gi"}},
        },
    }


def frontend_service(args: DynamoInferenceArgs) -> str:
    """The Service the operator makes for the frontend: ``<graph>-<component name, lower-cased>``."""
    return dynamo_component_service(args.name, COMPONENTS["frontend"])


# ---- checks -------------------------------------------------------------------------------------


def gpu_claim_template(placement: DynamoPlacement) -> str | None:
    """The DRA claim template for all of a node's GPUs, or None when the device plugin hands them out."""
    return full_node_gpu_template(placement.pool.pool_name) if placement.gpu_claims is not None else None


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
    problems = full_node_gpu_problems("placement.gpu_claims", placement.gpu_claims, pool.pool_name, rdma.namespace)
    if pool.pool_name not in rdma.nics:
        problems.append(FieldProblem("placement.pool", pool.pool_name, "not an RDMA pool of the given RdmaNetwork"))
    if pool.gpu_resource_name != NVIDIA_GPU:
        problem = f"Dynamo's resources.limits.gpu is {NVIDIA_GPU}; pool {pool.pool_name} gives {pool.gpu_resource_name}"
        problems.append(FieldProblem("placement.pool", pool.pool_name, problem))
    if args.platform.namespace == rdma.namespace:
        problem = f"{rdma.namespace!r} is the privileged RDMA namespace; run the operator elsewhere"
        problems.append(FieldProblem("platform.namespace", args.platform.namespace, problem))
    if secrets.hf_token is None and (problem := missing_token_problem(args.model, _facts_or_none(args.model))):
        problems.append(FieldProblem("hf_token", None, problem))
    nodes = args.prefill.replicas + args.decode.replicas
    if nodes > pool.max_nodes:
        problems.append(
            FieldProblem("replicas", nodes, f"prefill + decode take one node each; {pool.pool_name} has at most {pool.max_nodes}")
        )
    try:
        models.resolve(args.model)
    except ValueError as err:
        return [*problems, FieldProblem("model", args.model, str(err).replace("\n", " "))]
    problems += _model_cache_problems(args, nodes)
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


def _model_cache_problems(args: DynamoInferenceArgs, nodes: int) -> list[FieldProblem]:
    cache, problems = args.model_cache, []
    if cache.access_mode == "ReadWriteOnce" and nodes > 1:
        why = f"a ReadWriteOnce claim attaches to one node; the {nodes} workers take one node each: use ReadWriteMany"
        problems.append(FieldProblem("model_cache.access_mode", "ReadWriteOnce", why))
    if cache.size_gib and cache.size_gib < checkpoint_gib(args):
        why = f"smaller than the checkpoint of {args.model} ({checkpoint_gib(args):.1f} GiB)"
        problems.append(FieldProblem("model_cache.size_gib", cache.size_gib, why))
    return problems
