"""``aks-gpu scan`` against checkov's Kubernetes framework on the same generated manifests.

Writes N generated objects (default 500 over 50 multi-document files, from rules_bench.kubernetes_objects)
to a temporary folder, times ``aks-gpu scan DIR --format json`` as a subprocess, and, when a checkov
executable is available, ``checkov -d DIR --framework kubernetes --quiet --compact -o json``; both best of
a few runs, wall clock including interpreter start-up. Prints the ratio checkov / aks-gpu against the
>=20x target (issue 12). Prints only; exits 0 (2 if a scanner fails outright).

checkov is looked up as --checkov PATH, else bench/.checkov-venv/bin/checkov. To create that venv
(it is git-ignored):

    python3 -m venv bench/.checkov-venv && bench/.checkov-venv/bin/pip install checkov
"""

from __future__ import annotations

import argparse
import json
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


def write_manifests(folder: Path, objects: int, files: int) -> None:
    manifests = kubernetes_objects(objects)
    per_file = -(-len(manifests) // files)
    for f in range(files):
        chunk = manifests[f * per_file : (f + 1) * per_file]
        if chunk:
            (folder / f"manifests-{f:03d}.yaml").write_text(yaml.safe_dump_all(chunk, sort_keys=False))


def best_of(repeats: int, command: list[str], ok_codes: tuple[int, ...]) -> tuple[float, str]:
    best, stdout = float("inf"), ""
    for _ in range(repeats):
        started = time.perf_counter()
        result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, check=False)
        elapsed = time.perf_counter() - started
        if result.returncode not in ok_codes:
            raise RuntimeError(f"{' '.join(command)} exited {result.returncode}:\n{result.stderr[-2000:]}")
        best, stdout = min(best, elapsed), result.stdout
    return best, stdout


def aks_gpu_command() -> list[str]:
    script = Path(sys.executable).parent / "aks-gpu"
    return [str(script)] if script.exists() else [sys.executable, "-m", "planner"]


def phases(folder: Path) -> str:
    """Where aks-gpu's time goes, in process: reading the YAML versus running the rules, and what the
    same files cost with libyaml's parser (yaml.CSafeLoader), when PyYAML was built with it."""
    from planner import scan
    from policies.rules import evaluate

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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--objects", type=int, default=500, help="generated Kubernetes objects (default: 500)")
    parser.add_argument("--files", type=int, default=50, help="files to spread them over (default: 50)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per scanner; the best is reported (default: 3)")
    parser.add_argument("--checkov", metavar="PATH", help=f"checkov executable (default: {DEFAULT_CHECKOV.relative_to(ROOT)})")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="scan-bench-") as tmp:
        folder = Path(tmp)
        write_manifests(folder, args.objects, args.files)
        print(
            f"{args.objects} objects in {len(list(folder.glob('*.yaml')))} files under {folder}; best of {args.repeats} runs each"
        )

        command = [*aks_gpu_command(), "scan", str(folder), "--format", "json"]
        try:
            ours, stdout = best_of(args.repeats, command, (0, 1))
        except RuntimeError as err:
            print(f"aks-gpu scan failed: {err}")
            return 2
        report = json.loads(stdout)
        print(
            f"  aks-gpu scan  {ours:7.2f} s  ({report['objects']} objects, "
            f"{report['mandatory']} mandatory / {report['advisory']} advisory findings)"
        )
        print(f"                           {phases(folder)}")

        checkov = Path(args.checkov) if args.checkov else DEFAULT_CHECKOV
        if not checkov.exists():
            print(f"\ncheckov not found at {checkov}; to compare, create it (git-ignored) and rerun:")
            print("  python3 -m venv bench/.checkov-venv && bench/.checkov-venv/bin/pip install checkov")
            return 0
        command = [str(checkov), "-d", str(folder), "--framework", "kubernetes", "--quiet", "--compact", "-o", "json"]
        try:
            theirs, stdout = best_of(args.repeats, command, (0, 1))
        except RuntimeError as err:
            print(f"checkov failed: {err}")
            return 2
        print(f"  checkov       {theirs:7.2f} s  ({checkov_summary(stdout)})")
        ratio = theirs / ours
        verdict = "meets" if ratio >= TARGET else "MISSES"
        print(f"\ncheckov / aks-gpu = {ratio:.1f}x (target >= {TARGET:.0f}x: {verdict} it)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
