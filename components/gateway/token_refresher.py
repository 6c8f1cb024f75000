"""EntraTokenRefresher: keeps Kubernetes Secrets filled with a short-lived Entra ID access token.

A CronJob running as a workload identity fetches a token for ``scope`` every 20 minutes (tokens
live about an hour) and patches it into the Secrets; a Job fills them at deploy time. The gateway
uses it as a bearer credential for Azure OpenAI, so no long-lived key exists anywhere.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import pulumi
import pulumi_kubernetes as k8s
from pydantic import AfterValidator, Field, field_validator

from .._base import PACKAGE, Children, StrictModel, kubernetes_provider, raise_problems, validate_args
from ..azure.workload_identity import WorkloadIdentity
from ..core import pins
from ..core.errors import FieldProblem
from ..core.images import require_pinned
from ..core.names import DNS_LABEL, DNS_SUBDOMAIN
from ..core.security import restricted_container, restricted_pod

SCRIPT = Path(__file__).with_name("refresher") / "refresh_token.py"
IMAGE = pins.image("python")
"""Plain pinned Python: the script uses the standard library only."""
COGNITIVE_SERVICES_SCOPE = "https://cognitiveservices.azure.com/.default"
NOBODY_UID = 65534
"""The pod needs no user of its own: ``nobody``."""


class EntraTokenRefresherArgs(StrictModel):
    """Which Secrets to keep filled, where, and with a token for what."""

    namespace: str = Field(pattern=DNS_LABEL.pattern)
    """Namespace of the Secrets and the refresher (it must exist). Required."""

    secret_names: list[str] = Field(min_length=1)
    """Secrets to keep filled (key ``apiKey``, the name Envoy AI Gateway reads). Required, at least one:
    the refresher's Role names exactly these, and a Role without names would grant every Secret."""

    scope: str = COGNITIVE_SERVICES_SCOPE
    """Token scope. Default: Azure AI services (Azure OpenAI)."""

    schedule: str = "*/20 * * * *"
    """Cron schedule. Default every 20 minutes, well inside the token's one-hour lifetime."""

    kube_name: str | None = Field(None, pattern=DNS_LABEL.pattern)
    """Kubernetes name of its objects (the service account the identity is federated with). Default: the
    component's name; a parent component passes its own child name as ``name`` (unique per parent) and
    the fixed in-cluster name here."""

    image: Annotated[str, AfterValidator(require_pinned)] = IMAGE
    """The Python image the script runs in, pinned. Default ``IMAGE``; pass a private registry's copy."""

    @field_validator("secret_names")
    @classmethod
    def _secret_names(cls, names: list[str]) -> list[str]:
        bad = [n for n in names if not DNS_SUBDOMAIN.match(n)]
        if bad:
            raise ValueError(f"Secret names are DNS subdomains (lowercase letters, digits, '-' and '.'): {bad}")
        return names


def refresher_problems(args: EntraTokenRefresherArgs, kube_name: str, identity: WorkloadIdentity) -> list[FieldProblem]:
    """The identity must be federated with the refresher's own service account, or its token exchange fails."""
    wanted = (args.namespace, kube_name)
    if (identity.namespace, identity.service_account) == wanted:
        return []
    return [
        FieldProblem(
            "identity",
            identity.subject,
            f"federate the identity with system:serviceaccount:{wanted[0]}:{wanted[1]}, the refresher's service account",
        )
    ]


def refresher_pod(args: EntraTokenRefresherArgs, kube_name: str, identity: WorkloadIdentity) -> dict[str, Any]:
    """The pod template of the CronJob and the first Job: the script, as the federated service account."""
    env = {
        "TOKEN_SCOPE": args.scope,
        "SECRET_NAMESPACE": args.namespace,
        "SECRET_NAMES": ",".join(args.secret_names),
        "SECRET_KEY": "apiKey",
    }
    return {
        "metadata": {"labels": {"app.kubernetes.io/name": "token-refresher", **identity.pod_labels}},
        "spec": {
            "serviceAccountName": kube_name,
            "restartPolicy": "OnFailure",
            "securityContext": restricted_pod(NOBODY_UID, group=False, fs_group=False),
            "containers": [
                {
                    "name": "refresh",
                    "image": args.image,
                    "command": ["python", "/script/refresh_token.py"],
                    "env": [{"name": k, "value": v} for k, v in env.items()],
                    "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "64Mi"}},
                    "securityContext": restricted_container(),
                    "volumeMounts": [{"name": "script", "mountPath": "/script", "readOnly": True}],
                }
            ],
            "volumes": [{"name": "script", "configMap": {"name": f"{kube_name}-script"}}],
        },
    }


class EntraTokenRefresher(pulumi.ComponentResource):
    """Secrets ``secret_names`` (key ``apiKey``) that always hold a fresh token for ``identity``.

    Outputs: ``secret_names``.
    """

    secret_names: list[str]

    def __init__(
        self,
        name: str,
        args: EntraTokenRefresherArgs | dict,
        opts: pulumi.ResourceOptions | None = None,
        *,
        identity: WorkloadIdentity,
    ):
        """
        :param name: Logical name of the component; children are named ``<name>-<role>``.
        :param args: The Secrets and the schedule, an ``EntraTokenRefresherArgs`` or a dict of its fields.
        :param opts: Standard Pulumi resource options; its Kubernetes ``provider`` (or ``providers`` entry)
            is the cluster's. Default: the ambient kubeconfig.
        :param identity: Workload identity federated with ``<namespace>/<kube_name>``; grant it the role the
            token is for (``AzureOpenAI.grant_use``).
        """
        args = validate_args(EntraTokenRefresherArgs, args, "EntraTokenRefresher", name)
        kube_name = args.kube_name or name
        raise_problems("EntraTokenRefresher", name, refresher_problems(args, kube_name, identity))
        super().__init__(f"{PACKAGE}:index:EntraTokenRefresher", name, None, opts)
        # Children wait for what the component waits for (the namespace is often created by a sibling).
        child = Children(self, opts, kubernetes_provider(opts)).opts()
        namespace = args.namespace
        self.secret_names = list(args.secret_names)
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
            # Only these Secrets, only read and patch.
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
        pod = refresher_pod(args, kube_name, identity)
        after = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[*secrets, account, role, script]))
        k8s.batch.v1.CronJob(
            f"{name}-cronjob",
            metadata={"name": kube_name, "namespace": namespace},
            spec={
                "schedule": args.schedule,
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
