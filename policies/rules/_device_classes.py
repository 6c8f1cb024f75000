"""What a DRA DeviceClass selects, judged by its CEL selectors instead of by its name.

A claim names a DeviceClass (``deviceClassName``); what it gets is whatever the class's selectors
(``spec.selectors[].cel.expression``, ANDed) admit. ``classify`` evaluates them with cel-python, as
``planner.claims`` does, on synthetic devices shaped like the ResourceSlices the drivers publish:
DRANET's NICs (``dra.net``: InfiniBand NICs with ``rdma: true`` per RDMA size of the catalog, the
VNet NIC with ``rdma: false`` per size), the NVIDIA DRA driver's whole GPUs, MIG slices and VFIO
GPUs (``gpu.nvidia.com``, one per catalog product and MIG profile), a ``mig.nvidia.com`` slice and
AMD GPUs and partitions (``gpu.amd.com``). A class is

* ``rdma`` when it admits an RDMA NIC, whether or not it also admits plain NICs: DRANET publishes
  both under driver ``dra.net``, so a class taking every ``dra.net`` device (DRANET's own
  ``dranet.net`` example) may hand a claim RDMA NICs, and its pods must follow the RDMA contract;
* ``gpu`` when it admits a GPU device.

A class without selectors admits every device, so it is both. When the selectors admit none of the
synthetic devices (an attribute value the synthetic devices do not carry, a function cel-python
lacks such as ``quantity()``) or do not compile, a textual recognizer decides instead:
``device.driver == "<driver>"`` (or ``in [...]``) naming ``dra.net`` means RDMA unless the text
tests the ``rdma`` attribute other than ``== true``, naming ``gpu.nvidia.com``, ``mig.nvidia.com`` or
``gpu.amd.com`` means GPUs. A claim whose class has no DeviceClass object in
the stack (or the scanned set) is judged by its name, as before: ``dranet.net`` is RDMA,
``gpu.nvidia.com`` and ``mig.nvidia.com`` are GPUs.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from aks_gpu_inference.components.core import catalog
from aks_gpu_inference.components.core.labels import DRANET_DRIVER, NVIDIA_DRA_DRIVER, RDMA_DEVICE_CLASS
from aks_gpu_inference.policies.cel import cel_environment, remembered
from aks_gpu_inference.policies.manifests import (
    GPU_DEVICE_CLASSES,
    UNKNOWN_CLASS,
    StackIndex,
    get,
    is_unknown,
    items,
    kube_kind,
)

Kind = Literal["gpu", "rdma"]
ClassKinds = dict[str, set[Kind] | None]
"""DeviceClass name -> what it selects; None when its selectors are unknown during preview."""

NVIDIA_MIG_DRA_DRIVER = "mig.nvidia.com"
"""The driver name of MIG devices in older NVIDIA DRA driver releases (now ``gpu.nvidia.com`` devices of type mig)."""
AMD_DRA_DRIVER = "gpu.amd.com"
"""AMD's GPU DRA driver: its devices are GPUs and GPU partitions."""
GPU_DRIVERS = (NVIDIA_DRA_DRIVER, NVIDIA_MIG_DRA_DRIVER, AMD_DRA_DRIVER)
"""Drivers whose devices are GPUs."""
BY_NAME: dict[str, set[Kind]] = {RDMA_DEVICE_CLASS: {"rdma"}, **{name: {"gpu"} for name in GPU_DEVICE_CLASSES}}
"""The judgement by class name, for a claim whose DeviceClass object is not at hand."""

Role = Literal["rdma-nic", "nic", "gpu"]


# ---- synthetic devices -------------------------------------------------------------------------


def _nic(vm_size: str, if_name: str, rdma: bool, index: int) -> dict[str, Any]:
    attributes: dict[str, Any] = {"rdma": rdma, "ifName": if_name, "pciAddress": f"0000:{index + 1:02x}:00.0", "numaNode": 0}
    if rdma:
        attributes["rdmaDevice"] = f"mlx5_{index}"
    azure = {"vmSize": vm_size, "placementGroupId": "<synthetic placement group>"}
    return {"name": if_name, "driver": DRANET_DRIVER, "attributes": {DRANET_DRIVER: attributes, "azure.dra.net": azure}}


