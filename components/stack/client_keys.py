"""The ``gateway_client_keys`` secret: an API key for each client the gateway lists, checked before any resource
exists (by its key names only: the secret is never printed) and handed to the gateway one client at a time."""

from __future__ import annotations

import json

import pulumi

from .._base import ComponentInputError


def gateway_client_keys(settings: pulumi.Config, client_ids: list[str]) -> dict[str, pulumi.Output[str]]:
    """Each listed client's key from the secret; none to read without clients."""
    if not client_ids:
        return {}
    _check(settings, client_ids)
    keys = settings.require_secret_object("gateway_client_keys")
    return {client: keys.apply(lambda k, c=client: _key(k, c)) for client in client_ids}


HINT = 'set one per client with: pulumi config set --secret gateway_client_keys \'{"<client>": "<key>", ...}\''


def _check(settings: pulumi.Config, client_ids: list[str]) -> None:
    """Refuse a ``gateway_client_keys`` secret without a key for every configured client, before any
    resource exists. Only its key names are compared; the secret itself is never printed (Pulumi's own
    "not a valid JSON object" message would quote it)."""
    raw = settings.get("gateway_client_keys")
    if raw is None:
        return  # require_secret_object reports the missing secret
    try:
        keys = json.loads(raw)
    except ValueError:
        keys = None
    if not isinstance(keys, dict):
        raise ComponentInputError(
            "the gateway_client_keys secret is invalid", ["expected a JSON object of client id -> API key", HINT]
        )
    missing = [c for c in client_ids if not isinstance(keys.get(c), str) or not keys[c]]
    if missing:
        raise ComponentInputError(
            "the gateway_client_keys secret lacks configured clients",
            [f"gateway.gateway.client_ids lists {c!r}, but the secret has no key (a non-empty string) for it" for c in missing]
            + [HINT],
        )


def _key(keys: dict, client: str) -> str:
    if isinstance(keys.get(client), str):
        return keys[client]
    raise ComponentInputError("the gateway_client_keys secret lacks configured clients", [f"no key for {client!r}", HINT])
