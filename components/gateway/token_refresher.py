"""EntraTokenRefresher: keeps a Kubernetes Secret filled with a short-lived Entra ID access token.

A CronJob running as a workload identity fetches a token for ``scope`` every 20 minutes (tokens
live about an hour) and patches it into one Secret; a Job fills it at deploy time. The gateway
uses it as a bearer credential for Azure OpenAI, so no long-lived key exists anywhere.
"""

from __future__ import annotations

from pathlib import Path

import pulumi
import pulumi_kubernetes as k8s

from .._base import PACKAGE, Children
from ..azure.workload_identity import WorkloadIdentity
from ..core.security import restricted_container

SCRIPT = Path(__file__).with_name("refresher") / "refresh_token.py"
IMAGE = "python:3.12.7-slim"
"""Plain pinned Python: the script uses the standard library only."""
COGNITIVE_SERVICES_SCOPE = "https://cognitiveservices.azure.com/.default"


class EntraTokenRefresher(pulumi.ComponentResource):
    """Secrets ``secret_names`` (key ``apiKey``) that always hold a fresh token for ``identity``."""

    secret_names: list[str]

    def __init__(
        self,
        name: str,
        namespace: str,
        secret_names: list[str],
        identity: WorkloadIdentity,
        provider: k8s.Provider,
        scope: str = COGNITIVE_SERVICES_SCOPE,
        schedule: str = "*/20 * * * *",
        opts: pulumi.ResourceOptions | None = None,
        *,
        kube_name: str | None = None,
        image: str = IMAGE,
    ):
        """
        :param name: Logical name of the component; children are named ``<name>-<role>``.
        :param namespace: Namespace of the Secret and the refresher.
        :param secret_names: Secrets to keep filled (key ``apiKey``, the name Envoy AI Gateway reads).
        :param identity: Workload identity federated with ``<namespace>/<name>``; grant it the target role.
        :param provider: Kubernetes provider of the cluster.
        :param scope: Token scope. Default: Azure AI services (Azure OpenAI).
        :param schedule: Cron schedule. Default every 20 minutes, well inside the token lifetime.
        :param opts: Standard Pulumi resource options.
        :param kube_name: Kubernetes name of its objects. Default ``name``; a parent component passes its
            own child name as ``name`` (unique per parent) and the fixed in-cluster name here.
        :param image: The Python image the script runs in. Default ``IMAGE``; pass a private registry's copy.
        """
        kube_name = kube_name or name
        super().__init__(f"{PACKAGE}:index:EntraTokenRefresher", name, None, opts)
        # Children wait for what the component waits for (the namespace is often created by a sibling).
        child = Children(self, opts, provider).opts()
        self.secret_names = list(secret_names)
        secrets = [
            k8s.core.v1.Secret(
                f"{name}-{secret_name}",
                metadata={"name": secret_name, "namespace": namespace},
                type="Opaque",
                string_data={"apiKey": "pending-first-refresh"},
                # The refresher owns the value after creation; Pulumi must not put the placeholder back.
                opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(ignore_changes=["stringData", "data"])),
            )
            for secret_name in self.secret_names
        ]
        account = k8s.core.v1.ServiceAccount(
            f"{name}-sa",
            metadata={"name": kube_name, "namespace": namespace, "annotations": identity.service_account_annotations},
            opts=child,
        )
        role = k8s.rbac.v1.Role(
            f"{name}-role",
            metadata={"name": kube_name, "namespace": namespace},
            # Only this one Secret, only read and patch.
            rules=[{"apiGroups": [""], "resources": ["secrets"], "resourceNames": self.secret_names, "verbs": ["get", "patch"]}],
            opts=child,
        )
        k8s.rbac.v1.RoleBinding(
            f"{name}-binding",
            metadata={"name": kube_name, "namespace": namespace},
            role_ref={"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": kube_name},
            subjects=[{"kind": "ServiceAccount", "name": kube_name, "namespace": namespace}],
            opts=child,
        )
        script = k8s.core.v1.ConfigMap(
            f"{name}-script",
            metadata={"name": f"{kube_name}-script", "namespace": namespace},
            data={"refresh_token.py": SCRIPT.read_text()},
            opts=child,
        )
        pod = self._pod(kube_name, namespace, self.secret_names, scope, identity, image)
        after = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[*secrets, account, role, script]))
        k8s.batch.v1.CronJob(
            f"{name}-cronjob",
            metadata={"name": kube_name, "namespace": namespace},
            spec={
                "schedule": schedule,
                "concurrencyPolicy": "Forbid",
                "successfulJobsHistoryLimit": 1,
                "failedJobsHistoryLimit": 3,
                "jobTemplate": {"spec": {"backoffLimit": 3, "template": pod}},
            },
            opts=after,
        )
        # The first token now, not at the next schedule; retries cover role-assignment propagation.
        k8s.batch.v1.Job(
            f"{name}-first",
            metadata={"name": f"{kube_name}-first", "namespace": namespace},
            spec={"backoffLimit": 8, "ttlSecondsAfterFinished": 3600, "template": pod},
            opts=pulumi.ResourceOptions.merge(after, pulumi.ResourceOptions(custom_timeouts=pulumi.CustomTimeouts(create="15m"))),
        )
        self.register_outputs({"secret_names": self.secret_names})

    @staticmethod
    def _pod(name: str, namespace: str, secret_names: list[str], scope: str, identity: WorkloadIdentity, image: str) -> dict:
        env = {
            "TOKEN_SCOPE": scope,
            "SECRET_NAMESPACE": namespace,
            "SECRET_NAMES": ",".join(secret_names),
            "SECRET_KEY": "apiKey",
        }
        return {
            "metadata": {"labels": {"app.kubernetes.io/name": "token-refresher", **identity.pod_labels}},
            "spec": {
                "serviceAccountName": name,
                "restartPolicy": "OnFailure",
                "securityContext": {"runAsNonRoot": True, "runAsUser": 65534, "seccompProfile": {"type": "RuntimeDefault"}},
                "containers": [
                    {
                        "name": "refresh",
                        "image": image,
                        "command": ["python", "/script/refresh_token.py"],
                        "env": [{"name": k, "value": v} for k, v in env.items()],
                        "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "64Mi"}},
                        "securityContext": restricted_container(),
                        "volumeMounts": [{"name": "script", "mountPath": "/script", "readOnly": True}],
                    }
                ],
                "volumes": [{"name": "script", "configMap": {"name": f"{name}-script"}}],
            },
        }
