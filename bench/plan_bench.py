"""Offline-planner overhead of the component library: the real stack program (ComponentResources, pydantic
validation, catalog lookups) against bench/baseline_program.py, which replays the raw resources the component
run registered, directly. Both run through planner.engine.program.run_program in one process, so the mock-engine cost
cancels out of the ratio. Also: the whole plan's time and peak memory at 1, 16 and 64 self-hosted models, and
whether each grows linearly (``--only-models`` runs just that)."""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from aks_gpu_inference.components._base import PACKAGE
from aks_gpu_inference.planner.engine import program as engine
from aks_gpu_inference.planner.inputs import stackfile

ROOT = Path(__file__).resolve().parent.parent
BASELINE = "bench/baseline_program.py"
TARGET = 1.3
COLD_TARGET = 2.0
"""A cold plan within twice the import time of the SDK modules it uses (issue 12)."""
POOL_TARGET_MS = 30
"""Each GPU pool beyond dev's adds at most this much plan time (issue 12)."""
POOL_SIZES = ["Standard_NC24ads_A100_v4", "Standard_NC40ads_H100_v5", "Standard_ND96isr_H100_v5", "Standard_NC4as_T4_v3"]


def sixteen_pools() -> list[dict]:
    """gpu01..gpu16 cycling through four sizes; every third autoscaled, RDMA on the ND size, one MIG, one Spot."""
    pools = []
    for i in range(1, 17):
        pool = {"name": f"gpu{i:02d}", "vm_size": POOL_SIZES[(i - 1) % 4]}
        if pool["vm_size"] == "Standard_ND96isr_H100_v5":
            pool["rdma"] = True
        if i % 3 == 0:
            pool.update(count=1, min_count=0, max_count=4)
        pools.append(pool)
    pools[4]["mig_profile"] = "MIG1g"  # gpu05: Standard_NC24ads_A100_v4
    pools[7]["spot"] = True  # gpu08: Standard_NC4as_T4_v3
    return pools


def sixteen_pool_config(project: str, config: dict[str, str]) -> dict[str, str]:
    """The dev config with the sixteen generated pools; each model moves to the first pool of its dev pool's size."""
    pools = sixteen_pools()
    result = {**config, f"{project}:gpu_pools": json.dumps(pools)}
    models_key = f"{project}:models"
    if models_key in config:
        dev_sizes = {p["name"]: p["vm_size"] for p in json.loads(config.get(f"{project}:gpu_pools", "[]"))}
        first_of_size: dict[str, str] = {}
        for pool in pools:
            first_of_size.setdefault(pool["vm_size"], pool["name"])
        models = [
            {**m, "pool": first_of_size.get(dev_sizes.get(m["pool"], ""), pools[0]["name"])}
            for m in json.loads(config[models_key])
        ]
        result[models_key] = json.dumps(models)
    return result


def _ref(urn: str) -> str:
    """``type::name`` of a URN, without the parent chain (which differs between the two programs)."""
    parts = urn.split("::")
    return f"{parts[2].split('$')[-1]}::{parts[3]}"


def raw_resources(run: engine.ProgramRun) -> dict[str, str]:
    """Every resource but the library's own components, by ``type::name``: inputs and options, canonical JSON.

    Custom resources plus remote components such as Helm charts; references to other resources
    (``dependsOn``, ``provider``) as ``type::name``, since the parent chain differs between the programs.
    """
    result = {}
    for r in run.resources:
        if r.custom or not r.type.startswith(f"{PACKAGE}:"):
            raw_deps = [d for d in r.options.get("dependsOn", []) if not _ref(d).startswith(f"{PACKAGE}:")]
            # Aliases are left out: the SDK's typed classes add one per older type token (the mock monitor records
            # their specs without names), which the replay's generic resources neither need nor can rebuild.
            options = {k: v for k, v in r.options.items() if k != "aliases"}
            options["dependsOn"] = sorted({_ref(d) for d in raw_deps})
            if "provider" in options:
                options["provider"] = _ref(options["provider"])
            result[f"{r.type}::{r.name}"] = json.dumps({"inputs": r.inputs, "options": options}, sort_keys=True)
    return result


