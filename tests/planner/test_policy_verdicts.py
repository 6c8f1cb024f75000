"""The policy pack on whole stacks, through pulumi_policy's analyzer as `aks-gpu plan` runs it."""

import pulumi
import pulumi_kubernetes as k8s
from pulumi_azure_native import containerservice

from aks_gpu_inference.components.stack.config import parse_stack_config
from aks_gpu_inference.components.stack.program import build_stack
from aks_gpu_inference.planner.analyzer import analyze
from aks_gpu_inference.planner.cli import main
from aks_gpu_inference.planner.engine.program import run_function
from tests.conftest import PROJECT, REPO, STACKS, secret_config, stack_config


def project_keys(config: dict) -> dict:
    return {k.split(":", 1)[1]: v for k, v in config.items() if k.startswith(f"{PROJECT}:")}


def test_every_repo_stack_plans_with_zero_mandatory_violations(tmp_path, capsys):
    for stack in STACKS:
        assert main(["plan", stack, "--project-dir", str(REPO), "--out", str(tmp_path / stack), "--quiet"]) == 0
        assert "Policy verdicts (aks-gpu-guardrails): 0 mandatory" in capsys.readouterr().out


def broken_dev_stack():
    """The dev stack with four deliberate mistakes, one per mandatory guardrail."""
    config = project_keys(stack_config("dev"))
    config["cluster"]["node_os_upgrade_channel"] = "Unmanaged"
    config["gpu_pools"][0]["taints"] = []
    # Without the model: its pods would (rightly) add a toleration finding caused by the same untainted pool.
    config.pop("models", None)
    # The gateway routes to the self-hosted models (the config refuses it without them): drop it too.
    config.pop("gateway", None)
    stack = build_stack(parse_stack_config(config))
    # GpuNodePool refuses RDMA on an NC size, so the broken pool is a raw AgentPool.
    containerservice.AgentPool(
        "nc-rdma",
        agent_pool_name="ncrdma",
        resource_name_=stack.cluster.cluster_name,
        resource_group_name=stack.cluster.resource_group_name,
        vm_size="Standard_NC24ads_A100_v4",
        mode="User",
        node_taints=["sku=gpu:NoSchedule"],
        node_labels={"aks-gpu-inference/rdma": "true"},
    )
    k8s.apps.v1.Deployment(
        "debug",
        metadata={"name": "debug", "namespace": "default"},
        spec={
            "selector": {"matchLabels": {"app": "debug"}},
            "template": {
                "metadata": {"labels": {"app": "debug"}},
                "spec": {"containers": [{"name": "shell", "image": "busybox:1.37", "securityContext": {"privileged": True}}]},
            },
        },
        opts=pulumi.ResourceOptions(provider=stack.cluster.provider),
    )


def test_broken_copy_fails_with_exactly_the_four_mistakes():
    run = run_function(broken_dev_stack, PROJECT, "broken", config=secret_config())
    mandatory = sorted((v.policy, v.message.split(":")[0]) for v in analyze(run) if v.mandatory)
    assert mandatory == [
        ("aks-node-os-upgrade-channel", "ManagedCluster aks-gpu-dev-aks"),
        ("gpu-taints-and-tolerations", "AgentPool a100-pool"),
        ("ipc-lock-without-privileged", "Deployment default/debug spec.template.spec.containers[0] shell"),
        ("rdma-capable-sku", "AgentPool nc-rdma"),
    ]


def test_pack_config_reaches_the_rules_through_the_analyzer():
    run = run_function(broken_dev_stack, PROJECT, "broken", config=secret_config())
    config = {
        "aks-node-os-upgrade-channel": {"enforcementLevel": "advisory"},
        "ipc-lock-without-privileged": {"enforcementLevel": "disabled"},
        "gpu-taints-and-tolerations": {"taint": "nvidia.com/gpu=present:NoSchedule"},
    }
    verdicts = {(v.policy, v.enforcement) for v in analyze(run, config)}
    assert ("aks-node-os-upgrade-channel", "advisory") in verdicts
    assert not any(policy == "ipc-lock-without-privileged" for policy, _ in verdicts)
    taint_messages = [v.message for v in analyze(run, config) if v.policy == "gpu-taints-and-tolerations"]
    assert len(taint_messages) == 2 and all("nvidia.com/gpu=present:NoSchedule" in m for m in taint_messages)


def test_plan_exits_non_zero_on_mandatory_violations(tmp_path, capsys):
    import shutil

    import yaml

    for name in ["Pulumi.yaml", "Pulumi.dev.yaml", "__main__.py"]:
        shutil.copy(REPO / name, tmp_path / name)
    data = yaml.safe_load((tmp_path / "Pulumi.dev.yaml").read_text())
    data["config"][f"{PROJECT}:cluster"]["node_os_upgrade_channel"] = "Unmanaged"
    (tmp_path / "Pulumi.dev.yaml").write_text(yaml.safe_dump(data))
    assert main(["plan", "dev", "--project-dir", str(tmp_path), "--quiet"]) == 1
    out = capsys.readouterr().out
    assert "1 mandatory" in out and "aks-node-os-upgrade-channel" in out
    assert (tmp_path / "out" / "dev" / "policy.json").is_file()


def test_the_docs_document_every_rule_and_the_example_config_lists_them():
    import json

    from aks_gpu_inference.policies.rules import RULES, check_pack_config

    readme = (REPO / "docs" / "policies.md").read_text()
    example = json.loads((REPO / "policies" / "config.example.json").read_text())
    assert check_pack_config(example) == []
    for rule in RULES:
        assert f"| `{rule.name}` | {rule.enforcement} |" in readme
        assert example[rule.name] == {"enforcementLevel": rule.enforcement, **rule.defaults()}


def test_the_pack_is_sent_crds_without_their_schemas_and_no_rule_reads_a_crd():
    """The analyzer leaves a CRD's OpenAPI schemas out of what it sends (megabytes for nothing): no rule finds or
    exempts anything on any CRD the stacks install, whole or without schemas, so the verdicts are the same."""
    from aks_gpu_inference.planner.analyzer import CRD_TYPE, pack_properties
    from aks_gpu_inference.policies.manifests import Resource
    from aks_gpu_inference.policies.rules import evaluate_all
    from tests.conftest import expanded_stack

    crds = [r for stack in STACKS for r in expanded_stack(stack)[0].resources if r.type == CRD_TYPE]
    assert len(crds) >= 20
    for record in crds:
        sent = pack_properties(record)
        assert all("schema" not in v for v in sent["spec"]["versions"]) and sent["metadata"] == record.inputs["metadata"]
        for props in (record.inputs, sent):
            assert evaluate_all([Resource(record.type, record.name, props, record.urn)]) == ([], [])
