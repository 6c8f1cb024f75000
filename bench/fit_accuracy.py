"""How close the memory fit (components/core/models.py) comes to what vLLM reported in published start-up logs.

Reads bench/fit_reference_points.json. For every point it runs the fit with the point's model (a catalog id,
facts the file carries, or a Hugging Face config.json folder under tests/fixtures/hf_configs), GPU (the
memory gpu_memory.json says that GPU reports, or the point's own ``device_gib`` for a GPU outside the
catalog), tensor-parallel size, nodes, gpu_memory_utilization, context and dtypes, and prints vLLM's
published KV budget ("Available KV cache memory") and KV tokens ("GPU KV cache size") beside the estimate,
with the error per point and the worst case. Capacity points (vLLM left at least a quarter of its budget
for the KV cache) must land within the file's tolerance; verdict points (less or no KV room) must reach
vLLM's starts / refuses verdict. Each point is estimated with its own release (``vllm_version``: its
profiler, scheduler defaults and KV arithmetic) and its settings where it set them.

    .venv/bin/python bench/fit_accuracy.py            # table and summary; exit 1 if a point misses
    .venv/bin/python bench/fit_accuracy.py --json     # the same as JSON
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from aks_gpu_inference.components.core import models
from aks_gpu_inference.components.core.models import ModelFactsArgs
from aks_gpu_inference.planner import fit_inputs

POINTS_FILE = Path(__file__).with_name("fit_reference_points.json")
REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Outcome:
    """One reference point next to the estimate."""

    id: str
    kind: str
    """``capacity`` (KV budget compared within tolerance) or ``verdict`` (fits / does not fit compared)."""
    model: str
    gpu: str
    tp: int
    utilization: float
    max_model_len: int
    vllm_version: str
    published_kv_gib: float | None
    estimated_kv_gib: float
    published_tokens: int | None
    estimated_tokens: int
    published_fits: bool
    estimated_fits: bool
    estimated_weights_gib: float
    published_weights_gib: float | None
    overhead_gib: float
    url: str

    @property
    def error(self) -> float | None:
        """Relative error of the KV budget (estimate / published - 1), when vLLM published a positive one."""
        if self.published_kv_gib is None or self.published_kv_gib <= 0:
            return None
        return self.estimated_kv_gib / self.published_kv_gib - 1

    @property
    def token_error(self) -> float | None:
        if not self.published_tokens:
            return None
        return self.estimated_tokens / self.published_tokens - 1

    def ok(self, tolerance: float) -> bool:
        """Capacity: within tolerance and the same verdict; verdict: the same verdict (never "fits" where vLLM failed)."""
        same_verdict = self.estimated_fits == self.published_fits
        if self.kind == "capacity":
            return same_verdict and self.error is not None and abs(self.error) <= tolerance
        return same_verdict


def load() -> dict:
    """The reference points file."""
    return json.loads(POINTS_FILE.read_text())


def model_facts(data: dict, name: str) -> ModelFactsArgs:
    """A catalog model, one whose facts the points file carries, or a Hugging Face config.json (the file or its
    folder, with its safetensors index when it has one), absolute or from the repository root."""
    if name in data.get("models", {}):
        return ModelFactsArgs.model_validate(data["models"][name])
    path = REPO / name
    if path.is_dir() or path.suffix == ".json":
        return fit_inputs.load_model(str(path))
    return models.get_model(name)


def evaluate(point: dict, data: dict) -> Outcome:
    """The fit for one reference point, with that point's vLLM release and scheduler settings."""
    facts = model_facts(data, point["model"])
    gpu = point["gpu"]
    device_gib = point.get("device_gib") or models.gpu_memory_table()[gpu]["device_gib"]
    result = models.fit_on_memory(
        facts,
        0,
        point["tp"],
        gpu=gpu,
        gpu_memory_gib=device_gib,
        max_model_len=point["max_model_len"],
        gpu_memory_utilization=point["gpu_memory_utilization"],
        dtype=point["dtype"],
        kv_cache_dtype=point["kv_cache_dtype"],
        max_num_seqs=point.get("max_num_seqs"),
        max_num_batched_tokens=point.get("max_num_batched_tokens"),
        cuda_graphs=not point.get("enforce_eager", False),
        custom_all_reduce=point.get("nodes", 1) == 1 and not point.get("disable_custom_all_reduce", False),
        vllm_version=point["vllm_version"],
    )
    published = point["published"]
    kv = published.get("kv_gib")
    budget = device_gib * point["gpu_memory_utilization"]
    kind = "capacity" if kv is not None and kv >= data["capacity_share"] * budget else "verdict"
    return Outcome(
        id=point["id"],
        kind=kind,
        model=point["checkpoint"],
        gpu=gpu,
        tp=point["tp"],
        utilization=point["gpu_memory_utilization"],
        max_model_len=point["max_model_len"],
        vllm_version=point["vllm_version"],
        published_kv_gib=kv,
        estimated_kv_gib=result.kv_budget_gib_per_gpu,
        published_tokens=published.get("kv_tokens"),
        estimated_tokens=result.kv_tokens,
        published_fits=published["fits"],
        estimated_fits=result.fits,
        estimated_weights_gib=result.weights_gib_per_gpu,
        published_weights_gib=published.get("weights_gib"),
        overhead_gib=result.overhead_gib,
        url=point["url"],
    )


