"""The fit formula in docs/serving.md, made from ``components.core.models.FORMULA`` so the docs say what the code
computes (``make docs`` rewrites it; a test fails when they differ)."""

from __future__ import annotations


def formula_block() -> str:
    from aks_gpu_inference.components.core.models import FORMULA

    return "\n".join(f"> {line}".rstrip() for line in FORMULA.strip().splitlines()) + "\n"
