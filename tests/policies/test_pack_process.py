"""The real policy pack, started as its own process the way the Pulumi CLI starts a Python pack, over gRPC.

The CLI's ``pulumi-analyzer-policy-python`` wrapper runs ``python -u -m pulumi.policy <engine address>
<program>`` from the pack's virtualenv; ``pulumi.policy`` runs ``policies/__main__.py``, whose
``PolicyPack`` serves the Analyzer service on 127.0.0.1 and prints its port as the first line of
stdout. The module's process gets the pack directory as an absolute path from the repo root; one
test also starts it as the CLI does, from the pack directory with program ``.``. Requests come from
``planner.analyzer``'s builders, so this process and the planner's in-process servicer get the same
messages.
"""

from __future__ import annotations

import contextlib
import os
import queue
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import empty_pb2, json_format
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc

from aks_gpu_inference.planner.analyzer import analyze_request, configure_request, new_servicer, stack_request, verdicts
from aks_gpu_inference.planner.engine.program import Registered
from aks_gpu_inference.policies.rules import RULES

REPO = Path(__file__).resolve().parents[2]
PACK_DIR = REPO / "policies"
# pulumi/policy/__main__.py parses the engine address as a positional argument and never reads it
# (only `program` is used, via runpy.run_path); a Python pack does not call back into the engine. An
# address nothing listens on makes sure nothing here could depend on it.
ENGINE_ADDRESS = "127.0.0.1:1"
STARTUP_TIMEOUT = 60
CALL_TIMEOUT = 10
# The engine's marshalling of every unknown (computed) value during preview: resource.UnknownStringValue.
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"

LEVEL_NAMES = {
    analyzer_pb2.ADVISORY: "advisory",
    analyzer_pb2.MANDATORY: "mandatory",
    analyzer_pb2.DISABLED: "disabled",
    analyzer_pb2.REMEDIATE: "remediate",
}
MANDATORY_RULES = {"rdma-capable-sku", "gpu-taints-and-tolerations", "ipc-lock-without-privileged", "aks-node-os-upgrade-channel"}
KNOBS = {
    "gpu-taints-and-tolerations": "taint",
    "ipc-lock-without-privileged": "allowed_capabilities",
    "aks-node-os-upgrade-channel": "allow_security_patch",
    "prefill-decode-anti-affinity": "role_labels",
}
OS_CHANNEL = "aks-node-os-upgrade-channel"


# ---- the pack process ------------------------------------------------------------------------


def _first_line(stream, timeout: float) -> bytes | None:
    """The first line of a pipe, or None when nothing came within ``timeout`` seconds."""
    lines: queue.Queue[bytes] = queue.Queue()
    threading.Thread(target=lambda: lines.put(stream.readline()), daemon=True).start()
    try:
        return lines.get(timeout=timeout)
    except queue.Empty:
        return None


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


@contextlib.contextmanager
def serve_pack(cwd: Path, *args: str) -> Iterator[analyzer_pb2_grpc.AnalyzerStub]:
    """Run ``python -u -m pulumi.policy ENGINE_ADDRESS *args`` in ``cwd``; yield a stub connected to the port it prints."""
    with tempfile.TemporaryFile() as stderr:
        # stderr goes to a file, not a pipe nobody drains, so a chatty pack can never block on it.
        process = subprocess.Popen(
            [sys.executable, "-u", "-m", "pulumi.policy", ENGINE_ADDRESS, *args],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        )
        channel = None
        try:
            line = _first_line(process.stdout, STARTUP_TIMEOUT)
            if not line or not line.strip().isdigit():
                _stop(process)
                stderr.seek(0)
                problem = f"printed {line!r} instead of a port" if line else f"printed no port (exit code {process.returncode})"
                pytest.fail(f"policy pack {problem}; stderr:\n{stderr.read().decode(errors='replace')}")
            channel = grpc.insecure_channel(f"127.0.0.1:{int(line)}")
            grpc.channel_ready_future(channel).result(timeout=CALL_TIMEOUT)
            yield analyzer_pb2_grpc.AnalyzerStub(channel)
        finally:
            if channel is not None:
                channel.close()
            _stop(process)
            process.stdout.close()


@pytest.fixture(scope="module")
def pack() -> Iterator[analyzer_pb2_grpc.AnalyzerStub]:
    """One pack process for the module; an Analyzer stub connected to it."""
    with serve_pack(REPO, str(PACK_DIR)) as stub:
        yield stub


@pytest.fixture(scope="module")
def info(pack) -> analyzer_pb2.AnalyzerInfo:
    return pack.GetAnalyzerInfo(empty_pb2.Empty(), timeout=CALL_TIMEOUT)


