"""Every key a stack file accepts has an effect (issue 30, item 4).

Each key of the typed config (``components/stack/reference.py`` ``keys()``: every key that holds a value, and every
section that may be left out) is changed alone in the cheapest repo stack where it has a place, to other values its
type accepts, and the stack program runs under the planner's mocks before and after. The key passes when what the
stack registers (type, name, parent, inputs, options), exports or warns differs, or when the changed stack is refused
by a problem that names the key with a value good elsewhere, or even with the value it has anyway: it cannot apply
there, and says so. A value refused for itself (not a region, more nodes than the pool has) shows nothing, and the
next one is tried. A key that is accepted and changes nothing fails, saying what to do. New keys are covered by
themselves (``tests/key_effects.py`` derives their other values and places); one it cannot handle fails saying
which table below needs a row. Slow (``tests/conftest.py`` SLOW_MODULES): about 300 stack runs, 40 s on two workers.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field

import pytest

from aks_gpu_inference.components.core import models
from aks_gpu_inference.components.core.hf_config import facts_from_config
from aks_gpu_inference.components.stack import reference as stack_doc
from tests.conftest import REPO
from tests.key_effects import (
    ABSENT,
    Base,
    Change,
    Plan,
    Refusal,
    Row,
    Tables,
    bases,
    changes,
    current,
    example,
    get,
    in_scope,
    outcome,
    put,
)

REFERENCE = stack_doc.keys()
PATHS = [key.path for key in REFERENCE if in_scope(key.path)]
PROD_MODEL = "meta-llama/Llama-3.3-70B-Instruct"


def _facts(project: dict) -> dict:
    """The catalog's facts of the stack's first model."""
    facts = models.get_model(get(project, "models[].model")).model_dump(mode="json", exclude_none=True)
    facts.pop("kaito_preset", None)  # the catalog's link to KAITO, which a vLLM model's facts may not carry
    return facts


def _with_facts(**more):
    """An edit: the stack's first model gets the catalog's facts, changed by ``more``."""
    return lambda project: put(project, "models[].model_facts", {**_facts(project), **more})


def _awq(project: dict) -> None:
    """The first model served as an int4 (AWQ) checkpoint, with the facts read from its config.json."""
    config = json.loads((REPO / "tests/fixtures/hf_configs/llama-3.3-70b-instruct-awq/config.json").read_text())
    hf_id = "hugging-quants/Meta-Llama-3.3-70B-Instruct-AWQ-INT4"
    put(project, "models[].model", hf_id)
    put(project, "models[].model_facts", facts_from_config(config, hf_id=hf_id).model_dump(mode="json", exclude_none=True))


def _pools_only(project: dict) -> None:
    for key in ("rdma", "dra", "models"):
        project.pop(key)


def _served(project: dict) -> str:
    """The name the gateway knows the stack's first model by."""
    for path in ("models[].served_model_name", "models[].name"):
        if get(project, path) not in (ABSENT, None):
            return get(project, path)
    raise LookupError("no model for a decision to route to")


def _second_pool(project: dict) -> None:
    """A copy of the stack's first GPU pool, named ``<name>b``, on the RDMA network too when the first is."""
    first, rdma_pools = get(project, "gpu_pools[]"), get(project, "rdma.pools")
    project["gpu_pools"].append({**first, "name": f"{first['name']}b"})
    if isinstance(rdma_pools, list) and first["name"] in rdma_pools:
        put(project, "rdma.pools", [*rdma_pools, f"{first['name']}b"])


def _edits(*edits):
    return lambda project: [edit(project) for edit in edits]


GPU_OPERATOR = Row(
    "the GPU Operator installs drivers only on pools AKS does not: driver none",
    stack="prod",
    edit=_edits(lambda p: put(p, "gpu_pools[].driver", "none"), lambda p: put(p, "dra.gpu_operator", {})),
)
SLIDING = Row(
    "a sliding window comes with the layers that use it", stack="prod", edit=_with_facts(sliding_window=4096, sliding_layers=40)
)
POOLS_ONLY = Row("every repo stack refers to its pools by name", stack="prod", edit=_pools_only)
ENGINES = "each engine takes a whole node, and the stack's pool has just the nodes its engines take: a third node"
DISAGGREGATED = Row(ENGINES, stack="gb300", edit=lambda p: put(p, "gpu_pools[].count", 3))
DYNAMO_WORKERS = Row(ENGINES, stack="dynamo", edit=lambda p: put(p, "gpu_pools[].count", 3))
LAYERED = Row(
    "read only where the weights are counted layer by layer: the catalog's facts named with their architecture",
    stack="prod",
    edit=_with_facts(architecture="LlamaForCausalLM"),
)


