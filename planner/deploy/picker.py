"""llm-d's endpoint picker and disagg sidecar as rendered, checked against the release their images name.

The release's table (``components/serving/llmd_registry``, generated from llm-d-router's Go source) says what the
picker's config loader and both programs' flag sets accept; ``picker_check`` applies it. Read from the rendered
objects, whoever wrote them (this project's components or a user's own chart values):

- the picker's command line (pflag exits on a flag it does not define) and a boolean flag rendered as two arguments,
  which the inferencepool chart does for ``inferenceExtension.flags`` up to v1.5.0 (GAIE #2871): the value becomes a
  stray argument and the flag stays true;
- the picker's config file, found through ``--config-file`` and the ConfigMap mounted there;
- the RBAC of the picker's service account: get, list and watch on every kind its controllers reconcile;
- each sidecar's command line, and the vLLM port it forwards to.

A picker or sidecar image of a release without a table is reported as not checked.
"""

from __future__ import annotations

from collections.abc import Mapping

from aks_gpu_inference.components.core import images
from aks_gpu_inference.components.serving import llmd_registry
from aks_gpu_inference.components.serving.picker_check import check_args, check_config
from aks_gpu_inference.planner.deploy.finding import Finding

SIDECAR_REPOSITORIES = ("llm-d/llm-d-router-disagg-sidecar", "llm-d/llm-d-routing-sidecar")
"""The sidecar's image names: from llm-d-router v0.9.0, and before (llm-d-router@v0.8.0 ci-release.yaml)."""
BUILTIN_RESOURCES = {"Pod": ("", "pods")}


def _image_name(container: Mapping) -> str:
    """``registry/repository`` of the container's image, without tag or digest."""
    ref = images.parse(str(container.get("image") or ""))
    return f"{ref.registry}/{ref.repository}"


def sidecar(containers: list[Mapping]) -> Mapping | None:
    """The pod's disagg sidecar container, recognised by its image."""
    return next((c for c in containers if any(_image_name(c).endswith(r) for r in SIDECAR_REPOSITORIES)), None)


def _flag(args: list[str], name: str) -> str | None:
    for i, arg in enumerate(args):
        if arg == f"--{name}" and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(f"--{name}="):
            return arg.split("=", 1)[1]
    return None


def sidecar_target(container: Mapping) -> int:
    """The vLLM port the sidecar forwards to: ``--model-server-port`` (or the deprecated ``--vllm-port``), else the
    release's default; -1 when it is not a number."""
    args = [str(a) for a in container.get("args") or []]
    value = _flag(args, "model-server-port") or _flag(args, "vllm-port")
    release = llmd_registry.release_of(str(container.get("image") or ""))
    if value is None and release is not None:
        value = llmd_registry.load(release)["sidecar_flags"]["vllm-port"]["default"]
    return int(value) if value is not None and str(value).isdigit() else -1


def sidecar_findings(container: Mapping, where: str) -> list[Finding]:
    release = llmd_registry.release_of(str(container.get("image") or ""))
    if release is None:
        return [
            _unchecked(where, f"the sidecar image {container.get('image')} has no llm-d-router table: its flags were not checked")
        ]
    table = llmd_registry.load(release)
    args = [str(a) for a in container.get("args") or []]
    return [
        _finding(p.level, where, p.message)
        for p in check_args(args, table["sidecar_flags"], f"the disagg sidecar {release}", where)
    ]


def picker_findings(objects: list[Mapping], ns: str, pods: list[tuple[Mapping, Mapping]], where: str) -> list[Finding]:
    """Every picker pod template's command line, config and RBAC, as the release its image names reads them."""
    found: list[Finding] = []
    for obj, spec in pods:
        for container in spec.get("containers") or []:
            release = llmd_registry.release_of(str(container.get("image") or ""))
            label = f"{obj.get('kind')} {ns}/{(obj.get('metadata') or {}).get('name')}"
            if release is None:
                found.append(
                    _unchecked(
                        where, f"the picker image {container.get('image')} of {label} has no llm-d-router table: not checked"
                    )
                )
                continue
            table = llmd_registry.load(release)
            args = [str(a) for a in container.get("args") or []]
            found += [
                _finding(p.level, where, f"{label}: {p.message}")
                for p in check_args(args, table["epp_flags"], f"the picker {release}", where)
            ]
            found += _two_argument_booleans(args, table["epp_flags"], label, where)
            text = _config_text(objects, ns, spec, container, args)
            if text is None:
                found.append(
                    Finding(
                        "request-path", "blocker", where, f"{label}: its --config-file is not in a mounted ConfigMap", "mount it"
                    )
                )
            else:
                found += [_finding(p.level, where, f"{label}: {p.message}") for p in check_config(text, release, args)]
            found += _rbac(objects, ns, spec, table["watches"], label, where)
    return found


