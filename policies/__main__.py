"""Serves the aks-gpu-guardrails pack. Only this: PolicyPack() serves gRPC and never returns.

The pack runs with the repository's .venv (PulumiPolicy.yaml), where ``make`` installed this repo (editable), or from
a pip install: either way ``aks_gpu_inference`` is importable."""

from pulumi_policy import EnforcementLevel, PolicyPack

from aks_gpu_inference.policies.pack import DESCRIPTION, PACK_NAME, POLICIES

PolicyPack(name=PACK_NAME, policies=POLICIES, enforcement_level=EnforcementLevel.ADVISORY, description=DESCRIPTION)
