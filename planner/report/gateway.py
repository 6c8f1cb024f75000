"""The gateway part of ``aks-gpu plan``, printed: each listener's HTTP filter chain, who answers each kind of
request, and every image the stack pulls (the data: ``deploy/gateway_paths.py``)."""

from __future__ import annotations

from aks_gpu_inference.planner.report.tables import table


def text(report: dict) -> str:
    lines = []
    for gateway in report["gateways"]:
        auto = " or ".join(f'"{m}"' for m in gateway["auto_models"])
        lines.append(
            f"Gateway {gateway['gateway']}: HTTP filters of the listener, in order (simulated from Envoy Gateway v1.8.2 and AI Gateway v1.1.0)"
        )
        lines += [f"  {line}" for line in gateway["chain"]]
        lines.append(f"Request paths (clients send model {auto} to let the router choose):")
        lines.append(table(["request", "what answers"], [list(row) for row in gateway["rows"]]))
        lines.append("")
    rows = [[i["registry"], i["image"], i["used_by"]] for i in report["images"]]
    lines.append(f"Images the cluster pulls ({len(rows)}):")
    lines.append(table(["registry", "image", "used by"], rows))
    return "\n".join(lines)