def _two_argument_booleans(args: list[str], flags: Mapping, label: str, where: str) -> list[Finding]:
    out = []
    for i, arg in enumerate(args[:-1]):
        name = arg.lstrip("-")
        if (
            arg.startswith("--")
            and "=" not in arg
            and (flags.get(name) or {}).get("type") == "bool"
            and args[i + 1] in ("true", "false")
        ):
            message = (
                f"{label}: --{name} {args[i + 1]} is two arguments: pflag reads --{name} as true and ignores {args[i + 1]!r} "
                "(the inferencepool chart renders inferenceExtension.flags this way up to v1.5.0, GAIE #2871)"
            )
            out.append(Finding("request-path", "blocker", where, message, f"pass --{name}={args[i + 1]} another way"))
    return out


def _config_text(objects: list[Mapping], ns: str, spec: Mapping, container: Mapping, args: list[str]) -> str | None:
    path = _flag(args, "config-file")
    if path is None:
        return ""  # no file: the loader's defaults
    for mount in container.get("volumeMounts") or []:
        folder = str(mount.get("mountPath") or "").rstrip("/")
        if path.startswith(f"{folder}/"):
            volume = next((v for v in spec.get("volumes") or [] if v.get("name") == mount.get("name")), {})
            name = (volume.get("configMap") or {}).get("name")
            config_map = next((o for o in objects if o.get("kind") == "ConfigMap" and _ns_name(o) == (ns, name)), None)
            key = path[len(folder) + 1 :]
            return None if config_map is None else (config_map.get("data") or {}).get(key)
    return None


def _ns_name(o: Mapping) -> tuple[str, str]:
    m = o.get("metadata") or {}
    return m.get("namespace") or "", m.get("name") or ""


def _rbac(objects: list[Mapping], ns: str, spec: Mapping, watches: list[dict], label: str, where: str) -> list[Finding]:
    """The picker's service account may get, list and watch each kind its controllers reconcile."""
    account = spec.get("serviceAccountName") or "default"
    granted = _granted(objects, ns, account)
    out = []
    for watch in watches:
        group, plural = _resource(objects, watch["kind"], watch["package"].rpartition("/")[2])
        if plural is None:
            continue  # a kind whose CRD is not in the plan: the CRD check speaks for it
        if not {"get", "list", "watch"} <= granted.get((group, plural), set()) | granted.get((group, "*"), set()):
            message = f"{label}: service account {account} may not get, list and watch {plural} ({group or 'core'}), which the picker watches"
            out.append(Finding("request-path", "blocker", where, message, "grant them in the picker's Role"))
    return out


def _resource(objects: list[Mapping], kind: str, version: str) -> tuple[str, str | None]:
    """The API group and plural of ``kind`` at ``version`` (the Go package the picker imports it from), from the
    plan's CRDs: InferencePool is served as v1 by inference.networking.k8s.io and as v1alpha2 by the x-k8s group."""
    if kind in BUILTIN_RESOURCES:
        return BUILTIN_RESOURCES[kind]
    for crd in (o for o in objects if o.get("kind") == "CustomResourceDefinition"):
        spec = crd.get("spec") or {}
        served = {v.get("name") for v in spec.get("versions") or [] if v.get("served", True)}
        if (spec.get("names") or {}).get("kind") == kind and version in served:
            return spec.get("group", ""), (spec.get("names") or {}).get("plural")
    return "", None


def _granted(objects: list[Mapping], ns: str, account: str) -> dict[tuple[str, str], set[str]]:
    """(group, resource) -> verbs the account holds through RoleBindings in ``ns`` and ClusterRoleBindings."""
    out: dict[tuple[str, str], set[str]] = {}
    for binding in (o for o in objects if o.get("kind") in ("RoleBinding", "ClusterRoleBinding")):
        if binding["kind"] == "RoleBinding" and _ns_name(binding)[0] != ns:
            continue
        subjects = binding.get("subjects") or []
        if not any(
            s.get("kind") == "ServiceAccount" and s.get("name") == account and (s.get("namespace") or ns) == ns for s in subjects
        ):
            continue
        ref = binding.get("roleRef") or {}
        role_ns = ns if ref.get("kind") == "Role" else ""
        role = next((o for o in objects if o.get("kind") == ref.get("kind") and _ns_name(o) == (role_ns, ref.get("name"))), None)
        for rule in (role or {}).get("rules") or []:
            for group in rule.get("apiGroups") or []:
                for resource in rule.get("resources") or []:
                    out.setdefault((group, resource), set()).update(rule.get("verbs") or [])
    return out


def _finding(level: str, where: str, message: str) -> Finding:
    if level == "unchecked":
        return _unchecked(where, message)
    return Finding("request-path", level, where, message, "fix the config or the flag as the message says")


def _unchecked(where: str, message: str) -> Finding:
    how = "pin a release of the llm-d-router images this project has a table for (components/serving/llmd_registry)"
    return Finding("request-path", "unchecked", where, message, how)
