"""RouterModels: the semantic router's classifier models, copied from the model store onto a volume.

The router 0.3.0 downloads any model directory it finds incomplete from Hugging Face at start
(src/semantic-router/pkg/modeldownload); on a cluster without internet egress that crash-loops or
leaves it without classifiers. Here a Job running as a workload identity with Storage Blob Data
Reader on the model store's container copies the directories the config needs
(``router_config.required_models``) from ``<prefix><model>/`` onto a managed-csi volume, and the router
starts only after it succeeds. Upload the model directories once, e.g. with ``hf download
llm-semantic-router/<model> --local-dir <model>`` and ``azcopy copy <model> <container URL>/<prefix>``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pulumi
import pulumi_kubernetes as k8s

from ..azure.model_store import ModelStore
from ..azure.workload_identity import WorkloadIdentity
from ..context import ClusterContext
from ..core import pins
from ..core.images import relocate
from ..core.security import restricted_container, restricted_pod
from . import router_config
from .token_refresher import IMAGE

SCRIPTS = Path(__file__).with_name("refresher")
CLAIM = "semantic-router-models"
SERVICE_ACCOUNT = "router-models"
STORAGE_SCOPE = "https://storage.azure.com/.default"
DEFAULT_PREFIX = f"semantic-router/v{router_config.VSR_VERSION}/models/"


@dataclass(frozen=True)
class RouterModels:
    """Where the router's models come from: a model store, read by a workload identity of the router's
    cluster (``SemanticRouter``'s ``cluster``)."""

    store: ModelStore
    """The model store holding the directories (Storage Blob Data Reader is granted on its container)."""
    prefix: str = DEFAULT_PREFIX
    """Blob path under which each model directory sits (``<prefix><model>/config.json``)."""
    size: str = "10Gi"
    """Volume size; router 0.3.0's four classifier directories take about 3 GiB."""
    claim_name: str = CLAIM
    """Name of the PVC created and filled for the router. Default ``semantic-router-models``."""

    def fill(
        self,
        name: str,
        models: list[str],
        opts: pulumi.ResourceOptions,
        cluster: ClusterContext,
        image_registry: str | None = None,
    ) -> list[pulumi.Resource]:
        """The volume in the router's namespace, the reader identity and the Job that fills it; returns
        the Job to wait for. The Job's image comes from ``image_registry`` when one is given."""
        namespace = router_config.VSR_NAMESPACE
        azure = pulumi.ResourceOptions(parent=opts.parent)
        identity = WorkloadIdentity(
            f"{name}-identity", {"namespace": namespace, "service_account": SERVICE_ACCOUNT}, cluster=cluster, opts=azure
        )
        read = self.store.grant_read(identity)
        account = k8s.core.v1.ServiceAccount(
            f"{name}-sa",
            metadata={"name": SERVICE_ACCOUNT, "namespace": namespace, "annotations": identity.service_account_annotations},
            opts=opts,
        )
        claim = k8s.core.v1.PersistentVolumeClaim(
            f"{name}-claim",
            metadata={"name": self.claim_name, "namespace": namespace},
            spec={
                "accessModes": ["ReadWriteOnce"],
                # managed-csi is AKS's default class (Azure Disk CSI); AKS has no "standard" class.
                "storageClassName": "managed-csi",
                "resources": {"requests": {"storage": self.size}},
            },
            opts=opts,
        )
        scripts = k8s.core.v1.ConfigMap(
            f"{name}-script",
            metadata={"name": f"{SERVICE_ACCOUNT}-script", "namespace": namespace},
            data={f: (SCRIPTS / f).read_text() for f in ("fetch_models.py", "refresh_token.py")},
            opts=opts,
        )
        env = {
            "TOKEN_SCOPE": STORAGE_SCOPE,
            "BLOB_ENDPOINT": self.store.blob_endpoint,
            "CONTAINER": self.store.container_name,
            "PREFIX": self.prefix,
            "MODELS": ",".join(models),
            "DEST": "/models",
            "BLOB_API_VERSION": pins.azure_api_version("storage-blob"),
        }
        job = k8s.batch.v1.Job(
            f"{name}-job",
            metadata={"name": SERVICE_ACCOUNT, "namespace": namespace},
            spec={
                # Retries cover the role assignment's propagation.
                "backoffLimit": 6,
                "template": {
                    "metadata": {"labels": {"app.kubernetes.io/name": SERVICE_ACCOUNT, **identity.pod_labels}},
                    "spec": {
                        "serviceAccountName": SERVICE_ACCOUNT,
                        "restartPolicy": "OnFailure",
                        # The router's UID: it must read what this writes.
                        "securityContext": restricted_pod(router_config.ROUTER_UID),
                        "containers": [
                            {
                                "name": "fetch",
                                "image": relocate(IMAGE, image_registry),
                                "command": ["python", "/script/fetch_models.py"],
                                "env": [{"name": k, "value": v} for k, v in env.items()],
                                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}},
                                "securityContext": restricted_container(),
                                "volumeMounts": [
                                    {"name": "script", "mountPath": "/script", "readOnly": True},
                                    {"name": "models", "mountPath": "/models"},
                                ],
                            }
                        ],
                        "volumes": [
                            {"name": "script", "configMap": {"name": f"{SERVICE_ACCOUNT}-script"}},
                            {"name": "models", "persistentVolumeClaim": {"claimName": self.claim_name}},
                        ],
                    },
                },
            },
            opts=pulumi.ResourceOptions.merge(
                opts,
                pulumi.ResourceOptions(
                    depends_on=[account, claim, scripts, read],
                    # Copying a few GiB from Blob takes minutes; retries wait for the role to propagate.
                    custom_timeouts=pulumi.CustomTimeouts(create="30m", update="30m"),
                ),
            ),
        )
        return [job]
