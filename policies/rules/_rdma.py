"""The one notion of "this pod uses RDMA" every RDMA rule shares: which containers of a pod reach InfiniBand, and how.

A container uses RDMA verbs when it

* consumes a DRA claim on a class that selects RDMA NICs (``_device_classes``), or the pod holds such a claim that
  no container lists (DRANET moves the NICs into the pod's network namespace, so every container has them);
* requests a device plugin's RDMA resource (``labels.is_rdma_resource``: ``rdma/*``, ``nvidia.com/hostdev``,
  SR-IOV and shared-device names such as ``mellanox.com/mlnx_rdma``);
* mounts the host's ``/dev/infiniband``, unless it is a DaemonSet's: a node agent that manages the devices
  (DRANET, a device plugin) mounts them for that, and claims no NIC;
* runs in a pod whose Multus networks (``k8s.v1.cni.cncf.io/networks``) are RDMA networks: a
  NetworkAttachmentDefinition whose ``k8s.v1.cni.cncf.io/resourceName`` is an RDMA resource or whose CNI config is
  ``ib-sriov`` or chains the ``rdma`` plugin, NVIDIA Network Operator's SriovIBNetwork or a HostDeviceNetwork or
  SriovNetwork on an RDMA resource, or, with no such object in the checked set, a network whose name says RDMA
  (``rdma``, ``roce``);
* selects InfiniBand through NCCL, UCX or NVSHMEM variables: ``NCCL_IB_HCA`` (not an exclusion), ``NCCL_NET=IB``,
  ``UCX_NET_DEVICES`` on mlx or ib devices, ``UCX_TLS`` naming InfiniBand transports without ``tcp``,
  ``NVSHMEM_HCA_LIST``.

A pod on an IP-over-InfiniBand network only (an IPoIBNetwork, an ``ipoib`` CNI config, or without such an object a
network named for InfiniBand: ``infiniband``, ``ipoib``, ``ib``) uses InfiniBand but not verbs: it must run on an
InfiniBand size, and needs no IPC_LOCK.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, NamedTuple

from aks_gpu_inference.components.core.labels import is_rdma_resource
from aks_gpu_inference.policies.manifests import (
    CONTAINER_LISTS,
    PodTemplate,
    StackIndex,
    container_claims,
    env_value,
    get,
    items,
    kube_kind,
    resources_of,
)
from aks_gpu_inference.policies.manifests.templates import api_of
from aks_gpu_inference.policies.rules._device_classes import ClassKinds, class_kinds, judge

NETWORKS_ANNOTATION = "k8s.v1.cni.cncf.io/networks"
RESOURCE_ANNOTATION = "k8s.v1.cni.cncf.io/resourceName"
INFINIBAND_DEVICES = "/dev/infiniband"
CLAIMS, MAYBE = "claims RDMA NICs", "may claim RDMA NICs"


class RdmaUse(NamedTuple):
    where: str
    container: Mapping[str, Any]
    certain: bool
    """False: it may use RDMA (its claims or their classes are unknown during preview)."""
    how: tuple[str, ...] = ()
    """What makes it an RDMA container, as the findings say it: ``claims RDMA NICs``, ``requests rdma/ib``..."""
    verbs: bool = True
    """False: it only joins an IP-over-InfiniBand network."""
    by_name: tuple[str, ...] = ()
    """The RDMA classes behind its claims that were judged by name, their DeviceClass not being at hand."""


class Context(NamedTuple):
    """What the checked set says about device classes and Multus networks, worked out once per stack."""

    kinds: ClassKinds
    networks: dict[tuple[str, str], str | None]
    """(namespace, name) of each network object: ``verbs``, ``ipoib`` or None (not InfiniBand)."""


def context(index: StackIndex) -> Context:
    return Context(class_kinds(index), _networks(index))


class _Uses:
    """What makes each container of a pod an RDMA container, gathered signal by signal."""

    def __init__(self) -> None:
        self.found: dict[str, tuple[Mapping[str, Any], list[str], dict[str, Any]]] = {}

    def add(self, where: str, container: Mapping[str, Any], how: str, *, certain=True, verbs=True, by_name=()) -> None:
        _, hows, flags = self.found.setdefault(where, (container, [], {"certain": False, "verbs": False, "named": set()}))
        if how not in hows:
            hows.append(how)
        flags["certain"] |= certain
        flags["verbs"] |= verbs
        flags["named"] |= set(by_name)

    def uses(self) -> list[RdmaUse]:
        return [
            RdmaUse(where, container, flags["certain"], tuple(hows), flags["verbs"], tuple(sorted(flags["named"])))
            for where, (container, hows, flags) in self.found.items()
        ]


def rdma_uses(index: StackIndex, template: PodTemplate, possibly: bool = False, ctx: Context | None = None) -> list[RdmaUse]:
    """The containers of a pod that use RDMA, each once with everything that makes it so.

    With ``possibly``, containers whose claims (or their classes) cannot be resolved during preview are included
    with ``certain=False``, for rules that fail closed. Pass ``ctx`` (``context``) when checking many pods."""
    ctx = context(index) if ctx is None else ctx
    found = _Uses()
    regular = [(w, c) for w, c in template.containers() if _is_regular(template, w)]
    _claim_uses(found, index, template, ctx.kinds, possibly, regular)
    agent = kube_kind(template.resource) == "DaemonSet"
    for where, container in template.containers():
        for name in sorted(n for n in resources_of(container) if is_rdma_resource(n)):
            found.add(where, container, f"requests {name}")
        if not agent and _mounts_infiniband(template.spec, container):
            found.add(where, container, f"mounts {INFINIBAND_DEVICES} from the host")
        for how in selects_infiniband(container):
            found.add(where, container, how)
    for name, kind in _pod_networks(template, ctx.networks):
        how = f"joins RDMA network {name}" if kind == "verbs" else f"joins InfiniBand network {name} (IP over InfiniBand)"
        for where, container in regular:
            found.add(where, container, how, verbs=kind == "verbs")
    return found.uses()


def _claim_uses(found: _Uses, index: StackIndex, template: PodTemplate, kinds: ClassKinds, possibly: bool, regular) -> None:
    """Containers that consume an RDMA claim, and every regular container when no container lists the claim (a NIC
    DRANET moves into the pod's network namespace is every container's)."""
    certain, maybe = _rdma_claims(index, template, kinds)
    consumed: set[str] | None = set()
    for where, container in template.containers():
        claims = container_claims(container)
        if claims is None:
            consumed = None  # it may consume any of the pod's claims
            if possibly and (certain or maybe):
                found.add(where, container, MAYBE, certain=False)
            continue
        if consumed is not None:
            consumed |= claims
        claims.add("*")
        if certain.keys() & claims:
            found.add(where, container, CLAIMS, by_name=set().union(*(certain[c] for c in certain.keys() & claims)))
        elif possibly and maybe & claims:
            found.add(where, container, MAYBE, certain=False)
    for claim in sorted(certain.keys() - (consumed if consumed is not None else set(certain)) - {"*"}):
        for where, container in regular:
            found.add(where, container, CLAIMS, by_name=certain[claim])


def describe(uses: list[RdmaUse]) -> str:
    """How a pod or container uses RDMA, for a finding: ``claims RDMA NICs (class ... judged by its name: ...)``."""
    hows = list(dict.fromkeys(h for use in uses for h in use.how))
    names = sorted({name for use in uses for name in use.by_name})
    note = f" (class {', '.join(names)} judged by its name: its DeviceClass is not among the checked resources)" if names else ""
    certain = [h for h in hows if h != MAYBE]
    if not certain:
        return "may claim RDMA NICs (claims unknown during preview; fails closed)"
    return " and ".join(certain) + note


def _is_regular(template: PodTemplate, where: str) -> bool:
    """A container of ``containers`` (or kept elsewhere by its operator), not an init or ephemeral one."""
    return not any(f"{template.path}{name}[" in where for name in CONTAINER_LISTS if name != "containers")


def _rdma_claims(index: StackIndex, template: PodTemplate, kinds: ClassKinds) -> tuple[dict[str, set[str]], set[str]]:
    """The pod's claims on RDMA classes (each with the classes behind it judged by name), and the claims
    that may be (a class unknown during preview)."""
    certain: dict[str, set[str]] = {}
    maybe: set[str] = set()
    for claim, classes in index.pod_claim_classes(template).items():
        for name in classes:
            selected, named = judge(name, kinds)
            if selected is None:
                maybe.add(claim)
            elif "rdma" in selected:
                certain.setdefault(claim, set())
                if named:
                    certain[claim].add(name)
    return certain, maybe


def _mounts_infiniband(spec: Mapping[str, Any], container: Mapping[str, Any]) -> bool:
    """The container mounts the host's /dev/infiniband (a hostPath volume there, or a mount at that path whose volume
    is not a known non-host volume)."""
    volumes = {get(v, "name"): v for v in items(spec.get("volumes")) if isinstance(v, Mapping)}
    for mount in items(container.get("volumeMounts")):
        volume = volumes.get(get(mount, "name"))
        host = get(volume, "hostPath", "path")
        if isinstance(host, str) and host.rstrip("/").startswith(INFINIBAND_DEVICES):
            return True
        path = get(mount, "mountPath")
        if isinstance(path, str) and path.rstrip("/") == INFINIBAND_DEVICES and (volume is None or "hostPath" in volume):
            return True
    return False


_IB_TRANSPORTS = re.compile(r"(rc|ud|dc)(_v|_x|_mlx5|_verbs)?|ib")


def selects_infiniband(container: Mapping[str, Any]) -> list[str]:
    """The NCCL, UCX and NVSHMEM variables of a container that select InfiniBand (values from valueFrom are unknown
    and left out), as ``selects InfiniBand (NCCL_IB_HCA)``."""
    names = ("NCCL_IB_HCA", "NCCL_NET", "UCX_NET_DEVICES", "UCX_TLS", "NVSHMEM_HCA_LIST")
    values = {name: env_value(container, name) for name in names}
    values = {k: v.strip() for k, v in values.items() if isinstance(v, str) and v.strip()}
    devices = [d.split(":")[0].strip() for d in values.get("UCX_NET_DEVICES", "").split(",")]
    transports = [t.strip() for t in values.get("UCX_TLS", "").split(",")]
    selecting = {
        "NCCL_IB_HCA": not values.get("NCCL_IB_HCA", "^").startswith("^"),  # ^ excludes the HCAs named
        "NCCL_NET": values.get("NCCL_NET", "").upper() == "IB",
        "UCX_NET_DEVICES": any(d.startswith(("mlx", "ib")) for d in devices),
        "UCX_TLS": not values.get("UCX_TLS", "^").startswith("^")
        and any(_IB_TRANSPORTS.fullmatch(t) for t in transports)
        and "tcp" not in transports,
        "NVSHMEM_HCA_LIST": "NVSHMEM_HCA_LIST" in values,
    }
    return [
        f"selects InfiniBand ({name}={values[name]})" if len(values[name]) <= 40 else f"selects InfiniBand ({name})"
        for name in names
        if selecting[name]
    ]


# ---- Multus networks ---------------------------------------------------------------------------

_RDMA_NAME = re.compile(r"rdma|roce", re.I)
_INFINIBAND_NAME = re.compile(r"infiniband|ipoib|(^|[-_.])ib($|[-_.])", re.I)


def _pod_networks(template: PodTemplate, networks: dict[tuple[str, str], str | None]) -> list[tuple[str, str]]:
    """(name, ``verbs`` or ``ipoib``) of each InfiniBand network the pod's Multus annotation names."""
    text = get(template.metadata, "annotations", NETWORKS_ANNOTATION)
    if not isinstance(text, str) or not text.strip():
        return []
    namespace = get(template.resource.props, "metadata", "namespace")
    namespace = namespace if isinstance(namespace, str) else "default"
    found = []
    for net_namespace, name in _network_names(text, namespace):
        if (net_namespace, name) in networks:
            kind = networks[net_namespace, name]
        else:
            kind = "verbs" if _RDMA_NAME.search(name) else "ipoib" if _INFINIBAND_NAME.search(name) else None
        if kind is not None:
            found.append((f"{net_namespace}/{name}" if net_namespace != namespace else name, kind))
    return found


