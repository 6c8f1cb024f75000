"""Secrets are never echoed: which keys and which values count as secrets, and how they are masked.

A value is a secret when the key it sits under says so (key, token, secret, password, credential, in any
spelling: ``vllm_api_key``, ``clientSecret``, ``HF_TOKEN``) or when it is shaped like a credential
(an OpenAI-style ``sk-...`` key, a Hugging Face or GitHub token, a JWT, a PEM private key, an Azure storage
key or connection string, a password in a URL). Every message and file the tool writes passes through here,
whatever key the value stood under and whether the stack knows that key or not. Nothing here imports Pulumi.
"""

from __future__ import annotations

import re
from typing import Any

MASK = "<secret, not shown>"
"""What a message shows in place of a secret's value."""

STACK_SECRETS = ("vllm_api_key", "hf_token", "gateway_client_keys")
"""The project's own secrets: read with ``require_secret``, stored with ``pulumi config set --secret``."""

_SECRET_WORDS = {"key", "keys", "token", "tokens", "secret", "secrets", "password", "passwords", "passwd", "pwd"}
_SECRET_WORDS |= {"credential", "credentials", "apikey", "passphrase"}
_COUNT_WORDS = {"key", "keys", "token", "tokens"}
"""Words under which a number counts or sizes something (``max_num_batched_tokens: 8192``, ``experts_per_token``)
rather than being a secret; a number under ``password`` is still one."""
_NAMING_WORDS = {"name", "names", "ref", "refs"}
"""Words that make a key hold the name of a secret (``secret_names``, ``token_secret_ref``), not a secret."""
REFERENCE_KEYS = {"model_access_secret"}
"""Keys named like secrets that hold the *name* of a Kubernetes Secret, not a secret (KAITO's ``model_access_secret``)."""

_WORD = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")

