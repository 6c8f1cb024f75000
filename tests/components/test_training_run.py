"""A training run that cannot silently go wrong (issue 27): each attempt must reach Running in time and the plan says
how long the whole job can take (KubeRay 1.7.0's deadlines are per attempt); the head is out of reach of voluntary
evictions; NCCL fails instead of falling back to sockets; and root workers with every capability dropped can start the
rayproject image's Ray, checked against the kernel's own permission rules."""

from __future__ import annotations

import os
import subprocess

import pytest

from aks_gpu_inference.components.core import catalog
from aks_gpu_inference.components.training import training_cost
from aks_gpu_inference.components.training.distributed_training_args import DistributedTrainingArgs
from aks_gpu_inference.components.training.ray_manifests import RAY_GID, RAY_UID
from aks_gpu_inference.planner.engine.values import kubernetes_object
from tests.components.container_root import as_container_root
from tests.components.gpu_pools import H100
from tests.components.test_distributed_training import SCENARIO_B, build, cluster_spec, env_of, problems, ray_job
from tests.conftest import one


@pytest.fixture(scope="module")
def scenario_b():
    return build()


def test_each_attempt_must_reach_running_within_the_pre_running_deadline(scenario_b):
    _, run = scenario_b
    spec = ray_job(run)["spec"]
    assert (spec["preRunningDeadlineSeconds"], spec["activeDeadlineSeconds"]) == (3600, 72 * 3600)
    assert ray_job(build({"pre_running_deadline_minutes": 90})[1])["spec"]["preRunningDeadlineSeconds"] == 5400


def test_a_pre_running_deadline_that_could_never_apply_is_refused():
    short = {"hours": 10, "active_deadline_hours": 10}
    assert "never apply" in problems({**short, "pre_running_deadline_minutes": 600})["pre_running_deadline_minutes"]
    assert problems({**short, "pre_running_deadline_minutes": 599}) == {}


def test_the_plan_states_the_whole_job_worst_case():
    """activeDeadlineSeconds restarts with every attempt: 3 retries of a 72-hour deadline can hold 4 nodes for 288 hours."""
    args = DistributedTrainingArgs(**SCENARIO_B)
    assert (args.deadline_seconds, args.backoff_limit, args.max_job_hours) == (72 * 3600, 3, 288)
    sku = catalog.get_sku(H100)
    cost = training_cost(args, sku).as_dict()
    assert cost["max_hours"] == 288 and cost["max_on_demand_usd"] == pytest.approx(4 * 288 * sku.price_usd_per_hour)
    one_attempt = training_cost(DistributedTrainingArgs(**SCENARIO_B, backoff_limit=0, active_deadline_hours=50), sku)
    assert one_attempt.max_hours == 50


def test_the_head_is_protected_from_voluntary_disruption(scenario_b):
    """A PodDisruptionBudget that selects the head and nothing else (an integer minAvailable, the only form the
    disruption controller computes for a RayCluster's pods), and the autoscaler's safe-to-evict annotation."""
    training, run = scenario_b
    budget = kubernetes_object(one(run, "policy/v1:PodDisruptionBudget"))
    assert budget["metadata"]["name"] == "frontier-ft-head" and budget["metadata"]["namespace"] == "llm-d-infra"
    assert budget["spec"] == {
        "minAvailable": 1,
        "selector": {"matchLabels": {"aks-gpu-inference/training": "frontier-ft", "aks-gpu-inference/ray-role": "head"}},
    }
    cluster = cluster_spec(run)
    selector = budget["spec"]["selector"]["matchLabels"]
    head = cluster["headGroupSpec"]["template"]["metadata"]
    assert selector.items() <= head["labels"].items()
    assert head["annotations"] == {"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}
    others = [cluster["workerGroupSpecs"][0]["template"], ray_job(run)["spec"]["submitterPodTemplate"]]
    assert not any(selector.items() <= t["metadata"]["labels"].items() for t in others)
    assert one(run, "policy/v1:PodDisruptionBudget").parent == one(run, "aks-gpu:index:DistributedTraining").urn
    assert training.head_budget is not None


def test_workers_fail_rather_than_fall_back_to_tcp(scenario_b):
    _, run = scenario_b
    worker = cluster_spec(run)["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]
    assert env_of(worker)["NCCL_NET"] == "IB"
    head = cluster_spec(run)["headGroupSpec"]["template"]["spec"]["containers"][0]
    assert "NCCL_NET" not in env_of(head), "the head has no GPU and runs no NCCL"
    refused = problems({"runtime_env": {"env_vars": {"NCCL_NET": "Socket"}}})
    assert "set by the component" in refused["runtime_env.env_vars"]


# ---- root workers and the image's /home/ray ------------------------------------------------------


def fake_rayproject_home(root) -> str:
    """The layout of a rayproject image as its Dockerfile makes it: /home/ray owned by ray:users (1000:100), mode 0750
    (useradd -m under Ubuntu's HOME_MODE), Ray in /home/ray/anaconda3/bin on the PATH. Returns that PATH."""
    home = root / "home" / "ray"
    bin_dir = home / "anaconda3" / "bin"
    bin_dir.mkdir(parents=True)
    ray = bin_dir / "ray"
    ray.write_text("#!/bin/sh\necho ray started\n")
    ray.chmod(0o755)
    for path in (home, home / "anaconda3", bin_dir, ray):
        os.chown(path, RAY_UID, RAY_GID)
    home.chmod(0o750)
    return f"{bin_dir}:/usr/bin:/bin"


def start_ray(path: str, groups: list[int]) -> subprocess.CompletedProcess:
    """What KubeRay runs in the worker container (``/bin/bash -c -- "...; ray start ..."``), as the worker's root."""
    command = [*as_container_root(groups), "/bin/bash", "-c", "--", "ray start"]
    return subprocess.run(command, env={"PATH": path}, capture_output=True, text=True, timeout=30)


def test_root_workers_reach_ray_through_the_group_that_owns_the_home(scenario_b, tmp_path):
    """The rendered worker runs as uid 0 and gid 0 with every capability dropped but IPC_LOCK: without the image's
    group it is 'other' to /home/ray and `ray start` cannot even be found; with the pod's supplementalGroups it starts."""
    if os.geteuid() != 0:
        pytest.skip("making a directory owned by uid 1000 needs root")
    _, run = scenario_b
    pod = cluster_spec(run)["workerGroupSpecs"][0]["template"]["spec"]
    container = pod["containers"][0]["securityContext"]
    assert (container["runAsUser"], container.get("runAsGroup", 0)) == (0, 0)
    assert container["capabilities"] == {"drop": ["ALL"], "add": ["IPC_LOCK"]}, "no DAC capability to bypass the bits"
    path = fake_rayproject_home(tmp_path)
    without = start_ray(path, [])
    assert without.returncode != 0 and "ray" in without.stderr, without
    started = start_ray(path, pod["securityContext"]["supplementalGroups"])
    assert (started.returncode, started.stdout) == (0, "ray started\n"), started.stderr
