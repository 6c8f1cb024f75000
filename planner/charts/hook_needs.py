"""Which Helm hooks of the pinned charts create something the rest of the chart needs.

Helm marks a hook; it does not say whether anything depends on it. Pulumi's ``helm.sh/v4`` Chart skips hooks
(pulumi-kubernetes#3284), so a chart whose workloads need a hook's output cannot start when installed that way.
Each entry names the chart, the hook object's kind and the end of its name, and what needs it (with the source).
"""

from __future__ import annotations

NEEDS: dict[tuple[str, str, str], str] = {
    ("gateway-helm", "Job", "-certgen"): (
        "creates the Secrets envoy-gateway, envoy and envoy-rate-limit (TLS) in the release namespace "
        "(envoyproxy/gateway@v1.8.2 internal/provider/kubernetes/secrets.go CertsToSecret); the envoy-gateway "
        "Deployment mounts Secret envoy-gateway at /certs (templates/envoy-gateway-deployment.yaml) and cannot start without it"
    ),
    ("dynamo-platform", "Queue", "dynamo-default"): (
        "with KAI integration the operator puts workloads in queue 'dynamo' under 'dynamo-default' (templates/kai.yaml)"
    ),
    ("dynamo-platform", "Queue", "dynamo"): "see queue dynamo-default (templates/kai.yaml)",
}


def needed_by(chart: str, kind: str, name: str) -> str:
    """What needs this hook object; empty when nothing the chart runs does."""
    return next((why for (c, k, end), why in NEEDS.items() if c == chart and k == kind and name.endswith(end)), "")
