"""Would the planned NetworkPolicies let one pod open a TCP connection to another, on a given port?

Kubernetes' rules (networking.k8s.io/v1): a pod selected by no policy of a direction accepts (or opens) every
connection of that direction; once one policy of that direction selects it, only what some rule of those policies
admits passes, and a connection needs both the source's egress and the target's ingress. ``policyTypes`` defaults to
Ingress, plus Egress when the policy has egress rules. A rule without ``ports`` admits every port, one without
``from``/``to`` every peer; a peer with only a ``podSelector`` means the policy's own namespace. Label selectors are
read whole (``matchLabels`` and ``matchExpressions``). Two readings lean towards admitting, so that the plan never
blocks on what it cannot decide: a named port admits any port, and a pod whose labels an operator adds at run time
is seen with the labels its template declares. An ``ipBlock`` admits no pod (pod addresses are not known here).

A port of None is one the operating system picks at run time (an ephemeral port): only a rule that names no port
admits it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

NAME_LABEL = "kubernetes.io/metadata.name"


@dataclass(frozen=True)
class Pod:
    """One end of a connection: the pods of a namespace that carry these labels."""

    namespace: str
    labels: Mapping[str, str]


def _meta(o: Mapping) -> Mapping:
    return o.get("metadata") or {}


def selects(selector: Mapping | None, labels: Mapping[str, str]) -> bool:
    """Whether a label selector (``matchLabels`` and ``matchExpressions``) selects these labels; ``{}`` selects all."""
    selector = selector or {}
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expression in selector.get("matchExpressions") or []:
        key, operator, values = expression.get("key"), expression.get("operator"), expression.get("values") or []
        present = key in labels
        if not {
            "In": present and labels.get(key) in values,
            "NotIn": not present or labels.get(key) not in values,
            "Exists": present,
            "DoesNotExist": not present,
        }.get(operator, True):
            return False
    return True


class Policies:
    """The NetworkPolicies and namespace labels of a plan."""

    def __init__(self, objects: Iterable[Mapping[str, Any]]):
        objects = list(objects)
        self.policies = [o for o in objects if o.get("kind") == "NetworkPolicy"]
        self.namespace_labels = {
            _meta(o).get("name"): dict(_meta(o).get("labels") or {}) for o in objects if o.get("kind") == "Namespace"
        }

    def _namespace(self, name: str) -> dict[str, str]:
        return {**self.namespace_labels.get(name, {}), NAME_LABEL: name}

    def _governing(self, pod: Pod, direction: str) -> list[Mapping]:
        found = []
        for policy in self.policies:
            spec = policy.get("spec") or {}
            types = spec.get("policyTypes") or (["Ingress", "Egress"] if "egress" in spec else ["Ingress"])
            in_namespace = (_meta(policy).get("namespace") or "default") == pod.namespace
            if in_namespace and direction in types and selects(spec.get("podSelector"), pod.labels):
                found.append(policy)
        return found

    def _peer_matches(self, peer: Mapping, policy_namespace: str, other: Pod) -> bool:
        if "ipBlock" in peer:
            return False
        if "namespaceSelector" in peer:
            in_namespace = selects(peer["namespaceSelector"], self._namespace(other.namespace))
        else:
            in_namespace = other.namespace == policy_namespace
        return in_namespace and ("podSelector" not in peer or selects(peer["podSelector"], other.labels))

    @staticmethod
    def _port_matches(rule: Mapping, port: int | None) -> bool:
        entries = rule.get("ports") or []
        if not entries:
            return True
        for entry in entries:
            if (entry.get("protocol") or "TCP") != "TCP":
                continue
            number = entry.get("port")
            if number is None or (port is not None and isinstance(number, str)):
                return True
            if port is not None and number <= port <= (entry.get("endPort") or number):
                return True
        return False

    def _side(self, pod: Pod, other: Pod, port: int | None, direction: str) -> list[str]:
        """The names of the policies of ``direction`` on ``pod`` that keep ``other`` out; empty when one admits it."""
        governing = self._governing(pod, direction)
        key, peers = ("ingress", "from") if direction == "Ingress" else ("egress", "to")
        for policy in governing:
            for rule in (policy.get("spec") or {}).get(key) or []:
                matched = not rule.get(peers) or any(self._peer_matches(p, pod.namespace, other) for p in rule[peers])
                if matched and self._port_matches(rule, port):
                    return []
        return [f"{_meta(p).get('namespace')}/{_meta(p).get('name')}" for p in governing]

    def blocked(self, source: Pod, target: Pod, port: int | None) -> str | None:
        """None when the policies let ``source`` connect to ``target`` on ``port``, else which policies stop it."""
        ingress = self._side(target, source, port, "Ingress")
        egress = self._side(source, target, port, "Egress")
        why = []
        if ingress:
            why.append(f"ingress policy {', '.join(ingress)} on the target admits no such connection")
        if egress:
            why.append(f"egress policy {', '.join(egress)} on the source allows no such connection")
        return "; ".join(why) or None