OTHER_VALUES: dict[str, Row] = {
    "models[].model_facts": Row(
        "the catalog's own facts change nothing; named with their architecture, the weights are counted layer by layer",
        values=[{**models.get_model(PROD_MODEL).model_dump(mode="json", exclude_none=True), "architecture": "LlamaForCausalLM"}],
    ),
    "models[].model_facts.max_context": Row(
        "only bounds max_model_len: a context below the stack's 32768 is refused by the fit, which blames the model",
        values=[16384],
        limit=True,
    ),
    "location": Row(
        "another region (text derived from eastus names none); changed alone it disagrees with the provider's "
        "azure-native:location, and the refusal names aks-gpu-inference:location",
        values=["eastus2"],
    ),
    "gpu_pools[].vm_size": Row(
        "another RDMA size of 8 GPUs: the repo's other sizes have fewer GPUs than prod's tp 8, or no RDMA",
        values=["Standard_ND96isr_H200_v5"],
    ),
    "rdma.nics_per_node": Row(
        "a recorded count only confirms the catalog's, and one that disagrees is refused: GB300's 4 on prod's H100",
        values=[{"h100": 4}],
    ),
    "models[].model_facts.dense_layers": Row(
        "a mixture of experts' dense layers (DeepSeek-V3's 3), which prod's dense model refuses", values=[3]
    ),
    "kaito[].preset": Row("another preset the KAITO component supports", values=["phi-4"]),
    "kaito[].instance_type": Row(
        "another GPU size of the catalog that holds prod's phi-4-mini", values=["Standard_NC48ads_A100_v4"]
    ),
    "gateway.default_model": Row("dev's other model: the first self-hosted one, llama-8b, is the default", values=["gpt-5.5"]),
    "dynamo.model": Row("another 70B model of the catalog, on the same two nodes", values=["meta-llama/Llama-3.1-70B-Instruct"]),
    "gateway.azure_openai.deployments[].model": Row(
        "another model the version and price tables know (any other needs version and prices too)", values=["gpt-4.1"]
    ),
}
"""Keys whose other value neither their type, the repo's stacks nor ``components/stack/reference_examples.yaml`` gives."""

SECTIONS: dict[str, Row] = {
    "models[].model_facts": Row("facts must describe the served model: the catalog's facts of the stack's model", make=_facts),
    "prometheus": Row(
        "give exactly one of workspace_name and existing_workspace_id",
        make=lambda _: {"workspace_name": example("prometheus.workspace_name")},
    ),
    "gateway.decisions": Row(
        "a decision needs a category or keyword, and a model the stack serves",
        make=lambda project: [
            {
                "name": example("gateway.decisions[].name"),
                "categories": example("gateway.decisions[].categories"),
                "model": _served(project),
            }
        ],
    ),
}
"""Sections whose required keys' examples do not make a section the stack they are added to accepts."""

