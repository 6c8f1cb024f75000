"""AzureOpenAI: an Azure OpenAI account with pay-per-token model deployments, reached through
Microsoft Entra ID (workload identity) by default, plus the per-token prices used to compare it
with self-hosted GPU serving."""

from __future__ import annotations

import re
from typing import Any, Literal, NamedTuple

import pulumi
from pulumi_azure_native import authorization, cognitiveservices
from pydantic import Field, field_validator, model_validator

from .._base import PACKAGE, StrictModel, validate_args
from ..context import AzureScope
from ..core import lifecycle
from ..core.errors import FieldProblem, FieldProblems
from .workload_identity import WorkloadIdentity

OPENAI_USER = "Cognitive Services OpenAI User"
"""The role ``grant_use`` assigns: call the inference APIs of the account's deployments, without
managing the account or reading its keys (see ``BUILT_IN_ROLES``)."""


class TokenPrice(NamedTuple):
    """USD per 1M tokens."""

    prompt_per_1m: float
    """USD per 1M prompt (input) tokens."""
    completion_per_1m: float
    """USD per 1M completion (output) tokens."""


PRICES_SOURCE = (
    "UNVERIFIED: third-party price listings for Azure OpenAI Global Standard deployments, USD per 1M "
    "input/output tokens, collected 2026-11; not read from Microsoft's Azure OpenAI pricing page. Check "
    "that page for your region and deployment type, and pass prompt_per_1m / completion_per_1m to override."
)
"""Where ``MODEL_PRICES`` comes from, when it was collected and how far to trust it."""

MODEL_PRICES: dict[str, TokenPrice] = {
    # gpt-5.5: OpenAI's list price for the model ($5 / $30; benchr.org "GPT-5.5 pricing explained",
    # 2026), taken as the Global Standard price; unverified like the rest.
    "gpt-5.5": TokenPrice(5.00, 30.00),
    "gpt-4o": TokenPrice(2.50, 10.00),
    "gpt-4.1": TokenPrice(2.00, 8.00),
    "gpt-4o-mini": TokenPrice(0.15, 0.60),
}
"""Default prices by model name; see ``PRICES_SOURCE``: these are unverified defaults, not quotes."""


def _newest_version(model: str) -> str | None:
    """The newest version of ``model`` the lifecycle table lists (its one home for Azure OpenAI model versions)."""
    versions = [e.name.partition("@")[2] for e in lifecycle.entries("azure_openai_model") if e.name.partition("@")[0] == model]
    return max(versions, default=None)


# The lifecycle table (components/core/lifecycle.json) holds each version's retirement date and recommends
# the frontier model; the plan refuses a retired version and warns before.
MODEL_VERSIONS: dict[str, str] = {model: version for model in MODEL_PRICES if (version := _newest_version(model))}
"""Default model version by model name, used when a deployment gives none."""

TokenSku = Literal["GlobalStandard", "DataZoneStandard", "Standard"]

_ACCOUNT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]{0,61}[A-Za-z0-9]$")
_DEPLOYMENT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_MODEL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_MODEL_VERSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


