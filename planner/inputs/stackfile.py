"""Finds a Pulumi project and reads one stack file into the flat config map the engine passes
to a program (``project:key -> text``), the way the Pulumi CLI would."""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field
from pathlib import Path

from aks_gpu_inference.components.core.errors import ConfigError
from aks_gpu_inference.components.stack.stack_input import SECRET_KEYS
from aks_gpu_inference.planner.inputs import safe_yaml


@dataclass
class StackFile:
    project_dir: Path
    project: str
    stack: str
    path: Path
    config: dict[str, str]
    secret_keys: list[str]
    placeholder_secrets: list[str]
    """Secret keys the stack file lacks; the plan uses marked placeholders for them."""
    warnings: list[str] = field(default_factory=list)
    """Keys in a namespace that is neither the project's nor a provider's: a program reads none of them."""


PROVIDER_NAMESPACES = frozenset({"azure-native", "kubernetes", "pulumi", "azure", "random", "tls", "command"})
"""Config namespaces Pulumi or a provider plugin reads; any other but the project's goes unread."""


def namespace_warnings(project: str, config: dict[str, str], source: str) -> list[str]:
    """One warning per config namespace nobody reads (``aks-gpu-inferance:gateway`` plans a stack without a gateway)."""
    unread: dict[str, list[str]] = {}
    for key in config:
        namespace = key.split(":", 1)[0]
        if namespace != project and namespace not in PROVIDER_NAMESPACES:
            unread.setdefault(namespace, []).append(key)
    return [
        f"{source}: {', '.join(sorted(keys))} {'is' if len(keys) == 1 else 'are'} in namespace {namespace!r}, neither the "
        f"project's ({project!r}) nor a provider's: the program never reads {'it' if len(keys) == 1 else 'them'}"
        + (f" (did you mean {project!r}?)" if difflib.get_close_matches(namespace, [project], cutoff=0.8) else "")
        for namespace, keys in sorted(unread.items())
    ]


def find_project_dir(start: Path) -> Path:
    for directory in [start, *start.parents]:
        if (directory / "Pulumi.yaml").is_file():
            return directory
    raise ConfigError(f"no Pulumi project found at or above {start}", ["expected a Pulumi.yaml; pass --project-dir"])


def available_stacks(project_dir: Path) -> list[str]:
    return sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in project_dir.glob("Pulumi.*.yaml"))


def _load_yaml(path: Path) -> dict:
    """A project or stack file, bounded (``planner.inputs.safe_yaml``): keys must be strings and unique,
    numbers finite and at most 30 digits, values what JSON holds; aliases may not nest into themselves."""
    data = safe_yaml.load(path, source=path.name, string_keys=True, finite_floats=True, plain=True) or {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path.name} is not a mapping", [f"top level is a {type(data).__name__}"])
    return data


def read_stack(project_dir: Path, stack: str) -> StackFile:
    """Read ``Pulumi.<stack>.yaml``; secure values become marked placeholders, flagged secret."""
    project = _load_yaml(project_dir / "Pulumi.yaml").get("name")
    if not project:
        raise ConfigError("Pulumi.yaml is invalid", ["name: required key is missing"])
    if not isinstance(project, str):
        raise ConfigError("Pulumi.yaml is invalid", [f"name={project!r}: expected the project name as a string"])
    path = project_dir / f"Pulumi.{stack}.yaml"
    if not path.is_file():
        stacks = ", ".join(available_stacks(project_dir)) or "none"
        raise ConfigError(f"unknown stack {stack!r}", [f"{path.name} does not exist in {project_dir}; stacks here: {stacks}"])
    raw = _load_yaml(path).get("config") or {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{path.name} is invalid", ["config: expected a mapping of keys to values"])
    config, secret_keys, secure_objects = {}, [], []
    for key, value in raw.items():
        full_key = key if ":" in key else f"{project}:{key}"
        if isinstance(value, dict) and set(value) == {"secure"}:
            # Stack secrets are encrypted with a key only the Pulumi backend holds.
            config[full_key] = f"<secret:{full_key}>"
            secret_keys.append(full_key)
            if full_key == f"{project}:gateway_client_keys":  # an object secret, filled in below
                secure_objects.append(full_key)
        elif isinstance(value, str):
            config[full_key] = value
        else:
            config[full_key] = json.dumps(value)
    for full_key in secure_objects:
        config[full_key] = _client_placeholders(project, config, full_key)
    placeholders = add_secret_placeholders(project, config, secret_keys)
    warnings = namespace_warnings(project, config, path.name)
    return StackFile(project_dir, project, stack, path, config, secret_keys, placeholders, warnings)


def add_secret_placeholders(project: str, config: dict[str, str], secret_keys: list[str]) -> list[str]:
    """Fill the program's secrets that the stack file lacks with marked placeholders; return their keys.

    Secrets are set per environment with ``pulumi config set --secret``, not committed, so an
    offline plan of a committed stack file would otherwise stop at the first ``require_secret``.
    """
    added = []
    for key in SECRET_KEYS:
        full_key = f"{project}:{key}"
        if full_key not in config:
            placeholder = f"<secret:{full_key}>"
            if key == "gateway_client_keys":
                placeholder = _client_placeholders(project, config, full_key)
            config[full_key] = placeholder
            secret_keys.append(full_key)
            added.append(key)
    return added


def _client_placeholders(project: str, config: dict[str, str], full_key: str) -> str:
    """``gateway_client_keys`` is an object secret: one marked placeholder per configured client."""
    return json.dumps({client: f"<secret:{full_key}>" for client in _gateway_clients(project, config)})


def _gateway_clients(project: str, config: dict[str, str]) -> list[str]:
    """The gateway's client ids from the stack config; none if it is missing or malformed (the
    program's config check reports that)."""
    try:
        clients = json.loads(config.get(f"{project}:gateway", "null"))["gateway"]["client_ids"]
    except (ValueError, TypeError, KeyError):
        return []
    return [c for c in clients if isinstance(c, str)] if isinstance(clients, list) else []
