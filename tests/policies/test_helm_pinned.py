"""helm-chart-pinned: Helm charts (v3, v4) and releases pin a chart version."""

from aks_gpu_inference.policies.manifests import UNKNOWN
from aks_gpu_inference.policies.rules.helm_pinned import RULE

from ._fixtures import HELM_TYPES, Case, helm, table_tests

KINDS = tuple(HELM_TYPES)
"""kubernetes:helm.sh/v4:Chart, kubernetes:helm.sh/v3:Chart and kubernetes:helm.sh/v3:Release."""


def chart(version):
    return lambda kind: [helm(kind, version=version)]


UNPINNED = "gpu-operator: chart 'nvidia/gpu-operator' has no version; pin an exact version such as 1.3.0"


def ranged(version):
    return f"gpu-operator: chart 'nvidia/gpu-operator' has version '{version}', not an exact version"


CASES = [
    Case("pinned", chart("v25.3.0"), over=KINDS),
    Case("pinned semver", chart("1.2.3"), over=KINDS),
    Case("no version", chart(None), once=(UNPINNED,), over=KINDS),
    Case("empty version", chart(""), once=(UNPINNED,), over=KINDS),
    Case("blank version", chart("  "), once=(UNPINNED,), over=KINDS),
    Case("latest", chart("latest"), once=(ranged("latest"),), over=KINDS),
    Case("star", chart("*"), once=(ranged("*"),), over=KINDS),
    Case("any prerelease range", chart(">0.0.0-0"), once=(ranged(">0.0.0-0"),), over=KINDS),
    Case("message names the kind", chart(None), once=("Chart gpu-operator: chart 'nvidia/gpu-operator'",), over=("Chart",)),
    Case("message names a release", chart(None), once=("Release gpu-operator: chart 'nvidia/gpu-operator'",), over=("Release",)),
    Case("mandatory override", chart(None), once=(UNPINNED,), level="mandatory", over=("Chart",)),
    Case("disabled", chart(None), level="disabled", over=("Chart",)),
    Case("unknown version is skipped", chart(UNKNOWN), over=KINDS),
    Case("pinned prerelease", chart("25.3.0-rc.1"), over=KINDS),
    Case(
        "version ranges are not pins",
        lambda kind: [
            helm(kind, "caret", version="^25.3.0"),
            helm(kind, "range", version=">=25"),
            helm(kind, "tilde", version="~25.3"),
        ],
        once=tuple(
            (
                f"{name}:",
                f"has version '{version}', not an exact version (Helm resolves ranges at install time); pin an exact version",
            )
            for name, version in (("caret", "^25.3.0"), ("range", ">=25"), ("tilde", "~25.3"))
        ),
        over=KINDS,
    ),
]


test_rule, test_through_analyzer, test_table_covers_the_rule = table_tests(RULE, CASES)
