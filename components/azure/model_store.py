"""ModelStore: an Azure Blob container for model weights that pods read through workload identity
only (no account keys, no public access), or a handle on an existing account's container."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

import pulumi
from pulumi_azure_native import authorization, storage
from pydantic import Field, field_validator

from .._base import PACKAGE, StrictModel, fail, raise_problems, validate_args
from ..context import AzureScope
from ..core.errors import FieldProblem
from .workload_identity import WorkloadIdentity

STORAGE_BLOB_DATA_READER = "Storage Blob Data Reader"
"""The role ``grant_read`` assigns: read and list blobs, nothing else (see ``BUILT_IN_ROLES``)."""
STORAGE_BLOB_DATA_CONTRIBUTOR = "Storage Blob Data Contributor"
"""The role ``grant_write`` assigns: read, write and delete blobs (see ``BUILT_IN_ROLES``)."""
_BLOB_CHANGES = ("write", "add/action", "delete", "move/action")
"""The Storage Blob Data Contributor data actions that change blobs, which a prefix condition confines."""

KIND_FOR_SKU = {"Premium_LRS": "BlockBlobStorage", "Standard_LRS": "StorageV2"}
"""Premium block blobs need a ``BlockBlobStorage`` account; Standard ones live in general-purpose v2."""

_ACCOUNT_NAME = re.compile(r"^[a-z0-9]{3,24}$")
_CONTAINER_NAME = re.compile(r"^(?!.*--)[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$")
_MAX_BLOB_NAME = 1024
_MAX_BLOB_SEGMENTS = 254
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
"""A URI scheme (``az:``, ``https:``, ``abfss:``) at the start of what should be a blob path."""


class ModelStoreArgs(StrictModel):
    """Where model weights live. Names are plain values: they decide the account and container identity."""

    account_name: str
    """Storage account name: 3-24 lowercase letters or digits, unique across all of Azure. Required;
    changing it replaces the account (and its blobs)."""

    container: str = "models"
    """Blob container name: 3-63 lowercase letters, digits or single hyphens, starting and ending
    with a letter or digit. Default ``models``."""

    sku: Literal["Premium_LRS", "Standard_LRS"] = "Premium_LRS"
    """Account SKU; the kind follows from it. Default ``Premium_LRS`` (kind ``BlockBlobStorage``):
    SSD-backed blobs with consistently low per-request latency and high request rates, which is what
    parallel ranged-read loaders (many concurrent range GETs over multi-GB safetensors shards) need to
    keep GPU cold starts short; it costs more per GB stored and less per operation, and exists in
    fewer regions. ``Standard_LRS`` (kind ``StorageV2``) is cheaper capacity for models loaded rarely.
    Only applies when ``create`` is True."""

    create: bool = True
    """Create the account and container. Default True. False uses an existing account of this name
    in the scope's resource group and creates nothing but the role assignments asked for through
    ``grant_read``; ``sku`` and ``tags`` are then not applied."""

    tags: dict[str, str] = Field(default_factory=dict)
    """Azure tags for the storage account. Default none."""

    @field_validator("account_name")
    @classmethod
    def _check_account_name(cls, value: str) -> str:
        if not _ACCOUNT_NAME.match(value):
            raise ValueError(
                "Azure storage account names are 3-24 characters of lowercase letters and digits only (e.g. 'gpumodels01')"
            )
        return value

    @field_validator("container")
    @classmethod
    def _check_container(cls, value: str) -> str:
        if not _CONTAINER_NAME.match(value):
            raise ValueError(
                "Azure blob container names are 3-63 lowercase letters, digits or '-', starting and ending "
                "with a letter or digit, without consecutive hyphens (e.g. 'models')"
            )
        return value


@dataclass(frozen=True)
class StoreFacts:
    """The store's names, from its args alone: what a checkpoint path or a training check reads."""

    account_name: str
    container_name: str


def store_facts(args: ModelStoreArgs) -> StoreFacts:
    return StoreFacts(args.account_name, args.container)