BASES: dict[str, Row] = {
    "dynamo": Row(
        "the only stack with Dynamo routes its gateway to nothing else: drop the gateway too",
        stack="dynamo",
        edit=lambda p: p.pop("gateway"),
    ),
    "model_store": Row(
        "every repo stack reads weights or checkpoints from it: weights from the hub instead",
        stack="prod",
        edit=lambda p: put(p, "models[].source", "huggingface"),
    ),
    "gpu_pools": POOLS_ONLY,
    "gpu_pools[].name": POOLS_ONLY,
    "gpu_pools[].driver": Row(
        "a pool without AKS's driver needs the GPU Operator, which the stacks with DRA blame (dra.gpu_operator) when it "
        "is missing: dev, whose pool runs the device plugin",
        stack="dev",
    ),
    "dra.gpu_operator": GPU_OPERATOR,
    "dra.gpu_operator.": GPU_OPERATOR,
    "prometheus.existing_workspace_id": Row(
        "exactly one of workspace_name and existing_workspace_id",
        stack="prod",
        edit=lambda p: put(p, "prometheus", {"existing_workspace_id": example("prometheus.existing_workspace_id")}),
    ),
    "gateway.gateway.entra_tenant_id": Row(
        "Entra tokens replace client keys and need an audience",
        stack="dev",
        edit=_edits(
            lambda p: put(p, "gateway.gateway.client_ids", []),
            lambda p: put(p, "gateway.gateway.entra_audience", example("gateway.gateway.entra_audience")),
            lambda p: put(p, "gateway.gateway.entra_tenant_id", example("gateway.gateway.entra_tenant_id")),
        ),
    ),
    "gateway.gateway.tracing_endpoint.": Row(
        "the gateway's own collector takes the traces unless tracing is false",
        stack="dev",
        edit=_edits(
            lambda p: put(p, "gateway.tracing", False),
            lambda p: put(p, "gateway.gateway.tracing_endpoint", {"service": "otel-collector", "namespace": "observability"}),
        ),
    ),
    "gateway.grafana.grant_deployer_admin": Row(
        "without the deployer somebody else must be a Grafana admin",
        stack="dev",
        edit=lambda p: put(p, "gateway.grafana.admin_principal_ids", example("gateway.grafana.admin_principal_ids")),
    ),
    "models[].model_facts.gated": Row(
        "whether the hub download needs a token: only for weights from the hub, and only while hf_token is not set",
        stack="prod",
        edit=_edits(lambda p: put(p, "models[].source", "huggingface"), _with_facts(gated=False)),
        unset=("hf_token",),
    ),
    "models[].model_facts.sliding_window": SLIDING,
    "models[].model_facts.sliding_layers": SLIDING,
    "dra.pools": Row(
        "with one pool, naming it is the default (every pool): a second pool to leave out", stack="prod", edit=_second_pool
    ),
    "rdma.gates.pool": Row("one RDMA pool has no other to gate: a second", stack="prod", edit=_second_pool, values=["h100b"]),
    "training.pool": Row("one pool has no other to train on: a second", stack="train", edit=_second_pool, values=["h100spotb"]),
    "dynamo.pool": Row("one pool has no other to serve from: a second", stack="dynamo", edit=_second_pool, values=["h100b"]),
    "models[].namespace": Row(
        "prod, gb300 and llmd serve from the RDMA network's namespace, the only one they accept: dev, which has none",
        stack="dev",
    ),
    "models[].disaggregation.prefill_replicas": DISAGGREGATED,
    "models[].disaggregation.decode_replicas": DISAGGREGATED,
    "dynamo.prefill.replicas": DYNAMO_WORKERS,
    "dynamo.decode.replicas": DYNAMO_WORKERS,
    "models[].model_facts.attention_heads": Row(
        "with hidden_size given, the heads count where fp8 weights keep the embeddings in the model's dtype (every "
        "multiple of the 8 KV heads divides by prod's tp 8)",
        stack="prod",
        edit=_edits(_with_facts(), lambda p: put(p, "models[].dtype", "fp8")),
    ),
    "models[].model_facts.encoder_params_b": LAYERED,
    "models[].model_facts.skipped_layers": Row(
        "taken off the checkpoint's measured size: the catalog's facts with their architecture and the size of "
        "Llama 3.3 70B's safetensors (131.42 GiB)",
        stack="prod",
        edit=_with_facts(architecture="LlamaForCausalLM", checkpoint_gb=141.11),
    ),
    "models[].model_facts.quant_group_size": Row("the scale groups of int4 weights: an int4 checkpoint", stack="prod", edit=_awq),
}
"""Keys that no repo stack lets change alone: the stack to change them in, edited first (a key ending in ``.`` serves
every key below it)."""

NO_EFFECT: dict[str, Row] = {
    "models[].model_facts.dtype": Row(
        "the fit counts bytes, and both accepted dtypes (bfloat16, float16) take two: nothing the plan computes can differ"
    ),
    "models[].model_facts.source": Row("where the numbers come from, for the reader (aks-gpu fit writes it); nothing reads it"),
}
"""Keys known to change nothing the plan shows, with why; each must still change nothing (else drop its row)."""

