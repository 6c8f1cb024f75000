"""Helm itself, rendering one chart archive: ``helm template`` when a helm binary is on the PATH, otherwise Helm's
Go SDK through helm-python-sdk (``helm_python``, no binary). Both give every document with the file it came
from, hooks and ``crds/`` included, so the caller can apply Pulumi's semantics.

helm-python-sdk is installed by ``requirements-dev.txt`` and the ``plan`` extra, not by a plain install of the
components: a program that only imports them never renders a chart.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
SOURCE_PREFIX = "# Source: "


class RenderError(RuntimeError):
    """Helm refused to render the chart with these values (a ``fail`` in a template, a schema violation)."""


class NoHelm(RuntimeError):
    """Neither a helm binary nor helm-python-sdk is at hand."""


@dataclass(frozen=True)
class Document:
    source: str
    """The file it came from inside the chart, e.g. ``kuberay-operator/templates/role.yaml`` or ``.../crds/x.yaml``."""
    obj: dict[str, Any]

    @property
    def from_crds_folder(self) -> bool:
        return "/crds/" in f"/{self.source}" and "/templates/" not in f"/{self.source}"


def _documents(source: str, text: str) -> list[Document]:
    return [Document(source, d) for d in _parsed(text) if isinstance(d, dict) and d.get("kind")]


_BIG = 16 * 1024
"""A YAML text this large (CRDs: the Ray ones are 1-1.4 MB each, Envoy Gateway's 20 are 10-1,300 KB) is parsed once
per machine: building Python objects from a megabyte takes most of a second under PyYAML, reading the same data
back as JSON a few milliseconds. The parsed documents are kept beside the chart cache, by the text's sha256."""


def _parsed(text: str) -> list[Any]:
    if len(text) < _BIG:
        return list(yaml.load_all(text, Loader=_LOADER))
    from .sources import default_cache

    cached = default_cache().parent / "parsed" / f"{hashlib.sha256(text.encode()).hexdigest()}.json"
    with contextlib.suppress(OSError, ValueError):
        return json.loads(cached.read_text())
    documents = list(yaml.load_all(text, Loader=_LOADER))
    with contextlib.suppress(OSError, TypeError, ValueError):  # an unwritable cache, a value JSON cannot hold
        cached.parent.mkdir(parents=True, exist_ok=True)
        partial = cached.with_suffix(f".{os.getpid()}.partial")
        partial.write_text(json.dumps(documents))
        partial.replace(cached)
    return documents


def backend() -> str:
    """``helm template`` or ``helm-python-sdk``; raises NoHelm when neither is installed."""
    if shutil.which("helm"):
        return "helm template"
    try:
        import helm_python  # noqa: F401
    except ImportError:
        raise NoHelm("no helm on the PATH and helm-python-sdk is not installed (pip install 'aks-gpu-inference[plan]')") from None
    return "helm-python-sdk"


def render(data: bytes, values: dict[str, Any], release: str, namespace: str, use: str | None = None) -> list[Document]:
    """Every document Helm renders from the archive ``data`` (templates, hooks, and the CRDs of enabled charts).

    The same archive, values, release and namespace render the same objects, so a process renders each once
    (ai-gateway-helm alone takes about a second: it generates its webhook CA and certificate at every render).
    Callers must not change the documents (``expand`` copies what it changes)."""
    use = use or backend()
    key = (hashlib.sha256(data).hexdigest(), json.dumps(values, sort_keys=True, default=str), release, namespace, use)
    found = _RENDERED.get(key)
    if found is None:
        run = _with_binary if use == "helm template" else _with_sdk
        found = run(data, values, release, namespace)  # outside the lock: charts render side by side
        with _RENDERED_LOCK:
            if len(_RENDERED) >= _KEEP:
                _RENDERED.pop(next(iter(_RENDERED)))
            _RENDERED[key] = found
    return found


_RENDERED: dict[tuple[str, ...], list[Document]] = {}
_RENDERED_LOCK = threading.Lock()
"""Renders run in threads (``expand.render_charts``): the cache is changed under this lock."""
_KEEP = 64


def _with_sdk(data: bytes, values: dict[str, Any], release: str, namespace: str) -> list[Document]:
    import helm_python

    # A fresh handle per render: render() drops disabled subcharts from the handle it is given.
    with helm_python.Chart.load_archive(data) as chart:
        try:
            rendered = chart.render(values or None, name=release, namespace=namespace, is_install=True)
        except helm_python.HelmError as err:
            raise RenderError(" ".join(str(err).split())) from None
        crds = chart.crds  # after render: the crds/ of the charts the values enable
    found = []
    for crd in crds:
        found += _documents(crd.get("filename") or crd["name"], crd["data"])
    for path, text in sorted(rendered.items()):
        if not path.endswith("NOTES.txt"):
            found += _documents(path, text)
    return found


def _with_binary(data: bytes, values: dict[str, Any], release: str, namespace: str) -> list[Document]:
    with tempfile.TemporaryDirectory(prefix="aks-gpu-helm-") as tmp:
        archive, values_file = Path(tmp) / "chart.tgz", Path(tmp) / "values.yaml"
        archive.write_bytes(data)
        values_file.write_text(yaml.safe_dump(values or {}))
        command = ["helm", "template", release, str(archive), "--namespace", namespace, "--include-crds"]
        done = subprocess.run([*command, "--values", str(values_file)], capture_output=True, text=True, timeout=300, check=False)
    if done.returncode != 0:
        raise RenderError((done.stderr.strip().splitlines() or ["helm template failed"])[-1])
    return stream_documents(done.stdout)


def stream_documents(stream: str) -> list[Document]:
    """The documents of ``helm template`` output, each with the file its ``# Source:`` line names. A source line
    names every document up to the next one: a CRD file that itself starts with ``---`` follows its source line
    as a document of its own."""
    found, source = [], ""
    for chunk in re.split(r"^---[ \t]*$", stream, flags=re.M):
        named = [line[len(SOURCE_PREFIX) :] for line in chunk.splitlines() if line.startswith(SOURCE_PREFIX)]
        source = named[-1] if named else source
        found += _documents(source, chunk)
    return found