def store_problems(args: ModelStoreArgs, scope: AzureScope) -> list[FieldProblem]:
    """Every reason the store cannot be built from ``args`` in ``scope`` (the args alone are checked by their model)."""
    if args.create and scope.location is None:
        return [FieldProblem("scope.location", None, "required to create a storage account (or set create=False to use one)")]
    return []


class ModelStore(pulumi.ComponentResource):
    """A storage account and container for model weights, locked to Microsoft Entra ID auth.

    Outputs: ``account_name`` and ``container_name`` (plain), ``account_id`` (for role scopes),
    ``container_scope`` (the container's resource ID) and ``blob_endpoint``. ``model_uri()`` builds
    ``az://`` URIs; ``grant_read()`` lets a ``WorkloadIdentity`` read the container.
    """

    account_name: str
    container_name: str
    account_id: pulumi.Output[str]
    container_scope: pulumi.Output[str]
    blob_endpoint: pulumi.Output[str]
    account: storage.StorageAccount | None
    container: storage.BlobContainer | None

    def __init__(
        self,
        name: str,
        args: ModelStoreArgs | dict,
        opts: pulumi.ResourceOptions | None = None,
        *,
        scope: AzureScope,
    ):
        """
        :param name: Logical name; children are named ``<name>-account`` and ``<name>-container``.
        :param args: Store settings, a ``ModelStoreArgs`` or a dict of its fields.
        :param opts: Standard Pulumi resource options.
        :param scope: Resource group of the account (new or existing) and region of a new one; the
            region may be None when ``args.create`` is False.
        """
        args = validate_args(ModelStoreArgs, args, "ModelStore", name)
        raise_problems("ModelStore", name, store_problems(args, scope))
        resource_group_name, location = scope.resource_group_name, scope.location
        super().__init__(f"{PACKAGE}:index:ModelStore", name, None, opts)
        self._name = name
        child = pulumi.ResourceOptions(parent=self)

        if args.create:
            self.account = storage.StorageAccount(
                f"{name}-account",
                account_name=args.account_name,
                resource_group_name=resource_group_name,
                location=location,
                sku={"name": args.sku},
                kind=KIND_FOR_SKU[args.sku],
                # Workload identity is the only way in: no account keys or SAS, no anonymous reads,
                # and the portal defaults to Entra ID too.
                allow_shared_key_access=False,
                allow_blob_public_access=False,
                default_to_o_auth_authentication=True,
                minimum_tls_version="TLS1_2",
                enable_https_traffic_only=True,
                tags=args.tags or None,
                opts=child,
            )
            # Created through ARM (management plane), so it works with shared keys disabled.
            self.container = storage.BlobContainer(
                f"{name}-container",
                account_name=args.account_name,
                container_name=args.container,
                resource_group_name=resource_group_name,
                public_access="None",
                opts=pulumi.ResourceOptions(parent=self, depends_on=[self.account]),
            )
            self.account_id = self.account.id
            self.blob_endpoint = self.account.primary_endpoints.apply(lambda endpoints: endpoints.blob)
        else:
            self.account = None
            self.container = None
            # The ID of an existing account follows from its name; building it keeps role scopes
            # readable in plans. The read below still fails the preview if the account is missing.
            client = authorization.get_client_config_output(opts=pulumi.InvokeOutputOptions(parent=self))
            self.account_id = pulumi.Output.all(client.subscription_id, resource_group_name).apply(
                lambda parts: (
                    f"/subscriptions/{parts[0]}/resourceGroups/{parts[1]}/providers/Microsoft.Storage/storageAccounts/{args.account_name}"
                )
            )
            found = storage.get_storage_account_output(
                account_name=args.account_name,
                resource_group_name=resource_group_name,
                opts=pulumi.InvokeOutputOptions(parent=self),
            )
            self.blob_endpoint = found.primary_endpoints.apply(lambda endpoints: endpoints.blob if endpoints else None)

        facts = store_facts(args)
        self.account_name, self.container_name = facts.account_name, facts.container_name
        self.container_scope = self.account_id.apply(
            lambda account_id: f"{account_id}/blobServices/default/containers/{args.container}"
        )
        self.register_outputs(
            {
                "account_name": self.account_name,
                "container_name": self.container_name,
                "account_id": self.account_id,
                "container_scope": self.container_scope,
                "blob_endpoint": self.blob_endpoint,
            }
        )

    def model_uri(self, path: str) -> str:
        """``az://<container>/<path>`` for a blob or folder of this store, e.g. ``model_uri("llama-3.1-8b")``.

        The URI names no account: readers (fsspec/adlfs-style ``az://``) take it from ``account_name``
        or ``blob_endpoint``, e.g. the ``AZURE_STORAGE_ACCOUNT_NAME`` environment variable.
        """
        problem = blob_path_problem(path)
        if problem:
            fail("ModelStore", self._name, "path", path, problem)
        return f"az://{self.container_name}/{path}"

    def grant_read(self, identity: WorkloadIdentity) -> authorization.RoleAssignment:
        """Let ``identity`` read this store: 'Storage Blob Data Reader' on the container only."""
        return identity.grant(
            STORAGE_BLOB_DATA_READER,
            scope=self.container_scope,
            name=f"{self._name}-read",
            opts=pulumi.ResourceOptions(depends_on=[self.container]) if self.container else None,
        )

    def grant_write(self, identity: WorkloadIdentity, prefix: str | None = None) -> authorization.RoleAssignment:
        """Let ``identity`` write this store: 'Storage Blob Data Contributor' on the container only, and with
        ``prefix`` (a blob path such as ``checkpoints/run-1``) creating, overwriting and deleting blobs only
        under ``prefix/`` (an ABAC condition on the assignment); reading stays container-wide."""
        problem = prefix is not None and (blob_path_problem(prefix) or ("must not contain quotes" if "'" in prefix else None))
        if problem:
            fail("ModelStore", self._name, "prefix", prefix, problem)
        return identity.grant(
            STORAGE_BLOB_DATA_CONTRIBUTOR,
            scope=self.container_scope,
            name=f"{self._name}-write",
            opts=pulumi.ResourceOptions(depends_on=[self.container]) if self.container else None,
            condition=prefix_condition(prefix) if prefix else None,
        )


