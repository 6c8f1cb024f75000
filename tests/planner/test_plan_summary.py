"""The plan to look at: summary.json, plan.md and plan.html, written for every stack of the repo from one plan
each (into a temporary folder), checked against the printed plan and the stack's own outputs."""

from __future__ import annotations

import functools
import json
import re
import xml.etree.ElementTree as ET
from datetime import date
from html.parser import HTMLParser
from pathlib import Path

import pytest

from aks_gpu_inference.planner import verdict as verdict_module
from aks_gpu_inference.planner.deploy import CHECKS, GATEWAY_NOT_CHECKED, NOT_CHECKED, ROUTER_NOT_CHECKED
from aks_gpu_inference.planner.plan import Plan, PlanOptions, plan
from aks_gpu_inference.planner.report import artifacts, cost, picture, sections, summary
from aks_gpu_inference.planner.report.plan_text import plan_text
from tests.conftest import REPO, STACKS, chart_sources

AS_OF = date(2026, 12, 1)


@functools.cache
def planned(stack: str) -> Plan:
    return plan(REPO, stack, PlanOptions(as_of=AS_OF))


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """``written(stack)``: the plan and the folder it was written to, once per stack."""

    @functools.cache
    def write(stack: str) -> tuple[Plan, Path]:
        out = tmp_path_factory.mktemp(stack) / "out"
        artifacts.write(planned(stack), out)
        return planned(stack), out

    return write


def printed_total(text: str) -> str:
    """The total of the printed cost table."""
    section = text.split("Monthly cost estimate\n", 1)[1]
    return next(line for line in section.splitlines() if line.startswith("total ")).split(None, 1)[1].strip()


@pytest.mark.parametrize("stack", STACKS)
def test_summary_json_agrees_with_the_printed_plan(written, stack):
    result, out = written(stack)
    doc = json.loads((out / "summary.json").read_text())
    text = plan_text(result)
    total = doc["cost"]["total"]
    assert cost.money_range(total["usd_per_month_min"], total["usd_per_month_max"]) == printed_total(text)
    assert [r["item"] for r in doc["cost"]["rows"]] == [r.item for r in cost.cost_rows(result.run).rows]
    verdict = doc["verdict"]
    assert verdict["exit_code"] == (1 if result.failed else 0)
    assert verdict["state"] == result.state and verdict["pulumi_up_would_work"] is (result.state == "works")
    assert [g["what"] for g in verdict["incomplete"]] == [g.what for g in result.gaps]
    assert (
        f"Verdict: {verdict_module.headline(result.state, verdict['blockers'], verdict['mandatory'], 0, len(result.gaps))}"
        in text
    )
    assert f"{verdict['blockers']} blockers, {verdict['warnings']} warnings" in text
    assert f"{verdict['mandatory']} mandatory, {verdict['advisory']} advisory, {verdict['exempted']} exempted" in text
    assert sum(doc["resources"]["by_type"].values()) == doc["resources"]["total"] == len(result.run.resources)
    assert [c["check"] for c in doc["checks"]] == list(CHECKS)
    assert sum(c["blockers"] + c["warnings"] for c in doc["checks"]) == sum(f["level"] != "unchecked" for f in doc["findings"])
    assert sorted(p["name"] for p in doc["pools"]) == sorted(line.pool for line in sections.pool_lines(result.run))
    assert {q["quota"] for q in doc["quota"]["rows"]} and all(q["quota"] in text for q in doc["quota"]["rows"])
    assert [i["image"] for i in doc["images"]] == [i["image"] for i in result.gateway["images"]]
    quota_gap = [item for item in doc["not_checked"] if f"aks-gpu preflight {stack}" in item]
    assert len(quota_gap) == 1 and f"aks-gpu preflight {stack}" in text
    assert all(item in text for item in doc["not_checked"] if item not in quota_gap)


def test_summary_json_has_the_documented_keys(written):
    doc = json.loads((written("dev")[1] / "summary.json").read_text())
    bullets = [line.split(":", 1)[0] for line in summary.__doc__.splitlines() if line.startswith("- ")]
    documented = {key for bullet in bullets for key in re.findall(r"``(\w+)``", bullet)}
    assert set(doc) - {"schema_version"} == documented
    assert doc["schema_version"] == summary.SCHEMA_VERSION


@pytest.mark.parametrize("stack", STACKS)
def test_plan_md_leads_with_the_verdict_and_names_every_check(written, stack):
    _, out = written(stack)
    doc = json.loads((out / "summary.json").read_text())
    lines = (out / "plan.md").read_text().splitlines()
    assert lines[0] == f"# Plan of stack `{stack}` (Pulumi.{stack}.yaml)"
    assert lines[2].startswith(f"**{summary.headline(doc)}.**") and "`pulumi up` " in lines[2]
    assert ("would work" in lines[2]) is (doc["verdict"]["state"] == "works")
    for check in CHECKS:
        assert any(re.fullmatch(rf"\| {re.escape(check)} \| \d+ \| \d+ \|", line) for line in lines), check
    for finding in doc["findings"]:
        assert any(finding["message"].replace("|", "\\|") in line for line in lines)
    for item in doc["not_checked"]:
        assert f"- {item}" in lines


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.styles: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in_style = tag == "style"

    def handle_endtag(self, tag):
        self._in_style = self._in_style and tag != "style"

    def handle_data(self, data):
        if self._in_style:
            self.styles.append(data)


