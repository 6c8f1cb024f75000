"""Image references and their relocation to a private registry (Azure Container Registry).

Pure string handling, no Pulumi import. ``relocate`` keeps the repository path and the tag or digest
and swaps the registry host, which is what ``az acr import --source <image> --image <path>`` produces
when the path is kept: ``docker.io/envoyproxy/gateway:v1.8.2`` becomes
``myacr.azurecr.io/envoyproxy/gateway:v1.8.2``, ``redis:7.4.1-alpine`` (Docker Hub's official
``library`` namespace) becomes ``myacr.azurecr.io/library/redis:7.4.1-alpine``.
"""

from __future__ import annotations

import re
from typing import NamedTuple

DOCKER_HUB = "docker.io"
REGISTRY = re.compile(r"^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+(:[0-9]{1,5})?$")


def registry_problem(host: str) -> str | None:
    """Why ``host`` is not a registry host images can be pulled from; None when it is."""
    if REGISTRY.match(host):
        return None
    if REGISTRY.match(host.lower()):
        return f"registry hosts are lower case in an image reference: write {host.lower()!r}"
    if "://" in host or "/" in host:
        return "a registry host such as 'myacr.azurecr.io', without scheme or path"
    return "a registry host such as 'myacr.azurecr.io': lower-case letters, digits, '-' and dots, an optional :port"


"""A registry host as a setting accepts it: a DNS name with at least one dot (``myacr.azurecr.io``), optional port."""


class ImageRef(NamedTuple):
    registry: str
    repository: str
    reference: str
    """``:tag`` or ``@sha256:...`` (empty when the image names neither, i.e. ``latest``)."""

    def __str__(self) -> str:
        return f"{self.registry}/{self.repository}{self.reference}"


def parse(image: str) -> ImageRef:
    """Split an image into registry, repository and tag or digest, the way the container runtime reads it."""
    name, _, digest = image.partition("@")
    reference = f"@{digest}" if digest else ""
    tail = name.rsplit("/", 1)[-1]
    if not digest and ":" in tail:
        name, tag = name.rsplit(":", 1)
        reference = f":{tag}"
    first, _, rest = name.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        return ImageRef(first, rest, reference)
    path = name if rest else f"library/{name}"
    return ImageRef(DOCKER_HUB, path, reference)


def relocate(image: str, registry: str | None) -> str:
    """``image`` pulled from ``registry`` instead of its own, same repository path and tag; unchanged without one."""
    if not registry:
        return image
    ref = parse(image)
    return str(ImageRef(registry, ref.repository, ref.reference))


FLOATING_TAGS = frozenset(
    {"latest", "stable", "nightly", "main", "master", "trunk", "head", "edge", "dev", "devel", "develop", "development"}
    | {"canary", "unstable", "testing", "next", "current", "rolling", "snapshot", "release", "beta", "alpha", "rc"}
)
"""Tags that name a moving line rather than a release: a registry repoints them at every build
(``registry.k8s.io/networking/dranet-rdma-perftest:stable``, ``vllm/vllm-openai:nightly``)."""


def floating_tag(tag: str) -> bool:
    """Whether a tag names a moving line: one of ``FLOATING_TAGS``, alone or with words but no version
    (``latest-gpu``, ``nightly-cu128`` are floating; ``nightly-2025-06-01``, ``main-3f2a1c9``, ``v1.2-rc1`` are not)."""
    first, *rest = re.split(r"[-_.+]", tag.lower())
    return first in FLOATING_TAGS and not any(ch.isdigit() for ch in "".join(rest))


def pin_problem(image: str) -> str | None:
    """Why ``image`` is not pinned (no tag means ``latest``; a floating tag such as ``latest``, ``stable`` or
    ``nightly``), or None for a version tag or digest."""
    if "@sha256:" in image:
        return None
    tail = image.rsplit("/", 1)[-1]
    if ":" not in tail:
        return "has no tag (means latest)"
    tag = tail.rsplit(":", 1)[1]
    if tag == "latest":
        return "uses the latest tag"
    if floating_tag(tag):
        return f"uses the floating tag {tag!r}, which moves to each new build"
    return None


def require_pinned(image: str) -> str:
    """``image`` when it is pinned; else a ValueError saying why (an args model's field validator)."""
    problem = pin_problem(image)
    if problem:
        raise ValueError(f"pin the image to a version tag or digest: it {problem}")
    return image


def is_pinned(image: str) -> bool:
    """Whether ``image`` names a version tag (not a floating one such as ``latest``), or a digest."""
    return pin_problem(image) is None
