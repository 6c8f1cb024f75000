"""Typed arguments of the vLLM Semantic Router (vSR) v0.3 config (issue 6), and the release facts.

Pure pydantic and plain Python: no Pulumi imports, so the planner and tests can use it without the SDKs.
``router_render.render`` turns a ``RouterConfigArgs`` into the config the chart takes (the sources of
its shape, and what is unverified, are listed there).

Release: the pins table's ``semantic-router`` chart and image (vSR 0.3: Envoy ext_proc gRPC on port 50051).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..core import pins
from ..core.errors import FieldProblem, FieldProblems

VSR_VERSION = pins.chart("semantic-router").version
VSR_IMAGE = pins.image_pin("semantic-router")
"""The chart's ``image.repository``; its default tag is the chart's appVersion, ``latest`` at v0.3.0, so the tag is pinned."""
VSR_CHART = pins.chart("semantic-router").ref
VSR_CHART_VERSION = VSR_VERSION
VSR_EXTPROC_PORT = 50051
VSR_NAMESPACE = "vllm-semantic-router-system"
VSR_SERVICE = "semantic-router"
"""Where the router's ext_proc Service lives (the chart's fullname for release ``semantic-router``)."""
VSR_API_PORT = 8080
ROUTER_UID = 65532
"""The router image sets no USER; the pod runs as this non-root UID so that the restricted profile admits it."""
CONFIG_FORMAT = "v" + ".".join(VSR_VERSION.split(".")[:2])
"""The config file's ``version``: the release's major.minor (``v0.3``)."""

# IsAutoModelName: "auto" or global.router.auto_model_name, whose default is "MoM"; exact match
# (vllm-project/semantic-router@v0.3.0:src/semantic-router/pkg/config/helper.go:75-89,
# canonical_global.go:24). Any other model (e.g. "vllm-sr/auto") passes through unrouted.
AUTO_MODEL_NAMES: tuple[str, ...] = ("MoM", "auto")
"""The request ``model`` values that make the pinned router release choose the model."""


def auto_model_names() -> tuple[str, ...]:
    """The model names that trigger routing in the pinned router; the first is the documented one."""
    return AUTO_MODEL_NAMES


EMBEDDING_MODEL = "mmbert-embed-32k-2d-matryoshka"
DOMAIN_MODEL = "mmbert32k-intent-classifier-merged"
JAILBREAK_MODEL = "mmbert32k-jailbreak-detector-merged"
PII_MODEL = "mmbert32k-pii-detector-merged"
"""Local model directories of router 0.3.0 under ``/app/models`` (canonical_defaults.go:180-302); the
embedding model always loads, the classifiers only when a decision uses their signal (feature_gates.go)."""

# The 14 MMLU-Pro categories the vSR domain classifier emits (same list as the ai-gateway values' domains).
MMLU_CATEGORIES: frozenset[str] = frozenset(
    {
        "biology",
        "business",
        "chemistry",
        "computer science",
        "economics",
        "engineering",
        "health",
        "history",
        "law",
        "math",
        "other",
        "philosophy",
        "physics",
        "psychology",
    }
)

# reasoning_families as shipped in the chart's values.yaml @017a96c5.
REASONING_FAMILIES: dict[str, dict[str, str]] = {
    "deepseek": {"type": "chat_template_kwargs", "parameter": "thinking"},
    "qwen3": {"type": "chat_template_kwargs", "parameter": "enable_thinking"},
    "gpt-oss": {"type": "reasoning_effort", "parameter": "reasoning_effort"},
    "gpt": {"type": "reasoning_effort", "parameter": "reasoning_effort"},
}

# Priorities at and above this are reserved for the guard decisions rendered from RouterGuards.
GUARD_PRIORITY_FLOOR = 999
PII_GUARD = "pii-guard"
JAILBREAK_GUARD = "jailbreak-guard"
_RESERVED_DECISIONS = frozenset({"block-pii", "block-jailbreak"})

_ENDPOINT = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?:([1-9][0-9]{0,4})$")
MODEL_NAME = re.compile(r"^[a-z0-9]([a-z0-9._-]*[a-z0-9])?$")
"""What a routed model may be called (the gateway matches it against the request's ``model``)."""

_STRICT = ConfigDict(extra="forbid", frozen=True)


class RouterModel(BaseModel):
    """One model the router may send a request to."""

    model_config = _STRICT

    name: str = Field(min_length=1, max_length=63)
    """Required. The name clients and the gateway use (the OpenAI ``model`` field), e.g. ``"self-hosted-llama-8b"``;
    lower-case DNS-ish so it is safe in Kubernetes names and headers."""

    kind: Literal["self-hosted", "azure-openai"]
    """Required. ``self-hosted`` is a vLLM Service in the cluster (plain HTTP); ``azure-openai`` is a frontier model
    behind Azure OpenAI (HTTPS). Decides the backend protocol and which model the safe default may be."""

    endpoint: str
    """Required. ``host:port`` of the backend as vSR's ``backend_refs[].endpoint`` expects, e.g.
    ``"vllm-llama-8b.inference.svc.cluster.local:8000"`` or ``"myres.openai.azure.com:443"``."""

    provider_model_id: str | None = None
    """Default ``None`` = same as ``name``. The id the backend knows the model by (vLLM ``--served-model-name``, or the
    Azure OpenAI deployment name), so the public name can stay stable when the backend changes."""

    prompt_usd_per_million: float = Field(default=0.0, ge=0)
    """Default 0. USD per 1M prompt tokens, used by vSR cost metrics; for self-hosted models see
    ``core.token_cost.self_hosted_cost_per_million``, for Azure OpenAI use the list price of the deployment."""

    completion_usd_per_million: float = Field(default=0.0, ge=0)
    """Default 0. USD per 1M completion tokens (as above)."""

    reasoning_family: str | None = None
    """Default ``None`` (the model has no reasoning switch). One of the chart's ``reasoning_families`` (``deepseek``,
    ``qwen3``, ``gpt-oss``, ``gpt``); required if any decision sets ``use_reasoning`` for this model, because vSR needs
    it to know how to turn reasoning on."""

    @field_validator("name")
    @classmethod
    def _name_shape(cls, value: str) -> str:
        if not MODEL_NAME.match(value):
            raise ValueError(f"model name {value!r} must be lower-case letters, digits, '.', '_' or '-'")
        return value

    @field_validator("endpoint")
    @classmethod
    def _endpoint_shape(cls, value: str) -> str:
        match = _ENDPOINT.match(value)
        if not match or not 1 <= int(match.group(2)) <= 65535:
            raise ValueError(f"endpoint {value!r} must be host:port (no scheme, no path), e.g. 'vllm.ns.svc:8000'")
        return value

    @field_validator("reasoning_family")
    @classmethod
    def _known_family(cls, value: str | None) -> str | None:
        if value is not None and value not in REASONING_FAMILIES:
            raise ValueError(f"reasoning_family {value!r} is not one of {sorted(REASONING_FAMILIES)}")
        return value


class RouterDecision(BaseModel):
    """One routing rule: if its signals match, send the request to ``model``."""

    model_config = _STRICT

    name: str = Field(min_length=1, max_length=63)
    """Required. Unique decision name; shows up in vSR metrics/headers and names this decision's keyword signal."""

    priority: int = Field(default=100, ge=0, lt=GUARD_PRIORITY_FLOOR)
    """Default 100. Higher is evaluated first (``global.router.strategy: priority``). Capped below 999 because
    999/1000 are reserved for the PII/jailbreak block decisions, which must always win."""

    categories: list[str] = Field(default_factory=list)
    """Default empty. MMLU-Pro domain names (e.g. ``"math"``, ``"computer science"``, ``"other"``) from the vSR
    domain classifier; each becomes a ``type: domain`` condition. Must be among :data:`MMLU_CATEGORIES`, since the
    classifier can emit nothing else and a typo would silently never match."""

    keywords: list[str] = Field(default_factory=list)
    """Default empty. Phrases (case-insensitive) that select this decision, e.g. ``"step by step"``; rendered as one
    OR keyword signal named ``<decision>-keywords`` and one ``type: keyword`` condition."""

    operator: Literal["AND", "OR"] = "OR"
    """Default ``OR``: any listed category or the keyword signal matches. ``AND`` needs every condition; note the
    domain classifier emits one domain per request, so AND with two categories can never match."""

    model: str
    """Required. The :class:`RouterModel` ``name`` to send matching requests to."""

    use_reasoning: bool = False
    """Default False. Ask the model to reason (via its ``reasoning_family``); off by default because it costs tokens."""

    @field_validator("categories")
    @classmethod
    def _known_categories(cls, value: list[str]) -> list[str]:
        unknown = [c for c in value if c not in MMLU_CATEGORIES]
        if unknown:
            raise ValueError(f"unknown categories {unknown}; the domain classifier emits only {sorted(MMLU_CATEGORIES)}")
        if len(set(value)) != len(value):
            raise ValueError(f"duplicate categories in {value}")
        return value

    @field_validator("keywords")
    @classmethod
    def _clean_keywords(cls, value: list[str]) -> list[str]:
        if any(not k.strip() for k in value):
            raise ValueError("keywords must not be blank")
        return value

    @model_validator(mode="after")
    def _has_condition(self) -> RouterDecision:
        if not self.categories and not self.keywords:
            raise ValueError(f"decision {self.name!r} needs at least one category or keyword")
        return self


class RouterGuards(BaseModel):
    """Prompt guards that block a request before any routing decision."""

    model_config = _STRICT

    pii: bool = False
    """Default False. Block requests in which the PII classifier finds personal data (decision ``block-pii``,
    priority 999). Off by default: it loads another classifier and can reject legitimate support tickets."""

    jailbreak: bool = False
    """Default False. Block jailbreak/prompt-injection attempts (decision ``block-jailbreak``, priority 1000) and
    enable the prompt_guard module. Off by default for the same cost/false-positive reasons."""

    threshold: float = Field(default=0.7, gt=0, le=1)
    """Default 0.7 (the prompt_guard default in vSR docs). Classifier confidence at which a guard fires; lower
    catches more and blocks more legitimate prompts."""

    pii_types_allowed: list[str] = Field(default_factory=list)
    """Default empty (any PII blocks). Presidio-style types to let through, e.g. ``["EMAIL_ADDRESS"]``. Unverified
    placement on the v0.3 signal; see module docstring."""

    @model_validator(mode="after")
    def _read_by_a_guard(self) -> RouterGuards:
        """A setting of guards that are off reaches nothing: refused rather than ignored."""
        problems = []
        if "threshold" in self.model_fields_set and not (self.pii or self.jailbreak):
            why = "the confidence at which a guard fires, and both guards are off: set pii or jailbreak true, or leave it out"
            problems.append(FieldProblem("threshold", self.threshold, why))
        if self.pii_types_allowed and not self.pii:
            why = "PII types the pii guard lets through, and it is off: set pii true, or leave it out"
            problems.append(FieldProblem("pii_types_allowed", self.pii_types_allowed, why))
        if problems:
            raise FieldProblems(problems)
        return self


class SemanticCache(BaseModel):
    """vSR's in-memory semantic response cache."""

    model_config = _STRICT

    enabled: bool = False
    """Default False: a cached answer for a *similar* prompt can be wrong for this one, so it is opt-in."""

    similarity_threshold: float = Field(default=0.8, gt=0, le=1)
    """Default 0.8 (chart default). Embedding similarity at which a cached response is served."""

    max_entries: int = Field(default=1000, ge=1, le=1_000_000)
    """Default 1000 (chart default); at most 1,000,000. Bounded so the router pod's memory stays predictable."""

    ttl_seconds: int = Field(default=3600, ge=1)
    """Default 3600 (chart default). How long a cached response may be served."""


class RouterConfigArgs(BaseModel):
    """Everything needed to render a vSR v0.3 config."""

    model_config = _STRICT

    models: list[RouterModel] = Field(min_length=1)
    """Required. Every model the router may choose; at least one must be self-hosted (the safe default)."""

    decisions: list[RouterDecision] = Field(default_factory=list)
    """Default empty (everything goes to ``default_model``). See :func:`default_decisions` for the seed story."""

    default_model: str
    """Required. Model for requests no decision matches; must be a known model. Use the self-hosted one, so
    unclassified traffic stays cheap and inside the cluster."""

    guards: RouterGuards = Field(default_factory=RouterGuards)
    """Default: no guards (see :class:`RouterGuards`)."""

    cache: SemanticCache = Field(default_factory=SemanticCache)
    """Default: cache off (see :class:`SemanticCache`)."""

    tracing_endpoint: str | None = None
    """Default ``None`` (tracing off). OTLP gRPC ``host:port`` of a collector, e.g. ``"otel-collector.monitoring:4317"``."""

    tracing_sample_rate: float = Field(default=0.1, ge=0, le=1)
    """Default 0.1 (chart default): probabilistic sampling keeps trace volume low in production."""

    @field_validator("tracing_endpoint")
    @classmethod
    def _tracing_shape(cls, value: str | None) -> str | None:
        if value is not None and not _ENDPOINT.match(value):
            raise ValueError(f"tracing_endpoint {value!r} must be host:port, e.g. 'otel-collector.monitoring:4317'")
        return value

    @model_validator(mode="after")
    def _cross_check(self) -> RouterConfigArgs:
        problems = cross_check_problems(self)
        if problems:
            raise FieldProblems(problems)
        return self


def _duplicates(field: str, what: str, names: Iterable[str]) -> list[FieldProblem]:
    seen: set[str] = set()
    dupes = sorted({n for n in names if n in seen or seen.add(n)})
    return [FieldProblem(field, dupes, f"duplicate {what} names")] if dupes else []


def cross_check_problems(args: RouterConfigArgs) -> list[FieldProblem]:
    """Every problem between the models and the decisions that route to them."""
    model_names = [m.name for m in args.models]
    decision_names = [d.name for d in args.decisions]
    problems = _duplicates("models", "model", model_names) + _duplicates("decisions", "decision", decision_names)
    reserved = sorted(_RESERVED_DECISIONS.intersection(decision_names))
    if reserved:
        problems.append(FieldProblem("decisions", reserved, "these decision names are reserved for the guard decisions"))
    if not any(m.kind == "self-hosted" for m in args.models):
        problems.append(
            FieldProblem("models", model_names, "at least one model must be kind 'self-hosted' (the in-cluster safe default)")
        )
    known = sorted(model_names)
    if args.default_model not in model_names:
        problems.append(FieldProblem("default_model", args.default_model, f"not a known model; known models: {known}"))
    by_name = {m.name: m for m in args.models}
    for i, decision in enumerate(args.decisions):
        if decision.model not in by_name:
            problems.append(
                FieldProblem(
                    f"decisions[{i}].model",
                    decision.model,
                    f"decision {decision.name!r} routes to an unknown model; known models: {known}",
                )
            )
        elif decision.use_reasoning and by_name[decision.model].reasoning_family is None:
            problems.append(
                FieldProblem(
                    f"decisions[{i}].use_reasoning",
                    True,
                    f"decision {decision.name!r} asks for reasoning but model {decision.model!r} has no reasoning_family",
                )
            )
    return problems


def required_models(args: RouterConfigArgs) -> list[str]:
    """The model directories router 0.3.0 loads for this config (so the volume must hold them)."""
    models = [EMBEDDING_MODEL]
    if any(d.categories for d in args.decisions):
        models.append(DOMAIN_MODEL)
    if args.guards.jailbreak:
        models.append(JAILBREAK_MODEL)
    if args.guards.pii:
        models.append(PII_MODEL)
    return models


# ---------------------------------------------------------------------------------------------------------------------
# Seed-000 story defaults


EASY_CATEGORIES = ("other", "business", "history", "psychology")
EASY_KEYWORDS = ("summarize", "extract", "yes or no", "classify")
HARD_CATEGORIES = ("math", "physics", "computer science", "engineering", "law")
HARD_KEYWORDS = ("prove", "step by step", "design", "debug")


def default_decisions(self_hosted: str, frontier: str) -> list[RouterDecision]:
    """Seed-000 split: hard work to the frontier model, easy work to the cheap self-hosted one.

    Hard keywords outrank easy ones (priority 200 vs 100), so "summarize this proof step by step" goes to the frontier
    model; anything unmatched falls to ``default_model`` (set it to the self-hosted model).
    """
    return [
        RouterDecision(name="hard-keywords", priority=200, keywords=list(HARD_KEYWORDS), model=frontier),
        RouterDecision(name="easy-keywords", priority=150, keywords=list(EASY_KEYWORDS), model=self_hosted),
        RouterDecision(name="hard-domains", priority=120, categories=list(HARD_CATEGORIES), model=frontier),
        RouterDecision(name="easy-domains", priority=100, categories=list(EASY_CATEGORIES), model=self_hosted),
    ]