def prefix_condition(prefix: str) -> str:
    """An ABAC condition that lets the blob-changing actions through only for blobs under ``prefix/``.

    The form of Azure's "Write blobs in named containers with a path" example (storage docs,
    storage-auth-abac-examples.md), with delete and move added; reads stay container-wide. The container
    is already the assignment's scope, so the condition names only the path.
    """
    actions = " AND ".join(
        f"!(ActionMatches{{'Microsoft.Storage/storageAccounts/blobServices/containers/blobs/{action}'}})"
        for action in _BLOB_CHANGES
    )
    path = f"@Resource[Microsoft.Storage/storageAccounts/blobServices/containers/blobs:path] StringStartsWith '{prefix}/'"
    return f"(({actions}) OR ({path}))"


def blob_path_problem(path: str) -> str | None:
    """Why ``path`` is not a usable blob name or prefix inside a container, or None."""
    if not path:
        return "expected a blob path inside the container, e.g. 'llama-3.1-8b/model.safetensors'"
    if len(path) > _MAX_BLOB_NAME:
        return f"blob names are at most {_MAX_BLOB_NAME} characters"
    if path.startswith("/") or _SCHEME.match(path) or "://" in path:
        # "az:/models/x" would become az://<container>/az:/models/x: a URI is never a path inside the container.
        return (
            "expected a path relative to the container, without a leading '/' or a scheme "
            "(e.g. 'llama-3.1-8b'; the store builds az://<container>/<path> itself)"
        )
    if "\\" in path or any(c.isspace() or not c.isprintable() for c in path):
        return "blob paths here use '/' separators and no whitespace, backslashes or control characters"
    segments = path.split("/")
    if len(segments) > _MAX_BLOB_SEGMENTS:
        return f"blob names have at most {_MAX_BLOB_SEGMENTS} path segments"
    if any(segment in ("", ".", "..") for segment in segments):
        return "path segments must not be empty, '.' or '..' (no '//', trailing '/' or relative parts)"
    if any(segment.endswith(".") for segment in segments):
        return "path segments must not end with '.' (Azure's blob naming rules advise against it; tools mishandle such names)"
    return None