def check_same(label: str, component: engine.ProgramRun, baseline: engine.ProgramRun) -> None:
    ours, theirs = raw_resources(component), raw_resources(baseline)
    components = len(component.resources) - len(ours)
    differ = sorted(k for k in ours.keys() | theirs.keys() if ours.get(k) != theirs.get(k))
    print(
        f"check {label}: raw resources component {len(ours)} (+{components} components), baseline {len(theirs)}; "
        f"same types, names, inputs and options: {'yes' if not differ else 'NO'}"
    )
    if differ:
        sys.exit(f"baseline does not match the component program: {', '.join(differ)}")


def record_replay(run: engine.ProgramRun, path: Path) -> None:
    """Write the component run's raw resources for bench/baseline_program.py and point it at them."""
    raw = [dataclasses.asdict(r) for r in run.resources if r.custom or not r.type.startswith(f"{PACKAGE}:")]
    path.write_text(json.dumps(raw))
    os.environ["AKS_GPU_REPLAY"] = str(path)


def timed(run) -> float:
    gc.collect()
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def cold_start(repeat: int) -> tuple[float, float] | None:
    """Median wall time of a fresh `aks-gpu plan dev` process and of a fresh process planning the baseline."""
    cli = Path(sys.executable).with_name("aks-gpu")
    if repeat < 1 or not cli.exists():
        return None
    stack = stackfile.read_stack(ROOT, "dev")
    replay = Path(tempfile.mkdtemp(prefix="aks-gpu-bench-")) / "replay.json"
    record_replay(engine.run_program(ROOT, stack.project, stack.stack, stack.config, stack.secret_keys), replay)
    driver = (
        "from pathlib import Path; from aks_gpu_inference.planner.engine import program as engine; from aks_gpu_inference.planner.inputs import stackfile; "
        f"s = stackfile.read_stack(Path({str(ROOT)!r}), 'dev'); "
        f"engine.run_program(s.project_dir, s.project, s.stack, s.config, s.secret_keys, main={BASELINE!r})"
    )
    times: dict[str, list[float]] = {"component": [], "baseline": []}
    with tempfile.TemporaryDirectory() as tmp:
        commands = {
            "component": [str(cli), "plan", "dev", "--quiet", "--out", tmp, "--project-dir", str(ROOT)],
            "baseline": [sys.executable, "-c", driver],
        }
        for _ in range(repeat):
            for side, command in commands.items():
                started = time.perf_counter()
                subprocess.run(command, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
                times[side].append(time.perf_counter() - started)
    return statistics.median(times["component"]), statistics.median(times["baseline"])


SDK_PREFIXES = (
    "pulumi",
    "pulumi_azure_native",
    "pulumi_kubernetes",
    "pulumi_policy",
    "pydantic",
    "yaml",
    "jsonschema",
    "celpy",
    "lark",
    "grpc",
    "google",
)
"""Third-party packages whose import time is the floor of any plan: what the plan needs, not what it does."""

LIST_MODULES = (
    "import sys; sys.argv = ['aks-gpu', 'plan', 'dev', '--quiet', '--out', sys.argv[1], '--project-dir', sys.argv[2]]\n"
    "from aks_gpu_inference.planner.cli import main\n"
    "try:\n    main()\nfinally:\n"
    f"    print('\\n'.join(m for m in sys.modules if m.split('.')[0] in {SDK_PREFIXES!r}), file=sys.stderr)"
)


def sdk_modules() -> list[str]:
    """The third-party modules a cold `aks-gpu plan dev` imports, in import order."""
    with tempfile.TemporaryDirectory() as tmp:
        done = subprocess.run(
            [sys.executable, "-c", LIST_MODULES, tmp, str(ROOT)], cwd=ROOT, capture_output=True, text=True, check=False
        )
    return [line for line in done.stderr.splitlines() if line and line.split(".")[0] in SDK_PREFIXES]


def import_floor(repeat: int) -> tuple[float, int]:
    """Median wall time of a fresh process that imports exactly those modules and does nothing else."""
    modules = sdk_modules()
    code = f"import importlib\nfor m in {modules!r}:\n    importlib.import_module(m)"
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times), len(modules)


