"""Serves the aks-gpu-guardrails pack. Only this: PolicyPack() serves gRPC and never returns."""

import sys
from pathlib import Path

from pulumi_policy import EnforcementLevel, PolicyPack

# The Pulumi CLI runs a pack with the pack folder as its program, so the repository root (which
# holds the `policies` and `components` packages) is on the import path only if the project was
# pip-installed. Put it there so `pulumi preview --policy-pack policies` works from a plain checkout.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from policies.pack import DESCRIPTION, PACK_NAME, POLICIES

PolicyPack(name=PACK_NAME, policies=POLICIES, enforcement_level=EnforcementLevel.ADVISORY, description=DESCRIPTION)
