"""The pins table in docs/pins.md, made from ``components/core/pins.json`` (``make docs``; a test fails when they
differ): every chart, image, manifest and API version the project writes, with its source."""

from __future__ import annotations

from aks_gpu_inference.components.core import pins


def _row(*cells: str) -> str:
    return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"


def _archs(pin: pins.ImagePin) -> str:
    """The architectures a tag is published for, with their source; "unverified" said plainly."""
    listed = ", ".join(pin.architectures) if pin.architectures is not None else "unverified"
    return f"{listed} ({pin.architectures_source})"


def pins_tables() -> str:
    data = pins.table()
    k8s = data["kubernetes"]
    lines = ["**Kubernetes**", "", _row("minor", "value", "why", "source"), _row(*"----")]
    lines += [_row(key.replace("_", " "), f"`{e['value']}`", e["why"], e["source"]) for key, e in k8s.items()]
    lines += ["", "**Helm charts**", "", _row("key", "chart", "version", "source"), _row(*"----")]
    lines += [_row(f"`{c.key}`", f"`{c.repository}/{c.name}`", f"`{c.version}`", c.source) for c in pins.charts()]
    lines += ["", "**Images**", "", _row("key", "registry", "repository", "tag", "architectures", "source"), _row(*"------")]
    lines += [_row(f"`{i.key}`", i.registry, f"`{i.repository}`", f"`{i.tag}`", _archs(i), i.source) for i in pins.images()]
    lines += ["", "**Manifests applied by URL**", "", _row("key", "version", "url", "source"), _row(*"----")]
    lines += [_row(f"`{key}`", f"`{m['version']}`", m["url"], m["source"]) for key, m in data["manifests"].items()]
    lines += ["", "**Azure API versions**", "", _row("key", "api-version", "source"), _row(*"---")]
    lines += [_row(f"`{key}`", f"`{a['value']}`", a["source"]) for key, a in data["api_versions"]["azure"].items()]
    kinds = {k: v for k, v in data["api_versions"]["kubernetes"].items() if not k.startswith("_")}
    lines += ["", "**Kubernetes API versions of the custom and extension kinds**", "", _row("kind", "apiVersion"), _row(*"--")]
    lines += [_row(kind, f"`{version}`") for kind, version in kinds.items()]
    lines += ["", f"Source: {data['api_versions']['kubernetes']['_source']}."]
    lines += ["", "**Formats**", "", _row("format", "version", "source"), _row(*"---")]
    lines += [_row(key, f"`{f['value']}`", f["source"]) for key, f in data["formats"].items()]
    return "\n".join(lines) + "\n"
