"""A packaged Helm chart (``.tgz``) read in memory: its files, the default values and templates of the chart and
each subchart, and the archive as Helm 3 loads it.

Helm 4 reads every YAML document of a chart's ``values.yaml`` and deep-merges them; Helm 3 (the Helm that
Pulumi's Kubernetes provider embeds, ``helm.sh/helm/v3`` in its ``provider/go.mod``) reads only the first
(Helm commit 92087f6e3, first in v4.0.0). :meth:`ChartArchive.as_helm3` gives the archive with every
``values.yaml`` cut to its first document, so any Helm renders what Pulumi's renders.
"""

from __future__ import annotations

import gzip
import io
import tarfile
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def first_document(text: str) -> str | None:
    """The text of the first YAML document of a multi-document stream; None when there is only one."""
    starts = 0
    for event in yaml.parse(text, Loader=_LOADER):  # events come one by one: stop at the second document
        if isinstance(event, yaml.DocumentStartEvent):
            starts += 1
            if starts == 2:
                return text[: event.start_mark.index]
    return None


@dataclass(frozen=True, eq=False)
class SubChart:
    """One chart inside the archive: the top chart (``path`` ``""``) or a subchart folder under ``charts/``."""

    path: str
    """Folder inside the chart, e.g. ``charts/dynamo-operator`` ("" for the top chart)."""
    metadata: dict[str, Any]
    values: dict[str, Any]
    """The defaults Helm 3 reads (the first document of ``values.yaml``)."""
    templates: dict[str, str]
    """Template file name (relative to the chart folder) -> text."""

    @property
    def name(self) -> str:
        return str(self.metadata.get("name", ""))

    @property
    def aliases(self) -> dict[str, str]:
        """Values key -> subchart name, for the dependencies this chart declares."""
        return {str(d.get("alias") or d["name"]): str(d["name"]) for d in self.metadata.get("dependencies") or [] if "name" in d}


class ChartArchive:
    """A chart archive's members, keyed by their path below the chart's top folder."""

    def __init__(self, data: bytes, origin: str):
        self.data = data
        self.origin = origin
        """Where the archive was found (a path), for the plan's report."""
        self.members: dict[str, bytes] = {}
        self.top = ""
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            for member in tar.getmembers():
                if not member.isfile():
                    continue
                top, _, rest = member.name.partition("/")
                self.top = self.top or top
                extracted = tar.extractfile(member)
                if extracted is not None and top == self.top:
                    self.members[rest] = extracted.read()

    @classmethod
    def read(cls, path: Path) -> ChartArchive:
        return cls(path.read_bytes(), str(path))

    def text(self, path: str) -> str | None:
        data = self.members.get(path)
        return None if data is None else data.decode("utf-8", errors="replace")

    @cached_property
    def metadata(self) -> dict[str, Any]:
        return yaml.load(self.text("Chart.yaml") or "{}", Loader=_LOADER) or {}

    @property
    def name(self) -> str:
        return str(self.metadata.get("name", self.top))

    @property
    def version(self) -> str:
        return str(self.metadata.get("version", ""))

    def _chart_folders(self) -> list[str]:
        """Every chart folder in the archive: "" and each ``.../charts/<name>`` holding a Chart.yaml."""
        return sorted(
            {p[: -len("Chart.yaml")].rstrip("/") for p in self.members if p == "Chart.yaml" or p.endswith("/Chart.yaml")}
        )

    @cached_property
    def charts(self) -> dict[str, SubChart]:
        """The top chart and every subchart, by folder ("" first)."""
        found = {}
        for folder in self._chart_folders():
            prefix = f"{folder}/" if folder else ""
            nested = {f"{other}/" for other in self._chart_folders() if other != folder and other.startswith(prefix)}
            values_text = self.text(f"{prefix}values.yaml") or ""
            first = first_document(values_text) if values_text else None
            values = yaml.load(first if first is not None else values_text or "{}", Loader=_LOADER) or {}
            templates = {
                p[len(prefix) :]: (self.text(p) or "")
                for p in self.members
                if p.startswith(f"{prefix}templates/") and not any(p.startswith(n) for n in nested)
            }
            metadata = yaml.load(self.text(f"{prefix}Chart.yaml") or "{}", Loader=_LOADER) or {}
            found[folder] = SubChart(folder, metadata, values if isinstance(values, dict) else {}, templates)
        return found

    @cached_property
    def multi_document_values(self) -> list[str]:
        """The ``values.yaml`` files with more than one YAML document (where Helm 3 and Helm 4 differ)."""
        return sorted(
            p
            for p in self.members
            if (p == "values.yaml" or p.endswith("/values.yaml")) and first_document(self.text(p) or "") is not None
        )

    def as_helm3(self) -> bytes:
        """The archive with every multi-document ``values.yaml`` cut to its first document (itself when none is)."""
        if not self.multi_document_values:
            return self.data
        out = io.BytesIO()
        with tarfile.open(fileobj=io.BytesIO(self.data), mode="r:gz") as src, tarfile.open(fileobj=out, mode="w") as dst:
            for member in src.getmembers():
                extracted = src.extractfile(member) if member.isfile() else None
                data = extracted.read() if extracted is not None else b""
                rest = member.name.partition("/")[2]
                if rest in self.multi_document_values:
                    data = (first_document(data.decode("utf-8")) or "").encode("utf-8")
                    member.size = len(data)
                dst.addfile(member, io.BytesIO(data) if member.isfile() else None)
        return gzip.compress(out.getvalue(), mtime=0)
