"""Helm charts and releases are pinned to a chart version.

Without an exact ``version`` (Helm reads ``^1.2``, ``~1.2`` or ``>=1`` as ranges) a deploy installs whatever the repository serves that day, so two ``pulumi up``
runs of the same commit can differ. Unknown versions are skipped.
"""

from __future__ import annotations

import re

from aks_gpu_inference.policies.manifests import StackIndex, Violation, is_unknown, type_matches
from aks_gpu_inference.policies.rules._rule import Rule

NAME = "helm-chart-pinned"
# Helm reads `version` as a semver constraint; only an exact version (optional v prefix) is a pin.
_EXACT = re.compile(r"v?\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?")


def _check(index: StackIndex, _config: dict):
    for r in index.resources:
        if not (
            type_matches(r.type, "kubernetes", "helm.sh", "Chart") or type_matches(r.type, "kubernetes", "helm.sh", "Release")
        ):
            continue
        version = r.props.get("version")
        if is_unknown(version):
            continue
        if not isinstance(version, str) or not _EXACT.fullmatch(version.strip()):
            shown = (
                "no version"
                if not isinstance(version, str) or not version.strip()
                else f"version {version!r}, not an exact version (Helm resolves ranges at install time)"
            )
            kind = r.type.rsplit(":", 1)[-1]
            yield Violation(
                NAME, r, f"{kind} {r.name}: chart {r.props.get('chart')!r} has {shown}; pin an exact version such as 1.3.0"
            )


RULE = Rule(
    name=NAME,
    description="Helm charts and releases pin a chart version.",
    why="Helm `Chart` (v4) and `Release` (v3) resources set `version`.",
    fix="pin the chart version",
    enforcement="advisory",
    scope="resource",
    unknowns="skips",
    config={},
    check=_check,
)
