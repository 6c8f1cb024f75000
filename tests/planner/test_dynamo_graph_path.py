"""The request path through a Dynamo graph (issue 27): on the dynamo stack the gateway reaches the frontend, the
frontend its prefill and decode workers, and the workers stream their replies back on the frontend's fixed port;
each test cuts one of Dynamo 1.6.1's hops with a NetworkPolicy and the plan names it as a blocker.

Hops and ports: ``components/serving/dynamo_runtime.py``. Charts are real Helm renders."""

from __future__ import annotations

import copy

import pytest

from aks_gpu_inference.components.serving.dynamo_runtime import (
    NIXL_SIDE_CHANNEL_PORT,
    REQUEST_PLANE_PORT,
    RESPONSE_STREAM_PORT,
    SYSTEM_PORT,
    role_selector,
)
from aks_gpu_inference.planner.deploy import request_path
from aks_gpu_inference.planner.deploy.model import KubeObject
from aks_gpu_inference.planner.inputs.upstream import upstream_dir
from tests.conftest import planned_stack
from tests.planner.test_request_path import blockers, planned

GRAPH = "DynamoGraphDeployment llm-d-infra/llama-70b"
FRONTEND_POLICY = "ai-gateway-only-frontend-llama-70b"
WORKERS = role_selector("llama-70b", ("prefill", "decode"))
FRONTEND = {"matchLabels": {"app.kubernetes.io/instance": "llama-70b", "aks-gpu-inference/dynamo-role": "frontend"}}


def dynamo():
    return planned(planned_stack("dynamo"))


def cut(model) -> list[str]:
    """The request-path blockers about the graph: ``message (fix)``."""
    return sorted(f"{f.message} ({f.fix})" for f in blockers(model, "request-path") if f.object == GRAPH)


def hops(model) -> list[str]:
    """Just the messages: ``<hop>: <source> -> <target> (port <port>) is cut``."""
    return sorted(f.message for f in blockers(model, "request-path") if f.object == GRAPH)


def obj(model, kind: str, name: str) -> dict:
    """The object's manifest, copied first: the session's plan shares it with every other test."""
    found = next(o for o in model.objects if o.kind == kind and o.name == name)
    found.manifest = copy.deepcopy(found.manifest)
    return found.manifest


def add_policy(model, name: str, spec: dict) -> None:
    """A NetworkPolicy in the graph's namespace, as a user's own manifest would add it."""
    template = next(o for o in model.objects if o.kind == "NetworkPolicy" and o.name == FRONTEND_POLICY)
    manifest = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": name, "namespace": "llm-d-infra"},
    }
    model.objects.append(KubeObject(template.record, {**manifest, "spec": spec}))


def test_the_dynamo_path_reaches_the_workers_and_back_with_nothing_cut():
    model = dynamo()
    (paths,), findings = request_path.walk(model, upstream_dir())
    assert [f for f in findings if f.level == "blocker"] == []
    row = dict(paths.rows)["model=llama-70b"]
    assert (
        f"Dynamo frontend llama-70b/frontend :8000 -> prefill (request plane :{REQUEST_PLANE_PORT}) -> "
        f"decode (request plane :{REQUEST_PLANE_PORT}) -> response streams back to the frontend :{RESPONSE_STREAM_PORT}"
    ) in row


def test_a_frontend_policy_that_admits_only_the_gateway_drops_every_reply():
    """Issue 27's finding: only 8000 into the frontend, so both workers' response streams are refused."""
    model = dynamo()
    policy = obj(model, "NetworkPolicy", FRONTEND_POLICY)
    policy["spec"]["ingress"] = policy["spec"]["ingress"][:1]
    why = f"ingress policy llm-d-infra/{FRONTEND_POLICY} on the target admits no such connection"
    assert cut(model) == [
        f"response stream: decode -> frontend (port {RESPONSE_STREAM_PORT}) is cut (admit it ({why}))",
        f"response stream: prefill -> frontend (port {RESPONSE_STREAM_PORT}) is cut (admit it ({why}))",
    ]


def test_a_reply_on_a_port_the_os_picks_gets_past_no_port_rule():
    """Dynamo's default: DYN_TCP_RESPONSE_STREAM_PORT unset, an ephemeral port no NetworkPolicy port can name."""
    model = dynamo()
    graph = obj(model, "DynamoGraphDeployment", "llama-70b")
    frontend = graph["spec"]["components"][0]["podTemplate"]["spec"]["containers"][0]
    frontend["env"] = [e for e in frontend["env"] if e["name"] != "DYN_TCP_RESPONSE_STREAM_PORT"]
    found = cut(model)
    assert len(found) == 2 and all("(port a port the OS picks) is cut" in m for m in found)
    assert all("set DYN_TCP_RESPONSE_STREAM_PORT on frontend and admit that port" in m for m in found)


