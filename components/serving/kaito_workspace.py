"""KaitoWorkspace: one KAITO preset model served on AKS through the AI toolchain operator add-on,
as a single ``kaito.sh/v1beta1`` Workspace. KAITO's node provisioner creates GPU nodes of the
requested size and KAITO runs the model behind a Service of the workspace's name.

Facts from the KAITO source (kaito-project/kaito): ``api/v1beta1/workspace_types.go`` (``resource``
and ``inference`` sit beside ``metadata``, not under ``spec``), ``api/v1beta1/workspace_validation.go``
(what the admission webhook refuses), ``pkg/workspace/manifests/manifests.go`` (the Service).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import pulumi
from pydantic import Field, field_validator, model_validator

from .._base import PACKAGE, StrictModel, kubernetes_provider, raise_problems, validate_args
from .._k8s import KubernetesObject
from ..context import ClusterContext
from ..core import catalog, pins
from ..core.endpoints import KAITO_POD_PORT as POD_PORT  # noqa: F401 (the gateway imports it from here until it reads core.endpoints)
from ..core.endpoints import KAITO_SERVICE_PORT
from ..core.endpoints import KAITO_SERVICE_PORT as SERVICE_PORT  # noqa: F401 (likewise)
from ..core.errors import FieldProblem
from ..core.names import DNS_LABEL, DNS_SUBDOMAIN, LABEL_NAME, LABEL_VALUE

API_VERSION = pins.api_version("Workspace")
KIND = "Workspace"

PRESETS = (
    "llama-3.1-8b-instruct",
    "phi-4",
    "phi-4-mini-instruct",
    "mistral-7b-instruct",
    "deepseek-r1-distill-llama-8b",
    "deepseek-r1-distill-qwen-14b",
    "qwen2.5-coder-7b-instruct",
    "qwen2.5-coder-32b-instruct",
    "phi-3.5-mini-instruct",
)
"""KAITO inference presets this component accepts (kaito-project/kaito ``presets/workspace/models/supported_models.yaml``)."""

GATED_PRESETS = frozenset({"llama-3.1-8b-instruct"})
"""Presets whose weights KAITO downloads at run time from a gated Hugging Face repository
(meta-llama/Llama-3.1-8B-Instruct; ``downloadAtRuntime: true`` in supported_models.yaml). KAITO's
webhook refuses such a workspace without ``presetOptions.modelAccessSecret``."""

WORKSPACE_LABEL = "kaito.sh/workspace"
"""The one label KAITO puts on a workspace's inference pods, also its Service selector
(kaito@v0.6.0 pkg/workspace/manifests/manifests.go:61-63, 203-205)."""

_KAITO_PREFIX = "kaito.sh/"


def _check_label_key(key: str) -> str | None:
    """Why a label key is not valid Kubernetes syntax, or None."""
    prefix, _, name = key.rpartition("/")
    if prefix and not DNS_SUBDOMAIN.match(prefix):
        return f"label key {key!r}: the prefix must be a DNS subdomain"
    if not LABEL_NAME.match(name):
        return f"label key {key!r}: the name must be 1-63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
    return None


class KaitoWorkspaceArgs(StrictModel):
    """One model on one KAITO workspace. Every field is immutable once created: KAITO's webhook refuses
    changes to ``resource`` and ``inference.preset``, so changing one replaces the workspace."""

    name: str
    """Workspace name, also the name of the Service KAITO creates: a DNS label (lowercase letters,
    digits and '-', at most 63), which KAITO's webhook enforces. Required."""

    namespace: str = Field("default", pattern=DNS_LABEL.pattern)
    """Namespace of the workspace, its Service and the model access secret. Default ``default``, where
    KAITO's own examples run; the namespace must exist, this component does not create it."""

    preset: str
    """KAITO preset model. Required; one of ``PRESETS``."""

    instance_type: str
    """GPU VM size KAITO's node provisioner creates nodes of, from the catalog. Required. Needs N-series
    vCPU quota for the size in the cluster's region."""

    count: int = Field(1, ge=1, le=100)
    """GPU nodes for the model (``resource.count``). Default 1: the listed presets fit one node of a
    suitable size. KAITO marks it deprecated in v1beta1 but still reads it."""

    label_selector: dict[str, str] | None = None
    """Labels KAITO puts on the nodes it provisions and selects them by. Default None:
    ``{"apps": <name>}``, KAITO's documented convention. Nodes that already carry these labels and are
    of ``instance_type`` are used before new ones are provisioned."""

    model_access_secret: str | None = None
    """Name of a Secret in ``namespace`` with key ``HF_TOKEN``, a Hugging Face token for gated models.
    Default None; required for gated presets (``GATED_PRESETS``). KAITO refuses it for presets whose
    weights ship in its images, which depends on the installed KAITO version, so it is left to KAITO."""

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        if not DNS_LABEL.match(value):
            raise ValueError(
                "KAITO workspace names are DNS labels: 1-63 lowercase letters, digits or '-', starting and ending with a letter or digit"
            )
        return value

    @field_validator("preset")
    @classmethod
    def _check_preset(cls, value: str) -> str:
        if value not in PRESETS:
            raise ValueError(f"not a KAITO preset this component supports; accepted: {', '.join(PRESETS)}")
        return value

    @field_validator("instance_type")
    @classmethod
    def _check_instance_type(cls, value: str) -> str:
        sku = catalog.get_current_sku(value)
        if sku.gpu_vendor != "nvidia":
            # KAITO's inference pods request nvidia.com/gpu and wait for nodes to report it.
            raise ValueError(
                f"{value} has {sku.gpu_vendor.upper()} GPUs; KAITO presets request nvidia.com/gpu and need NVIDIA sizes"
            )
        if sku.gpu_fraction < 1:
            # pkg/sku/azure_sku_handler.go: "Not supporting partial gpu skus for now".
            raise ValueError(f"{value} has a fraction of a GPU; KAITO supports whole-GPU sizes only")
        return value

    @field_validator("label_selector")
    @classmethod
    def _check_labels(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        if value is None:
            return None
        if not value:
            raise ValueError("give at least one label, or leave label_selector unset for the default")
        for key, label in value.items():
            problem = _check_label_key(key)
            if problem:
                raise ValueError(problem)
            if key.startswith(_KAITO_PREFIX):
                raise ValueError(f"label key {key!r}: {_KAITO_PREFIX} keys belong to KAITO, which ignores them in selectors")
            if not LABEL_VALUE.match(label):
                raise ValueError(
                    f"label value {label!r}: at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
                )
        return value

    @field_validator("model_access_secret")
    @classmethod
    def _check_secret(cls, value: str | None) -> str | None:
        if value is not None and not DNS_SUBDOMAIN.match(value):
            raise ValueError("Secret names are DNS subdomains: lowercase letters, digits, '-' and '.'")
        return value

    @model_validator(mode="after")
    def _check_gated(self) -> KaitoWorkspaceArgs:
        if self.preset in GATED_PRESETS and self.model_access_secret is None:
            raise FieldProblem(
                "model_access_secret",
                None,
                f"{self.preset} is a gated Hugging Face model; create a Secret with key HF_TOKEN in namespace "
                f"{self.namespace!r} and give its name",
            )
        return self

    def selector(self) -> dict[str, str]:
        """The labels of the workspace's nodes: ``label_selector``, else ``{"apps": <name>}``."""
        return self.label_selector or {"apps": self.name}

    def manifest(self) -> dict:
        """The Workspace object as the API server receives it."""
        preset: dict = {"name": self.preset}
        if self.model_access_secret:
            preset["presetOptions"] = {"modelAccessSecret": self.model_access_secret}
        return {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "metadata": {"name": self.name, "namespace": self.namespace},
            "resource": {
                "count": self.count,
                "instanceType": self.instance_type,
                "labelSelector": {"matchLabels": self.selector()},
            },
            "inference": {"preset": preset},
        }


def kaito_workspace_problems(cluster: ClusterContext) -> list[FieldProblem]:
    """Why the cluster cannot run a KAITO workspace: without the add-on the Workspace kind does not exist."""
    if cluster.kaito_enabled:
        return []
    return [
        FieldProblem(
            "cluster.kaito_enabled",
            False,
            "the cluster does not run the AI toolchain operator (KAITO) add-on; set kaito: true on the cluster "
            "(aiToolchainOperatorProfile.enabled) or serve the model with VllmService on a GpuNodePool",
        )
    ]


@dataclass(frozen=True)
class WorkspaceFacts:
    """What a KAITO workspace serves, from its args alone; ``KaitoWorkspace`` has the same, and the gateway's checks read
    these before the workspace exists."""

    service_name: str
    namespace: str
    served_model_name: str
    instance_type: str
    count: int
    pod_labels: dict[str, str]
    endpoint: str


def workspace_facts(args: KaitoWorkspaceArgs) -> WorkspaceFacts:
    return WorkspaceFacts(
        service_name=args.name,
        namespace=args.namespace,
        # KAITO runs vLLM with --served-model-name=<preset> (kaito@v0.6.0 pkg/model/interface.go:266-268).
        served_model_name=args.preset,
        instance_type=args.instance_type,
        count=args.count,
        pod_labels={WORKSPACE_LABEL: args.name},
        endpoint=f"http://{args.name}.{args.namespace}.svc.cluster.local:{KAITO_SERVICE_PORT}/v1",
    )


class KaitoWorkspace(pulumi.ComponentResource):
    """One KAITO preset model on the AKS AI toolchain operator add-on.

    KAITO's node provisioner creates ``count`` nodes of ``instance_type`` (separate from any
    ``GpuNodePool``), labels them with ``label_selector`` and runs the model on them; deleting the
    workspace removes those nodes. The cluster needs the add-on: ``kaito: true`` in ``AksClusterArgs``
    (``aiToolchainOperatorProfile.enabled``).

    Outputs: ``service_name`` (KAITO's Service, named after the workspace, port 80) and ``endpoint``,
    the in-cluster base URL of the OpenAI-compatible API.
    """

    service_name: str
    namespace: str
    served_model_name: str
    """The ``model`` clients send: KAITO serves a preset under its preset name."""
    pod_labels: dict[str, str]
    """The labels of the workspace's inference pods (KAITO's one label), for routes and policies."""
    endpoint: str
    instance_type: str
    """The GPU VM size KAITO provisions, for cost per token."""
    count: int
    """How many nodes of ``instance_type`` the workspace holds."""
    workspace: pulumi.CustomResource

    def __init__(
        self,
        name: str,
        args: KaitoWorkspaceArgs | dict,
        opts: pulumi.ResourceOptions | None = None,
        *,
        cluster: ClusterContext,
    ):
        """
        :param name: Logical name; the workspace resource is ``<name>-workspace``.
        :param args: Settings, a ``KaitoWorkspaceArgs`` or a dict of its fields.
        :param opts: Standard Pulumi resource options; a Kubernetes provider in ``provider``/``providers``
            takes precedence over the cluster's.
        :param cluster: The AKS cluster (``AksCluster.context``): its Kubernetes provider, and
            ``kaito_enabled``, whether it runs the AI toolchain operator add-on (``AksClusterArgs.kaito``).
        """
        args = validate_args(KaitoWorkspaceArgs, args, "KaitoWorkspace", name)
        raise_problems("KaitoWorkspace", name, kaito_workspace_problems(cluster))
        super().__init__(f"{PACKAGE}:index:KaitoWorkspace", name, None, opts)
        self.workspace = KubernetesObject(
            f"{name}-workspace",
            args.manifest(),
            pulumi.ResourceOptions(
                parent=self,
                provider=kubernetes_provider(opts, cluster.provider),
                # KAITO's webhook refuses updates to resource.{count,instanceType,labelSelector} and
                # inference.preset; the name is fixed, so the old workspace must go first.
                replace_on_changes=["resource", "inference"],
                delete_before_replace=True,
            ),
        )
        for fact in fields(facts := workspace_facts(args)):
            setattr(self, fact.name, getattr(facts, fact.name))
        self.register_outputs({"service_name": self.service_name, "endpoint": self.endpoint})
