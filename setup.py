"""One build step pyproject.toml cannot express: the wheel's policy pack manifest names no virtualenv.

``policies/PulumiPolicy.yaml`` runs the pack with the checkout's ``.venv``; a pack installed into site-packages has
no such folder next to it, so its copy leaves ``virtualenv`` out and Pulumi runs it with ``python3`` from the PATH
(or ``$PULUMI_PYTHON_CMD``): the Python the package is installed in, once its venv is active.
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

MANIFEST = Path("policies", "PulumiPolicy.yaml")
HEADER = (
    "# Written by setup.py from the repository's policies/PulumiPolicy.yaml, without its `virtualenv`: Pulumi runs\n"
    "# this installed pack with `python3` from the PATH, or $PULUMI_PYTHON_CMD (`aks-gpu policy-pack-path` says\n"
    "# when that is not the Python the pack is installed in).\n"
)


def installed_manifest(source: str) -> str:
    """The manifest as installed: ``source`` without its comments and its one ``virtualenv`` option."""
    lines = [line for line in source.splitlines(keepends=True) if not line.lstrip().startswith("#")]
    kept = [line for line in lines if not line.lstrip().startswith("virtualenv:")]
    if len(lines) - len(kept) != 1:
        raise ValueError(f"{MANIFEST}: expected one `virtualenv:` line to leave out of the wheel")
    return HEADER + "".join(kept)


class BuildPy(build_py):
    def run(self) -> None:
        super().run()
        if self.editable_mode:  # an editable install serves the checkout's policies/, whose manifest names .venv
            return
        target = Path(self.build_lib, "aks_gpu_inference") / MANIFEST
        # Written from the source every time: an unchanged target is not copied again on a rebuild.
        text = installed_manifest(MANIFEST.read_text(encoding="utf-8"))
        target.unlink()  # never write through a hard link back into the checkout
        target.write_text(text, encoding="utf-8")


setup(cmdclass={"build_py": BuildPy})
