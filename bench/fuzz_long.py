"""A longer fuzz run than tests/test_fuzz.py: the same generators (tests/fuzzing.py), random rather
than derandomized, with many more examples per target.

Each target feeds mutated inputs to the real command line in process (``plan`` into a
temporary project, ``scan`` in all three formats, ``fit``) or to the bounded loaders
(``planner.inputs.safe_yaml``, ``planner.inputs.safe_json``), and counts exit codes. A *crash* is an exit code
outside 0/1/2, a traceback on stderr, or (for the loaders) an exception other than ConfigError; each
is printed with the input that caused it (the first few per target).

    .venv/bin/python bench/fuzz_long.py                 # default budget, a few minutes
    .venv/bin/python bench/fuzz_long.py --scale 0.1     # a quick look
    .venv/bin/python bench/fuzz_long.py --only scan fit --seed 7 --save /tmp/crashes

Exits 1 when anything crashed, else 0.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from aks_gpu_inference.components.core.errors import ConfigError
from aks_gpu_inference.planner.inputs import safe_json, safe_yaml
from tests.fuzzing import facts_texts, make_project, manifest_texts, plan, run_cli, stack_texts

BUDGET = {"plan": 40, "scan": 600, "fit": 600, "safe_yaml": 3000, "safe_json": 3000}
"""Examples per target at --scale 1."""


def targets(work: Path) -> dict:
    """name -> (strategy, run(value) -> (outcome, stderr)); outcome is an exit code or an exception name."""
    project = make_project(work / "project")

    def run_plan(text):
        code, _, stderr, _ = plan(project, text)
        return code, stderr

    def run_scan(value):
        text, output = value
        (work / "manifest.yaml").write_text(text)
        code, _, stderr = run_cli(["scan", str(work / "manifest.yaml"), "--format", output])
        return code, stderr

    def run_fit(text):
        (work / "facts.json").write_text(text)
        code, _, stderr = run_cli(["fit", str(work / "facts.json"), "--format", "json"])
        return code, stderr

    def loader(load):
        def run(value):
            try:
                load(value)
            except ConfigError:
                return "ConfigError", ""
            except Exception as err:  # a crash: recorded, not raised, so the run goes on
                return type(err).__name__, traceback.format_exc()
            return "loaded", ""

        return run

    strict = st.booleans()
    return {
        "plan": (stack_texts(), run_plan),
        "scan": (st.tuples(manifest_texts(), st.sampled_from(["table", "json", "sarif"])), run_scan),
        "fit": (facts_texts(), run_fit),
        "safe_yaml": (
            st.tuples(st.one_of(stack_texts(), manifest_texts()), strict),
            loader(lambda v: safe_yaml.load_all(v[0], source="fuzz.yaml", string_keys=v[1], finite_floats=v[1], plain=v[1])),
        ),
        "safe_json": (facts_texts(), loader(lambda text: safe_json.load_json(text, source="fuzz.json"))),
    }


def crashed(outcome, stderr: str) -> bool:
    if isinstance(outcome, int):
        return outcome not in (0, 1, 2) or "Traceback" in stderr
    return outcome not in ("ConfigError", "loaded")


def fuzz(strategy, run, examples: int, seed_value: int) -> tuple[Counter, list]:
    outcomes: Counter = Counter()
    crashes: list = []

    @seed(seed_value)
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def body(value):
        outcome, stderr = run(value)
        outcomes[outcome] += 1
        if crashed(outcome, stderr):
            crashes.append(
                (outcome, (stderr.strip().splitlines() or [""])[-1][:300], value if isinstance(value, str) else repr(value))
            )

    body()
    return outcomes, crashes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every target's example budget")
    parser.add_argument("--seed", type=int, default=int(time.time()), help="random seed (default: the clock)")
    parser.add_argument("--only", nargs="+", choices=list(BUDGET), help="run only these targets")
    parser.add_argument("--save", metavar="DIR", help="write each crashing input to DIR/<target>-<n>.txt")
    args = parser.parse_args()
    print(f"seed {args.seed}")
    total_crashes = 0
    with tempfile.TemporaryDirectory(prefix="aks-gpu-fuzz-") as tmp:
        for name, (strategy, run) in targets(Path(tmp)).items():
            if args.only and name not in args.only:
                continue
            examples = max(1, int(BUDGET[name] * args.scale))
            started = time.perf_counter()
            outcomes, crashes = fuzz(strategy, run, examples, args.seed)
            histogram = ", ".join(f"{k}: {v}" for k, v in sorted(outcomes.items(), key=lambda kv: str(kv[0])))
            print(
                f"{name:10} {sum(outcomes.values()):5} runs in {time.perf_counter() - started:6.1f}s  {histogram}  crashes: {len(crashes)}"
            )
            for outcome, last_line, value in crashes[:5]:
                print(f"    crash {outcome}: {last_line}\n      input: {value[:400]}")
            if args.save:
                Path(args.save).mkdir(parents=True, exist_ok=True)
                for n, (_, _, value) in enumerate(crashes):
                    (Path(args.save) / f"{name}-{n}.txt").write_text(value)
            total_crashes += len(crashes)
    return 1 if total_crashes else 0


if __name__ == "__main__":
    sys.exit(main())