def _network_names(text: str, namespace: str) -> list[tuple[str, str]]:
    """(namespace, name) of each network of a ``k8s.v1.cni.cncf.io/networks`` value: a JSON list of selection
    elements, or ``[namespace/]name[@interface]`` items separated by commas (k8snetworkplumbingwg/multus-cni
    pkg/k8sclient parsePodNetworkAnnotation)."""
    text = text.strip()
    if text.startswith("["):
        try:
            elements = json.loads(text)
        except ValueError:
            return []
        return [
            (e.get("namespace") if isinstance(e.get("namespace"), str) else namespace, e["name"])
            for e in elements
            if isinstance(e, dict) and isinstance(e.get("name"), str)
        ]
    found = []
    for item in text.split(","):
        item = item.strip().split("@")[0]
        if item:
            net_namespace, _, name = item.rpartition("/")
            found.append((net_namespace or namespace, name))
    return found


def _networks(index: StackIndex) -> dict[tuple[str, str], str | None]:
    """Every network object of the checked set, by (namespace, name), with what it carries."""
    found: dict[tuple[str, str], str | None] = {}
    for r in index.resources:
        api = api_of(r.type)
        name = get(r.props, "metadata", "name")
        if api is None or not isinstance(name, str):
            continue
        namespace = get(r.props, "metadata", "namespace")
        namespace = namespace if isinstance(namespace, str) else "default"
        kind = _network_kind(api[0], api[2], r.props)
        if kind != "":
            # Network Operator's networks make a NetworkAttachmentDefinition in spec.networkNamespace.
            target = get(r.props, "spec", "networkNamespace")
            found[(target if isinstance(target, str) and target else namespace, name)] = kind
    return found