def per_pool_cost(repeat: int, stack: stackfile.StackFile) -> tuple[float, float, int]:
    """Median in-process plan time of dev (its GPU pools) and of the 16-pool variant, and the pools added."""
    variants = {"dev": stack.config, "16": sixteen_pool_config(stack.project, stack.config)}
    medians = {}
    for label, scenario in variants.items():
        config, secret_keys = dict(scenario), list(stack.secret_keys)
        stackfile.add_secret_placeholders(stack.project, config, secret_keys)
        run = lambda c=config, k=secret_keys: engine.run_program(ROOT, stack.project, stack.stack, c, k)  # noqa: E731
        run()  # warm-up
        medians[label] = statistics.median(timed(run) for _ in range(repeat))
    dev_pools = len(json.loads(stack.config.get(f"{stack.project}:gpu_pools", "[]")))
    return medians["dev"], medians["16"], 16 - dev_pools


MODEL_COUNTS = (1, 16, 64)
"""Self-hosted models per scenario of the scaling run (issue 33: 16 was a cliff, the gateway's route held 15)."""
LINEAR_SLACK = 1.5
"""Growth is linear when the cost of a model from 16 to 64 is within this factor of its cost from 1 to 16."""
SCALE_DRIVER = (
    "import json, resource, sys, time, tracemalloc\n"
    "from datetime import date\n"
    "from pathlib import Path\n"
    "from aks_gpu_inference.planner.inputs.upstream import upstream_dir\n"
    "from aks_gpu_inference.planner.plan import PlanOptions, plan\n"
    "traced = sys.argv[3] == 'traced'\n"
    "if traced:\n"
    "    tracemalloc.start()\n"
    "started = time.perf_counter()\n"
    "result = plan(Path(sys.argv[1]), sys.argv[2], PlanOptions(date(2026, 12, 1), upstream=upstream_dir()))\n"
    "print(json.dumps({'seconds': time.perf_counter() - started, 'rss_mib': resource.getrusage(resource.RUSAGE_SELF)"
    ".ru_maxrss / 1024, 'traced_mib': tracemalloc.get_traced_memory()[1] / 2**20 if traced else None, "
    "'blockers': len(result.blockers)}))\n"
)
"""One plan in a fresh process, after its imports: seconds and peak RSS; with ``traced``, the peak of Python's own
allocations during the plan (tracemalloc: exact and repeatable, where peak RSS moves with the allocator's arenas)."""


