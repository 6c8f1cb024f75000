"""The pins table: every chart, image, manifest URL and API version the project writes, and the Kubernetes minors.

The data is ``pins.json`` beside this module, each entry with its source; this module only reads it, so that no
other module writes a version (``tests/test_pins.py`` walks the code for version literals). Pulumi-free.

    >>> image("vllm")
    'docker.io/vllm/vllm-openai:v0.32.0'
    >>> chart("dranet").version
    'v1.4.0'
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

_PATH = Path(__file__).with_name("pins.json")


class ChartPin(NamedTuple):
    key: str
    repository: str
    """An OCI registry path (``oci://host/path``) or a Helm repository URL."""
    name: str
    version: str
    source: str

    @property
    def oci(self) -> bool:
        return self.repository.startswith("oci://")

    @property
    def ref(self) -> str:
        """What a Helm Chart resource's ``chart`` takes: the full OCI reference, else the chart's name (the
        repository then goes in ``repository_opts``)."""
        return f"{self.repository}/{self.name}" if self.oci else self.name


class ImagePin(NamedTuple):
    key: str
    registry: str
    repository: str
    tag: str
    source: str
    architectures: tuple[str, ...] | None = None
    """CPU architectures the tag is published for (``amd64``, ``arm64``), or None where nobody verified it."""
    architectures_source: str = ""

    @property
    def name(self) -> str:
        """Registry and repository, without the tag."""
        return f"{self.registry}/{self.repository}"

    def __str__(self) -> str:
        return f"{self.name}:{self.tag}"


@cache
def table() -> dict[str, Any]:
    """The parsed pins file (shared: never mutate it)."""
    data = json.loads(_PATH.read_text(encoding="utf-8"))
    for section in ("charts", "images"):
        for key, entry in data[section].items():
            if not entry.get("source"):
                raise ValueError(f"pins.json: {section}.{key} needs a source")
    for key, entry in data["images"].items():
        if "architectures" not in entry or not entry.get("architectures_source"):
            raise ValueError(f"pins.json: images.{key} needs architectures (null when unverified) and architectures_source")
    return data


def chart(key: str) -> ChartPin:
    entry = _entry("charts", key)
    return ChartPin(key, entry["repository"], entry["name"], entry["version"], entry["source"])


def charts() -> list[ChartPin]:
    return [chart(key) for key in table()["charts"]]


def image_pin(key: str) -> ImagePin:
    entry = _entry("images", key)
    archs = entry.get("architectures")
    return ImagePin(
        key,
        entry["registry"],
        entry["repository"],
        entry["tag"],
        entry["source"],
        tuple(archs) if archs is not None else None,
        entry.get("architectures_source", ""),
    )


def image(key: str) -> str:
    """The pinned image reference, ``registry/repository:tag``."""
    return str(image_pin(key))


def images() -> list[ImagePin]:
    return [image_pin(key) for key in table()["images"]]


def pin_of_image(reference: str) -> ImagePin | None:
    """The pin an image reference was written from (``registry/repository:tag``, Docker Hub's short forms too), or
    None for an image the pins table does not hold."""
    for pin in images():
        names = {str(pin)}
        if pin.registry == "docker.io":
            short = pin.repository.removeprefix("library/")
            names |= {f"{pin.repository}:{pin.tag}", f"{short}:{pin.tag}"}
        if reference in names:
            return pin
    return None


def manifest_url(key: str) -> str:
    return _entry("manifests", key)["url"]


def azure_api_version(key: str) -> str:
    """The Azure REST API version the project writes for ``key`` (``containerservice-managed-gpu``)."""
    versions = table()["api_versions"]["azure"]
    return versions[key]["value"] if key in versions else _missing(f"api_versions.azure.{key}")


def api_version(kind: str) -> str:
    """The ``apiVersion`` the project writes a Kubernetes kind in."""
    versions = table()["api_versions"]["kubernetes"]
    return versions[kind] if kind in versions and not kind.startswith("_") else _missing(kind)


def default_kubernetes_minor() -> str:
    return table()["kubernetes"]["default_minor"]["value"]


def minimum_kubernetes_minor() -> tuple[int, int]:
    major, minor = table()["kubernetes"]["minimum_minor"]["value"].split(".")
    return int(major), int(minor)


def vllm_version() -> str:
    """The vLLM release of the pinned engine image (``v0.32.0`` -> ``0.32.0``)."""
    return image_pin("vllm").tag.removeprefix("v")


def _entry(section: str, key: str) -> dict[str, Any]:
    entries = table()[section]
    return entries[key] if key in entries else _missing(f"{section}.{key}")


def _missing(key: str) -> Any:
    raise KeyError(f"pins.json has no {key}")
