"""Where the aks-gpu-guardrails pack is installed, for ``pulumi preview --policy-pack``, and whether Pulumi would run it
with the Python it is installed in. Imports neither Pulumi nor the pack: ``policies/__init__.py`` is a docstring."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from aks_gpu_inference import policies

MANIFEST = "PulumiPolicy.yaml"


def pack_dir() -> Path:
    """The folder holding the pack's ``PulumiPolicy.yaml`` and ``__main__.py``: site-packages/policies once installed,
    the checkout's policies/ in an editable install."""
    return Path(policies.__file__).resolve().parent


def path_python() -> str | None:
    """The Python pulumi-language-python's pip toolchain runs a pack with when its manifest names no ``virtualenv``:
    ``$PULUMI_PYTHON_CMD``, else ``python3`` or ``python`` on the PATH (``python`` first on Windows); None if none."""
    if os.environ.get("PULUMI_PYTHON_CMD"):
        names = [os.environ["PULUMI_PYTHON_CMD"]]
    else:
        names = ["python", "python3"] if os.name == "nt" else ["python3", "python"]
    return next(filter(None, map(shutil.which, names)), None)


def interpreter_note(folder: Path) -> str | None:
    """What to fix when Pulumi would run the pack in ``folder`` with a Python other than this one, which may lack the
    pack's dependencies or hold another version of the pack; None when it is this one or the manifest names a venv."""
    import yaml

    runtime = yaml.safe_load((folder / MANIFEST).read_text(encoding="utf-8"))["runtime"]
    if isinstance(runtime, dict) and (runtime.get("options") or {}).get("virtualenv"):
        return None  # the checkout's manifest: Pulumi runs the venv it names
    fix = f"activate the environment of {sys.prefix}, or set PULUMI_PYTHON_CMD={sys.executable}"
    python = path_python()
    if python is None:
        return f"Pulumi finds no Python to run the pack with ($PULUMI_PYTHON_CMD, else python3 on the PATH); {fix}"
    try:
        probe = subprocess.run([python, "-c", "import sys; print(sys.prefix)"], capture_output=True, text=True, timeout=30)
        prefix = probe.stdout.strip()
    except (OSError, subprocess.SubprocessError) as err:
        prefix = f"<{err}>"
    if prefix and Path(prefix).resolve() == Path(sys.prefix).resolve():
        return None
    return (
        f"Pulumi would run the pack with {python} (prefix {prefix or '<none printed>'}), not the Python it is installed in; {fix}"
    )
