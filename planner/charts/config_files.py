"""``yaml/v2`` ConfigFiles: a manifest file (a local path or a URL) whose objects Pulumi registers as children.

Offline, a URL is read from the pinned upstream copy when it is a release manifest whose content the copy holds
(``RELEASE_MANIFESTS``), else from a local file of that path; otherwise the plan names it as not rendered.
"""

from __future__ import annotations

import re
from pathlib import Path

from aks_gpu_inference.planner.charts import helm
from aks_gpu_inference.planner.charts.model import ChartRender, Crd, with_namespace
from aks_gpu_inference.planner.engine.program import Registered
from aks_gpu_inference.planner.inputs.upstream import snapshot_note

GAIE = "https://github.com/kubernetes-sigs/gateway-api-inference-extension/releases/download"
RELEASE_MANIFESTS = {
    # `make artifacts` at v1.3.1 (Makefile line 376): `kustomize build config/crd`, whose kustomization lists
    # these five CRDs from config/crd/bases; each is in shared/upstream/crds byte for byte.
    f"{GAIE}/v1.3.1/manifests.yaml": (
        "inference.networking.x-k8s.io_inferencepools.yaml",
        "inference.networking.x-k8s.io_inferencemodelrewrites.yaml",
        "inference.networking.x-k8s.io_inferenceobjectives.yaml",
        "inference.networking.x-k8s.io_inferencepoolimports.yaml",
        "inference.networking.k8s.io_inferencepools.yaml",
    ),
}


def render_config_file(resource: Registered, upstream: Path | None, project_dir: Path | None, namespace: str) -> ChartRender:
    """The objects a ConfigFile registers, as its file holds them."""
    inputs = resource.inputs
    file = str(inputs.get("file", ""))
    tag = re.search(r"/download/([^/]+)/", file)
    render = ChartRender(resource, Path(file).name or file, tag[1] if tag else "", resource.name, namespace, {}, "unknown")
    texts = _texts(file, upstream, project_dir)
    if texts is None:
        render.problems.append(f"manifest {file} not at hand offline (not a local file, and no pinned copy of it)")
        return render
    documents = [d for origin, text in texts for d in helm.stream_documents(text) if d.obj.get("kind")]
    render.source, render.archive = "manifest file", texts[0][0] if texts else file
    render.caveat = next((note for origin, _ in texts if (note := snapshot_note(origin))), "")
    for doc in documents:
        if doc.obj["kind"] == "CustomResourceDefinition":
            render.crds.append(Crd.of(doc.obj))
        render.objects.append(with_namespace(doc.obj, namespace))
    return render


def _texts(file: str, upstream: Path | None, project_dir: Path | None) -> list[tuple[str, str]] | None:
    """(where, text) of each file standing for ``file``; None when none is at hand."""
    pinned = RELEASE_MANIFESTS.get(file)
    if pinned and upstream is not None and all((upstream / "crds" / name).is_file() for name in pinned):
        return [(str(upstream / "crds" / name), (upstream / "crds" / name).read_text(encoding="utf-8")) for name in pinned]
    if "://" in file:
        return None
    path = Path(file) if Path(file).is_absolute() or project_dir is None else project_dir / file
    return [(str(path), path.read_text(encoding="utf-8"))] if path.is_file() else None
