"""Run a command as a container's root runs it under the RDMA pod contract: uid 0 with every capability dropped, so
file permission bits apply to it as to anyone (no CAP_DAC_OVERRIDE or CAP_DAC_READ_SEARCH). Needs root and setpriv;
a test run by another user gets that user, for whom a closed directory is just as closed."""

from __future__ import annotations

import os
import shutil

import pytest

SETPRIV = shutil.which("setpriv")


def as_container_root(groups: list[int] | None = None) -> list[str]:
    """The command prefix: root's uid and gid 0, ``groups`` as its supplementary groups (none by default), no capabilities.
    Skips the test when that cannot be arranged here."""
    if os.geteuid() != 0:
        if groups:
            pytest.skip("joining groups needs root")
        return []
    if SETPRIV is None:
        pytest.skip("setpriv is needed to drop root's capabilities")
    membership = [f"--groups={','.join(map(str, groups))}"] if groups else ["--clear-groups"]
    return [SETPRIV, "--reuid=0", "--regid=0", *membership, "--inh-caps=-all", "--bounding-set=-all", "--"]
