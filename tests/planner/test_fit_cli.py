"""``aks-gpu fit`` end to end: the table and JSON output, ``--all``, custom facts files, exit codes
0 (an option fits), 1 (none does, with the reason) and 2 (unknown model or bad input), and the
promise that fitting never imports Pulumi."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from aks_gpu_inference.components.core import catalog, models
from aks_gpu_inference.components.core.models import fit_options
from aks_gpu_inference.planner.cli import main
from tests.conftest import REPO

LLAMA_8B = "meta-llama/Llama-3.1-8B-Instruct"
CONSOLE_SCRIPT = Path(sys.executable).parent / "aks-gpu"


def fit(capsys, *args: str) -> tuple[int, str, str]:
    """Run ``aks-gpu fit ARGS`` in process; return (exit code, stdout, stderr)."""
    code = main(["fit", *args])
    out, err = capsys.readouterr()
    return code, out, err


def table_rows(out: str) -> list[list[str]]:
    """Data rows of the table: the lines after the dashed rule, split on runs of spaces."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("----")) + 1
    rows = []
    for line in lines[start:]:
        if not line.strip():
            break
        rows.append(re.split(r"\s{2,}", line.strip()))
    return rows


def test_table_lists_the_options_cheapest_first(capsys):
    code, out, err = fit(capsys, LLAMA_8B, "--context", "8192")
    assert code == 0 and err == ""
    first_lines = out.splitlines()[:2]
    assert first_lines[0].startswith(f"Fit of {LLAMA_8B} at 8192 tokens of context")
    assert (
        "List-price estimate" in first_lines[1] and f"profiled overhead (non-torch {models.NON_TORCH_GIB} GiB" in first_lines[1]
    )
    header = out.splitlines()[3]
    for column in ("vm size", "gpu", "tp", "weights/GPU GiB", "KV tokens", "seqs @8192", "$/hour", "$/month"):
        assert column in header
    rows = table_rows(out)
    assert len(rows) == len(fit_options(LLAMA_8B, 8192))
    assert rows[0][:3] == ["Standard_NV36ads_A10_v5", "A10-24GB", "1"]
    prices = [float(r[7]) for r in rows if r[7] != "n/a"]
    assert prices == sorted(prices) and rows[-1][7] == "n/a"
    whole = next(r for r in rows if r[:3] == ["Standard_NC24ads_A100_v4", "A100-80GB", "1"])
    sku = catalog.get_sku("Standard_NC24ads_A100_v4")
    assert whole[4] == "14.96" and whole[6] == "54"
    assert whole[7] == f"{sku.price_usd_per_hour:.2f}" and whole[8] == f"{sku.monthly_price_usd():,.0f}"
    assert re.search(r"\d+ options fit; \$/hour is the whole VM", out)


def test_json_output_carries_every_number_and_the_assumptions(capsys):
    code, out, _ = fit(capsys, "phi-4", "--format", "json", "--kv-cache-dtype", "fp8", "--gpu-memory-utilization", "0.85")
    assert code == 0
    report = json.loads(out)
    assert report["model"]["hf_id"] == "microsoft/phi-4" and report["max_model_len"] == 16384
    assert report["kv_cache_dtype"] == "fp8" and report["gpu_memory_utilization"] == 0.85
    assert report["fits"] is True and report["problem"] is None
    assert (
        report["assumptions"]["non_torch_gib"] == models.NON_TORCH_GIB
        and report["assumptions"]["vllm_version"] == models.PINNED_VLLM_VERSION
        and "zz_generated.pricing.go" in report["assumptions"]["prices"]["source"]
    )
    options = report["options"]
    assert options and all(o["fits"] for o in options)
    assert all(o["kv_bytes_per_token"] == 102400 for o in options), "fp8 KV halves KAITO's 204800"
    assert {"weights_gib_per_gpu", "kv_tokens", "full_length_sequences", "price_usd_per_month", "suggestions"} <= set(options[0])


def test_all_adds_the_refused_options_with_their_reason(capsys):
    code, out, _ = fit(capsys, "meta-llama/Llama-3.1-70B-Instruct", "--all")
    assert code == 0
    rows = table_rows(out)
    assert {r[9] for r in rows} == {"yes", "no"}
    refused = next(r for r in rows if r[0] == "Standard_NC24ads_A100_v4" and r[2] == "1" and r[1] == "A100-80GB")
    assert refused[9] == "no" and "exceed the 71.2 GiB budget per GPU" in refused[10]


