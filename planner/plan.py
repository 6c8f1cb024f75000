"""The offline plan of a stack, as one pipeline: read the stack file, run its program under the mocks, render its
charts with Helm, run the policy pack, check the DRA claims, simulate the apply. ``plan`` returns everything it
found as a ``Plan``; the command line only prints it (``report.sections``) and writes it (``report.artifacts``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from aks_gpu_inference.components.core.errors import ConfigError, StackFileConfigError
from aks_gpu_inference.planner import analyzer, charts, claims, deploy, verdict
from aks_gpu_inference.planner.deploy import capacity as deploy_capacity
from aks_gpu_inference.planner.deploy import crds as deploy_crds
from aks_gpu_inference.planner.deploy import default_pools, gateway_paths
from aks_gpu_inference.planner.engine import program as engine
from aks_gpu_inference.planner.inputs import stackfile
from aks_gpu_inference.planner.inputs.upstream import upstream_dir


@dataclass(frozen=True)
class PlanOptions:
    as_of: date
    """The date lifecycle checks judge retirements on."""
    policy_config: dict[str, Any] = field(default_factory=dict)
    """The policy pack's config, as ``--policy-pack-config`` gives it (rule -> settings)."""
    upstream: Path | None = None
    """The pinned upstream data (CRDs, chart archives); None: ``$AKS_GPU_UPSTREAM``, else ``../shared/upstream``."""
    charts: tuple[str, ...] = ()
    """Folders of chart archives to render from first (``--charts``)."""
    pull: bool = False
    """Pull a chart found nowhere offline into the chart cache."""


@dataclass
class Plan:
    stack: stackfile.StackFile
    options: PlanOptions
    upstream: Path | None
    run: engine.ProgramRun
    """What the program registered, each chart's children added as a preview registers them."""
    renders: list[charts.ChartRender]
    verdicts: list[analyzer.Verdict]
    exempted: list[Any]
    claims: list[claims.Verdict]
    model: deploy.DeployModel
    findings: list[deploy.Finding]
    gateway: dict[str, Any]
    unchecked_crds: list[str]
    snapshot_notes: list[str]
    rollouts: list[tuple[str, str]] = field(default_factory=list)
    """Each GPU workload and what a rolling update of it does on its pools."""
    platform_pool: str | None = None
    """What the pool AksCluster adds by default runs, and how to opt out (``deploy.default_pools``); None without one."""
    limits: list[str] = field(default_factory=list)
    """What no offline plan of this stack can check (``deploy.limits``), after this plan's own gaps."""
    seconds: float = 0.0

    @property
    def mandatory(self) -> list[analyzer.Verdict]:
        return [v for v in self.verdicts if v.mandatory]

    @property
    def blockers(self) -> list[deploy.Finding]:
        return [f for f in self.findings if f.level == "blocker"]

    @property
    def failed(self) -> bool:
        """A mandatory policy violation, an unsatisfiable claim or a deploy blocker: ``pulumi up`` would not work."""
        return bool(self.mandatory or self.blockers or any(not v.satisfiable for v in self.claims))

    @property
    def gaps(self) -> list[verdict.Gap]:
        """What this plan could not check, and how to check it: any makes the plan incomplete."""
        return verdict.gaps(self.renders, self.snapshot_notes, self.unchecked_crds, self.findings, self.stack.stack)

    @property
    def state(self) -> verdict.State:
        """``works``, ``fails`` or ``incomplete`` (never ``works`` with a gap)."""
        return verdict.state(self.failed, self.gaps)


def plan(project_dir: Path, stack_name: str, options: PlanOptions, progress: Callable[[str], None] = lambda _: None) -> Plan:
    """The whole offline plan of ``Pulumi.<stack_name>.yaml``; raises ConfigError for input the stack refuses."""
    started = time.perf_counter()
    stack = stackfile.read_stack(project_dir, stack_name)
    progress(f"planning stack {stack.stack!r} of {stack.project!r} offline (Pulumi SDK mocks; no CLI, no cloud)")
    for warning in stack.warnings:
        progress(f"warning: {warning}")
    upstream = options.upstream or upstream_dir()
    run = _run_program(project_dir, stack)
    # Only the secrets the program asked for: a stack without a gateway never reads the client keys.
    used = [key for key in stack.placeholder_secrets if f"{stack.project}:{key}" in run.config_read]
    if used:
        progress(f"secrets not in {stack.path.name}, planned with placeholders: {', '.join(used)}")
    progress("rendering the stack's Helm charts with Helm (helm template, else helm-python-sdk)")
    sources = charts.ChartSources.configured(list(options.charts), upstream, options.pull, project_dir)
    run, renders = charts.expand(run, sources)
    progress(f"registered {len(run.resources)} resources; running the aks-gpu-guardrails policy pack")
    verdicts = analyzer.analyze(run, options.policy_config)
    claim_verdicts = claims.check(run)
    model = deploy.build(run, renders, claim_verdicts)
    return Plan(
        stack=stack,
        options=options,
        upstream=upstream,
        run=run,
        renders=renders,
        verdicts=verdicts,
        exempted=analyzer.exemptions(run, options.policy_config),
        claims=claim_verdicts,
        model=model,
        findings=deploy.run(model, options.as_of, upstream),
        gateway=gateway_paths.build(model, upstream),
        unchecked_crds=deploy_crds.unchecked(model, upstream),
        snapshot_notes=deploy_crds.snapshots(model, upstream),
        rollouts=deploy_capacity.rollouts(model),
        platform_pool=(found.statement if (found := default_pools.platform_pool(model)) else None),
        limits=deploy.limits(model, stack.stack),
        seconds=time.perf_counter() - started,
    )


class ProgramError(Exception):
    """The stack program itself raised an exception, at a line of the project's own code (not the library's)."""

    def __init__(self, where: str, err: BaseException):
        self.where = where
        super().__init__(f"{where}: {type(err).__name__}: {' '.join(str(err).split())}")


LIBRARY = tuple(str(Path(__file__).resolve().parents[1] / p) for p in ("components", "planner", "policies"))
"""Where this library's own code lives: an exception raised there is the library's, not the program's."""


def _run_program(project_dir: Path, stack: stackfile.StackFile) -> engine.ProgramRun:
    import pulumi

    try:
        return engine.run_program(project_dir, stack.project, stack.stack, stack.config, stack.secret_keys)
    except StackFileConfigError as err:
        raise ConfigError(err.context, err.problems) from None  # the file is at fault, not a component
    except pulumi.RunError as err:
        # Components raise RunError subclasses for bad input: the message (component, argument, value) is the whole story.
        raise ConfigError("a component of the stack program refused its arguments", [str(err)]) from None
    except (ConfigError, KeyboardInterrupt):
        raise
    except Exception as err:
        where = _program_line(err, project_dir)
        if where is None:
            raise  # the library's own failure: an internal error
        raise ProgramError(where, err) from err


def _program_line(err: BaseException, project_dir: Path) -> str | None:
    """``file:line`` where the project's own code raised ``err``; None when it was raised in this library."""
    tb = err.__traceback__
    if tb is None:
        return None
    while tb.tb_next is not None:  # the frame that raised it
        tb = tb.tb_next
    raised_in, root = Path(tb.tb_frame.f_code.co_filename).resolve(), project_dir.resolve()
    own = raised_in.is_relative_to(root) and not str(raised_in).startswith(LIBRARY)
    return f"{raised_in.relative_to(root)}:{tb.tb_lineno}" if own else None
