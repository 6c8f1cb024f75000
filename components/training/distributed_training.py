"""DistributedTraining: a multi-node GPU training run as a KubeRay ``RayJob`` on an RDMA pool.

The component installs the KubeRay operator (pinned ``kuberay-operator`` chart, namespaced RBAC, watching
only the RDMA namespace) and creates one ``RayJob`` whose workers carry the RDMA pod contract plus
``NCCL_NET=IB`` (fail, never fall back to TCP: seed 002 gotcha 2), whose head stays on the on-demand CPU pool, out of
reach of voluntary evictions (a PodDisruptionBudget and the autoscaler's safe-to-evict annotation), and whose
checkpoints go to the model store through workload identity. Given the QualificationGates, the job is
created only after every gate Job has passed. For Spot, the run checkpoints on an interval, retries as a
whole (``backoffLimit``), and its workers tolerate the Spot taint. Each attempt must reach Running within
``pre_running_deadline_minutes`` and end within ``active_deadline_hours``. One per cluster: the chart owns the
cluster-scoped ray.io CRDs, so a second operator release would fight over them.

Environment of the head and workers (``ray_manifests.training_env``): ``TRAINING_RUN_NAME``,
``CHECKPOINT_STORAGE_PATH`` (``<container>/<prefix>``), ``AZURE_STORAGE_ACCOUNT_NAME``, ``CHECKPOINT_URI``
(``az://<container>/<prefix>``) and ``CHECKPOINT_INTERVAL_SECONDS``; the webhook adds the workload
identity's ``AZURE_CLIENT_ID``, ``AZURE_TENANT_ID`` and ``AZURE_FEDERATED_TOKEN_FILE``. The program gives Ray Train
its storage with ``RunConfig(**checkpoint_storage.run_config_kwargs())``, which builds the adlfs filesystem from them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pulumi
import pulumi_kubernetes as k8s

from .._base import PACKAGE, Children, kubernetes_provider, raise_problems, validate_args
from ..core import catalog
from ..core.security import restricted_namespace
from ..gpu.pod_contract import full_node_gpu_template
from . import ray_manifests as manifests
from .distributed_training_args import CheckpointStore, DistributedTrainingArgs, TrainingWorkers
from .run_cost import TrainingCost, training_cost
from .training_checks import distributed_training_problems, ray_version

if TYPE_CHECKING:
    from ..context import ClusterContext
    from ..gpu.qualification_gates import QualificationGates


class DistributedTraining(pulumi.ComponentResource):
    """The KubeRay operator and one RayJob on an RDMA pool.

    Outputs: ``job_name``, ``namespace``, ``status_command`` (the job's deployment and Ray status),
    ``checkpoint_uri`` and ``cost`` (``TrainingCost``: nodes x price x hours, on-demand and Spot).
    """

    job_name: str
    namespace: str
    status_command: str
    checkpoint_uri: str
    cost: TrainingCost
    operator: k8s.helm.v4.Chart
    head_budget: k8s.policy.v1.PodDisruptionBudget
    ray_job: k8s.apiextensions.CustomResource

    def __init__(
        self,
        name: str,
        args: DistributedTrainingArgs | dict,
        opts: pulumi.ResourceOptions | None = None,
        *,
        cluster: ClusterContext,
        workers: TrainingWorkers,
        checkpoints: CheckpointStore,
        gates: QualificationGates | None = None,
    ):
        """
        :param name: Logical name; children are named ``<name>-kuberay``, ``<name>-sa``, ``<name>-rayjob`` and so on.
        :param args: Settings, a ``DistributedTrainingArgs`` or a dict of its fields.
        :param opts: Standard Pulumi resource options; a Kubernetes ``provider`` here wins over the cluster's.
            Children wait for its ``depends_on`` too.
        :param cluster: The cluster (``AksCluster.context``); its Kubernetes provider is used.
        :param workers: The RDMA pool and its RdmaNetwork (and DraDeviceClasses when GPUs come from DRA).
        :param checkpoints: The ModelStore and the WorkloadIdentity the pods run as; the identity gets
            'Storage Blob Data Contributor' on the container, writing only below the checkpoint prefix.
        :param gates: The pool's QualificationGates: the RayJob is created only once every gate Job has
            completed (a failed gate fails ``pulumi up`` first). Default None: no wait.
        """
        args = validate_args(DistributedTrainingArgs, args, "DistributedTraining", name)
        raise_problems("DistributedTraining", name, distributed_training_problems(args, workers, checkpoints))
        super().__init__(f"{PACKAGE}:index:DistributedTraining", name, None, opts)
        children = Children(self, opts, kubernetes_provider(opts, cluster.provider))
        network, store, identity = workers.network, checkpoints.store, checkpoints.identity
        self.job_name, self.namespace = args.name, network.namespace
        self.checkpoint_uri = store.model_uri(args.checkpoint_path)
        # Priced at the cluster's region (the catalog's reference region when it is not text).
        region = cluster.location if isinstance(cluster.location, str) else catalog.REFERENCE_REGION
        self.cost = training_cost(args, workers.pool.sku, workers.spot_max_price, region=region)
        self.status_command = f"kubectl -n {self.namespace} get rayjob {args.name} -o jsonpath='{{.status.jobDeploymentStatus}} {{.status.jobStatus}}'"

        self.operator = self._operator(name, args, children)
        network_ready = [r for r in (network, workers.gpu_claims) if r is not None]
        account = k8s.core.v1.ServiceAccount(
            f"{name}-sa",
            metadata={
                "name": identity.service_account,
                "namespace": self.namespace,
                "labels": {manifests.TRAINING_LABEL: args.name},
                "annotations": identity.service_account_annotations,
            },
            # Ray pods never call the Kubernetes API (no autoscaler); the webhook projects its own token.
            automount_service_account_token=False,
            opts=children.opts(*network_ready),
        )
        grant = store.grant_write(identity, prefix=args.checkpoint_path)
        plan = manifests.TrainingPlan(
            args=args,
            namespace=self.namespace,
            pool=workers.pool,
            contract=network.pod_spec(workers.pool.pool_name, gpu_claim_template=_gpu_template(workers)),
            service_account=identity.service_account,
            pod_labels=dict(identity.pod_labels),
            env=manifests.training_env(args, store.account_name, store.container_name, self.checkpoint_uri),
        )
        budget = manifests.head_disruption_budget(plan)
        self.head_budget = k8s.policy.v1.PodDisruptionBudget(
            f"{name}-head-pdb", metadata=budget["metadata"], spec=budget["spec"], opts=children.opts(*network_ready)
        )
        job = manifests.ray_job(plan, ray_version(args) or "")
        self.ray_job = k8s.apiextensions.CustomResource(
            f"{name}-rayjob",
            api_version=job["apiVersion"],
            kind=job["kind"],
            metadata=job["metadata"],
            spec=job["spec"],
            opts=children.opts(
                self.operator,
                account,
                self.head_budget,
                grant,
                gates,
                *network_ready,
                # KubeRay disregards RayClusterSpec changes of a running job (rayjob_controller.go
                # getOrCreateRayClusterInstance): a change is a new run of the same name, which resumes
                # from the run's checkpoints.
                replace_on_changes=["spec"],
                delete_before_replace=True,
            ),
        )
        self.register_outputs(
            {
                "job_name": self.job_name,
                "namespace": self.namespace,
                "status_command": self.status_command,
                "checkpoint_uri": self.checkpoint_uri,
                "cost": self.cost.as_dict(),
            }
        )

    def _operator(self, name: str, args: DistributedTrainingArgs, children: Children) -> k8s.helm.v4.Chart:
        """The operator chart in its restricted namespace (made here unless the stack owns it)."""
        namespace = None
        if args.operator.create_namespace:
            namespace = k8s.core.v1.Namespace(
                f"{name}-operator-namespace", metadata=restricted_namespace(args.operator.namespace), opts=children.opts()
            )
        return k8s.helm.v4.Chart(
            f"{name}-kuberay",
            chart=manifests.OPERATOR_CHART,
            repository_opts={"repo": manifests.OPERATOR_REPO},
            version=args.operator.chart_version,
            namespace=args.operator.namespace,
            values=manifests.operator_values(args, self.namespace),
            opts=children.opts(namespace),
        )


def _gpu_template(workers: TrainingWorkers) -> str | None:
    """The DRA claim template for all of a node's GPUs, or None when the device plugin hands them out."""
    return full_node_gpu_template(workers.pool.pool_name) if workers.gpu_claims is not None else None