def engine_config(info: analyzer_pb2.AnalyzerInfo, overrides: dict[str, dict[str, Any]] | None = None) -> dict:
    """The config the engine sends to Configure for ``--policy-pack-config`` ``overrides``.

    The engine (``createConfigWithDefaults`` + ``ReconcilePolicyPackConfig``) starts from every
    policy at the enforcement level and schema defaults the pack announced in GetAnalyzerInfo, lays
    the user's settings over that, and always sends an explicit level for every policy.
    """
    config = {}
    for policy in info.policies:
        schema = json_format.MessageToDict(policy.configSchema.properties)
        config[policy.name] = {
            "enforcementLevel": LEVEL_NAMES[policy.enforcementLevel],
            **{knob: spec["default"] for knob, spec in schema.items() if "default" in spec},
        }
    for name, settings in (overrides or {}).items():
        config[name].update(settings)
    return config


@pytest.fixture
def stub(pack, info) -> analyzer_pb2_grpc.AnalyzerStub:
    """The pack configured as the engine configures it without ``--policy-pack-config``.

    Configure replaces the pack's whole config, so this also undoes whatever an earlier test set.
    """
    pack.Configure(configure_request(engine_config(info)), timeout=CALL_TIMEOUT)
    return pack


# ---- resources -------------------------------------------------------------------------------


def registered(type_: str, name: str, props: dict[str, Any]) -> Registered:
    urn = f"urn:pulumi:test::aks-gpu-inference::{type_}::{name}"
    return Registered(urn=urn, type=type_, name=name, parent=None, custom=True, inputs=props, options={})


def cluster(channel: Any) -> Registered:
    return registered(
        "azure-native:containerservice:ManagedCluster",
        "aks",
        {
            "resourceName": "aks-gpu",
            "kubernetesVersion": "1.33",
            "autoUpgradeProfile": {"upgradeChannel": "patch", "nodeOSUpgradeChannel": channel},
        },
    )


def gpu_pool(vm_size: str, taints: Any = ("sku=gpu:NoSchedule",)) -> Registered:
    return registered(
        "azure-native:containerservice:AgentPool",
        "gpu-pool",
        {
            "agentPoolName": "nc",
            "resourceName": "aks-gpu",
            "mode": "User",
            "count": 2,
            "vmSize": vm_size,
            "nodeTaints": taints if taints == UNKNOWN else list(taints),
        },
    )


def nic_claim_template() -> Registered:
    return registered(
        "kubernetes:resource.k8s.io/v1:ResourceClaimTemplate",
        "nics",
        {
            "metadata": {"name": "nics", "namespace": "ai"},
            "spec": {"spec": {"devices": {"requests": [{"name": "nic", "exactly": {"deviceClassName": "dranet.net"}}]}}},
        },
    )


def deployment(container: dict[str, Any]) -> Registered:
    base = {"name": "vllm", "resources": {"limits": {"nvidia.com/gpu": 8}, "claims": [{"name": "rdma"}]}}
    return registered(
        "kubernetes:apps/v1:Deployment",
        "vllm",
        {
            "metadata": {"name": "vllm", "namespace": "ai"},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "vllm"}},
                "template": {
                    "metadata": {"labels": {"app": "vllm"}},
                    "spec": {
                        "nodeSelector": {"kubernetes.azure.com/agentpool": "nc"},
                        "tolerations": [{"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}],
                        "resourceClaims": [{"name": "rdma", "resourceClaimTemplateName": "nics"}],
                        "containers": [{**base, **container}],
                    },
                },
            },
        },
    )


BROKEN_CONTAINER = {"image": "vllm/vllm-openai:latest", "securityContext": {"privileged": True}}
FIXED_CONTAINER = {
    "image": "vllm/vllm-openai:v0.10.1",
    "env": [{"name": "NCCL_IB_DISABLE", "value": "0"}],
    "securityContext": {"capabilities": {"add": ["IPC_LOCK"], "drop": ["ALL"]}, "allowPrivilegeEscalation": False},
}


def run_stack(stub, resources: list[Registered]) -> list[analyzer_pb2.AnalyzeResponse]:
    """What the engine asks during a preview: Analyze per resource, then AnalyzeStack once."""
    responses = [stub.Analyze(analyze_request(r), timeout=CALL_TIMEOUT) for r in resources]
    responses.append(stub.AnalyzeStack(stack_request(resources), timeout=CALL_TIMEOUT))
    return responses


def diagnostics_of(responses: list[analyzer_pb2.AnalyzeResponse]) -> list[analyzer_pb2.AnalyzeDiagnostic]:
    return [d for response in responses for d in response.diagnostics]