# Shapes of credentials that are never anything else: the well-known prefixes and formats. Generic "long random
# string" guesses are left out on purpose: a model revision (40 hex digits) or an image digest is not a secret.
# Each pattern starts with a literal, which the regex engine scans for quickly (a plan writes megabytes); the
# character before a match must not be one of the shape's ``joined`` characters (``task-...`` is not ``sk-...``).
_WORDISH = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"
_BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/="
_CREDENTIAL_SHAPES: list[tuple[str, str, str]] = [
    ("an API key (sk-...)", r"sk-(?:[a-z]+-)*[A-Za-z0-9_-]{16,}", _WORDISH),
    ("a Hugging Face token", r"hf_[A-Za-z0-9]{20,}", _WORDISH),
    ("a GitHub token", r"gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,}", _WORDISH),
    ("an AWS access key id", r"(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Z0-9])", _WORDISH),
    ("a Google API key", r"AIza[0-9A-Za-z_-]{35}", _WORDISH),
    ("a Slack token", r"xox[abposr]-[A-Za-z0-9-]{10,}", _WORDISH),
    ("a JSON Web Token", r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", _WORDISH),
    ("a private key", r"-----BEGIN [A-Z ]*PRIVATE KEY-----(?:[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----)?", ""),
    ("an Azure connection string key", r"AccountKey=(?P<v>[^;\s\"']+)", _WORDISH),
    ("an Azure connection string key", r"SharedAccessKey=(?P<v>[^;\s\"']+)", _WORDISH),
    ("a password in a connection string", r"assword=(?P<v>[^;\s\"'&]+)", ""),
    ("a shared access signature", r"sig=(?P<v>[A-Za-z0-9%+/=]{16,})", _WORDISH),
    ("a kubeconfig's client key", r"client-key-data:\s*(?P<v>[A-Za-z0-9+/=]{20,})", _WORDISH),
    ("a password in a URL", r"://(?P<v>[^/\s:@\"']+:[^/\s@\"']+)@", ""),
]
_SHAPES = [(what, re.compile(pattern), joined) for what, pattern, joined in _CREDENTIAL_SHAPES]
_STORAGE_KEY = "an Azure storage account key"
_STORAGE_KEY_BODY = re.compile(r"[A-Za-z0-9+/]{86}")
"""A storage account key: 86 base64 characters and ``==``, found from its ``==`` (a pattern starting with a class
would be tried at every character)."""


def _spans(text: str) -> list[tuple[int, int, str]]:
    """Where credentials stand in ``text``: ``(start, end, what)``, in order, not overlapping."""
    found = []
    for what, pattern, joined in _SHAPES:
        for match in pattern.finditer(text):
            start = match.start()
            if start and text[start - 1] in joined:
                continue
            if "v" in pattern.groupindex:  # only the value: "AccountKey=<secret, not shown>" still says what it was
                if text.startswith(MASK, match.start("v")):  # masked already (a message redacted twice)
                    continue
                found.append((match.start("v"), match.end("v"), what))
            else:
                found.append((start, match.end(), what))
    at = text.find("==")
    while at != -1:
        start = at - 86
        before, after = text[start - 1 : start] if start > 0 else "", text[at + 2 : at + 3]
        alone = not (before and before in _BASE64.rstrip("=")) and not (after and after in _BASE64)
        if start >= 0 and alone and _STORAGE_KEY_BODY.fullmatch(text, start, at):
            found.append((start, at + 2, _STORAGE_KEY))
        at = text.find("==", at + 2)
    found.sort()
    kept: list[tuple[int, int, str]] = []
    for span in found:
        if not kept or span[0] >= kept[-1][1]:
            kept.append(span)
    return kept


def key_words(key: Any) -> list[str]:
    """The words of a key name in any spelling: ``clientSecret``, ``client_secret``, ``CLIENT-SECRET``."""
    name = str(key).rsplit(":", 1)[-1]  # a provider key: azure-native:clientSecret
    return [w.lower() for w in _WORD.findall(name)]


def is_secret_key(key: Any, value: Any = None) -> bool:
    """Whether a key's name says its value is a secret (``hf_token``, ``clientSecret``, ``password``).

    A number or a true/false is no secret under a word that counts (``max_num_batched_tokens: 8192``).
    """
    words = set(key_words(key))
    if str(key) in REFERENCE_KEYS or words & _NAMING_WORDS:
        return False
    secret = words & _SECRET_WORDS
    if not secret:
        return False
    if isinstance(value, bool) or value is None:
        return False
    return not (isinstance(value, int | float) and secret <= _COUNT_WORDS)


def credential_shape(text: str) -> str | None:
    """What kind of credential ``text`` holds somewhere in it (``"an API key (sk-...)"``), or None."""
    spans = _spans(text)
    return spans[0][2] if spans else None


def looks_secret(value: Any) -> bool:
    """Whether a value holds a credential-shaped string anywhere, or a secret-named key in a mapping."""
    if isinstance(value, str):
        return credential_shape(value) is not None
    if isinstance(value, dict):
        return any(is_secret_key(k, v) or looks_secret(v) for k, v in value.items())
    if isinstance(value, list | tuple | set | frozenset):
        return any(looks_secret(v) for v in value)
    return False


def masked(value: Any, key: Any = None) -> Any:
    """``value`` with every secret in it replaced by ``MASK``: all of it under a secret-named ``key``, and
    inside mappings and lists each value under a secret-named key and each credential-shaped string."""
    if key is not None and is_secret_key(key, value):
        # A mapping of secrets keeps its keys (client ids, not secrets), so a message can still say which is which.
        return {k: MASK for k in value} if isinstance(value, dict) else MASK
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: masked(v, k) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(masked(v) for v in value)
    return value


def redact(text: str) -> str:
    """``text`` with every credential-shaped part replaced by ``MASK``: the last guard on what is printed or written."""
    spans = _spans(text) if text else []
    if not spans:
        return text
    parts, last = [], 0
    for start, end, _what in spans:
        parts += [text[last:start], MASK]
        last = end
    return "".join(parts) + text[last:]


def credential_paths(raw: Any, path: str = "") -> list[tuple[str, str]]:
    """Every credential-shaped string in a decoded config, under any key: ``(key path, what it looks like)``."""
    if isinstance(raw, dict):
        return [found for key, value in raw.items() for found in credential_paths(value, f"{path}.{key}" if path else str(key))]
    if isinstance(raw, list):
        return [found for index, value in enumerate(raw) for found in credential_paths(value, f"{path}[{index}]")]
    shape = credential_shape(raw) if isinstance(raw, str) else None
    return [(path, shape)] if shape else []
