"""``aks-gpu scan`` against its targets (issue 12) and against checkov's Kubernetes framework, in one run.

Times ``aks-gpu scan`` as a subprocess, wall clock including interpreter start-up, bytecode compiled (into a
temporary ``PYTHONPYCACHEPREFIX``, by an untimed run) and with the tool's own cache folder fresh (a temporary
``XDG_CACHE_HOME``): the first run builds cel-python's parser and keeps it there, as a first scan on a
machine does; the runs after it are what every later scan costs. It prints

* one file holding one DeviceClass (seed 004's ``dranet.net``): the first run, then the best of a few,
  against the 0.5 s target;
* a folder of 25 real-shaped manifests (``FOLDER``: the scan fixtures, the seeds', the ResourceSlices and
  the operator kinds' under tests/fixtures, copied flat): the best of a few, against the 2 s target;
* that folder and N generated objects (default 500 over 50 multi-document files, from
  rules_bench.kubernetes_objects), each timed with ``aks-gpu scan DIR --format json`` and, when a checkov
  executable is available, ``checkov -d DIR --framework kubernetes --quiet --compact -o json``, best of a
  few runs each, and the ratio checkov / aks-gpu against the >=20x target.

Prints only; exits 0 (2 if a scanner fails outright).

checkov is looked up as --checkov PATH, else bench/.checkov-venv/bin/checkov. To create that venv
(it is git-ignored):

    python3 -m venv bench/.checkov-venv && bench/.checkov-venv/bin/pip install checkov
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml
from rules_bench import kubernetes_objects

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CHECKOV = ROOT / "bench" / ".checkov-venv" / "bin" / "checkov"
TARGET = 20.0
ONE_FILE_TARGET, FOLDER_TARGET = 0.5, 2.0
FIXTURES = ROOT / "tests" / "fixtures"
ONE_FILE = FIXTURES / "seeds" / "seed004-dranet-device-class.yaml"
FOLDER = [
    FIXTURES / "scan" / "compliant" / "rdma-workloads.yaml",
    FIXTURES / "scan" / "compliant" / "storage" / "model-cache.yml",
    FIXTURES / "scan" / "multi-document.yaml",
    *sorted((FIXTURES / "seeds").glob("*.yaml")),
    *sorted((FIXTURES / "resourceslices").glob("*.yaml")),
    *sorted((FIXTURES / "operator_kinds").glob("*.yaml")),
][:25]
"""The 25 real-shaped files of the folder target: DRA DeviceClasses and ResourceSlices, vLLM and llm-d
workloads, a StorageClass, and the operators' kinds (LeaderWorkerSet, RayService, KAITO, Dynamo, Kubeflow...)."""


def write_manifests(folder: Path, objects: int, files: int) -> None:
    manifests = kubernetes_objects(objects)
    per_file = -(-len(manifests) // files)
    for f in range(files):
        chunk = manifests[f * per_file : (f + 1) * per_file]
        if chunk:
            (folder / f"manifests-{f:03d}.yaml").write_text(yaml.safe_dump_all(chunk, sort_keys=False))


def best_of(repeats: int, command: list[str], ok_codes: tuple[int, ...], env: dict | None = None) -> tuple[float, str]:
    best, stdout = float("inf"), ""
    for _ in range(repeats):
        started = time.perf_counter()
        result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, check=False, env=env)
        elapsed = time.perf_counter() - started
        if result.returncode not in ok_codes:
            raise RuntimeError(f"{' '.join(command)} exited {result.returncode}:\n{result.stderr[-2000:]}")
        best, stdout = min(best, elapsed), result.stdout
    return best, stdout


def cold_env(tmp: Path) -> dict[str, str]:
    """A fresh process's environment: bytecode written to (and read from) a folder of its own, even where
    PYTHONDONTWRITEBYTECODE is set, and the tool's cache folder empty until the first run fills it."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPYCACHEPREFIX": str(tmp / "pycache"), "XDG_CACHE_HOME": str(tmp / "cache")}


def verdict(seconds: float, target: float) -> str:
    return f"target < {target:g} s: {'meets' if seconds < target else 'MISSES'} it"


def aks_gpu_command() -> list[str]:
    script = Path(sys.executable).parent / "aks-gpu"
    return [str(script)] if script.exists() else [sys.executable, "-m", "aks_gpu_inference.planner"]


def phases(folder: Path) -> str:
    """Where aks-gpu's time goes, in process: reading the YAML versus running the rules, and what the
    same files cost with libyaml's parser (yaml.CSafeLoader), when PyYAML was built with it."""
    from aks_gpu_inference.planner import scan
    from aks_gpu_inference.policies.rules import evaluate

    started = time.perf_counter()
    paths = scan.yaml_files([str(folder)])
    located = [item for path in paths for item in scan.load_manifests(path)]
    loaded = time.perf_counter()
    evaluate([item.resource for item in located])
    done = time.perf_counter()
    line = f"in process: YAML load {loaded - started:.2f} s, rules {done - loaded:.2f} s"
    if yaml.__with_libyaml__:
        started = time.perf_counter()
        for path in paths:
            list(yaml.load_all(path.read_text(), Loader=yaml.CSafeLoader))
        line += f"; yaml.CSafeLoader parses the same files in {time.perf_counter() - started:.2f} s"
    return line


