"""Pools do not use retired GPU sizes.

The catalog marks retired sizes (NCv3 retired 2025-09-30); a pool of one cannot scale out and
fails to create in most regions. Unknown sizes are skipped.
"""

from __future__ import annotations

from aks_gpu_inference.policies.manifests import StackIndex, Violation, pools
from aks_gpu_inference.policies.rules._rule import Rule

NAME = "retired-gpu-size"


def _check(index: StackIndex, _config: dict):
    for pool in pools(index.resources):
        sku = pool.sku
        if sku and sku.retired:
            yield Violation(
                NAME,
                pool.resource,
                f"{pool.where}: {sku.name} was retired on {sku.retired} ({sku.retired_note}); move to a current size",
            )


RULE = Rule(
    name=NAME,
    description="Agent pools use GPU sizes that Azure has not retired.",
    why="No pool uses a retired GPU size (catalog; NCv3 retired 2025-09-30).",
    fix="move to a current size",
    enforcement="advisory",
    scope="resource",
    unknowns="skips",
    config={},
    check=_check,
)
