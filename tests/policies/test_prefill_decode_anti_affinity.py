"""prefill-decode-anti-affinity: prefill and decode pods carry required pod anti-affinity on the hostname."""

from aks_gpu_inference.policies.manifests import UNKNOWN
from aks_gpu_inference.policies.rules.prefill_decode_anti_affinity import RULE

from ._fixtures import DEFAULT_TEMPLATE_PATH, TEMPLATE_PATHS, WORKLOAD_KINDS, Case, container, table_tests, workload

HOSTNAME = "kubernetes.io/hostname"


def term(topology_key=HOSTNAME):
    return {"labelSelector": {"matchLabels": {"llm-d.ai/model": "llama"}}, "topologyKey": topology_key}


def engine(labels, *, required=(), preferred=(), affinity=None):
    """A workload of each kind with pod ``labels`` and the given anti-affinity terms (or a whole ``affinity``)."""
    if affinity is None:
        anti = {}
        if required:
            anti["requiredDuringSchedulingIgnoredDuringExecution"] = list(required)
        if preferred:
            anti["preferredDuringSchedulingIgnoredDuringExecution"] = [{"weight": 100, "podAffinityTerm": t} for t in preferred]
        affinity = {"podAntiAffinity": anti} if anti else {}
    spec = {"containers": [container()], **({"affinity": affinity} if affinity != {} else {})}
    return lambda kind: [workload(kind, spec, labels=labels)]


def unknown_metadata(kind):
    """A prefill workload of ``kind`` whose pod template metadata (a Pod's own metadata) is unknown during preview."""
    (resource,) = engine(PREFILL)(kind)
    for path in TEMPLATE_PATHS.get(kind, DEFAULT_TEMPLATE_PATH):
        template = resource.props
        for step in path.split(".")[:-2]:  # "spec.template.spec." -> spec, template
            template = template[step]
        template["metadata"] = UNKNOWN
    return [resource]


PREFILL = {"app": "llama", "llm-d.ai/role": "prefill"}
DECODE = {"app": "llama", "aks-gpu-inference/role": "decode"}
NEEDS = (
    "{pod}: %s pods need podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution with topologyKey "
    "kubernetes.io/hostname, so prefill and decode engines never share a node"
)

CASES = [
    Case("prefill with required hostname anti-affinity", engine(PREFILL, required=[term()]), over=WORKLOAD_KINDS),
    Case("decode with required hostname anti-affinity", engine(DECODE, required=[term()]), over=WORKLOAD_KINDS),
    Case(
        "hostname among several terms",
        engine(DECODE, required=[term("topology.kubernetes.io/zone"), term()]),
        over=("Deployment",),
    ),
    Case("pods without a role", engine({"app": "router"}), over=WORKLOAD_KINDS),
    Case("other role values", engine({"llm-d.ai/role": "router"}), over=WORKLOAD_KINDS),
    Case("prefill without affinity", engine(PREFILL), per_template=(NEEDS % "prefill",), over=WORKLOAD_KINDS),
    Case("decode without affinity", engine(DECODE), per_template=(NEEDS % "decode",), over=WORKLOAD_KINDS),
    Case(
        "preferred anti-affinity only",
        engine(PREFILL, preferred=[term()]),
        per_template=(NEEDS % "prefill",),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "zone instead of hostname",
        engine(DECODE, required=[term("topology.kubernetes.io/zone")]),
        per_template=(NEEDS % "decode",),
        over=WORKLOAD_KINDS,
    ),
    Case(
        "pod affinity instead of anti-affinity",
        engine(PREFILL, affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term()]}}),
        per_template=(NEEDS % "prefill",),
        over=WORKLOAD_KINDS,
    ),
    # knobs and levels
    Case("a label outside role_labels is not a role", engine({"example.com/role": "decode"}), over=("Deployment",)),
    Case(
        "role_labels knob",
        engine({"example.com/role": "decode"}),
        per_template=(NEEDS % "decode",),
        config={"role_labels": ["example.com/role"]},
        over=WORKLOAD_KINDS,
    ),
    Case(
        "role_labels knob replaces the defaults",
        engine(PREFILL),
        config={"role_labels": ["example.com/role"]},
        over=("Deployment",),
    ),
    Case("mandatory override", engine(PREFILL), per_template=(NEEDS % "prefill",), level="mandatory", over=("Deployment",)),
    Case("disabled", engine(PREFILL), level="disabled", over=("Deployment",)),
    # unknown values are skipped
    Case("unknown role label", engine({"llm-d.ai/role": UNKNOWN}), over=WORKLOAD_KINDS),
    Case("unknown pod spec", lambda kind: [workload(kind, UNKNOWN, labels=PREFILL)], over=WORKLOAD_KINDS),
    Case("unknown affinity is skipped", engine(PREFILL, affinity=UNKNOWN), over=WORKLOAD_KINDS),
    Case("unknown podAntiAffinity is skipped", engine(PREFILL, affinity={"podAntiAffinity": UNKNOWN}), over=("Deployment",)),
    Case(
        "unknown required terms are skipped",
        engine(DECODE, affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": UNKNOWN}}),
        over=("Deployment",),
    ),
    Case(
        "unknown required term is skipped",
        engine(DECODE, required=[term("topology.kubernetes.io/zone"), UNKNOWN]),
        over=("Deployment",),
    ),
    Case("unknown topologyKey is skipped", engine(DECODE, required=[term(UNKNOWN)]), over=("Deployment",)),
    Case("unknown labels are skipped", engine(UNKNOWN), over=WORKLOAD_KINDS),
    Case("unknown template metadata is skipped", unknown_metadata, over=WORKLOAD_KINDS),
]


test_rule, test_through_analyzer, test_table_covers_the_rule = table_tests(RULE, CASES)