def test_no_option_fits_exits_1_with_the_reason(capsys):
    code, out, err = fit(capsys, LLAMA_8B, "--context", "200000")
    assert code == 1 and err == ""
    assert "No catalog size serves meta-llama/Llama-3.1-8B-Instruct at 200000 tokens" in out
    assert "exceeds the model's maximum context of 131072 tokens" in out
    assert "--max-model-len 131072" in out


def test_a_custom_model_too_big_for_any_size_exits_1(capsys, tmp_path):
    facts = tmp_path / "giant.json"
    facts.write_text(
        json.dumps({"hf_id": "me/giant", "params_b": 2000, "layers": 160, "kv_heads": 8, "head_dim": 128, "max_context": 8192})
    )
    code, out, _ = fit(capsys, str(facts))
    assert code == 1
    assert re.search(r"Closest: Standard_ND96isr_MI300X_v5 \(MI300X-192GB, tp 8\): weights \([\d.]+ GiB\) \+ overhead", out)
    code, out, _ = fit(capsys, str(facts), "--format", "json")
    report = json.loads(out)
    assert code == 1 and report["fits"] is False and "weights" in report["problem"] and report["options"] == []


def test_a_custom_model_that_fits(capsys, tmp_path):
    facts = tmp_path / "small.json"
    facts.write_text(
        json.dumps({"hf_id": "me/small", "params_b": 1.5, "layers": 28, "kv_heads": 2, "head_dim": 128, "max_context": 32768})
    )
    code, out, _ = fit(capsys, str(facts), "--dtype", "int4")
    assert code == 0 and "Fit of me/small at 32768 tokens" in out and "weights int4" in out


def test_unknown_model_exits_2_with_suggestions(capsys):
    code, out, err = fit(capsys, "llama-3.1-70b")
    assert code == 2 and out == ""
    assert err.startswith("error: 'llama-3.1-70b' is not a model in the catalog")
    assert "did you mean 'meta-llama/Llama-3.1-70B-Instruct'" in err and "JSON file" in err


def test_invalid_facts_file_exits_2(capsys, tmp_path):
    facts = tmp_path / "bad.json"
    facts.write_text(json.dumps({"hf_id": "me/bad", "params_b": 7, "layers": 32, "kv_heads": 8, "head_dim": 128, "ctx": 4096}))
    code, out, err = fit(capsys, str(facts))
    assert code == 2 and out == ""
    assert "holds invalid model facts" in err and "ctx=4096: unknown key" in err and "max_context: required key is missing" in err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--context", "0"], "--context 0: must be a positive"),
        (["--gpu-memory-utilization", "1.5"], "must be above 0.1 and at most 0.98"),
    ],
)
def test_bad_numbers_are_usage_errors(capsys, argv, message):
    code, out, err = fit(capsys, LLAMA_8B, *argv)
    assert code == 2 and out == "" and err.startswith("error: ") and message in err


@pytest.mark.parametrize("argv", [["--dtype", "fp4"], ["--kv-cache-dtype", "int8"], ["--context", "many"]])
def test_bad_choices_are_argparse_errors(capsys, argv):
    with pytest.raises(SystemExit) as done:
        main(["fit", LLAMA_8B, *argv])
    assert done.value.code == 2
    assert "error:" in capsys.readouterr().err


def test_help(capsys):
    with pytest.raises(SystemExit) as done:
        main(["fit", "--help"])
    assert done.value.code == 0
    assert "components/core/models.py FORMULA" in capsys.readouterr().out


def test_console_script_exit_codes():
    assert CONSOLE_SCRIPT.exists()
    for argv, code in [([LLAMA_8B, "--context", "8192"], 0), ([LLAMA_8B, "--context", "999999"], 1), (["nobody/nothing"], 2)]:
        result = subprocess.run([str(CONSOLE_SCRIPT), "fit", *argv], capture_output=True, text=True, cwd=REPO, timeout=120)
        assert result.returncode == code, (argv, result.stdout, result.stderr)
        assert "Traceback" not in result.stderr


def test_fit_never_imports_pulumi():
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "aks_gpu_inference.planner", "fit", LLAMA_8B, "--format", "json"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    modules = [m[1].strip() for m in re.finditer(r"^import time:[^|]*\|[^|]*\|(.*)$", result.stderr, re.MULTILINE)]
    assert "aks_gpu_inference.components.core.models" in modules and "aks_gpu_inference.planner.fit" in modules, (
        "importtime output was parsed"
    )
    assert not [m for m in modules if m.startswith("pulumi")]
