"""The plan's verdict, one of three: ``pulumi up`` would work, would not work, or the plan is incomplete.

A plan is incomplete when something it would check could not be checked here: a chart whose archive was found
nowhere (nothing it creates was seen), a chart rendered from a snapshot standing in for the release, custom resources
with no CRD schema at hand, a program whose rules this project has no table for. Each gap says how to close it (a
flag, an environment variable, a command). An incomplete plan never says "would work"; ``--strict`` makes it fail.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Literal

from aks_gpu_inference.planner.charts.sources import CACHE_ENV, CHARTS_ENV, default_cache
from aks_gpu_inference.planner.inputs.upstream import ENV_VAR as UPSTREAM_ENV

if TYPE_CHECKING:
    from aks_gpu_inference.planner.charts import ChartRender
    from aks_gpu_inference.planner.deploy import Finding

State = Literal["works", "fails", "incomplete"]


@dataclass(frozen=True)
class Gap:
    """Something the plan could not check, and how to check it."""

    what: str
    how: str

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


def chart_how(r: ChartRender, stack: str) -> str:
    """Where the plan looks for a chart's archive, and the ways to give it one."""
    archive = f"{r.chart.rsplit('/', 1)[-1]}-{r.version}.tgz"
    return (
        f"give the plan the chart's archive ({archive}): `aks-gpu plan {stack} --pull` fetches it into the chart cache "
        f"({default_cache()}, or ${CACHE_ENV}) with `helm pull` when helm is on the PATH, else Helm's SDK; or put it in "
        f"a folder named by --charts DIR or ${CHARTS_ENV}; or point ${UPSTREAM_ENV} at a shared/upstream copy with "
        "chart-archives/"
    )


def gaps(
    renders: list[ChartRender], notes: list[str], unchecked_crds: list[str], findings: list[Finding], stack: str
) -> list[Gap]:
    """What a plan could not check, each with how to check it: charts not rendered or rendered from a stand-in,
    data standing in for a release (``notes``), custom resources without a CRD, and checks that could not run."""
    found = [
        Gap(
            f"{r.label} was not rendered: nothing it creates was checked ({'; '.join(r.problems) or 'no archive'})",
            chart_how(r, stack),
        )
        for r in renders
        if not r.rendered
    ]
    found += [
        Gap(f"{r.label}: {r.caveat}", f"render the published chart: `aks-gpu plan {stack} --pull` (or --charts DIR with it)")
        for r in renders
        if r.rendered and r.caveat
    ]
    found += [Gap(note, f"check it against the published release ({UPSTREAM_ENV} with its files, or --pull)") for note in notes]
    if unchecked_crds:
        how = f"give the plan the charts or files that hold their CRDs (--charts DIR, --pull, or ${UPSTREAM_ENV} with crds/)"
        found.append(Gap(f"{', '.join(unchecked_crds)} were checked against no CRD schema", how))
    found += [Gap(f.message, f.fix) for f in findings if f.level == "unchecked"]
    return found


def state(failed: bool, gaps_: list[Gap]) -> State:
    """``fails`` with anything that stops ``pulumi up``; else ``incomplete`` while anything went unchecked."""
    if failed:
        return "fails"
    return "incomplete" if gaps_ else "works"


def headline(state_: State, blockers: int, mandatory: int, unsatisfiable: int, incomplete: int) -> str:
    """The verdict in one sentence."""
    counts = f"{blockers} blockers, {mandatory} mandatory policy violations, {unsatisfiable} unsatisfiable claims"
    if state_ == "fails":
        return f"`pulumi up` would NOT work: {counts}"
    if state_ == "incomplete":
        return f"`pulumi up` is not known to work: the plan is incomplete ({incomplete} not checked; {counts})"
    return f"`pulumi up` would work: {counts}"
