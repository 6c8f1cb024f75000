"""Checks on a stack's config as a whole, the parts the typed ``StackConfig`` cannot see: Azure region
names, the ``azure-native`` provider's region, and secrets committed in plain text.

Region names come from ``azure_regions.json`` beside this module (what ``az account list-locations``
prints, with its source). Nothing here imports Pulumi; messages never show a secret's value.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

from ..core.errors import shown
from ..core.secrets import MASK, STACK_SECRETS, credential_paths, is_secret_key

SECRET_KEYS: dict[str, str] = {
    "vllm_api_key": "the key clients send to the model endpoints (pulumi config set --secret vllm_api_key ...)",
    "hf_token": "a Hugging Face token, for models with source huggingface (pulumi config set --secret hf_token ...)",
    "gateway_client_keys": 'API key per gateway client, a JSON object (pulumi config set --secret gateway_client_keys \'{"agent": "..."}\')',
}
"""Secrets the program reads with require_secret; they never enter the typed config."""

PROVIDER_LOCATION = "azure-native:location"


@cache
def azure_regions() -> dict[str, str]:
    """Every region name Azure accepts as a location (public, Government, China) -> its display name."""
    data = json.loads(Path(__file__).with_name("azure_regions.json").read_text())
    rows = [*data["regions"], *data["sovereign"]["regions"]]
    return {row["name"]: row["display_name"] for row in rows}


def region_problem(value: str) -> str | None:
    """Why ``value`` is not an Azure region name, with the closest names; None when it is one."""
    regions = azure_regions()
    if value in regions:
        return None
    squashed = value.replace(" ", "").lower()
    if squashed in regions:
        return f"use the region's name, not its display name or another spelling: {squashed!r}"
    close = difflib.get_close_matches(squashed, regions, n=3, cutoff=0.75)
    hint = (
        f"did you mean {' or '.join(repr(c) for c in close)}?" if close else "expected a name such as 'eastus' or 'swedencentral'"
    )
    return f"not an Azure region (components/stack/azure_regions.json); {hint}"


def secret_command(key: str, client_ids: Iterable[str] = ()) -> str:
    """The command that stores ``key`` encrypted in the stack file."""
    if key == "gateway_client_keys":
        clients = ", ".join(f'"{c}": "<key>"' for c in client_ids) or '"<client id>": "<key>"'
        return f"pulumi config set --secret gateway_client_keys '{{{clients}}}'"
    if key == "vllm_api_key":
        return 'pulumi config set --secret vllm_api_key "$(openssl rand -hex 32)"'
    return f"pulumi config set --secret {key}  (it prompts for the value, which keeps it out of your shell history)"


def _client_ids(all_config: dict[str, str], project: str) -> list[str]:
    try:
        clients = json.loads(all_config.get(f"{project}:gateway", "null"))["gateway"]["client_ids"]
    except (ValueError, TypeError, KeyError):
        return []
    return [c for c in clients if isinstance(c, str)] if isinstance(clients, list) else []


def stack_problems(all_config: dict[str, str], project: str, secret_keys: Iterable[str]) -> list[str]:
    """Problems of the flat ``project:key -> text`` map the engine passes, one line each.

    ``secret_keys`` are the keys the engine marks secret (stored with ``--secret``); a project secret
    outside them was written in plain text. The provider's region must be the stack's ``location``.
    """
    problems = []
    secret = set(secret_keys)
    for key in SECRET_KEYS:
        full_key = f"{project}:{key}"
        if full_key in all_config and full_key not in secret:
            problems.append(
                f"{full_key}: a secret stored in plain text in the stack file (its value is not shown here); "
                f"anyone who can read the file can read it, so delete that line, rotate the secret, and store "
                f"it encrypted: {secret_command(key, _client_ids(all_config, project))}"
            )
    for full_key, value in all_config.items():
        namespace, _, key = full_key.partition(":")
        if namespace != project and full_key not in secret and value and is_secret_key(key, value):
            problems.append(
                f"{full_key}: a credential stored in plain text in the stack file (its value is not shown here); "
                f"anyone who can read the file can read it, so delete that line, rotate the credential, and store it "
                f"encrypted: pulumi config set --secret {full_key}  (it prompts for the value)"
            )
    provider = all_config.get(PROVIDER_LOCATION)
    location = all_config.get(f"{project}:location")
    if isinstance(provider, str):
        problem = region_problem(provider)
        if problem:
            problems.append(f"{PROVIDER_LOCATION}={shown(provider)}: {problem}")
        elif isinstance(location, str) and not region_problem(location) and provider != location:
            problems.append(
                f"{PROVIDER_LOCATION}={shown(provider)}: disagrees with {project}:location={location!r}; resources "
                f"that name no location would land in {provider}: set both to the same region"
            )
    return problems


def typo_secret_keys(raw: dict[str, Any], accepted: Iterable[str]) -> dict[str, str]:
    """Unknown top-level keys that look like a misspelt secret -> that secret's key; their values
    are never shown (a secret written under a wrong name is still a secret)."""
    known = set(accepted)
    found = {}
    for key in raw:
        if key not in known:
            close = difflib.get_close_matches(str(key), SECRET_KEYS, n=1, cutoff=0.8)
            if close:
                found[key] = close[0]
    return found


def plain_credential_problems(raw: dict[str, Any], reported: Iterable[str] = ()) -> list[str]:
    """A credential-shaped value anywhere in the project's plain config (a known key or not): refused, never shown.

    Paths already in ``reported`` (an unknown key, refused with its value masked) are not reported twice.
    """
    said = {line.split("=", 1)[0].split(":", 1)[0] for line in reported}
    return [
        f"{path}={MASK}: looks like {what}, written in plain text in the stack file: anyone who can read the file "
        f"(and its history) can read it, so remove it, rotate it, and keep credentials in the stack's secrets "
        f"({', '.join(STACK_SECRETS)}: pulumi config set --secret ...)"
        for path, what in credential_paths(raw)
        if path not in said
    ]