def evaluate_all(data: dict | None = None) -> list[Outcome]:
    data = data or load()
    return [evaluate(point, data) for point in data["points"]]


def _pct(value: float | None) -> str:
    return "" if value is None else f"{value * 100:+.1f}%"


def _num(value: float | None, digits: int = 2) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def report(outcomes: list[Outcome], tolerance: float) -> str:
    headers = ["point", "vLLM", "gpu", "tp", "util", "len", "kind", "KV GiB vLLM", "KV GiB est", "err",
               "tokens vLLM", "tokens est", "err", "fits vLLM/est", "ok"]  # fmt: skip
    rows = [
        [
            o.id,
            o.vllm_version,
            o.gpu,
            str(o.tp),
            f"{o.utilization:g}",
            str(o.max_model_len),
            o.kind,
            _num(o.published_kv_gib),
            _num(o.estimated_kv_gib),
            _pct(o.error),
            f"{o.published_tokens:,}" if o.published_tokens else "",
            f"{o.estimated_tokens:,}",
            _pct(o.token_error),
            f"{'yes' if o.published_fits else 'no'}/{'yes' if o.estimated_fits else 'no'}",
            "ok" if o.ok(tolerance) else "MISS",
        ]
        for o in outcomes
    ]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(lines)


def summary(outcomes: list[Outcome], tolerance: float) -> str:
    capacity = [o for o in outcomes if o.kind == "capacity"]
    verdicts = [o for o in outcomes if o.kind == "verdict"]
    errors = [abs(o.error) for o in capacity if o.error is not None]
    worst = max(capacity, key=lambda o: abs(o.error or 0))
    tokens = [o for o in capacity if o.token_error is not None]
    worst_tokens = max(tokens, key=lambda o: abs(o.token_error or 0)) if tokens else None
    over = max((o.error for o in capacity if o.error is not None), default=0.0)
    agree = sum(o.estimated_fits == o.published_fits for o in verdicts)
    unsafe = [o.id for o in outcomes if o.estimated_fits and not o.published_fits]
    misses = [o.id for o in outcomes if not o.ok(tolerance)]
    token_note = (
        f"vLLM's token count within {abs(worst_tokens.token_error or 0) * 100:.1f}% on {len(tokens)} points "
        f"(worst {worst_tokens.id}); "
        if worst_tokens
        else ""
    )
    return (
        f"{len(capacity)} capacity points: KV budget within {max(errors) * 100:.1f}% of vLLM's (worst {worst.id}), "
        f"mean |error| {sum(errors) / len(errors) * 100:.1f}%, largest over-prediction {over * 100:+.1f}%, target "
        f"{tolerance * 100:.0f}%; {token_note}{agree}/{len(verdicts)} verdict points agree; "
        f"{len(unsafe)} 'fits' where vLLM did not; {'all ok' if not misses else 'MISSES: ' + ', '.join(misses)}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the outcomes as JSON")
    args = parser.parse_args(argv)
    data = load()
    tolerance = data["tolerance"]
    outcomes = evaluate_all(data)
    if args.json:
        rows = [{**o.__dict__, "error": o.error, "token_error": o.token_error, "ok": o.ok(tolerance)} for o in outcomes]
        print(json.dumps({"outcomes": rows, "summary": summary(outcomes, tolerance)}, indent=2))
    else:
        print(
            "Memory fit vs published vLLM logs (each point with its own vLLM release; device memory from "
            "components/core/gpu_memory.json unless the point gives the GiB its log reports)\n"
        )
        print(report(outcomes, tolerance))
        print()
        print(summary(outcomes, tolerance))
    return 0 if all(o.ok(tolerance) for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