def found(diagnostics) -> set[tuple[str, str]]:
    return {(d.policyName, LEVEL_NAMES[d.enforcementLevel]) for d in diagnostics}


# ---- GetAnalyzerInfo -------------------------------------------------------------------------


def test_analyzer_info_announces_every_rule(info):
    assert info.name == "aks-gpu-guardrails"
    assert info.supportsConfig
    assert [p.name for p in info.policies] == [rule.name for rule in RULES]
    assert len(info.policies) == 13
    levels = {p.name: p.enforcementLevel for p in info.policies}
    assert levels == {
        rule.name: analyzer_pb2.MANDATORY if rule.name in MANDATORY_RULES else analyzer_pb2.ADVISORY for rule in RULES
    }
    for rule, policy in zip(RULES, info.policies, strict=True):
        expected_type = analyzer_pb2.POLICY_TYPE_RESOURCE if rule.scope == "resource" else analyzer_pb2.POLICY_TYPE_STACK
        assert policy.policy_type == expected_type, rule.name
        assert policy.description == rule.description


def test_analyzer_info_carries_config_schemas(info):
    schemas = {p.name: json_format.MessageToDict(p.configSchema.properties) for p in info.policies}
    for name, knob in KNOBS.items():
        assert knob in schemas[name], name
        assert "default" in schemas[name][knob], name
    for rule in RULES:
        # Numbers cross the wire as doubles; no knob here is numeric, so the schema comes back verbatim.
        assert schemas[rule.name] == rule.config, rule.name


def test_pack_starts_from_its_own_directory():
    """``pulumi preview --policy-pack policies`` starts the pack in the pack directory, with program ``.``.

    NewPolicyAnalyzer runs ``pulumi-analyzer-policy-python <engine> . <runtime options>`` with the
    pack directory as working directory; the wrapper script consumes the runtime options (virtualenv)
    and runs ``python -u -m pulumi.policy <engine> .`` from the virtualenv. ``policies.pack`` is then
    importable only through the project's install in that virtualenv, not through the working directory.
    """
    with serve_pack(PACK_DIR, ".") as stub:
        info = stub.GetAnalyzerInfo(empty_pb2.Empty(), timeout=CALL_TIMEOUT)
    assert info.name == "aks-gpu-guardrails"
    assert [p.name for p in info.policies] == [rule.name for rule in RULES]


# ---- Analyze and Configure -------------------------------------------------------------------


def test_unmanaged_os_channel_is_a_mandatory_violation(stub):
    resource = cluster("Unmanaged")
    response = stub.Analyze(analyze_request(resource), timeout=CALL_TIMEOUT)
    (diagnostic,) = response.diagnostics
    assert diagnostic.policyName == OS_CHANNEL
    assert diagnostic.policyPackName == "aks-gpu-guardrails"
    assert diagnostic.enforcementLevel == analyzer_pb2.MANDATORY
    assert diagnostic.urn == resource.urn
    (verdict,) = verdicts([response])
    assert "nodeOSUpgradeChannel is 'Unmanaged'" in verdict.message


def test_node_image_channel_passes(stub):
    assert not stub.Analyze(analyze_request(cluster("NodeImage")), timeout=CALL_TIMEOUT).diagnostics


def test_security_patch_knob_over_configure(stub, info):
    assert found(stub.Analyze(analyze_request(cluster("SecurityPatch")), timeout=CALL_TIMEOUT).diagnostics) == {
        (OS_CHANNEL, "mandatory")
    }
    stub.Configure(configure_request(engine_config(info, {OS_CHANNEL: {"allow_security_patch": True}})), timeout=CALL_TIMEOUT)
    assert not stub.Analyze(analyze_request(cluster("SecurityPatch")), timeout=CALL_TIMEOUT).diagnostics
    # The knob widens the accepted channels; it does not touch the rule's level.
    assert found(stub.Analyze(analyze_request(cluster("Unmanaged")), timeout=CALL_TIMEOUT).diagnostics) == {
        (OS_CHANNEL, "mandatory")
    }


@pytest.mark.parametrize(("level", "expected"), [("advisory", {(OS_CHANNEL, "advisory")}), ("disabled", set())])
def test_enforcement_level_over_configure(stub, info, level, expected):
    stub.Configure(configure_request(engine_config(info, {OS_CHANNEL: {"enforcementLevel": level}})), timeout=CALL_TIMEOUT)
    assert found(stub.Analyze(analyze_request(cluster("Unmanaged")), timeout=CALL_TIMEOUT).diagnostics) == expected