def many_models(n: int) -> dict:
    """The dev stack file with ``n`` copies of its model (``m00``, ...) on one NC96ads A100 v4 pool with a GPU for each."""
    import yaml

    stack = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    config, key = stack["config"], "aks-gpu-inference:"
    config[f"{key}gpu_pools"] = [
        {"name": "a100", "vm_size": "Standard_NC96ads_A100_v4", "count": 1, "min_count": 0, "max_count": n // 4 + 2}
    ]
    model = {k: v for k, v in config[f"{key}models"][0].items() if k != "autoscaling"}
    config[f"{key}models"] = [{**model, "name": f"m{i:02d}", "served_model_name": f"m{i:02d}"} for i in range(n)]
    return stack


def _plan_process(project: Path, stack: str, how: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", SCALE_DRIVER, str(project), stack, how], cwd=ROOT, check=True, capture_output=True, text=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def model_scaling(repeat: int) -> list[tuple[int, float, float, float, int]]:
    """(models, median plan seconds, median peak RSS MiB, peak traced MiB, blockers) of the whole plan
    (``planner.plan.plan``: program, charts, policy pack, checks) in fresh processes, for each of ``MODEL_COUNTS``:
    ``repeat`` timed runs, then one under tracemalloc for memory."""
    import shutil

    import yaml

    rows = []
    with tempfile.TemporaryDirectory(prefix="aks-gpu-bench-models-") as tmp:
        project = Path(tmp)
        for name in ("Pulumi.yaml", "__main__.py"):
            shutil.copy(ROOT / name, project / name)
        for n in MODEL_COUNTS:
            (project / f"Pulumi.models{n}.yaml").write_text(yaml.safe_dump(many_models(n), sort_keys=False))
            runs = [_plan_process(project, f"models{n}", "timed") for _ in range(max(repeat, 1))]
            traced = _plan_process(project, f"models{n}", "traced")["traced_mib"]
            seconds, rss = statistics.median(r["seconds"] for r in runs), statistics.median(r["rss_mib"] for r in runs)
            rows.append((n, seconds, rss, traced, max(r["blockers"] for r in runs)))
    return rows


def print_model_scaling(rows: list[tuple[int, float, float, float, int]], repeat: int) -> None:
    print(f"\nplan time and peak memory by self-hosted models (whole plan, fresh process each, median of {max(repeat, 1)}):")
    for n, seconds, rss, traced, blockers in rows:
        print(
            f"  {n:>3} models: {seconds:6.2f} s, peak RSS {rss:6.1f} MiB, peak Python allocations {traced:6.1f} MiB, {blockers} blockers"
        )
    (n1, t1, _, m1, _), (n16, t16, _, m16, _), (n64, t64, _, m64, _) = rows
    for what, a, b, c, unit in (("time", t1, t16, t64, "ms"), ("memory (allocations)", m1, m16, m64, "MiB")):
        first, second = (b - a) / (n16 - n1), (c - b) / (n64 - n16)
        scale = 1000 if unit == "ms" else 1
        ratio = second / first if first > 0 else float("inf")
        verdict = "linear" if ratio <= LINEAR_SLACK else "MORE THAN LINEAR"
        print(
            f"  {what} per model: {first * scale:.2f} {unit} from 1 to 16, {second * scale:.2f} {unit} from 16 to 64: "
            f"ratio {ratio:.2f}, target <= {LINEAR_SLACK}: {verdict}"
        )


CHART_SHARE_TARGET = 0.2
"""Rendering the charts takes at most a fifth of a stack's plan (issue 19)."""


def chart_share(repeat: int) -> list[tuple[str, float, float]]:
    """Per repo stack: median in-process time of the whole plan (``planner.plan.plan``) and of its chart rendering,
    each run with an empty render cache, as a fresh process has."""
    from datetime import date

    from aks_gpu_inference.planner.charts import ChartSources, expand, helm
    from aks_gpu_inference.planner.inputs.upstream import upstream_dir
    from aks_gpu_inference.planner.plan import PlanOptions, plan

    spent: list[float] = []

    def timed_expand(run, sources: ChartSources):
        started = time.perf_counter()
        try:
            return expand(run, sources)
        finally:
            spent.append(time.perf_counter() - started)

    import aks_gpu_inference.planner.plan as pipeline

    pipeline.charts.expand = timed_expand  # the pipeline's own call, timed
    rows = []
    try:
        for path in sorted(ROOT.glob("Pulumi.*.yaml")):
            stack = path.name[len("Pulumi.") : -len(".yaml")]
            whole, rendering = [], []
            for _ in range(repeat):
                helm._RENDERED.clear()
                spent.clear()
                whole.append(
                    timed(lambda stack=stack: plan(ROOT, stack, PlanOptions(date(2026, 12, 1), upstream=upstream_dir())))
                )
                rendering.append(spent[0])
            rows.append((stack, statistics.median(whole), statistics.median(rendering)))
    finally:
        pipeline.charts.expand = expand
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per side and scenario (default 5)")
    parser.add_argument("--cold", type=int, default=3, help="cold-start process pairs for the dev stack (default 3; 0 skips)")
    parser.add_argument(
        "--models-repeat", type=int, default=3, help="fresh-process plans per model count, 1/16/64 models (default 3)"
    )
    parser.add_argument("--only-models", action="store_true", help="run only the 1/16/64-model scaling")
    args = parser.parse_args()
    if args.only_models:
        print_model_scaling(model_scaling(args.models_repeat), args.models_repeat)
        return

    stack = stackfile.read_stack(ROOT, "dev")  # secrets the stack file lacks are filled with placeholders
    scenarios = {"dev": stack.config, "16 pools": sixteen_pool_config(stack.project, stack.config)}
    rows = []
    for label, scenario in scenarios.items():
        # Both programs get the same config and secret keys; the placeholders are what `aks-gpu plan` uses too.
        config, secret_keys = dict(scenario), list(stack.secret_keys)
        stackfile.add_secret_placeholders(stack.project, config, secret_keys)

        def run(main: str, config: dict[str, str] = config, secret_keys: list[str] = secret_keys) -> engine.ProgramRun:
            return engine.run_program(ROOT, stack.project, stack.stack, config, secret_keys, main=main)

        component_run = run("__main__.py")
        record_replay(component_run, Path(tempfile.mkdtemp(prefix="aks-gpu-bench-")) / "replay.json")
        check_same(label, component_run, run(BASELINE))  # also the warm-up of both sides
        component, baseline = [], []
        for _ in range(args.repeat):
            component.append(timed(lambda run=run: run("__main__.py")))
            baseline.append(timed(lambda run=run: run(BASELINE)))
        rows.append((label, statistics.median(component), statistics.median(baseline)))

    cold = cold_start(args.cold)
    if cold:
        rows.append(("dev, cold process", *cold))
    floor = import_floor(args.cold) if cold else None
    dev_time, sixteen_time, added = per_pool_cost(args.repeat, stack)

    cold_note = f"; cold: median of {args.cold} fresh processes per side" if cold else ""
    print(f"\nmedian of {args.repeat} alternating in-process runs per side{cold_note}")
    print(f"{'scenario':<19}{'component s':>12}{'baseline s':>12}{'ratio':>8}   target")
    for label, ours, theirs in rows:
        print(f"{label:<19}{ours:>12.3f}{theirs:>12.3f}{ours / theirs:>7.2f}x   <= {TARGET}x")
    verdicts = [f"{label} {'meets' if ours / theirs <= TARGET else 'MISSES'}" for label, ours, theirs in rows]
    print(f"target {TARGET}x (informational): {'; '.join(verdicts)}")
    if cold:
        print("note: the cold component run is the whole `aks-gpu plan` command, including report and file output")
    if cold and floor:
        ratio = cold[0] / floor[0]
        print(
            f"\ncold `aks-gpu plan dev` {cold[0]:.2f} s against the import floor {floor[0]:.2f} s (a fresh process importing "
            f"only the {floor[1]} SDK modules the plan uses): {ratio:.2f}x, target <= {COLD_TARGET}x: "
            f"{'meets' if ratio <= COLD_TARGET else 'MISSES'}"
        )
    print(f"\nchart rendering against the whole plan, in process (median of {args.repeat}), target <= {CHART_SHARE_TARGET:.0%}:")
    for stack, whole, rendering in chart_share(args.repeat):
        share = rendering / whole
        verdict = "meets" if share <= CHART_SHARE_TARGET else "MISSES"
        cold_share = f"; {rendering / cold[0]:5.1%} of the cold `aks-gpu plan dev`" if cold and stack == "dev" else ""
        print(f"  {stack:<8} plan {whole:6.2f} s, charts {rendering:5.2f} s: {share:5.1%}  {verdict}{cold_share}")
    print("  (in process: the SDKs already imported; the charts' share of a cold command is the figure a user meets)")
    print_model_scaling(model_scaling(args.models_repeat), args.models_repeat)
    per_pool = (sixteen_time - dev_time) / added
    print(
        f"per extra GPU pool: ({sixteen_time:.3f} s for 16 pools - {dev_time:.3f} s for dev) / {added} = {per_pool * 1000:.0f} ms "
        f"in process under the mocks, target <= {POOL_TARGET_MS} ms: {'meets' if per_pool * 1000 <= POOL_TARGET_MS else 'MISSES'}"
    )


if __name__ == "__main__":
    main()
