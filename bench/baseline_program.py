"""The planner benchmark's baseline: the raw resources a run of the component program registered,
registered again directly, in the same order, with the same inputs, providers and dependencies, and
no components, validation or catalog lookups. ``AKS_GPU_REPLAY`` names the JSON recording that
``bench/plan_bench.py`` writes from the component run, so the baseline can never drift from it."""

import json
import os
from pathlib import Path

import pulumi

created: dict[str, pulumi.Resource] = {}
for record in json.loads(Path(os.environ["AKS_GPU_REPLAY"]).read_text()):
    options = pulumi.ResourceOptions(
        provider=created.get(record["options"].get("provider", "")),
        depends_on=[created[d] for d in record["options"].get("dependsOn", []) if d in created] or None,
        ignore_changes=record["options"].get("ignoreChanges"),
        custom_timeouts=pulumi.CustomTimeouts(**record["options"]["customTimeouts"])
        if "customTimeouts" in record["options"]
        else None,
    )
    kind = record["type"]
    if kind.startswith("pulumi:providers:"):
        resource = pulumi.ProviderResource(kind.split(":")[2], record["name"], record["inputs"], options)
    elif record["custom"]:
        resource = pulumi.CustomResource(kind, record["name"], record["inputs"], options)
    else:
        resource = pulumi.ComponentResource(kind, record["name"], record["inputs"], options, remote=True)
    created[record["urn"]] = resource