def checkov_summary(stdout: str) -> str:
    """Resources and checks checkov reports for the kubernetes framework, to show it read the files."""
    reports = json.loads(stdout)
    for report in reports if isinstance(reports, list) else [reports]:
        if report.get("check_type") == "kubernetes":
            s = report["summary"]
            return f"{s['resource_count']} resources, {s['passed']} passed / {s['failed']} failed checks"
    return "no kubernetes report in its output"


def compare(name: str, folder: Path, repeats: int, checkov: Path, env: dict[str, str]) -> bool:
    """aks-gpu and checkov on one folder, and their ratio; False when a scanner failed outright."""
    print(f"\n{name} ({folder}); best of {repeats} runs each")
    command = [*aks_gpu_command(), "scan", str(folder), "--format", "json"]
    try:
        ours, stdout = best_of(repeats, command, (0, 1), env)
    except RuntimeError as err:
        print(f"aks-gpu scan failed: {err}")
        return False
    report = json.loads(stdout)
    print(
        f"  aks-gpu scan  {ours:7.2f} s  ({report['objects']} objects, "
        f"{report['mandatory']} mandatory / {report['advisory']} advisory findings)"
    )
    print(f"                           {phases(folder)}")
    if not checkov.exists():
        return True
    command = [str(checkov), "-d", str(folder), "--framework", "kubernetes", "--quiet", "--compact", "-o", "json"]
    try:
        theirs, stdout = best_of(repeats, command, (0, 1))
    except RuntimeError as err:
        print(f"checkov failed: {err}")
        return False
    print(f"  checkov       {theirs:7.2f} s  ({checkov_summary(stdout)})")
    ratio = theirs / ours
    print(f"  checkov / aks-gpu = {ratio:.1f}x (target >= {TARGET:.0f}x: {'meets' if ratio >= TARGET else 'MISSES'} it)")
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--objects", type=int, default=500, help="generated Kubernetes objects (default: 500)")
    parser.add_argument("--files", type=int, default=50, help="files to spread them over (default: 50)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per scanner; the best is reported (default: 3)")
    parser.add_argument("--checkov", metavar="PATH", help=f"checkov executable (default: {DEFAULT_CHECKOV.relative_to(ROOT)})")
    args = parser.parse_args()
    checkov = Path(args.checkov) if args.checkov else DEFAULT_CHECKOV

    with tempfile.TemporaryDirectory(prefix="scan-bench-") as tmp:
        env = cold_env(Path(tmp))
        one_file = [*aks_gpu_command(), "scan", str(ONE_FILE)]
        best_of(1, one_file, (0,), {**env, "XDG_CACHE_HOME": str(Path(tmp) / "warm-up")})  # compiles the bytecode only
        first, _ = best_of(1, one_file, (0,), env)
        cold, _ = best_of(args.repeats, one_file, (0,), env)
        print(f"one DeviceClass ({ONE_FILE.relative_to(ROOT)}), fresh processes, bytecode compiled:")
        print(f"  first run      {first:7.2f} s  (builds cel-python's parser and keeps it in the tool's cache)")
        print(f"  later runs     {cold:7.2f} s  (best of {args.repeats}; {verdict(cold, ONE_FILE_TARGET)})")

        folder = Path(tmp) / "folder"
        folder.mkdir()
        for path in FOLDER:
            shutil.copy(path, folder / path.name)
        generated = Path(tmp) / "generated"
        generated.mkdir()
        write_manifests(generated, args.objects, args.files)
        count = len(list(generated.glob("*.yaml")))

        folder_time, _ = best_of(args.repeats, [*aks_gpu_command(), "scan", str(folder)], (0, 1), env)
        print(f"\n{len(FOLDER)} real-shaped files (tests/fixtures), one invocation:")
        print(f"  aks-gpu scan   {folder_time:7.2f} s  (best of {args.repeats}; {verdict(folder_time, FOLDER_TARGET)})")

        if not checkov.exists():
            print(f"\ncheckov not found at {checkov}; to compare, create it (git-ignored) and rerun:")
            print("  python3 -m venv bench/.checkov-venv && bench/.checkov-venv/bin/pip install checkov")
        sets = [(f"{len(FOLDER)} real-shaped files", folder), (f"{args.objects} generated objects in {count} files", generated)]
        for name, path in sets:
            if not compare(name, path, args.repeats, checkov, env):
                return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
