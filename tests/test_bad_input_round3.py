"""Round three of bad input: look-alike characters pointed at, numbers where text is expected explained, empty option
values refused, a chart archive given to scan told to render it, one gpu_memory_utilization range everywhere."""

from __future__ import annotations

import pytest

from aks_gpu_inference.components.core.gpu_utilization import UTILIZATION_ACCEPTED
from aks_gpu_inference.planner.cli import main
from tests.test_stack_input_errors import problems

CYRILLIC_A = "\u0430"


def test_a_lookalike_in_a_value_is_pointed_at_with_its_code_point():
    found = problems(lambda c: c["models"][0].update(pool=f"{CYRILLIC_A}100"))
    (line,) = [p for p in found if p.startswith("models[0].pool=")]
    assert "no such GPU pool; pools: a100" in line
    assert "U+0430 CYRILLIC SMALL LETTER A, which looks like 'a') at position 1" in line


def test_a_lookalike_in_a_key_is_pointed_at():
    def misspelt(c):
        c["cluster"]["kuberne\u0074e\u0455_version"] = c["cluster"].pop("kubernetes_version", "1.35")

    (line,) = problems(misspelt)
    assert "did you mean 'kubernetes_version'?" in line
    assert "the key holds a character outside ASCII" in line and "U+0455" in line and "looks like 's'" in line


@pytest.mark.parametrize("value, quoted", [(1.35, '"1.35"'), (1.3, '"1.3"'), (135, '"135"')])
def test_a_number_where_a_version_string_belongs_says_quote_it(value, quoted):
    (line,) = problems(lambda c: c["cluster"].update(kubernetes_version=value))
    assert line.startswith(f"cluster.kubernetes_version={value}: expected a string")
    assert f"write it in quotes ({quoted})" in line
    assert ("1.30 becomes 1.3" in line) is isinstance(value, float)


@pytest.mark.parametrize(
    "argv, option",
    [
        (["plan", "--as-of", ""], "--as-of"),
        (["plan", "--out", ""], "--out"),
        (["plan", "--out", "  "], "--out"),
        (["plan", ""], "stack"),
        (["plan", "--charts", ""], "--charts"),
        (["plan", "--policy-config", ""], "--policy-config"),
        (["scan", ""], "PATH"),
        (["fit", "meta-llama/Llama-3.1-8B-Instruct", "--vm-size", ""], "--vm-size"),
        (["preflight", "dev", "--subscription", ""], "--subscription"),
    ],
)
def test_an_empty_option_value_is_refused_not_defaulted(argv, option, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {option}: an empty value" in err and "Traceback" not in err
    assert not any(tmp_path.iterdir()), "nothing written"


@pytest.mark.parametrize(
    "magic, kind",
    [(b"\x1f\x8b\x08\x00", "a gzip-compressed archive (a .tgz chart?)"), (b"PK\x03\x04", "a zip archive")],
)
def test_scan_of_a_chart_archive_says_render_it_first(magic, kind, tmp_path, capsys):
    archive = tmp_path / "vllm-stack-0.1.9.tgz"
    archive.write_bytes(magic + b"\x00" * 64)
    assert main(["scan", str(archive)]) == 2
    err = capsys.readouterr().err
    assert f"{kind}, not YAML" in err and f"`helm template <release> {archive} > rendered.yaml`" in err
    assert "UTF-8" not in err


def test_scan_of_a_tar_archive_is_recognised(tmp_path, capsys):
    archive = tmp_path / "chart.tar"
    archive.write_bytes(b"\x00" * 257 + b"ustar\x0000" + b"\x00" * 100)
    assert main(["scan", str(archive)]) == 2
    assert "a tar archive, not YAML" in capsys.readouterr().err


@pytest.mark.parametrize("value", [1.0, 0.99, 0.1, 0.05])
def test_fit_and_the_stack_file_refuse_the_same_utilizations(value, capsys):
    fit_code = main(["fit", "meta-llama/Llama-3.1-8B-Instruct", "--gpu-memory-utilization", str(value)])
    fit_err = capsys.readouterr().err
    stack = problems(lambda c: c["models"][0].update(gpu_memory_utilization=value))
    assert fit_code == 2 and UTILIZATION_ACCEPTED in fit_err
    assert any(p.startswith(f"models[0].gpu_memory_utilization={value}") for p in stack)
