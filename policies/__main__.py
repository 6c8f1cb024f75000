"""Serves the aks-gpu-guardrails pack. Only this: PolicyPack() serves gRPC and never returns."""

from pulumi_policy import EnforcementLevel, PolicyPack

from policies.pack import DESCRIPTION, PACK_NAME, POLICIES

PolicyPack(name=PACK_NAME, policies=POLICIES, enforcement_level=EnforcementLevel.ADVISORY, description=DESCRIPTION)
