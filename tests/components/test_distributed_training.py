"""DistributedTraining under mocks: the KubeRay operator (chart 1.7.0, namespaced, restricted) and a RayJob
whose GPU workers carry the RDMA pod contract plus NCCL_NET=IB on a full ND H100 node each, whose
head stays on the CPU pool, that waits for the qualification gates and checkpoints to the model store
through workload identity; seed 002 scenario B (4 x ND96isr_H100_v5, 48 h) for the cost."""

from __future__ import annotations

import copy
import dataclasses
from datetime import date
from types import SimpleNamespace

import kubernetes_validate
import pulumi
import pytest
import yaml

from aks_gpu_inference.components import (
    AksCluster,
    DraDeviceClasses,
    GpuNodePool,
    ModelStore,
    NvidiaDevicePlugin,
    QualificationGates,
    RdmaNetwork,
    WorkloadIdentity,
)
from aks_gpu_inference.components._base import ComponentInputError
from aks_gpu_inference.components.azure.workload_identity import BUILT_IN_ROLES
from aks_gpu_inference.components.context import AzureScope
from aks_gpu_inference.components.core import catalog
from aks_gpu_inference.components.training import CheckpointStore, DistributedTraining, TrainingWorkers, training_cost
from aks_gpu_inference.components.training.distributed_training_args import DistributedTrainingArgs
from aks_gpu_inference.components.training.ray_manifests import OPERATOR_REPO, operator_values
from aks_gpu_inference.components.training.training_checks import distributed_training_problems
from aks_gpu_inference.planner import claims, deploy
from aks_gpu_inference.planner.analyzer import analyze
from aks_gpu_inference.planner.engine.program import PlaceholderMocks, RecordingMonitor
from aks_gpu_inference.planner.engine.values import kubernetes_object
from aks_gpu_inference.planner.inputs.upstream import crds_dir, missing_reason, upstream_dir
from aks_gpu_inference.planner.kube.crd_files import crd_index
from aks_gpu_inference.planner.kube.crd_schema import validate_object
from tests.components.gpu_pools import A100, H100, pool_facts
from tests.conftest import expand_charts, one, render_pinned, run_components

