"""CustomResourceDefinitions as validation needs them: parsed from YAML, cached per file version, and
indexed by (group, kind) across a folder of CRD files (``shared/upstream/crds``), scanned cheaply up front
and parsed in full on first use. ``crd_schema.validate`` checks an object against one, ``crd_schema.validate_object`` against its CRD in an index."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True, eq=False)
class CRDVersion:
    name: str
    schema: dict[str, Any] | None
    """``schema.openAPIV3Schema``; None for a version without a schema (everything is kept)."""
    served: bool = True
    storage: bool = False
    deprecated: bool = False
    deprecation_warning: str | None = None


@dataclass(frozen=True, eq=False)
class CRD:
    """One CustomResourceDefinition, reduced to what validation needs."""

    group: str
    kind: str
    plural: str
    scope: str
    versions: dict[str, CRDVersion]
    """Every version by name, served or not."""
    source: Path | None = None

    @property
    def namespaced(self) -> bool:
        return self.scope != "Cluster"

    @property
    def served_versions(self) -> tuple[str, ...]:
        return tuple(name for name, v in self.versions.items() if v.served)

    @property
    def api_versions(self) -> tuple[str, ...]:
        return tuple(f"{self.group}/{name}" for name in self.served_versions)

    def schema(self, version: str) -> dict[str, Any] | None:
        v = self.versions.get(version)
        return v.schema if v is not None and v.served else None

    def __repr__(self) -> str:
        return f"CRD({self.group}/{self.kind}, served={list(self.served_versions)}, scope={self.scope})"


def parse_crd(doc: Mapping[str, Any], source: Path | None = None) -> CRD:
    """A CRD from its parsed YAML (``apiextensions.k8s.io/v1``, or v1beta1 with a top-level ``validation``)."""
    if not isinstance(doc, Mapping) or doc.get("kind") != "CustomResourceDefinition":
        raise ValueError(f"{source or 'document'} is not a CustomResourceDefinition")
    spec = doc["spec"]
    names = spec["names"]
    shared_schema = (spec.get("validation") or {}).get("openAPIV3Schema")
    listed = spec.get("versions") or [{"name": spec.get("version"), "served": True, "storage": True}]
    versions = {}
    for v in listed:
        schema = (v.get("schema") or {}).get("openAPIV3Schema") or shared_schema
        versions[v["name"]] = CRDVersion(
            name=v["name"],
            schema=schema,
            served=v.get("served", True) is not False,
            storage=bool(v.get("storage")),
            deprecated=bool(v.get("deprecated")),
            deprecation_warning=v.get("deprecationWarning"),
        )
    return CRD(
        group=spec["group"],
        kind=names["kind"],
        plural=names.get("plural", ""),
        scope=spec.get("scope", "Namespaced"),
        versions=versions,
        source=source,
    )


def crds_in_text(text: str, source: Path | None = None) -> list[CRD]:
    """Every CustomResourceDefinition in a YAML stream (leading ``#`` comment lines are fine)."""
    return [
        parse_crd(doc, source)
        for doc in yaml.load_all(text, Loader=_LOADER)
        if isinstance(doc, Mapping) and doc.get("kind") == "CustomResourceDefinition"
    ]


@functools.cache
def _load_crds_cached(path: str, _mtime_ns: int, _size: int) -> tuple[CRD, ...]:
    return tuple(crds_in_text(Path(path).read_text(encoding="utf-8"), Path(path)))


def load_crds(path: str | Path) -> tuple[CRD, ...]:
    """The CRDs of one YAML file, parsed once per file version (cached by path, mtime and size)."""
    p = Path(path).resolve()
    st = p.stat()
    return _load_crds_cached(str(p), st.st_mtime_ns, st.st_size)


def load_crd(path: str | Path) -> CRD:
    """The single CRD of a file such as ``shared/upstream/crds/<group>_<plural>.yaml``."""
    found = load_crds(path)
    if len(found) != 1:
        raise ValueError(f"{path}: expected one CustomResourceDefinition, found {len(found)}")
    return found[0]


_SPEC_VERSIONS = re.compile(r"^[ \t]+versions:[ \t]*$", re.M)


def _scan_keys(path: Path) -> list[tuple[str, str]]:
    """(group, kind) of the CRDs in a file, cheaply: only the part before ``spec.versions`` is parsed."""
    text = path.read_text(encoding="utf-8")
    if len(re.findall(r"^kind:\s*CustomResourceDefinition\s*$", text, re.M)) == 1:
        cut = _SPEC_VERSIONS.search(text)
        if cut is not None:
            try:
                docs = [d for d in yaml.load_all(text[: cut.start()], Loader=_LOADER) if isinstance(d, Mapping)]
                (doc,) = [d for d in docs if d.get("kind") == "CustomResourceDefinition"]
                return [(doc["spec"]["group"], doc["spec"]["names"]["kind"])]
            except (yaml.YAMLError, KeyError, TypeError, ValueError):
                pass
    return [(crd.group, crd.kind) for crd in load_crds(path)]


class CRDIndex:
    """CRD files by (group, kind). Files are scanned cheaply up front and parsed in full on first use."""

    def __init__(self, files: Iterable[str | Path]):
        self._files: dict[tuple[str, str], Path] = {}
        for f in sorted(Path(f).resolve() for f in files):
            for key in _scan_keys(f):
                self._files.setdefault(key, f)

    @classmethod
    def from_dir(cls, directory: str | Path) -> CRDIndex:
        return crd_index(directory)

    def __contains__(self, key: object) -> bool:
        return key in self._files

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(sorted(self._files))

    def __len__(self) -> int:
        return len(self._files)

    def path(self, group: str, kind: str) -> Path | None:
        return self._files.get((group, kind))

    def get(self, group: str, kind: str) -> CRD | None:
        path = self._files.get((group, kind))
        if path is None:
            return None
        return next(c for c in load_crds(path) if (c.group, c.kind) == (group, kind))

    def for_object(self, obj: Mapping[str, Any]) -> CRD | None:
        """The CRD of a manifest, by the group of its ``apiVersion`` and its ``kind``; None for built-in kinds."""
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if not isinstance(api_version, str) or "/" not in api_version or not isinstance(kind, str):
            return None
        return self.get(api_version.split("/", 1)[0], kind)


@functools.lru_cache(maxsize=16)
def _index_cached(directory: str, _listing: tuple[tuple[str, int], ...]) -> CRDIndex:
    return CRDIndex(Path(directory) / name for name, _ in _listing)


def crd_index(directory: str | Path) -> CRDIndex:
    """An index of the ``*.yaml``/``*.yml`` CRD files of a folder (cached while the folder's files are unchanged)."""
    d = Path(directory).resolve()
    listing = tuple(sorted((p.name, p.stat().st_mtime_ns) for p in d.iterdir() if p.suffix in (".yaml", ".yml")))
    return _index_cached(str(d), listing)