def test_a_policy_on_the_workers_must_admit_every_hop_into_them():
    """Only the system port from the frontend: the request plane and the KV events from the frontend are cut, and so
    is decode's NIXL handshake with prefill; the model metadata on 9090 still passes."""
    model = dynamo()
    add_policy(
        model,
        "workers-metrics-only",
        {"podSelector": WORKERS, "ingress": [{"from": [{"podSelector": FRONTEND}], "ports": [{"port": SYSTEM_PORT}]}]},
    )
    assert hops(model) == sorted(
        [
            f"request plane: frontend -> prefill (port {REQUEST_PLANE_PORT}) is cut",
            f"request plane: frontend -> decode (port {REQUEST_PLANE_PORT}) is cut",
            "KV events: frontend -> prefill (port a port the OS picks) is cut",
            "KV events: frontend -> decode (port a port the OS picks) is cut",
            f"NIXL side channel: decode -> prefill (port {NIXL_SIDE_CHANNEL_PORT}) is cut",
        ]
    )
    assert any("admit every TCP port from frontend: no Dynamo variable fixes this port" in m for m in cut(model))


def test_a_worker_policy_that_admits_the_frontend_and_each_other_cuts_nothing():
    model = dynamo()
    admit = [
        {"from": [{"podSelector": FRONTEND}]},
        {"from": [{"podSelector": WORKERS}], "ports": [{"port": NIXL_SIDE_CHANNEL_PORT}]},
    ]
    add_policy(model, "workers-from-the-graph", {"podSelector": WORKERS, "policyTypes": ["Ingress"], "ingress": admit})
    assert cut(model) == []


def test_an_egress_policy_on_the_frontend_cuts_its_calls_to_the_workers():
    model = dynamo()
    add_policy(
        model,
        "frontend-dns-only",
        {"podSelector": FRONTEND, "policyTypes": ["Egress"], "egress": [{"ports": [{"port": 53, "protocol": "UDP"}]}]},
    )
    hops = {m.split(":")[0] for m in cut(model)}
    assert hops == {"request plane", "KV events", "model metadata"}, "the replies are the workers' connections"
    assert all("egress policy llm-d-infra/frontend-dns-only on the source allows no such connection" in m for m in cut(model))


def test_the_gateway_must_reach_the_frontend():
    model = dynamo()
    policy = obj(model, "NetworkPolicy", FRONTEND_POLICY)
    policy["spec"]["ingress"][0]["from"] = [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}}}
    ]
    assert [m for m in cut(model) if "gateway" in m] == [
        "a NetworkPolicy keeps the gateway's Envoy proxies from the frontend frontend (port 8000) "
        f"(admit them (ingress policy llm-d-infra/{FRONTEND_POLICY} on the target admits no such connection))"
    ]


@pytest.mark.parametrize("hop_env", ["DYN_TCP_RPC_PORT", "VLLM_NIXL_SIDE_CHANNEL_PORT"])
def test_the_ports_checked_are_the_ones_the_pods_declare(hop_env):
    """A worker port moved by its variable is the port the check follows: a rule on the old port no longer admits it."""
    model = dynamo()
    graph = obj(model, "DynamoGraphDeployment", "llama-70b")
    for component in graph["spec"]["components"][1:]:
        main = component["podTemplate"]["spec"]["containers"][0]
        main["env"] = [{**e, "value": "31000"} if e["name"] == hop_env else e for e in main["env"]]
    rules = [
        {"from": [{"podSelector": FRONTEND}], "ports": [{"port": REQUEST_PLANE_PORT}, {"port": SYSTEM_PORT}]},
        {"from": [{"podSelector": FRONTEND}], "ports": [{"port": 32768, "endPort": 60999}]},
        {"from": [{"podSelector": WORKERS}], "ports": [{"port": NIXL_SIDE_CHANNEL_PORT}]},
    ]
    add_policy(model, "workers-fixed-ports", {"podSelector": WORKERS, "ingress": rules})
    found = hops(model)
    moved = {"DYN_TCP_RPC_PORT": "request plane", "VLLM_NIXL_SIDE_CHANNEL_PORT": "NIXL side channel"}[hop_env]
    assert {m.split(":")[0] for m in found} == {moved, "KV events"}
    assert all("31000" in m for m in found if m.startswith(moved))
