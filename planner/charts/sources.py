"""Where a chart's archive comes from, in this order:

1. the chart argument itself, when it is a local folder or ``.tgz`` (as Pulumi's Chart accepts one);
2. the folders given with ``--charts DIR`` or ``$AKS_GPU_CHARTS`` (``:``-separated);
3. the local chart cache (``$AKS_GPU_CHART_CACHE``, else ``$XDG_CACHE_HOME/aks-gpu/charts``, else
   ``~/.cache/aks-gpu/charts``);
4. the pinned archives of ``shared/upstream/chart-archives`` (see ``planner.inputs.upstream``);
5. with ``--pull`` only, the exact version pulled from the chart's HTTP repository or OCI registry into the cache.

A folder holds archives named ``<chart>-<version>.tgz`` as ``helm pull`` writes them; the name and version
inside ``Chart.yaml`` are checked, so a misnamed file is never taken for another version.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

from aks_gpu_inference.planner.charts.archive import ChartArchive

CHARTS_ENV = "AKS_GPU_CHARTS"
CACHE_ENV = "AKS_GPU_CHART_CACHE"


def default_cache() -> Path:
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return Path(configured).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "aks-gpu" / "charts"


@dataclass(frozen=True)
class ChartRef:
    """What a Chart or Release resource names: ``oci://host/path/name``, ``repo/name``, a name with a
    repository URL, or a local path."""

    chart: str
    version: str
    repo: str | None = None

    @property
    def name(self) -> str:
        """``oci://registry.k8s.io/networking/charts/dranet`` -> ``dranet``; ``repo/name`` -> ``name``."""
        return self.chart.rstrip("/").rsplit("/", 1)[-1].removesuffix(".tgz")

    @property
    def where(self) -> str:
        return f"{self.repo}/{self.chart}" if self.repo else self.chart


def _same_version(a: str, b: str) -> bool:
    return a.removeprefix("v") == b.removeprefix("v")


@dataclass
class ChartSources:
    """The places charts are looked for; :meth:`find` returns an archive or None, and says where it looked."""

    folders: list[Path] = field(default_factory=list)
    cache: Path = field(default_factory=default_cache)
    upstream_archives: Path | None = None
    pull: bool = False
    project_dir: Path | None = None
    upstream: Path | None = None
    """The pinned upstream data, where release manifests (``config_files``) are read from."""

    @classmethod
    def configured(cls, charts: list[str] | None, upstream: Path | None, pull: bool, project_dir: Path | None) -> ChartSources:
        folders = [Path(c).expanduser() for c in charts or []]
        folders += [Path(p).expanduser() for p in os.environ.get(CHARTS_ENV, "").split(os.pathsep) if p]
        archives = upstream / "chart-archives" if upstream is not None else None
        return cls(folders, default_cache(), archives if archives and archives.is_dir() else None, pull, project_dir, upstream)

    def places(self) -> list[Path]:
        return [*self.folders, self.cache, *([self.upstream_archives] if self.upstream_archives else [])]

    def describe(self) -> str:
        looked = ", ".join(str(p) for p in self.places())
        return looked + ("" if self.pull else "; not pulled (pass --pull to fetch charts into the cache)")

    def find(self, ref: ChartRef) -> ChartArchive | None:
        local = self._local(ref)
        if local is not None:
            return local
        for folder in self.places():
            found = self._in_folder(folder, ref)
            if found is not None:
                return found
        if self.pull:
            return self._pulled(ref)
        return None

    def _local(self, ref: ChartRef) -> ChartArchive | None:
        if ref.repo or "://" in ref.chart:
            return None
        path = Path(ref.chart).expanduser()
        if not path.is_absolute() and self.project_dir is not None:
            path = self.project_dir / path
        if path.is_file() and path.suffix == ".tgz":
            return ChartArchive.read(path)
        if path.is_dir() and (path / "Chart.yaml").is_file():
            return ChartArchive(_pack_folder(path), str(path))
        return None

    def _in_folder(self, folder: Path, ref: ChartRef) -> ChartArchive | None:
        bare = ref.version.removeprefix("v")
        for candidate in dict.fromkeys([f"{ref.name}-{ref.version}.tgz", f"{ref.name}-{bare}.tgz", f"{ref.name}-v{bare}.tgz"]):
            path = folder / candidate
            if path.is_file():
                archive = ChartArchive.read(path)
                if archive.name == ref.name and _same_version(archive.version, ref.version):
                    return archive
        return None

    def _pulled(self, ref: ChartRef) -> ChartArchive | None:
        """``helm pull`` of the exact version into the cache (the helm binary, else helm-python-sdk)."""
        self.cache.mkdir(parents=True, exist_ok=True)
        if shutil.which("helm"):
            command = ["helm", "pull", ref.chart, "--version", ref.version, "--destination", str(self.cache)]
            command += ["--repo", ref.repo] if ref.repo else []
            done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
            if done.returncode != 0:
                raise PullError((done.stderr.strip().splitlines() or ["helm pull failed"])[-1])
        else:
            import helm_python

            try:
                helm_python.pull(ref.chart, version=ref.version, repo_url=ref.repo, destination=str(self.cache))
            except helm_python.HelmError as err:
                raise PullError(" ".join(str(err).split())) from None
        return self._in_folder(self.cache, ref)


class PullError(RuntimeError):
    """A chart could not be pulled (repository unreachable, version not published)."""


def _pack_folder(folder: Path) -> bytes:
    """A chart folder as the ``.tgz`` ``helm package`` would write (files only, under the folder's name)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                tar.add(path, arcname=f"{folder.name}/{path.relative_to(folder).as_posix()}")
    return out.getvalue()
