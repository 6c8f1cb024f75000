"""The kubeconfig AKS returns, made usable under ``pulumi up``: its ``kubelogin`` exec plugin signs
in the way the caller chose instead of by device code, which needs a person at a browser."""

from __future__ import annotations

import base64

import yaml


def kubeconfig_for_login(kubeconfig_b64: str, login: str) -> str:
    """Decode an AKS exec-format kubeconfig and make its ``kubelogin`` use the given login mode.

    AKS returns ``--login devicecode``, which cannot run unattended under ``pulumi up``.
    """
    config = yaml.safe_load(base64.b64decode(kubeconfig_b64))
    for user in config.get("users") or []:
        exec_ = (user.get("user") or {}).get("exec")
        if not exec_:
            continue
        args = list(exec_.get("args") or [])
        if "--login" in args:
            args[args.index("--login") + 1] = login
        else:
            args += ["--login", login]
        exec_["args"] = args
    return yaml.safe_dump(config, sort_keys=False)
