"""Object names as the API server validates them: ``metadata.name`` (or ``generateName``) against the rule of the
object's kind, so a scan says which objects would be refused.

From k8s.io/apimachinery (pkg/util/validation/validation.go: IsDNS1123Label, IsDNS1123Subdomain, IsDNS1035Label;
pkg/api/validation/generic.go: NameIsDNSSubdomain & co., whose ``prefix`` form for generateName masks a trailing
dash), as vendored by
kubernetes-sigs/dra-driver-nvidia-gpu@v0.4.1, and the kinds' own rules in kubernetes pkg/apis/*/validation:
a Namespace is a DNS-1123 label (ValidateNamespaceName), a Service a DNS-1035 label (ValidateServiceName; the
RelaxedServiceNameValidation gate that allows DNS-1123 labels is alpha and off in 1.34), a StatefulSet a DNS-1123
label (ValidateStatefulSetName), a CronJob a subdomain of at most 52 characters (ValidateCronJob: the Jobs it makes
append 11), RBAC objects and PodDisruptionBudgets any path segment (ValidateRBACName, rest.BeforeCreate), a
CustomResourceDefinition ``<plural>.<group>``; every other kind, custom resources included, a DNS-1123 subdomain.
Kustomize's own kinds and patch fragments are not sent to an API server and are not checked, nor is an object without
any name: the API server would refuse it too, but such files are mostly tools' configs written like objects
(skaffold's Config, llm-d's EndpointPickerConfig).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from aks_gpu_inference.planner.scan.model import Located, Problem
from aks_gpu_inference.planner.scan.placement import line_of
from aks_gpu_inference.policies.manifests import get
from aks_gpu_inference.policies.manifests.templates import api_of

_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_CLIENT_SIDE = ("kustomize.config.k8s.io", "config.kubernetes.io")


def _dns_rule(pattern: str, longest: int, what: str) -> Callable[[str], str | None]:
    """A name rule of apimachinery's util/validation: at most ``longest`` characters matching ``pattern``."""
    regex = re.compile(pattern)

    def problem(name: str) -> str | None:
        if len(name) > longest:
            return f"must be no more than {longest} characters"
        return None if regex.fullmatch(name) else f"must be {what}"

    return problem


_subdomain = _dns_rule(
    rf"{_LABEL}(\.{_LABEL})*",
    253,
    "a lowercase RFC 1123 subdomain: lower-case letters, digits, '-' or '.', starting and ending with a letter or digit (e.g. 'example.com')",
)
_dns1123_label = _dns_rule(
    _LABEL,
    63,
    "a lowercase RFC 1123 label: lower-case letters, digits or '-', starting and ending with a letter or digit (e.g. 'my-name')",
)
_dns1035_label = _dns_rule(
    r"[a-z]([-a-z0-9]*[a-z0-9])?",
    63,
    "a DNS-1035 label: lower-case letters, digits or '-', starting with a letter and ending with a letter or digit (e.g. 'my-name')",
)


def _cron_job(name: str) -> str | None:
    return _subdomain(name) or ("must be no more than 52 characters" if len(name) > 52 else None)


def _path_segment(name: str) -> str | None:
    if name in (".", ".."):
        return f"may not be {name!r}"
    bad = [c for c in ("/", "%") if c in name]
    return f"may not contain {bad[0]!r}" if bad else None


_RULES: dict[tuple[str, str], Callable[[str], str | None]] = {
    ("core", "Namespace"): _dns1123_label,
    ("core", "Service"): _dns1035_label,
    ("apps", "StatefulSet"): _dns1123_label,
    ("batch", "CronJob"): _cron_job,
    ("policy", "PodDisruptionBudget"): _path_segment,
    **{("rbac.authorization.k8s.io", k): _path_segment for k in ("Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding")},
}


def _mask_trailing_dash(name: str) -> str:
    """generic.go maskTrailingDash, as written: a trailing dash (of a name longer than one) and the character before
    it become one ``a``."""
    return name[:-2] + "a" if len(name) > 1 and name.endswith("-") else name


def name_problem(group: str, kind: str, props: dict[str, Any]) -> tuple[str, str] | None:
    """(field, problem) when the API server would refuse the object's name, else None."""
    rule = _RULES.get((group, kind), _subdomain)
    if (group, kind) == ("apiextensions.k8s.io", "CustomResourceDefinition"):
        plural, crd_group = get(props, "spec", "names", "plural"), get(props, "spec", "group")
        expected = f"{plural}.{crd_group}"
        rule = lambda n: _subdomain(n) or (None if n == expected else f"must be spec.names.plural+'.'+spec.group ({expected!r})")  # noqa: E731
    name, generate = get(props, "metadata", "name"), get(props, "metadata", "generateName")
    if isinstance(name, str) and name:
        problem = rule(name)
        return ("name", f"metadata.name {name!r} {problem}") if problem else None
    if isinstance(generate, str) and generate:
        problem = rule(_mask_trailing_dash(generate))
        return ("generateName", f"metadata.generateName {generate!r} {problem}") if problem else None
    return None  # no name at all: a tool's config file written like an object (skaffold's Config, an EPP config)


def invalid_names(located: list[Located]) -> list[Problem]:
    """An error for every object whose name the API server would refuse; the objects are still checked."""
    problems = []
    for item in located:
        api = api_of(item.resource.type)
        if api is None or api[0] in _CLIENT_SIDE or item.resource.fragment:
            continue
        found = name_problem(api[0], api[2], item.resource.props)
        if found:
            field, problem = found
            line = line_of(item, f"metadata.{field}")
            message = f"{item.resource.label}: {problem} (the API server refuses a {api[2]} so named)"
            problems.append(Problem("error", "invalid-name", item.path, line, message, item.resource.label))
    return problems