def _gpu(driver: str, name: str, **attributes: Any) -> dict[str, Any]:
    return {"name": name, "driver": driver, "attributes": {driver: attributes}}


def synthetic_devices() -> list[tuple[Role, dict[str, Any]]]:
    """The devices classes are tried on, each with its role, as the CEL ``device`` variable.

    As in Kubernetes (and ``planner.claims.cel_devices``), an attribute domain a device does not
    publish reads as an empty map, so ``device.attributes["dra.net"].rdma`` is an error (no match)
    on a GPU rather than an unknown key.
    """
    return list(_synthetic())


@functools.cache
def _synthetic() -> tuple[tuple[Role, dict[str, Any]], ...]:
    skus = sorted(catalog.skus().values(), key=lambda s: s.name)
    devices: list[tuple[Role, dict[str, Any]]] = []
    for sku in skus:
        if sku.rdma:
            devices += [("rdma-nic", _nic(sku.name, f"ib{i}", True, i)) for i in range(max(1, sku.infiniband_nics))]
        devices.append(("nic", _nic(sku.name, "eth0", False, 9)))
    products = sorted({p for sku in skus for p in sku.product_names})
    for n, product in enumerate(products):
        base = {"productName": product, "brand": "Nvidia", "uuid": f"GPU-{n:08d}", "index": 0, "minor": 0}
        devices.append(("gpu", _gpu(NVIDIA_DRA_DRIVER, f"gpu-{n}", type="gpu", **base)))
        devices.append(("gpu", _gpu(NVIDIA_DRA_DRIVER, f"gpu-{n}-vfio", type="vfio", **base)))
    migs = sorted({(p, profile) for sku in skus for p in sku.product_names for profile in sku.mig_profiles.values()})
    for n, (product, profile) in enumerate(migs):
        mig = {"type": "mig", "profile": profile, "productName": product, "brand": "Nvidia", "parentUUID": "GPU-0"}
        devices.append(("gpu", _gpu(NVIDIA_DRA_DRIVER, f"gpu-0-mig-{n}", uuid=f"MIG-{n:08d}", **mig)))
    legacy_mig = {"type": "mig", "profile": "1g.10gb", "productName": "NVIDIA A100 80GB PCIe", "parentUUID": "GPU-0"}
    devices.append(("gpu", _gpu(NVIDIA_MIG_DRA_DRIVER, "mig-0", uuid="MIG-legacy", **legacy_mig)))
    amd = {"productName": "AMD Instinct MI300X", "deviceID": "0x74a1", "numaNode": 0}
    devices.append(("gpu", _gpu(AMD_DRA_DRIVER, "gpu-0-128", type="amdgpu", partitionProfile="spx_nps1", **amd)))
    devices.append(("gpu", _gpu(AMD_DRA_DRIVER, "gpu-0-129", type="amdgpu-partition", partitionProfile="cpx_nps4", **amd)))
    import celpy  # here, not at the top: importing it costs a third of a second

    domains = {domain for _, device in devices for domain in device["attributes"]}
    result = []
    for role, device in devices:
        attributes = {domain: device["attributes"].get(domain, {}) for domain in sorted(domains)}
        cel = celpy.json_to_cel({**device, "attributes": attributes, "capacity": {domain: {} for domain in sorted(domains)}})
        result.append((role, cel))
    return tuple(result)


# ---- judging one DeviceClass -------------------------------------------------------------------


@functools.lru_cache(maxsize=512)
def _program(expression: str) -> Any:
    try:
        return cel_environment().program(cel_environment().compile(expression))
    except Exception:  # celpy raises parse errors of several kinds; the API server would reject the class
        return None


def _matches(program: Any, device: Any) -> bool:
    """A selector on one device; an evaluation error is "no match", as in ``planner.claims.Selector``."""
    try:
        return bool(program.evaluate({"device": device}))
    except Exception:  # CELEvalError and the odd TypeError of a mistyped comparison
        return False


_DRIVER_EQ = re.compile(r"""device\.driver\s*==\s*(["'])([^"']+)\1|(["'])([^"']+)\3\s*==\s*device\.driver""")
_DRIVER_IN = re.compile(r"""device\.driver\s+in\s*\[([^\]]*)\]""")
_RDMA = re.compile(r"""\.rdma\b|\[\s*["']rdma["']\s*\]""")
_RDMA_TRUE = re.compile(r"""(\.rdma|\[\s*["']rdma["']\s*\])\s*==\s*true\b""")


