"""Every Python and stack-file example in README.md and docs/ runs, the way a user would paste it.

Each ```python or ```yaml block carries a marker on the line before it that says how it is used:

- ``<!-- example: stack BASE -->``: keys to put into ``Pulumi.BASE.yaml`` (a list merges by ``name``: an entry
  replaces the one of the same name, others are added; any other value replaces the key's). The stack then
  plans with no deploy blocker and no mandatory policy finding.
- ``<!-- example: stack BASE, refused -->``: the same, but the plan exits 2 and prints exactly the ```text block
  that follows.
- ``<!-- example: program NAME [after BASE] -->``: the blocks of NAME, in order (after the program BASE), are a
  consumer project's ``__main__.py``; it plans clean.
- ``<!-- example: openai client -->``: run against a local stand-in for the gateway's OpenAI API.

A block without a marker fails the suite, so no example can go untested."""

from __future__ import annotations

import contextlib
import io
import json
import re
import shutil
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from aks_gpu_inference.planner import docgen
from tests.conftest import REPO, chart_sources, stack_config

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
BLOCK = re.compile(
    r"(?:^(?P<marker><!-- example: (?P<how>[^>]*?) -->)\n)?^```(?P<lang>python|yaml)\n(?P<code>.*?)^```\n", re.M | re.S
)
TEXT_AFTER = re.compile(r"\A.*?^```text\n(?P<text>.*?)^```", re.M | re.S)
PROJECT = "aks-gpu-inference"
SECRETS = ("vllm_api_key", "hf_token", "agent_key")


@dataclass(frozen=True)
class Example:
    file: str
    line: int
    how: str
    lang: str
    code: str
    after: str
    """The document's text after the block (the expected output of a refused stack)."""

    @property
    def id(self) -> str:
        return f"{self.file}:{self.line}"


def examples() -> list[Example]:
    found = []
    for path in DOCS:
        text = path.read_text()
        for m in BLOCK.finditer(text):
            line = text.count("\n", 0, m.start("lang") if m["marker"] is None else m.start()) + 1
            found.append(Example(str(path.relative_to(REPO)), line, m["how"] or "", m["lang"], m["code"], text[m.end() :]))
    return found


ALL = examples()


def test_every_python_and_stack_example_says_how_it_runs():
    assert len(ALL) >= 12
    unmarked = [e.id for e in ALL if not e.how]
    assert unmarked == [], "add an <!-- example: ... --> marker before each block"
    kinds = {e.how.split()[0] for e in ALL}
    assert kinds <= {"stack", "program", "openai"}, kinds


def _merge(base: dict, fragment: dict) -> dict:
    merged = dict(base)
    for key, value in fragment.items():
        old = merged.get(key)
        if isinstance(value, list) and isinstance(old, list) and all(isinstance(i, dict) and "name" in i for i in value):
            names = {i["name"]: i for i in value}
            merged[key] = [names.pop(i["name"], i) if isinstance(i, dict) else i for i in old] + list(names.values())
        else:
            merged[key] = value
    return merged


def _project(tmp_path: Path, name: str, stack: str, config: dict, main: str | None = None) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "Pulumi.yaml").write_text(f"name: {name}\nruntime: python\n")
    if main is None:
        shutil.copy(REPO / "__main__.py", project / "__main__.py")
    else:
        (project / "__main__.py").write_text(main)
    (project / f"Pulumi.{stack}.yaml").write_text(yaml.safe_dump({"config": config}, sort_keys=False))
    return project


def _plan(project: Path, stack: str, capsys) -> tuple[int, str, Path]:
    from aks_gpu_inference.planner.cli import main

    out = project / "out"
    code = main(["plan", stack, "--project-dir", str(project), "--out", str(out), "-q", "--as-of", "2026-12-01"])
    return code, capsys.readouterr().err, out


def _clean(out: Path) -> None:
    findings = json.loads((out / "deployability.json").read_text())["findings"]
    assert [f"{f['object']}: {f['message']}" for f in findings if f["level"] == "blocker"] == []
    assert [v["message"] for v in json.loads((out / "policy.json").read_text()) if v["enforcement"] == "mandatory"] == []


