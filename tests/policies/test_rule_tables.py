"""Checks across the rule tables: every rule has its mirrored test module, and the pack config reaches the rules
through ``planner.analyzer`` the way ``aks-gpu plan --policy-config`` sends it."""

import ast
from pathlib import Path

import pytest

from aks_gpu_inference.policies.rules import BY_NAME, RULES

from ._fixtures import analyze, managed_cluster, rdma_container, rdma_spec, rdma_stack, workload

HERE = Path(__file__).parent
RULE_MODULES = sorted(p.stem for p in (HERE.parents[1] / "policies" / "rules").glob("[a-z]*.py"))
MANDATORY = {"rdma-capable-sku", "gpu-taints-and-tolerations", "ipc-lock-without-privileged", "aks-node-os-upgrade-channel"}


def test_thirteen_rules_with_their_levels():
    assert len(RULES) == len(RULE_MODULES) == 13
    assert {rule.name: rule.enforcement for rule in RULES} == {
        rule.name: "mandatory" if rule.name in MANDATORY else "advisory" for rule in RULES
    }


TABLE_TESTS = "test_rule, test_through_analyzer, test_table_covers_the_rule = table_tests(RULE, CASES)"


@pytest.mark.parametrize("module", RULE_MODULES)
def test_every_rule_has_a_mirrored_table(module):
    """``tests/policies/test_<rule>.py`` tests ``policies.rules.<rule>.RULE`` with its table: read, not imported
    (test modules import no test module); ``check_table`` there checks that the table covers the rule."""
    tree = ast.parse((HERE / f"test_{module}.py").read_text())
    imported = {(node.module, alias.name) for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for alias in node.names}
    assert (f"aks_gpu_inference.policies.rules.{module}", "RULE") in imported
    assert TABLE_TESTS in {ast.unparse(node) for node in tree.body if isinstance(node, ast.Assign)}


def unmanaged_and_privileged():
    """One violation of a mandatory resource rule and of a mandatory stack rule."""
    spec = rdma_spec(
        rdma_container(), initContainers=[{"name": "setup", "image": "busybox:1.36", "securityContext": {"privileged": True}}]
    )
    return [managed_cluster(channel="Unmanaged"), *rdma_stack("Deployment", spec)[1:]]


def levels(verdicts):
    return sorted({(v.policy, v.enforcement) for v in verdicts})


def test_no_config_uses_the_default_levels():
    assert levels(analyze(unmanaged_and_privileged())) == [
        ("aks-node-os-upgrade-channel", "mandatory"),
        ("ipc-lock-without-privileged", "mandatory"),
    ]


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (
            {"aks-node-os-upgrade-channel": {"enforcementLevel": "advisory"}},
            [("aks-node-os-upgrade-channel", "advisory"), ("ipc-lock-without-privileged", "mandatory")],
        ),
        ({"ipc-lock-without-privileged": {"enforcementLevel": "disabled"}}, [("aks-node-os-upgrade-channel", "mandatory")]),
        (
            {"image-pinned": {"enforcementLevel": "mandatory"}},
            [("aks-node-os-upgrade-channel", "mandatory"), ("ipc-lock-without-privileged", "mandatory")],
        ),
    ],
    ids=["mandatory to advisory", "disabled", "advisory rule to mandatory without violations"],
)
def test_a_level_alone_reaches_the_analyzer(config, expected):
    """``aks-gpu plan`` passes the user's --policy-config as is: only the rules it names are configured."""
    assert levels(analyze(unmanaged_and_privileged(), config)) == expected


def test_level_override_of_an_advisory_rule():
    stack = [workload("Pod", {"containers": [{"name": "c", "image": "busybox"}]})]
    assert levels(analyze(stack, {"image-pinned": {"enforcementLevel": "mandatory"}})) == [("image-pinned", "mandatory")]


@pytest.mark.parametrize(
    ("config", "stack"),
    [
        ({"aks-node-os-upgrade-channel": {"allow_security_patch": True}}, [managed_cluster(channel="Unmanaged")]),
        ({"ipc-lock-without-privileged": {"allowed_capabilities": ["NET_ADMIN"]}}, unmanaged_and_privileged()[1:]),
    ],
    ids=["allow_security_patch", "allowed_capabilities"],
)
def test_knobs_alone_keep_the_default_level(config, stack):
    """Like the engine (``ReconcilePolicyPackConfig``), a rule configured with knobs only keeps its default level;
    enforcementLevel 0 on the wire would mean ADVISORY and downgrade a mandatory rule."""
    (name,) = config
    found = [v for v in analyze(stack, config) if v.policy == name]
    assert found
    assert {v.enforcement for v in found} == {BY_NAME[name].enforcement}