@pytest.mark.parametrize("stack", STACKS)
def test_plan_html_is_one_self_contained_picture(written, stack):
    result, out = written(stack)
    page = (out / "plan.html").read_text()
    root = ET.fromstring(page)  # well-formed: every element closed, every entity XML knows
    assert root.tag == "html" and len(root.findall(".//svg")) == 1
    tags = _Tags()
    tags.feed(page)
    names = {tag for tag, _ in tags.tags}
    assert not names & {"script", "link", "img", "iframe", "object", "embed", "image", "use", "foreignobject"}
    for tag, attrs in tags.tags:
        for name, value in attrs.items():
            assert "://" not in (value or "") and not (value or "").startswith("//"), (tag, name, value)
            assert not (value or "").startswith("url(") or (value or "").startswith("url(#"), (tag, name, value)
    style = "".join(tags.styles)
    assert "@import" not in style and "url(" not in style and "@font-face" not in style
    shown = " ".join(" ".join(e.itertext()) for e in root.iter())
    for line in sections.pool_lines(result.run):
        assert f"pool {line.pool}" in shown or f"{line.pool} (nodes" in shown, line.pool
    routed = result.run.outputs.get("gateway_routes") or result.run.outputs.get("model_endpoints") or {}
    for model in routed:
        assert f"model {model}" in shown, model


def test_the_picture_follows_a_request_to_the_pods_that_answer_it(written):
    chart_sources()  # the router's and the picker's pods come from their charts
    doc = json.loads((written("llmd")[1] / "summary.json").read_text())
    (path,) = doc["request_paths"]
    assert path["auth"].startswith("API key") and "tokens/hour per client" in path["budget"]
    assert path["router"]["pools"] == ["platform"] and path["router"]["default_model"] in {b["model"] for b in path["backends"]}
    backends = {b["model"]: b for b in path["backends"]}
    pool = backends["llama-3.3-70b"]
    assert pool["kind"] == "InferencePool" and pool["pools"] == ["h100", "platform"]
    assert {"Deployment llm-d-infra/llama-70b-decode", "Deployment llm-d-infra/llama-70b-prefill"} <= set(pool["workloads"])
    assert backends["gpt-5.5"]["kind"] == "Azure OpenAI" and backends["gpt-5.5"]["pools"] == ["external"]
    pools = {p["name"]: p for p in doc["pools"]}
    assert "Deployment llm-d-infra/llama-70b-decode" in pools["h100"]["workloads"]
    assert pools["h100"]["gpu"]["max_total"] == 16 and pools["system"]["workloads"] == []


def test_stacks_without_a_gateway_still_show_their_pools_and_workloads(written):
    doc = json.loads((written("train")[1] / "summary.json").read_text())
    assert doc["request_paths"] == []
    spot = next(p for p in doc["pools"] if p["spot"])
    assert "RayJob llm-d-infra/frontier-ft (gpu)" in spot["workloads"]
    page = (written("train")[1] / "plan.html").read_text()
    assert "RayJob frontier-ft (gpu)" in page and "Spot ceiling" in page


def test_a_workload_that_fits_no_pool_is_drawn_as_such(written):
    doc = json.loads((written("dev")[1] / "summary.json").read_text())
    stray = dict(doc["workloads"][0], id="Deployment default/stray", kind="Deployment", namespace="default", name="stray")
    stray["pools"] = []
    drawn = picture.html(doc | {"workloads": [*doc["workloads"], stray]})
    ET.fromstring(drawn)
    assert "fits no pool" in drawn and "Deployment stray" in drawn


def test_an_unrendered_chart_makes_the_plan_incomplete_and_never_says_it_would_work(tmp_path, monkeypatch):
    """A fresh clone with no shared/upstream, an empty chart cache and no network: the charts cannot be rendered."""
    from aks_gpu_inference.planner.cli import main

    monkeypatch.setenv("AKS_GPU_UPSTREAM", str(tmp_path / "no-upstream"))
    monkeypatch.setenv("AKS_GPU_CHART_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("AKS_GPU_CHARTS", raising=False)
    out = tmp_path / "out"
    assert main(["plan", "dev", "--project-dir", str(REPO), "--out", str(out), "--quiet"]) == 0, "incomplete is not a failure"
    doc = json.loads((out / "summary.json").read_text())
    assert doc["verdict"]["state"] == "incomplete" and doc["verdict"]["pulumi_up_would_work"] is False
    gaps = doc["verdict"]["incomplete"]
    assert len([g for g in gaps if "was not rendered" in g["what"]]) == 4
    assert all("--pull" in g["how"] and "--charts DIR" in g["how"] and "AKS_GPU_UPSTREAM" in g["how"] for g in gaps[:4])
    for name in ("plan.md", "plan.html"):
        text = (out / name).read_text()
        assert "would work" not in text and "is not known to work: the plan is incomplete" in text, name
    assert main(["plan", "dev", "--project-dir", str(REPO), "--out", str(out), "--quiet", "--strict"]) == 1


@pytest.mark.parametrize("stack, gateway", [("dev", True), ("prod", False), ("train", False), ("llmd", True)])
def test_what_no_offline_plan_checks_follows_what_the_stack_has(written, stack, gateway):
    """The gateway's and the router's run-time limits are named only where the stack has them; a plan that says it
    would work never says a chart was not rendered."""
    result, out = written(stack)
    doc = json.loads((out / "summary.json").read_text())
    has = {item: item in doc["not_checked"] for item in (*GATEWAY_NOT_CHECKED, *ROUTER_NOT_CHECKED)}
    assert set(has.values()) == {gateway}, has
    assert all(item in doc["not_checked"] for item in NOT_CHECKED)
    if result.state == "works":
        assert not any("not rendered" in path.read_text() for path in out.glob("*.md")), "a green plan names no unrendered chart"