STACKS = [e for e in ALL if e.how.startswith("stack ")]


@pytest.mark.parametrize("example", STACKS, ids=[e.id for e in STACKS])
def test_a_stack_example_plans_as_shown(example, tmp_path, capsys):
    chart_sources()
    base, _, outcome = example.how.removeprefix("stack ").partition(", ")
    fragment = yaml.safe_load(example.code)
    config = _merge(stack_config(base), fragment)
    code, err, out = _plan(_project(tmp_path, PROJECT, base, config), base, capsys)
    if outcome == "refused":
        expected = TEXT_AFTER.match(example.after)["text"]
        assert (code, err) == (2, expected)
        assert not out.exists(), "a refused plan writes nothing"
    else:
        assert code == 0, err
        _clean(out)


def _programs() -> dict[str, str]:
    """Each program's code: its base program's, then its own blocks in the order the docs give them."""
    own: dict[str, list[str]] = {}
    bases: dict[str, str] = {}
    for e in ALL:
        if e.how.startswith("program "):
            name, _, base = e.how.removeprefix("program ").partition(" after ")
            own.setdefault(name, []).append(e.code)
            if base:
                bases[name] = base
    return {name: "\n".join([*own.get(bases.get(name, ""), []), *blocks]) for name, blocks in own.items()}


PROGRAMS = _programs()


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_program_example_plans_clean_in_a_project_of_its_own(name, tmp_path, capsys):
    """As a user would: the blocks pasted into a new project's __main__.py, its secrets set."""
    chart_sources()
    config = {"azure-native:location": "eastus", **{f"docs-example:{s}": {"secure": "v1:placeholder"} for s in SECRETS}}
    project = _project(tmp_path, "docs-example", "docs", config, main=PROGRAMS[name])
    code, err, out = _plan(project, "docs", capsys)
    assert code == 0, err
    _clean(out)


class _Gateway(BaseHTTPRequestHandler):
    """A stand-in for the gateway's /v1/chat/completions: answers as the router would, as a routed model."""

    calls: list[dict] = []

    def do_POST(self):  # http.server's name for the handler
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Gateway.calls.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
        reply = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": "llama-8b",
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": "A one-line summary."}, "finish_reason": "stop"}
            ],
            "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17},
        }
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


CLIENTS = [e for e in ALL if e.how == "openai client"]


@pytest.mark.parametrize("example", CLIENTS, ids=[e.id for e in CLIENTS])
def test_the_openai_client_example_calls_the_gateway_as_written(example):
    pytest.importorskip("openai")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Gateway)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        code = example.code.replace("http://<gateway address>/v1", f"http://127.0.0.1:{server.server_port}/v1")
        code = code.replace("<your client key>", "sk-agent-test")
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(code, example.id, "exec"), {})  # the example is what is tested
    finally:
        server.shutdown()
    (call,) = _Gateway.calls
    assert call["path"] == "/v1/chat/completions" and call["auth"] == "Bearer sk-agent-test"
    assert call["body"]["model"] == "MoM"
    assert printed.getvalue() == "llama-8b A one-line summary.\n"


def test_the_rule_table_in_the_docs_is_the_rules_own():
    """docs/policies.md's table is made from policies/rules (`make docs`): a rule's change shows up there or fails here."""
    from aks_gpu_inference.policies.rule_table import rule_table, with_table
    from aks_gpu_inference.policies.rules import RULES

    document = (REPO / "docs" / "policies.md").read_text()
    assert with_table(document) == document, "run `make docs`"
    assert rule_table().count("\n") == 2 + len(RULES)


@pytest.mark.parametrize("section", docgen.sections(), ids=lambda s: s.name)
def test_each_generated_section_of_the_docs_is_the_codes_own(section):
    document = (REPO / section.page).read_text()
    assert section.into(document) == document, "run `make docs`"
