"""The ``x-kubernetes-validations`` half of a CRD schema check (``crd_schema``): each rule compiled once, evaluated on
the value at its schema node, its outcome kept per (rule, node, value) so that alike objects (a route's rules, a
stack's many models) are judged once; transition rules (``oldSelf``) are not run on create."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from aks_gpu_inference.planner.kube.crd_cel import OLD_SELF, CelEngine


class RuleChecks:
    """CEL rule checks for ``crd_schema``'s run, which reports through its own ``error`` and ``note``."""

    def check_rules(self, value: Any, s: Mapping[str, Any], path: str, rules: list, top: bool) -> None:
        cel = CelEngine.get()
        activation: dict[str, Any] = {}
        text = None
        for spec in rules:
            rule = spec.get("rule") if isinstance(spec, Mapping) else None
            if not isinstance(rule, str):
                continue
            short = _short(rule)
            if OLD_SELF.search(rule):
                if spec.get("optionalOldSelf"):
                    self.note(path, f"CEL transition rule with optionalOldSelf not checked: {short}")
                continue  # a transition rule: not evaluated on create
            program, why = cel.program(rule)
            if program is None:
                self.note(path, f"CEL rule not checked ({why}): {short}")
                continue
            text = _canonical(value) if text is None else text
            self.judge_rule(program, spec, path, activation, lambda: cel.to_cel(value, s, top=top), (rule, id(s), top, text), s)

    def judge_rule(
        self, program: Any, spec: Mapping[str, Any], path: str, activation: dict[str, Any], typed: Any, key: tuple, s: Any
    ) -> None:
        """Run one compiled rule and report its failure, or why it could not be judged. A rule is a pure function of
        the value at its schema node (``self``; transition rules are not run), so its outcome is kept by ``key`` (rule,
        node, root or not, the value's canonical JSON): a route's sixteen alike rules are judged once."""
        cel, short = CelEngine.get(), _short(spec["rule"])
        kept = _OUTCOMES.get(key)
        if kept is not None and kept[0] is s:  # the same schema node, not one that reused a freed one's id
            outcome, detail = kept[1]
        else:
            if not activation:
                activation["self"] = typed()
            outcome, detail = cel.evaluate(program, activation)
            if len(_OUTCOMES) >= _MAX_OUTCOMES:
                _OUTCOMES.clear()
            _OUTCOMES[key] = (s, (outcome, detail))
        if outcome == "unsupported":
            self.note(path, f"CEL rule not checked ({detail}): {short}")
        elif outcome == "error":
            self.error(path, f"CEL rule could not be evaluated ({detail}; the API server rejects this too): {short}")
        elif not isinstance(detail, (bool, cel.ct.BoolType)):
            self.note(path, f"CEL rule not checked (evaluates to {type(detail).__name__}, not bool): {short}")
        elif not detail:
            where = path
            if isinstance(spec.get("fieldPath"), str) and spec["fieldPath"]:
                where = (path + spec["fieldPath"]).lstrip(".")
            if not activation:
                activation["self"] = typed()
            self.error(where, f"{self.rule_message(spec, activation)} (CEL rule: {short})")

    def rule_message(self, spec: Mapping[str, Any], activation: dict[str, Any]) -> str:
        expression = spec.get("messageExpression")
        if isinstance(expression, str):
            cel = CelEngine.get()
            program, _ = cel.program(expression)
            if program is not None:
                outcome, detail = cel.evaluate(program, activation)
                if outcome == "value" and isinstance(detail, str) and detail.strip():
                    return str(detail)
        message = spec.get("message")
        return message if isinstance(message, str) and message else "failed rule"


_OUTCOMES: dict[tuple, tuple[Any, tuple[str, Any]]] = {}
"""CEL outcomes by (rule, schema node id, root, canonical value), with the node kept to tell a reused id apart."""
_MAX_OUTCOMES = 20_000


def _canonical(value: Any) -> str:
    """The value as canonical JSON: equal values, equal text (int and float apart, as CEL types them apart)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=repr)


def _short(rule: str) -> str:
    """A rule as a message quotes it: at most 160 characters."""
    return rule if len(rule) <= 160 else rule[:157] + "..."
