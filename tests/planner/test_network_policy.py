"""The NetworkPolicy reading the request-path checks share: selectors, ports, peers, both directions."""

from __future__ import annotations

import pytest

from aks_gpu_inference.planner.deploy.network_policy import Pod, Policies, selects

WEB = Pod("shop", {"app": "web", "tier": "front"})
API = Pod("shop", {"app": "api"})
PROXY = Pod("gateway", {"app": "envoy"})


def policy(spec: dict, namespace: str = "shop", name: str = "p") -> dict:
    return {"kind": "NetworkPolicy", "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def namespace(name: str, **labels: str) -> dict:
    return {"kind": "Namespace", "metadata": {"name": name, "labels": labels}}


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        ({}, {"app": "web"}, True),
        ({"matchLabels": {"app": "web"}}, {"app": "web", "x": "y"}, True),
        ({"matchLabels": {"app": "web"}}, {"app": "api"}, False),
        ({"matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "api"]}]}, {"app": "api"}, True),
        ({"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]}, {"app": "api"}, False),
        ({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]}, {}, True),
        ({"matchExpressions": [{"key": "app", "operator": "Exists"}]}, {}, False),
        ({"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]}, {"app": "web"}, False),
        ({"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "Exists"}]}, {"app": "web"}, False),
    ],
)
def test_label_selectors(selector, labels, expected):
    assert selects(selector, labels) is expected


def test_a_pod_no_policy_selects_accepts_everything():
    assert Policies([policy({"podSelector": {"matchLabels": {"app": "db"}}, "ingress": []})]).blocked(API, WEB, 80) is None


def test_a_selected_pod_accepts_only_what_a_rule_admits():
    policies = Policies([policy({"podSelector": {"matchLabels": {"app": "web"}}, "ingress": [{"ports": [{"port": 80}]}]})])
    assert policies.blocked(API, WEB, 80) is None
    assert policies.blocked(API, WEB, 81) == "ingress policy shop/p on the target admits no such connection"
    assert policies.blocked(API, WEB, None) is not None, "a port the OS picks gets past no port rule"


@pytest.mark.parametrize(
    ("ports", "port", "admitted"),
    [
        ([{"port": 8000, "endPort": 8100}], 8050, True),
        ([{"port": 8000, "endPort": 8100}], 8101, False),
        ([{"port": "http"}], 8000, True),
        ([{"port": "http"}], None, False),
        ([{"protocol": "UDP", "port": 8000}], 8000, False),
        ([{"protocol": "TCP"}], None, True),
        ([], None, True),
    ],
)
def test_ports(ports, port, admitted):
    policies = Policies([policy({"podSelector": {}, "ingress": [{"ports": ports}] if ports else [{}]})])
    assert (policies.blocked(API, WEB, port) is None) is admitted


def test_peers_by_pod_and_namespace():
    rules = [
        {"from": [{"podSelector": {"matchLabels": {"app": "api"}}}]},
        {"from": [{"namespaceSelector": {"matchLabels": {"role": "edge"}}, "podSelector": {"matchLabels": {"app": "envoy"}}}]},
    ]
    objects = [policy({"podSelector": {"matchLabels": {"app": "web"}}, "ingress": rules}), namespace("gateway", role="edge")]
    policies = Policies(objects)
    assert policies.blocked(API, WEB, 1) is None
    assert policies.blocked(PROXY, WEB, 1) is None, "its namespace's labels come from the plan's Namespace"
    assert policies.blocked(Pod("other", {"app": "api"}), WEB, 1) is not None, "a bare podSelector means the policy's namespace"
    assert Policies(objects[:1]).blocked(PROXY, WEB, 1) is not None, "without the Namespace only its name label is known"
    by_name = [{"from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "gateway"}}}]}]
    assert Policies([policy({"podSelector": {}, "ingress": by_name})]).blocked(PROXY, WEB, 1) is None
    blocks = [{"from": [{"ipBlock": {"cidr": "10.0.0.0/8"}}]}]
    assert Policies([policy({"podSelector": {}, "ingress": blocks})]).blocked(API, WEB, 1) is not None


def test_egress_of_the_source_counts_too():
    egress = policy({"podSelector": {"matchLabels": {"app": "api"}}, "policyTypes": ["Egress"], "egress": []}, name="e")
    assert Policies([egress]).blocked(API, WEB, 80) == "egress policy shop/e on the source allows no such connection"
    assert Policies([egress]).blocked(WEB, API, 80) is None, "an egress-only policy leaves ingress open"
    implied = policy(
        {"podSelector": {"matchLabels": {"app": "api"}}, "egress": [{"to": [{"podSelector": {}}], "ports": [{"port": 80}]}]}
    )
    assert Policies([implied]).blocked(API, WEB, 80) is None
    assert Policies([implied]).blocked(API, WEB, 81) is not None, "an egress section makes it an Egress policy too"
    assert Policies([implied]).blocked(API, PROXY, 80) is not None


def test_policies_in_another_namespace_do_not_apply():
    other = policy({"podSelector": {}, "ingress": []}, namespace="elsewhere")
    assert Policies([other]).blocked(API, WEB, 80) is None