class OpenAIDeploymentArgs(StrictModel):
    """One model deployment: a named, billed-per-token endpoint for one model version."""

    name: str
    """Deployment name, the ``deployment`` path segment clients call (e.g. ``chat``): 1-64 letters,
    digits, '.', '_' or '-', starting with a letter or digit; unique in the account (case-insensitive).
    Required; changing it replaces the deployment."""

    model: str
    """OpenAI model name, e.g. ``gpt-5.5``, ``gpt-4.1``, ``gpt-4o-mini``. Required. Each version retires on
    the date in ``components/core/lifecycle.json`` (gpt-4.1, gpt-4o and gpt-4o-mini on 2027-04-14 in the
    2026-09-02 schedule); ``aks-gpu plan`` refuses a retired one and recommends ``gpt-5.5``."""

    version: str | None = None
    """Model version, e.g. ``2025-04-14``. Defaults from ``MODEL_VERSIONS`` for the models listed
    there (gpt-5.5 2026-04-24, gpt-4o 2024-11-20, gpt-4.1 2025-04-14, gpt-4o-mini 2024-07-18); required
    for any other model."""

    sku: TokenSku = "GlobalStandard"
    """Deployment type: one of the pay-per-token types, where ``capacity`` is a tokens-per-minute
    quota. Default ``GlobalStandard`` (routed to any Azure region with capacity). ``DataZoneStandard``
    keeps processing in the data zone, ``Standard`` in the account's region; both usually cost more
    per token, so pass their prices explicitly. Provisioned types are billed per hour, not per token,
    and are not offered here."""

    capacity: int = Field(50, ge=1, le=1_000_000)
    """Rate-limit quota in thousands of tokens per minute (50 = 50,000 TPM), drawn from the
    subscription's per-region, per-model quota. Default 50; at least 1, at most 1,000,000 (a billion
    TPM, far above any quota tier)."""

    version_upgrade_option: Literal["OnceCurrentVersionExpired", "OnceNewDefaultVersionAvailable", "NoAutoUpgrade"] = (
        "OnceCurrentVersionExpired"
    )
    """When Azure moves the deployment to a newer model version. Default ``OnceCurrentVersionExpired``:
    keep the pinned ``version`` (and the prices recorded for it) until it retires, then upgrade rather
    than stop serving. ``NoAutoUpgrade`` lets the deployment stop working at retirement."""

    prompt_per_1m: float | None = Field(None, ge=0, le=10_000, allow_inf_nan=False)
    """USD per 1M prompt (input) tokens. Defaults from ``MODEL_PRICES`` (unverified, see
    ``PRICES_SOURCE``); required for a model not in that table."""

    completion_per_1m: float | None = Field(None, ge=0, le=10_000, allow_inf_nan=False)
    """USD per 1M completion (output) tokens. Defaults like ``prompt_per_1m``. Both are finite and at most
    10,000 USD (list prices are below 1,000)."""

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        if not _DEPLOYMENT_NAME.match(value):
            raise ValueError("deployment names are 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit")
        return value

    @field_validator("model")
    @classmethod
    def _check_model(cls, value: str) -> str:
        if not _MODEL_NAME.match(value):
            raise ValueError("expected an OpenAI model name such as 'gpt-5.5' or 'gpt-4o-mini'")
        return value

    @field_validator("version")
    @classmethod
    def _check_version(cls, value: str | None) -> str | None:
        if value is not None and not _MODEL_VERSION.match(value):
            raise ValueError("expected a model version such as '2025-04-14'")
        return value

    @model_validator(mode="before")
    @classmethod
    def _defaults_from_tables(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not isinstance(data.get("model"), str):
            return data
        data = dict(data)
        model = data["model"]
        if data.get("version") is None and model in MODEL_VERSIONS:
            data["version"] = MODEL_VERSIONS[model]
        price = MODEL_PRICES.get(model)
        if price is not None:
            if data.get("prompt_per_1m") is None:
                data["prompt_per_1m"] = price.prompt_per_1m
            if data.get("completion_per_1m") is None:
                data["completion_per_1m"] = price.completion_per_1m
        return data

    @model_validator(mode="after")
    def _check_known(self) -> OpenAIDeploymentArgs:
        problems = deployment_problems(self)
        if problems:
            raise FieldProblems(problems)
        return self


def deployment_problems(deployment: OpenAIDeploymentArgs) -> list[FieldProblem]:
    """What a deployment lacks that no table supplies: a version, or prices, for a model the tables do not list."""
    problems = []
    if deployment.version is None:
        known = ", ".join(sorted(MODEL_VERSIONS))
        problems.append(
            FieldProblem(
                "version", None, f"no default version for model {deployment.model!r} (defaults exist for {known}); set version"
            )
        )
    problems += [
        FieldProblem(
            field,
            None,
            f"no known price for model {deployment.model!r} (defaults exist for {', '.join(sorted(MODEL_PRICES))}); "
            "set prompt_per_1m and completion_per_1m in USD per 1M tokens",
        )
        for field in ("prompt_per_1m", "completion_per_1m")
        if getattr(deployment, field) is None
    ]
    return problems


class AzureOpenAIArgs(StrictModel):
    """The account and its deployments. Names are plain values: they decide resource identity."""

    account_name: str
    """Account name, also used as its custom subdomain, so the endpoint is
    ``https://<account_name>.openai.azure.com/`` (Entra ID tokens work only on such custom-subdomain
    endpoints, not regional ones). 2-63 letters, digits or '-', starting and ending with a letter or
    digit (ARM allows 64, a DNS label 63); unique across Azure. Required; changing it replaces the
    account and its deployments."""

    local_auth: bool = False
    """Allow API-key authentication. Default False: keys are disabled and callers use Entra ID (e.g.
    a ``WorkloadIdentity`` given ``grant_use``). True is an unsafe opt-in: anyone holding a key can
    call every deployment, and keys do not expire. This component never reads the keys; the caller
    must fetch one and supply it to workloads as a Pulumi secret (``api_key_secret_needed`` is then True)."""

    public_network_access: Literal["Enabled", "Disabled"] = "Enabled"
    """Default ``Enabled``: the endpoint is reachable from the internet, and from AKS without extra
    networking; with ``local_auth`` False every call still needs an Entra ID token with a role on the
    account. ``Disabled`` allows only private endpoints, which this component does not create: add a
    private endpoint and the ``privatelink.openai.azure.com`` DNS zone yourself."""

    deployments: list[OpenAIDeploymentArgs] = Field(default_factory=list)
    """Model deployments, created one at a time (Azure refuses concurrent changes to one account).
    Default none."""

    tags: dict[str, str] = Field(default_factory=dict)
    """Azure tags for the account. Default none."""

    @field_validator("account_name")
    @classmethod
    def _check_account_name(cls, value: str) -> str:
        if not _ACCOUNT_NAME.match(value):
            raise ValueError(
                "Azure OpenAI account names (also the custom subdomain) are 2-63 letters, digits or '-', "
                "starting and ending with a letter or digit (e.g. 'contoso-openai')"
            )
        return value

    @model_validator(mode="after")
    def _check_unique_deployments(self) -> AzureOpenAIArgs:
        seen: set[str] = set()
        duplicates = []
        for deployment in self.deployments:
            key = deployment.name.lower()
            if key in seen and deployment.name not in duplicates:
                duplicates.append(deployment.name)
            seen.add(key)
        if duplicates:
            raise FieldProblem(
                "deployments",
                duplicates,
                "deployment names must be unique in the account (Azure compares them case-insensitively)",
            )
        return self


class AzureOpenAI(pulumi.ComponentResource):
    """An Azure OpenAI account (kind ``OpenAI``, SKU ``S0``) with a custom subdomain and its model deployments.

    Outputs: ``endpoint`` (``https://<account_name>.openai.azure.com/``), ``account_id`` (for role
    scopes), ``deployments`` (deployment name -> model) and ``prices`` (deployment name ->
    (prompt, completion) USD per 1M tokens; defaults are unverified, see ``PRICES_SOURCE``).
    ``api_key_secret_needed`` is True only when ``local_auth`` is. ``grant_use()`` lets a
    ``WorkloadIdentity`` call the deployments.
    """

    endpoint: pulumi.Output[str]
    account_id: pulumi.Output[str]
    account_name: str
    deployments: dict[str, str]
    prices: dict[str, tuple[float, float]]
    api_key_secret_needed: bool
    account: cognitiveservices.Account
    model_deployments: dict[str, cognitiveservices.Deployment]

    def __init__(
        self,
        name: str,
        args: AzureOpenAIArgs | dict,
        opts: pulumi.ResourceOptions | None = None,
        *,
        scope: AzureScope,
    ):
        """
        :param name: Logical name; children are named ``<name>-account`` and ``<name>-deployment-<deployment>``.
        :param args: Account settings, an ``AzureOpenAIArgs`` or a dict of its fields.
        :param opts: Standard Pulumi resource options.
        :param scope: Resource group and Azure region of the account; the models and deployment types asked
            for must be offered in that region.
        """
        args = validate_args(AzureOpenAIArgs, args, "AzureOpenAI", name)
        resource_group_name = scope.resource_group_name
        super().__init__(f"{PACKAGE}:index:AzureOpenAI", name, None, opts)
        self._name = name

        self.account = cognitiveservices.Account(
            f"{name}-account",
            account_name=args.account_name,
            resource_group_name=resource_group_name,
            location=scope.location,
            kind="OpenAI",
            sku={"name": "S0"},
            properties={
                # The custom subdomain is what makes Entra ID tokens usable at all.
                "custom_sub_domain_name": args.account_name,
                "disable_local_auth": not args.local_auth,
                "public_network_access": args.public_network_access,
            },
            tags=args.tags or None,
            opts=pulumi.ResourceOptions(parent=self),
        )

        self.model_deployments = {}
        previous: pulumi.Resource = self.account
        for deployment in args.deployments:
            # One at a time: concurrent writes under one account fail with RequestConflict
            # ("Another operation is being performed on the parent resource").
            previous = cognitiveservices.Deployment(
                f"{name}-deployment-{deployment.name}",
                account_name=args.account_name,
                resource_group_name=resource_group_name,
                deployment_name=deployment.name,
                properties={
                    "model": {"format": "OpenAI", "name": deployment.model, "version": deployment.version},
                    "version_upgrade_option": deployment.version_upgrade_option,
                },
                sku={"name": deployment.sku, "capacity": deployment.capacity},
                opts=pulumi.ResourceOptions(parent=self, depends_on=[previous]),
            )
            self.model_deployments[deployment.name] = previous

        endpoint = f"https://{args.account_name.lower()}.openai.azure.com/"
        self.endpoint = self.account.id.apply(lambda _: endpoint)
        self.account_id = self.account.id
        self.account_name = args.account_name
        self.deployments = {d.name: d.model for d in args.deployments}
        self.prices = {d.name: (d.prompt_per_1m, d.completion_per_1m) for d in args.deployments}
        self.api_key_secret_needed = args.local_auth
        self.register_outputs(
            {
                "endpoint": self.endpoint,
                "account_id": self.account_id,
                "deployments": self.deployments,
                "prices": {key: list(value) for key, value in self.prices.items()},
                "api_key_secret_needed": self.api_key_secret_needed,
            }
        )

    def grant_use(self, identity: WorkloadIdentity) -> authorization.RoleAssignment:
        """Let ``identity`` call this account's deployments: 'Cognitive Services OpenAI User' on the account."""
        return identity.grant(
            OPENAI_USER,
            scope=self.account_id,
            name=f"{self._name}-use",
            opts=pulumi.ResourceOptions(depends_on=[self.account]),
        )