SCENARIO_B = {
    "name": "frontier-ft",
    "entrypoint": "python -m train --config /app/frontier.yaml",
    "image": "rayproject/ray:2.52.0-py311-cu128",
    "workers": 4,
    "hours": 48,
}
"""Seed 002 scenario B: a 48-hour fine-tuning run on 4 x Standard_ND96isr_H100_v5 over InfiniBand."""
NAMESPACE = "llm-d-infra"
AGENTPOOL = "kubernetes.azure.com/agentpool"
SKU_GPU = {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
SPOT = {"key": "kubernetes.azure.com/scalesetpriority", "operator": "Equal", "value": "spot", "effect": "NoSchedule"}
PLATFORM = {"aks-gpu-inference/pool": "platform"}
CONTRIBUTOR_GUID = "ba92f5b4-2d11-453d-a403-e96b0029c9fe"
needs_upstream = pytest.mark.skipif(upstream_dir() is None, reason=missing_reason() if upstream_dir() is None else "")


# ---- building -----------------------------------------------------------------------------------


class OptionsMonitor(RecordingMonitor):
    """Also keeps the replacement options the recording monitor drops."""

    def __init__(self):
        super().__init__(PlaceholderMocks())
        self.replacement: dict[str, tuple[list[str], bool]] = {}

    def RegisterResource(self, request):
        response = super().RegisterResource(request)
        self.replacement[request.name] = (list(request.replaceOnChanges), request.deleteBeforeReplace)
        return response


def training_program(holder: dict, args: dict, *, spot: bool = False, dra: bool = False, gates: bool = True, **pool):
    """An AKS cluster (for its platform pool), a 4-node H100 RDMA pool (Spot when asked), the device plugin or
    DRA, DRANET, the gates, the model store and the trainer's identity, then the DistributedTraining."""

    def program():
        cluster = AksCluster("aks", {"name": "aks-test"}, scope=AzureScope("rg-test", "eastus")).context
        spot_args = {"spot": True, "spot_max_price": pool.pop("spot_max_price", -1)} if spot else {}
        gpus = GpuNodePool(
            "h100", {"name": "h100", "vm_size": H100, "rdma": True, "count": 4, **spot_args, **pool}, cluster=cluster
        )
        network = RdmaNetwork("rdma", {}, pools=[gpus], cluster=cluster)
        after_network = pulumi.ResourceOptions(depends_on=[network])
        classes = None
        if dra:
            settings = {"namespace": NAMESPACE, "create_namespace": False, "gpu_counts": [1, 8]}
            classes = DraDeviceClasses("dra", settings, opts=after_network, pools=[gpus], cluster=cluster)
        else:
            NvidiaDevicePlugin("nvidia-device-plugin", {}, pools=[gpus], cluster=cluster)
        qualify = None
        if gates:
            qualify = QualificationGates(
                "qualify", {"pool": "h100"}, opts=after_network, network=network, cluster=cluster, gpu_claims=classes
            )
        store = ModelStore("models", {"account_name": "gpumodels01"}, scope=cluster.scope)
        identity = WorkloadIdentity("trainer", {"namespace": NAMESPACE, "service_account": "trainer"}, cluster=cluster)
        holder["training"] = DistributedTraining(
            "train",
            args,
            cluster=cluster,
            workers=TrainingWorkers(gpus, network, classes, spot_max_price=spot_args.get("spot_max_price")),
            checkpoints=CheckpointStore(store, identity),
            gates=qualify,
        )

    return program


def build(args: dict | None = None, monitor: RecordingMonitor | None = None, **options):
    holder: dict = {}
    run = run_components(training_program(holder, {**SCENARIO_B, **(args or {})}, **options), monitor=monitor)
    return holder["training"], run


@pytest.fixture(scope="module")
def monitor() -> OptionsMonitor:
    return OptionsMonitor()


@pytest.fixture(scope="module")
def scenario_b(monitor):
    """Seed 002 scenario B with every other setting at its default, on-demand, GPUs from the device plugin."""
    return build(monitor=monitor)


@pytest.fixture(scope="module")
def spot_build():
    return build({"name": "frontier-spot", "spot": True}, spot=True, spot_max_price=30.0)


@pytest.fixture(scope="module")
def dra_build():
    return build(dra=True)


def ray_job(run) -> dict:
    return kubernetes_object(one(run, "ray.io/v1:RayJob"))


def cluster_spec(run) -> dict:
    return ray_job(run)["spec"]["rayClusterSpec"]


def worker_pod(run) -> dict:
    (group,) = cluster_spec(run)["workerGroupSpecs"]
    return group["template"]["spec"]


def head_pod(run) -> dict:
    return cluster_spec(run)["headGroupSpec"]["template"]["spec"]


def env_of(container: dict) -> dict[str, str]:
    return {e["name"]: e["value"] for e in container["env"]}


def urn_of(run, suffix: str, name: str) -> str:
    return next(r.urn for r in run.resources if r.type.endswith(suffix) and r.name == name)


# ---- the operator -------------------------------------------------------------------------------


def test_operator_chart_is_pinned_namespaced_and_restricted(scenario_b):
    _, run = scenario_b
    chart = next(r for r in run.resources if r.name == "train-kuberay")
    assert chart.type == "kubernetes:helm.sh/v4:Chart"
    assert (chart.inputs["chart"], chart.inputs["version"]) == ("kuberay-operator", "1.7.0")
    assert chart.inputs["repositoryOpts"] == {"repo": OPERATOR_REPO}
    assert chart.inputs["namespace"] == "kuberay-system"
    assert chart.inputs["values"] == {
        "image": {"repository": "quay.io/kuberay/operator", "tag": "v1.7.0", "pullPolicy": "IfNotPresent"},
        "singleNamespaceInstall": True,
        "watchNamespace": [NAMESPACE],
        "podSecurityContext": {
            "runAsNonRoot": True,
            "runAsUser": 65532,
            "runAsGroup": 65532,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "resources": {"requests": {"cpu": "100m", "memory": "512Mi"}, "limits": {"memory": "512Mi"}},
        "nodeSelector": PLATFORM,
    }
    namespace = next(r for r in run.resources if r.name == "train-operator-namespace")
    assert namespace.inputs["metadata"] == {
        "name": "kuberay-system",
        "labels": {"pod-security.kubernetes.io/enforce": "restricted"},
    }
    assert chart.options["dependsOn"] == [namespace.urn]
    assert chart.parent == one(run, "aks-gpu:index:DistributedTraining").urn


def test_operator_values_are_read_by_the_pinned_chart():
    """kuberay-operator 1.7.0 has no values.schema.json: its values.yaml and templates decide what Helm reads.
    watchNamespace is only a comment in values.yaml, yet the templates read it; a misspelt key is caught."""
    values = operator_values(DistributedTrainingArgs(**SCENARIO_B), NAMESPACE)
    assert render_pinned("kuberay-operator", "1.7.0", values, "train-kuberay", "kuberay-system").values_problems == []
    misspelt = render_pinned("kuberay-operator", "1.7.0", {**values, "watchNamespaces": []}, "train-kuberay", "kuberay-system")
    assert misspelt.values_problems == [
        "values.watchNamespaces: not a value of kuberay-operator 1.7.0 (neither its values.yaml nor a template reads it)"
    ]


def test_the_chart_renders_a_namespaced_operator_watching_the_rdma_namespace():
    values = operator_values(DistributedTrainingArgs(**SCENARIO_B), NAMESPACE)
    render = render_pinned("kuberay-operator", "1.7.0", values, "train-kuberay", "kuberay-system")
    kinds = sorted((o["kind"], o["metadata"].get("namespace")) for o in render.objects)
    assert ("ClusterRole", None) not in kinds, "singleNamespaceInstall: Roles only"
    assert ("Role", NAMESPACE) in kinds and ("RoleBinding", NAMESPACE) in kinds, "the operator's rights in the watched namespace"
    assert {c.kind for c in render.crds} == {"RayCluster", "RayJob", "RayService", "RayCronJob"}
    (deployment,) = [o for o in render.objects if o["kind"] == "Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    assert pod["securityContext"] == values["podSecurityContext"] and pod["nodeSelector"] == PLATFORM
    (container,) = pod["containers"]
    assert container["image"] == "quay.io/kuberay/operator:v1.7.0"
    assert container["args"][:2] == ["--watch-namespace", NAMESPACE]
    for obj in render.objects:
        if obj["kind"] != "CustomResourceDefinition":
            kubernetes_validate.validate(obj, "1.35", strict=True)


# ---- the RayJob ---------------------------------------------------------------------------------


def test_rayjob_runs_in_the_rdma_namespace_after_gates_operator_account_and_grant(scenario_b, monitor):
    _, run = scenario_b
    job = one(run, "ray.io/v1:RayJob")
    assert ray_job(run)["metadata"] == {
        "name": "frontier-ft",
        "namespace": NAMESPACE,
        "labels": {"aks-gpu-inference/training": "frontier-ft"},
    }
    waits = set(job.options["dependsOn"])
    gate_jobs = {r.urn for r in run.resources if r.type == "kubernetes:batch/v1:Job" and r.name.startswith("qualify-gate-")}
    assert len(gate_jobs) == 6 and gate_jobs <= waits, "the job starts only after every gate Job completed"
    assert urn_of(run, "helm.sh/v4:Chart", "train-kuberay") in waits, "the RayJob CRD ships in the chart"
    assert urn_of(run, "core/v1:ServiceAccount", "train-sa") in waits
    assert urn_of(run, "authorization:RoleAssignment", "trainer-models-write") in waits
    assert urn_of(run, "resource.k8s.io/v1:ResourceClaimTemplate", "rdma-h100-rdma-full-node") in waits
    assert monitor.replacement["train-rayjob"] == (["spec"], True), "KubeRay ignores spec changes: a change is a new run"


def test_rayjob_without_gates_does_not_wait_for_any():
    _, run = build({"name": "ungated"}, gates=False)
    assert not [r for r in run.resources if "QualificationGates" in r.type]
    waits = set(one(run, "ray.io/v1:RayJob").options["dependsOn"])
    assert not [u for u in waits if "QualificationGates" in u or ":batch/v1:Job::" in u], waits
    assert urn_of(run, "helm.sh/v4:Chart", "train-kuberay") in waits, "it still waits for the operator's chart"


def test_job_entrypoint_image_runtime_env_and_retries_are_the_args():
    runtime_env = {"env_vars": {"RAY_TRAIN_V2_ENABLED": "1"}, "working_dir": "https://example.com/code.zip"}
    _, run = build({"name": "with-env", "runtime_env": runtime_env, "backoff_limit": 5, "active_deadline_hours": 60})
    spec = ray_job(run)["spec"]
    assert spec["entrypoint"] == SCENARIO_B["entrypoint"]
    assert yaml.safe_load(spec["runtimeEnvYAML"]) == runtime_env
    assert (spec["submissionMode"], spec["backoffLimit"], spec["activeDeadlineSeconds"]) == ("K8sJobMode", 5, 60 * 3600)
    assert spec["shutdownAfterJobFinishes"] is True and spec["ttlSecondsAfterFinished"] == 300
    cluster = spec["rayClusterSpec"]
    assert (cluster["rayVersion"], cluster["enableInTreeAutoscaling"]) == ("2.52.0", False)
    images = {
        c["image"]
        for t in (cluster["headGroupSpec"], cluster["workerGroupSpecs"][0], spec["submitterPodTemplate"])
        for c in (t.get("template") or t)["spec"]["containers"]
    }
    assert images == {SCENARIO_B["image"]}


def test_default_deadline_is_one_and_a_half_times_the_run_and_no_runtime_env(scenario_b):
    _, run = scenario_b
    spec = ray_job(run)["spec"]
    assert spec["activeDeadlineSeconds"] == 72 * 3600 and spec["backoffLimit"] == 3
    assert "runtimeEnvYAML" not in spec


def test_workers_fill_four_rdma_nodes_through_the_contract(scenario_b):
    _, run = scenario_b
    (group,) = cluster_spec(run)["workerGroupSpecs"]
    assert (group["replicas"], group["minReplicas"], group["maxReplicas"], group["numOfHosts"]) == (4, 4, 4, 1)
    assert group["rayStartParams"] == {"object-store-memory": str(32 * 2**30)}, "half of the 64 GiB /dev/shm"
    pod = group["template"]["spec"]
    container = pod["containers"][0]
    assert container["name"] == "ray-worker", "KubeRay's Ray container is containers[0]"
    assert pod["resourceClaims"] == [{"name": "rdma-nics", "resourceClaimTemplateName": "h100-rdma-full-node"}]
    assert container["resources"] == {
        "requests": {"cpu": "81", "memory": "1520Gi", "nvidia.com/gpu": 8},
        "limits": {"memory": "1520Gi", "nvidia.com/gpu": 8},
        "claims": [{"name": "rdma-nics"}],
    }
    context = container["securityContext"]
    assert context["capabilities"] == {"drop": ["ALL"], "add": ["IPC_LOCK"]}
    assert context["allowPrivilegeEscalation"] is False and "privileged" not in context
    assert context["runAsUser"] == 0, "added capabilities reach only root processes"
    env = env_of(container)
    assert (env["UCX_TLS"], env["NCCL_IB_DISABLE"], env["NCCL_NET_GDR_LEVEL"]) == ("rc_x,cuda_copy,cuda_ipc,self", "0", "5")
    assert pod["nodeSelector"] == {AGENTPOOL: "h100"} and pod["tolerations"] == [SKU_GPU]
    assert {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "64Gi"}} in pod["volumes"]
    assert {"name": "dshm", "mountPath": "/dev/shm"} in container["volumeMounts"]
    (term,) = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    labels = group["template"]["metadata"]["labels"]
    assert term["labelSelector"]["matchLabels"].items() <= labels.items()
    assert labels["azure.workload.identity/use"] == "true" and pod["serviceAccountName"] == "trainer"


def test_head_and_submitter_stay_on_the_cpu_pool_restricted(scenario_b):
    _, run = scenario_b
    head = cluster_spec(run)["headGroupSpec"]
    assert head["rayStartParams"] == {"num-cpus": "0"}
    pod = head["template"]["spec"]
    assert pod["nodeSelector"] == PLATFORM and "tolerations" not in pod
    (container,) = pod["containers"]
    assert container["resources"] == {"requests": {"cpu": "2", "memory": "8Gi"}, "limits": {"memory": "8Gi"}}, "no GPU"
    assert pod["securityContext"]["runAsNonRoot"] is True and container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert head["template"]["metadata"]["labels"]["azure.workload.identity/use"] == "true", "the driver writes run state too"
    submitter = ray_job(run)["spec"]["submitterPodTemplate"]["spec"]
    assert submitter["nodeSelector"] == PLATFORM and submitter["restartPolicy"] == "Never"
    assert "command" not in submitter["containers"][0], "KubeRay fills in ray job submit"


def test_checkpoints_go_to_the_store_through_workload_identity(scenario_b):
    training, run = scenario_b
    expected = {
        "TRAINING_RUN_NAME": "frontier-ft",
        "CHECKPOINT_URI": "az://models/checkpoints/frontier-ft",
        "CHECKPOINT_STORAGE_PATH": "models/checkpoints/frontier-ft",
        "CHECKPOINT_INTERVAL_SECONDS": "1800",
        "AZURE_STORAGE_ACCOUNT_NAME": "gpumodels01",
    }
    for pod in (head_pod(run), worker_pod(run)):
        assert expected.items() <= env_of(pod["containers"][0]).items()
    assert not any("KEY" in name or "SAS" in name for name in env_of(worker_pod(run)["containers"][0]))
    assert training.checkpoint_uri == expected["CHECKPOINT_URI"]
    account = kubernetes_object(next(r for r in run.resources if r.name == "train-sa"))
    assert account["metadata"]["name"] == "trainer" and account["metadata"]["namespace"] == NAMESPACE
    assert set(account["metadata"]["annotations"]) == {"azure.workload.identity/client-id"}
    assert account["automountServiceAccountToken"] is False
    grant = next(r for r in run.resources if r.name == "trainer-models-write").inputs
    assert (
        grant["roleDefinitionId"].endswith(f"/roleDefinitions/{CONTRIBUTOR_GUID}")
        and BUILT_IN_ROLES["Storage Blob Data Contributor"] == CONTRIBUTOR_GUID
    )
    assert grant["scope"].endswith("/blobServices/default/containers/models")
    assert grant["conditionVersion"] == "2.0"
    condition = grant["condition"]
    assert "blobs:path] StringStartsWith 'checkpoints/frontier-ft/'" in condition
    assert all(f"containers/blobs/{action}'" in condition for action in ("write", "add/action", "delete", "move/action"))
    assert "blobs/read'" not in condition, "reads stay container-wide (base weights, other runs' checkpoints)"


def test_grant_write_without_a_prefix_has_no_condition_and_refuses_a_bad_one():
    holder: dict = {}

    def program():
        cluster = AksCluster("aks", {"name": "aks-test"}, scope=AzureScope("rg-test", "eastus")).context
        store = ModelStore("models", {"account_name": "gpumodels01"}, scope=cluster.scope)
        identity = WorkloadIdentity("writer", {"namespace": "apps", "service_account": "writer"}, cluster=cluster)
        store.grant_write(identity)
        for bad in ("/abs", "a'b"):
            try:
                store.grant_write(identity, prefix=bad)
            except ValueError as err:
                holder.setdefault("errors", []).append(str(err))

    run = run_components(program)
    grant = next(r for r in run.resources if r.name == "writer-models-write").inputs
    assert "condition" not in grant and grant["roleDefinitionId"].endswith(CONTRIBUTOR_GUID)
    assert len(holder["errors"]) == 2 and all("prefix=" in e for e in holder["errors"])


def test_spot_workers_tolerate_the_spot_taint_and_checkpoint(spot_build):
    training, run = spot_build
    pod = worker_pod(run)
    assert SPOT in pod["tolerations"] and SKU_GPU in pod["tolerations"]
    assert SPOT not in head_pod(run).get("tolerations", []), "the head never goes to Spot"
    assert ray_job(run)["spec"]["backoffLimit"] == 3
    assert env_of(pod["containers"][0])["CHECKPOINT_INTERVAL_SECONDS"] == "1800"
    spot_row = training.cost.rows[1]
    assert (spot_row.label, spot_row.usd_per_node_hour, spot_row.total_usd) == ("Spot (at most)", 30.0, 30.0 * 4 * 48)


def test_dra_gpus_are_claimed_and_declared_to_ray(dra_build):
    _, run = dra_build
    (group,) = cluster_spec(run)["workerGroupSpecs"]
    pod = group["template"]["spec"]
    assert {"name": "gpus", "resourceClaimTemplateName": "h100-gpus-full-node"} in pod["resourceClaims"]
    resources = pod["containers"][0]["resources"]
    assert "nvidia.com/gpu" not in resources["requests"] and {"name": "gpus"} in resources["claims"]
    assert group["rayStartParams"]["num-gpus"] == "8", "KubeRay counts GPUs from resource limits only"


def test_outputs_and_cost_attribute(scenario_b):
    training, run = scenario_b
    assert training.job_name == "frontier-ft" and training.namespace == NAMESPACE
    assert training.status_command.startswith(f"kubectl -n {NAMESPACE} get rayjob frontier-ft")
    assert training.cost == training_cost(DistributedTrainingArgs(**SCENARIO_B), catalog.get_sku(H100))
    component = one(run, "aks-gpu:index:DistributedTraining")
    assert one(run, "ray.io/v1:RayJob").parent == component.urn


# ---- validated the way the API server and the policy pack see it ---------------------------------


@pytest.mark.skipif(crds_dir() is None, reason=missing_reason())
@pytest.mark.parametrize("built", ["scenario_b", "spot_build", "dra_build"])
def test_rayjob_and_its_raycluster_match_the_kuberay_crds(request, built):
    _, run = request.getfixturevalue(built)
    index = crd_index(crds_dir())
    job = ray_job(run)
    result = validate_object(index, job)
    assert result is not None and result.errors == [] and result.unchecked_rules == []
    cluster = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": dict(job["metadata"]),
        "spec": job["spec"]["rayClusterSpec"],
    }
    result = validate_object(index, cluster)
    assert result is not None and result.errors == []


@pytest.mark.parametrize("built", ["scenario_b", "spot_build", "dra_build"])
def test_built_in_objects_and_the_pod_templates_validate_strictly(request, built):
    _, run = request.getfixturevalue(built)
    training = one(run, "aks-gpu:index:DistributedTraining").urn
    mine = [r for r in run.resources if r.parent == training and r.type.startswith("kubernetes:core/")]
    assert {r.type for r in mine} == {"kubernetes:core/v1:Namespace", "kubernetes:core/v1:ServiceAccount"}
    for resource in mine:
        kubernetes_validate.validate(kubernetes_object(resource), "1.35", strict=True)
    job = ray_job(run)
    templates = [job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"], job["spec"]["submitterPodTemplate"]]
    templates += [g["template"] for g in job["spec"]["rayClusterSpec"]["workerGroupSpecs"]]
    for template in templates:
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": NAMESPACE, **template["metadata"]},
            "spec": template["spec"],
        }
        kubernetes_validate.validate(pod, "1.35", strict=True)


@pytest.mark.parametrize("built", ["scenario_b", "spot_build", "dra_build"])
def test_policy_pack_has_no_objection_to_the_job_or_the_operator(request, built):
    _, run = request.getfixturevalue(built)
    expanded, _ = expand_charts(run)
    verdicts = analyze(expanded)
    assert [v for v in verdicts if v.mandatory] == []
    mine = {r.urn for r in expanded.resources if "DistributedTraining" in r.urn}
    assert [v for v in verdicts if v.urn in mine] == [], "not even an advisory one"


def test_policy_pack_reads_the_worker_template(scenario_b):
    """The clean verdict above means something: a privileged worker is caught in the RayJob."""
    _, run = scenario_b
    broken = copy.deepcopy(run)
    job = one(broken, "ray.io/v1:RayJob")
    job.inputs["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]["securityContext"][
        "privileged"
    ] = True
    assert "ipc-lock-without-privileged" in {v.policy for v in analyze(broken) if v.mandatory and v.urn == job.urn}


def test_the_plan_finds_nothing_blocking(scenario_b):
    """Charts from the profiles, namespaces, Pod Security (kuberay-system is restricted), scheduling (head on
    the platform pool, workers on h100 with the device plugin), CRDs (the RayJob waits for the chart)."""
    _, run = scenario_b
    expanded, renders = expand_charts(run)
    model = deploy.build(expanded, renders, claims.check(expanded))
    found = deploy.run(model, date(2026, 12, 1), upstream_dir())
    assert [(f.level, f.check, f.object, f.message) for f in found] == []


# ---- refusals -----------------------------------------------------------------------------------


def facts(pool=None, *, network_ns: str = NAMESPACE, nics=None, claims=None, identity_ns: str = NAMESPACE):
    """Stand-ins for TrainingWorkers and CheckpointStore, with plain pool facts as GpuNodePool derives them."""
    pool = pool or pool_facts("h100", H100, rdma=True, count=4)
    network = SimpleNamespace(namespace=network_ns, nics=nics if nics is not None else {pool.pool_name: 8})
    workers = SimpleNamespace(pool=pool, network=network, gpu_claims=claims)
    store = SimpleNamespace(account_name="gpumodels01", container_name="models")
    checkpoints = SimpleNamespace(store=store, identity=SimpleNamespace(namespace=identity_ns, service_account="trainer"))
    return workers, checkpoints


def problems(args: dict | None = None, **options) -> dict[str, str]:
    workers, checkpoints = facts(**options)
    found = distributed_training_problems(DistributedTrainingArgs(**{**SCENARIO_B, **(args or {})}), workers, checkpoints)
    return {p.field: p.problem for p in found}


def test_scenario_b_has_no_problem():
    assert problems() == {}


REFUSALS = [
    ({"workers": 5}, {}, "workers", "at most 4 nodes"),
    ({}, {"pool": pool_facts("a100", A100, count=4)}, "workers.pool", "not RDMA-capable"),
    ({}, {"nics": {"other": 8}}, "workers.pool", "not a pool of the RDMA network"),
    ({}, {"pool": pool_facts("mig", H100, rdma=True, count=4, mig_profile="MIG3g")}, "workers.pool", "MIG slices"),
    ({"image": "rayproject/ray"}, {}, "image", "has no tag"),
    ({"image": "rayproject/ray:latest"}, {}, "image", "latest"),
    ({"image": "myacr.azurecr.io/train:1.0"}, {}, "ray_version", "give the Ray version"),
    ({"ray_version": "2.48.0"}, {}, "ray_version", "tag says Ray 2.52.0"),
    ({"image": "rayproject/ray:2.30.0-py311-gpu"}, {}, "ray_version", "2.38.0 and later"),
    ({"spot": True}, {}, "spot", "not a Spot pool"),
    ({}, {"pool": pool_facts("h100", H100, rdma=True, count=4, spot=True)}, "spot", "is a Spot pool"),
    ({"active_deadline_hours": 24}, {}, "active_deadline_hours", "before its expected 48 hours"),
    ({"hours": 0.25}, {}, "checkpoint_interval_minutes", "no checkpoint would be written"),
    ({"runtime_env": {"env_vars": {"NCCL_IB_DISABLE": "1"}}}, {}, "runtime_env.env_vars", "set by the component"),
    ({"runtime_env": {"working_dir": "./src"}}, {}, "runtime_env.working_dir", "remote URI"),
    ({"runtime_env": {"py_modules": ["https://x/y.zip", "lib"]}}, {}, "runtime_env.py_modules[1]", "remote URI"),
    ({}, {"identity_ns": "training"}, "checkpoints.identity.namespace", "RDMA namespace"),
    ({"checkpoint_prefix": "/checkpoints"}, {}, "checkpoint_prefix", "relative to the container"),
    ({"checkpoint_prefix": "it's"}, {}, "checkpoint_prefix", "quotes"),
    ({"operator": {"namespace": NAMESPACE}}, {}, "operator.namespace", "privileged"),
    ({"head": {"node_selector": {AGENTPOOL: "h100"}}}, {}, "head.node_selector", "GPU pool"),
    ({"head": {"node_selector": {"kubernetes.azure.com/scalesetpriority": "spot"}}}, {}, "head.node_selector", "Spot"),
    ({"worker_cpu": 97}, {}, "worker_cpu", "96 vCPUs"),
    ({"worker_memory_gib": 2000}, {}, "worker_memory_gib", "1900 GiB"),
    ({"shm_size_gib": 1024, "worker_memory_gib": 1000}, {}, "shm_size_gib", "below the worker's memory"),
    ({}, {"claims": SimpleNamespace(namespace=NAMESPACE, templates={"gpu-1": "x"})}, "workers.gpu_claims", "full-node template"),
    (
        {},
        {"claims": SimpleNamespace(namespace="gpu", templates={"h100-gpus-full-node": "x"})},
        "workers.gpu_claims",
        "RDMA namespace",
    ),
]


@pytest.mark.parametrize(("args", "options", "field", "phrase"), REFUSALS, ids=[f"{r[2]}-{i}" for i, r in enumerate(REFUSALS)])
def test_each_refusal_names_the_field(args, options, field, phrase):
    found = problems(args, **options)
    assert field in found, found
    assert phrase in found[field]


def test_spot_needs_a_retry_budget():
    spot_pool = pool_facts("h100", H100, rdma=True, count=4, spot=True)
    assert problems({"spot": True}, pool=spot_pool) == {}
    assert "at least one retry" in problems({"spot": True, "backoff_limit": 0}, pool=spot_pool)["backoff_limit"]


def test_every_problem_is_reported_at_once():
    found = problems({"workers": 9, "image": "rayproject/ray", "spot": True}, identity_ns="elsewhere")
    assert {"workers", "image", "ray_version", "spot", "checkpoints.identity.namespace"} <= set(found)


def test_an_amd_pool_is_refused():
    amd = dataclasses.replace(pool_facts("h100", H100, rdma=True, count=4), gpu_resource_name="amd.com/gpu")
    assert "whole NVIDIA GPUs" in problems(pool=amd)["workers.pool"]


def test_a_refusal_registers_nothing_of_the_training():
    """The component refuses before it registers: no operator, account, grant or RayJob, and not itself."""
    holder: dict = {}
    monitor = RecordingMonitor(PlaceholderMocks())
    with pytest.raises(ComponentInputError) as refused:
        run_components(training_program(holder, {**SCENARIO_B, "workers": 6, "image": "rayproject/ray"}), monitor=monitor)
    names = [r.name for r in monitor.registered]
    assert "rdma" in names and "trainer" in names, "the components before it were built"
    assert [n for n in names if n == "train" or n.startswith(("train-", "trainer-models"))] == []
    assert not [r for r in monitor.registered if r.type.endswith(":RayJob")]
    message = str(refused.value)
    assert message.startswith("DistributedTraining 'train': invalid arguments")
    assert "workers=6" in message and "image='rayproject/ray'" in message


# ---- cost ---------------------------------------------------------------------------------------


def test_cost_of_seed_002_scenario_b():
    """4 x Standard_ND96isr_H100_v5 for 48 h: the catalog's list price, and the seed's $40/h ($7,680) as the seed's figure."""
    sku = catalog.get_sku(H100)
    cost = training_cost(DistributedTrainingArgs(**SCENARIO_B), sku)
    on_demand, seed = cost.rows
    assert (cost.vm_size, cost.nodes, cost.hours) == (H100, 4, 48)
    assert on_demand.label == "on-demand (catalog)" and on_demand.usd_per_node_hour == sku.price_usd_per_hour
    assert on_demand.total_usd == pytest.approx(sku.price_usd_per_hour * 4 * 48) == cost.on_demand_usd
    assert sku.price_date in on_demand.source
    assert (seed.label, seed.usd_per_node_hour, seed.total_usd) == ("seed 002 figure", 40.0, 7680.0)
    assert "$40.00/hr per instance" in seed.source
    assert cost.as_dict()["rows"][1]["total_usd"] == 7680.0


@pytest.mark.parametrize(("max_price", "phrase"), [(-1, "spot_max_price -1"), (None, "was not given")])
def test_spot_cost_is_unknown_without_a_price_ceiling(max_price, phrase):
    cost = training_cost(DistributedTrainingArgs(**SCENARIO_B, spot=True), catalog.get_sku(H100), max_price)
    spot = cost.rows[1]
    assert spot.label == "Spot" and spot.usd_per_node_hour is None and spot.total_usd is None and phrase in spot.source


def test_a_size_without_a_seed_figure_has_no_seed_row():
    cost = training_cost(DistributedTrainingArgs(**SCENARIO_B), catalog.get_sku("Standard_ND96isr_H200_v5"))
    assert [r.label for r in cost.rows] == ["on-demand (catalog)"]
