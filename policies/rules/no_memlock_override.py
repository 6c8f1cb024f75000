"""Containers do not raise the memlock limit themselves.

Seed 004: the qualified RDMA setup kept the default 8 MiB RLIMIT_MEMLOCK and locked memory through
``IPC_LOCK``; an explicit override (``ulimit -l unlimited`` in the entrypoint) needs more privilege
than the pod should have and hides a missing capability. Unknown commands are skipped.
"""

from __future__ import annotations

import re

from aks_gpu_inference.policies.manifests import StackIndex, Violation, items, pod_templates
from aks_gpu_inference.policies.rules._rule import Rule

NAME = "no-memlock-override"
_MEMLOCK = re.compile(r"ulimit\s+(-[a-zA-Z]*l|--max-locked-memory)|memlock|prlimit\s+.*--memlock")


def _check(index: StackIndex, _config: dict):
    for r in index.resources:
        for template in pod_templates(r):
            for where, container in template.containers():
                words = " ".join(str(w) for key in ("command", "args") for w in items(container.get(key)))
                if _MEMLOCK.search(words):
                    yield Violation(
                        NAME,
                        r,
                        f"{template.where(where)} overrides the memlock limit ({_MEMLOCK.search(words)[0]!r}); add IPC_LOCK instead",
                    )


RULE = Rule(
    name=NAME,
    description="Containers do not override the memory-lock limit; RDMA uses IPC_LOCK with the default RLIMIT_MEMLOCK.",
    why="No `ulimit -l`/memlock override in commands; RDMA works with the default RLIMIT_MEMLOCK plus `IPC_LOCK` (seed 004).",
    fix="remove it, add `IPC_LOCK`",
    enforcement="advisory",
    scope="resource",
    unknowns="skips",
    config={},
    check=_check,
)