def recognize(expression: str) -> set[Kind]:
    """What a selector text names: drivers compared with ``device.driver``, and the ``rdma`` attribute.

    Naming ``dra.net`` is RDMA when the text leaves ``rdma`` alone (every DRANET NIC, RDMA ones
    included) or tests ``rdma == true``. It reads no structure (``!``, ``||``), so it only decides
    when evaluation on the synthetic devices admitted none of them.
    """
    drivers = {m[2] or m[4] for m in _DRIVER_EQ.finditer(expression)}
    for listed in _DRIVER_IN.finditer(expression):
        drivers |= {m[2] for m in re.finditer(r"""(["'])([^"']+)\1""", listed[1])}
    kinds: set[Kind] = set()
    if DRANET_DRIVER in drivers and (_RDMA_TRUE.search(expression) or not _RDMA.search(expression)):
        kinds.add("rdma")
    if drivers & set(GPU_DRIVERS):
        kinds.add("gpu")
    return kinds


@functools.lru_cache(maxsize=256)
def _kinds(expressions: tuple[str, ...]) -> frozenset[Kind]:
    if not expressions:
        return frozenset({"gpu", "rdma"})  # no selectors admit every device: GPUs, and NICs with and without RDMA
    # The verdict depends on the texts, this module and the catalog the synthetic devices come from: kept across
    # runs under those, so a scan of a class seen before needs no cel-python at all.
    depends_on = (Path(__file__), catalog.DATA_FILE)
    return remembered(expressions, depends_on, lambda: _evaluated(expressions))


def _evaluated(expressions: tuple[str, ...]) -> frozenset[Kind]:
    programs = [_program(e) for e in expressions]
    if all(p is not None for p in programs):
        matched = {role for role, device in _synthetic() if all(_matches(p, device) for p in programs)}
        if matched:
            kinds: set[Kind] = set()
            if "rdma-nic" in matched:
                kinds.add("rdma")
            if "gpu" in matched:
                kinds.add("gpu")
            return frozenset(kinds)
    return frozenset(recognize(" && ".join(f"({e})" for e in expressions)))


def selector_expressions(device_class: Mapping[str, Any]) -> list[str] | None:
    """The CEL expressions of a DeviceClass; None when any is unknown during preview."""
    selectors = get(device_class, "spec", "selectors")
    if is_unknown(selectors):
        return None
    expressions = []
    for selector in items(selectors):
        expression = get(selector, "cel", "expression")
        if is_unknown(expression):
            return None
        if isinstance(expression, str):
            expressions.append(expression)
    return expressions


def classify(device_class: Mapping[str, Any]) -> set[Kind] | None:
    """What a DeviceClass object (its manifest or Pulumi inputs) selects: ``gpu``, ``rdma``, both or neither.

    A class without selectors admits every device, GPUs included. None: its selectors are unknown
    during preview, so it cannot be judged.
    """
    expressions = selector_expressions(device_class)
    return None if expressions is None else set(_kinds(tuple(expressions)))


def class_kinds(index: StackIndex) -> ClassKinds:
    """Every DeviceClass of the stack (or scanned set), by name, with what it selects.

    Two objects of one name (a stack and a chart rendering the same class) give the union; an
    unknown one makes the name unknown.
    """
    found: ClassKinds = {}
    for r in index.resources:
        if kube_kind(r) != "DeviceClass":
            continue
        name = get(r.props, "metadata", "name", default=r.name)
        if not isinstance(name, str):
            continue
        kinds = classify(r.props)
        if name in found:
            before = found[name]
            kinds = None if before is None or kinds is None else before | kinds
        found[name] = kinds
    return found


def judge(name: str, kinds: ClassKinds) -> tuple[set[Kind] | None, bool]:
    """What a claim's class selects, and whether that was judged by its name (no DeviceClass object).

    None: it cannot be known during preview (the claim's class, or the class's selectors).
    """
    if name == UNKNOWN_CLASS:
        return None, False
    if name in kinds:
        return kinds[name], False
    return set(BY_NAME.get(name, set())), True