TO_DO = (
    "Make the key reach what it describes, or refuse it where it cannot apply, naming its key path, the value and what "
    "is accepted (components/stack/idle_keys.py, or the validator of the args model that owns it); if its effect is one "
    "this comparison cannot see, add a NO_EFFECT row that says where it shows."
)

TABLES = Tables(OTHER_VALUES, SECTIONS, BASES)
MAX_BASES = 3
"""Stacks a key is tried in when every change is refused for other keys there."""


@functools.cache
def _planned(base: Base) -> Plan | Refusal:
    return outcome(base.stack, base.project(TABLES), base.unset(TABLES))


def _for_key(refusal: Refusal, path: str, change: Change) -> bool:
    """Whether ``refusal`` is about the key: it names it (an added section refused for what is inside it says nothing
    of the section itself), or quotes the value of a key that only bounds another."""
    if refusal.names(path, below=not change.what.endswith(" added")):
        return True
    return path in OTHER_VALUES and OTHER_VALUES[path].limit and change.what.split("=", 1)[1] in "".join(refusal.problems)


def _cannot_be_set(path: str, base: Base) -> bool:
    """Whether ``path`` written out with the value it has anyway is refused too: then the key has no place here."""
    project = base.project(TABLES)
    put(project, path, current(project, path))
    after = outcome(base.stack, project, base.unset(TABLES))
    return isinstance(after, Refusal) and after.names(path)


@dataclass
class Tried:
    """What changing a key in one base showed."""

    effect: str = ""
    same: list[str] = field(default_factory=list)
    """Changes accepted that changed nothing."""
    refused: list[Change] = field(default_factory=list)
    """Changes refused by a problem about the key."""
    other: list[str] = field(default_factory=list)
    """Changes refused for other keys."""


def _try(path: str, base: Base, before: Plan) -> Tried:
    """Each change of ``path`` on ``base`` until one has an effect; a refused value says nothing of the next one."""
    tried = Tried()
    for change in changes(path, base.project(TABLES), TABLES):
        after = outcome(base.stack, change.project, base.unset(TABLES))
        if isinstance(after, Plan):
            tried.effect = before.difference(after)
            if tried.effect:
                return tried
            tried.same.append(f"{change.what} on {base}: accepted, and nothing the stack registers, exports or warns changed")
        elif _for_key(after, path, change):
            tried.refused.append(change)
        else:
            tried.other.append(f"{change.what} on {base}: refused, but not for this key: {'; '.join(after.problems)}")
    return tried


@pytest.mark.parametrize("path", PATHS)
def test_every_key_has_an_effect(path):
    notes: list[str] = []
    as_values: list[str] = []
    for base in list(bases(path, TABLES))[:MAX_BASES]:
        before = _planned(base)
        if isinstance(before, Refusal):
            notes.append(f"{base}: refused as it is: {'; '.join(before.problems)}")
            continue
        tried = _try(path, base, before)
        notes += tried.other
        if tried.effect:
            assert path not in NO_EFFECT, f"{path} now has an effect ({tried.effect}): drop its row from NO_EFFECT"
            return
        if tried.same:  # silently ignored here: the key should apply, or be refused in this context
            if path in NO_EFFECT:
                return
            pytest.fail(f"{path} is accepted and has no effect:\n  " + "\n  ".join(notes + tried.same) + "\n" + TO_DO)
        if tried.refused and (any(change.known for change in tried.refused) or _cannot_be_set(path, base)):
            return  # refused here with a value good elsewhere, or with its own: the key cannot apply here, and says so
        if tried.refused:  # refused for the values themselves (not a region, a size too large): they show nothing
            as_values.append(f"{base}: {', '.join(change.what for change in tried.refused)}")
    if as_values:
        pytest.fail(f"{path}: each value tried was refused as a value: add a row to OTHER_VALUES\n  " + "\n  ".join(as_values))
    if not notes:
        pytest.fail(
            f"{path}: no other value to try: add a row to OTHER_VALUES (or an example to components/stack/reference_examples.yaml)"
        )
    pytest.fail(f"{path}: every change was refused for other keys: add a row to BASES\n  " + "\n  ".join(notes))