def _network_kind(group: str, kind: str, props: Mapping[str, Any]) -> str | None:
    """``verbs``, ``ipoib`` or None for a network object; ``""`` for any other object."""
    if (group, kind) == ("k8s.cni.cncf.io", "NetworkAttachmentDefinition"):
        if is_rdma_resource(get(props, "metadata", "annotations", RESOURCE_ANNOTATION)):
            return "verbs"
        types = _cni_types(get(props, "spec", "config"))
        return "verbs" if types & {"ib-sriov", "rdma"} else "ipoib" if "ipoib" in types else None
    if (group, kind) == ("mellanox.com", "IPoIBNetwork"):
        return "ipoib"
    if (group, kind) == ("sriovnetwork.openshift.io", "SriovIBNetwork"):
        return "verbs"
    if (group, kind) in (("mellanox.com", "HostDeviceNetwork"), ("sriovnetwork.openshift.io", "SriovNetwork")):
        return "verbs" if is_rdma_resource(get(props, "spec", "resourceName")) else None
    if (group, kind) == ("mellanox.com", "MacvlanNetwork"):
        return None
    return ""


def _cni_types(config: Any) -> set[str]:
    """The CNI plugin types a NetworkAttachmentDefinition's config (JSON text) names, its plugin chain included."""
    try:
        parsed = json.loads(config) if isinstance(config, str) else None
    except ValueError:
        return set()
    if not isinstance(parsed, dict):
        return set()
    plugins = [parsed, *(p for p in parsed.get("plugins", []) if isinstance(p, dict))]
    return {p["type"] for p in plugins if isinstance(p.get("type"), str)}