def test_configure_request_with_knobs_only_keeps_the_default_level(stub):
    stub.Configure(configure_request({OS_CHANNEL: {"allow_security_patch": True}}), timeout=CALL_TIMEOUT)
    assert found(stub.Analyze(analyze_request(cluster("Unmanaged")), timeout=CALL_TIMEOUT).diagnostics) == {
        (OS_CHANNEL, "mandatory")
    }


# ---- AnalyzeStack ----------------------------------------------------------------------------


def test_rdma_stack_on_nc_pool_with_privileged_container(stub):
    workload = deployment(BROKEN_CONTAINER)
    resources = [gpu_pool("Standard_NC24ads_A100_v4"), nic_claim_template(), workload]
    responses = run_stack(stub, resources)
    diagnostics = diagnostics_of(responses)
    assert found(diagnostics) == {
        ("rdma-capable-sku", "mandatory"),
        ("ipc-lock-without-privileged", "mandatory"),
        ("nccl-infiniband-enabled", "advisory"),
        ("image-pinned", "advisory"),
    }
    assert {d.urn for d in diagnostics} == {workload.urn}
    messages: dict[str, list[str]] = {}
    for verdict in verdicts(responses):
        messages.setdefault(verdict.policy, []).append(verdict.message)
    (rdma,) = messages["rdma-capable-sku"]
    assert "'nc'" in rdma and "Standard_NC24ads_A100_v4" in rdma
    ipc = " | ".join(messages["ipc-lock-without-privileged"])
    for needed in ("privileged is true", "IPC_LOCK", "drop ALL", "allowPrivilegeEscalation: false"):
        assert needed in ipc
    (nccl,) = messages["nccl-infiniband-enabled"]
    assert "NCCL_IB_DISABLE=0" in nccl


def test_fixed_rdma_stack_is_clean(stub):
    resources = [gpu_pool("Standard_ND96isr_H100_v5"), nic_claim_template(), deployment(FIXED_CONTAINER)]
    assert [(d.policyName, d.message) for d in diagnostics_of(run_stack(stub, resources))] == []


def test_subprocess_and_in_process_servicer_agree(stub, info):
    """The planner's in-process servicer answers the same requests with the same diagnostics."""
    resources = [cluster("Unmanaged"), gpu_pool("Standard_NC24ads_A100_v4"), nic_claim_template(), deployment(BROKEN_CONTAINER)]
    in_process = new_servicer()
    in_process.Configure(configure_request(engine_config(info)), None)
    local = [in_process.Analyze(analyze_request(r), None) for r in resources]
    local.append(in_process.AnalyzeStack(stack_request(resources), None))

    def key(d):
        return d.policyName, d.enforcementLevel, d.urn, d.message

    remote = diagnostics_of(run_stack(stub, resources))
    assert remote
    assert [key(d) for d in remote] == [key(d) for d in diagnostics_of(local)]


# ---- unknown values --------------------------------------------------------------------------


def test_unknown_os_channel_fails_closed(stub):
    response = stub.Analyze(analyze_request(cluster(UNKNOWN)), timeout=CALL_TIMEOUT)
    (diagnostic,) = response.diagnostics
    assert diagnostic.policyName == OS_CHANNEL
    assert diagnostic.enforcementLevel == analyzer_pb2.MANDATORY
    assert "unknown" in diagnostic.message
    assert "can't run policy" not in diagnostic.message


def test_unknown_values_in_stack_rules_fail_closed(stub):
    """Unknown whole lists (nodeTaints), list elements (a toleration) and nested values (privileged) reach the stack rules."""
    container = {**FIXED_CONTAINER, "securityContext": {**FIXED_CONTAINER["securityContext"], "privileged": UNKNOWN}}
    workload = deployment(container)
    workload.inputs["spec"]["template"]["spec"]["tolerations"][0]["value"] = UNKNOWN
    pool = gpu_pool("Standard_ND96isr_H100_v5", taints=UNKNOWN)
    diagnostics = diagnostics_of(run_stack(stub, [pool, nic_claim_template(), workload]))
    assert not [d.message for d in diagnostics if "can't run policy" in d.message]
    assert sorted((d.policyName, LEVEL_NAMES[d.enforcementLevel], d.urn) for d in diagnostics) == sorted(
        [
            ("gpu-taints-and-tolerations", "mandatory", pool.urn),
            ("gpu-taints-and-tolerations", "mandatory", workload.urn),
            ("ipc-lock-without-privileged", "mandatory", workload.urn),
        ]
    )
    assert all("unknown during preview" in d.message for d in diagnostics)
