"""Claim satisfiability: would the scheduler find devices for each ResourceClaimTemplate?

For every pool of the plan it simulates the ResourceSlices the drivers would publish on one node
(DRANET's NICs from the catalog's InfiniBand count, the NVIDIA DRA driver's GPUs or MIG slices),
with the attribute names the drivers publish, then evaluates each claim's DeviceClass and request
selectors with cel-python and compares the matches with the requested count. cel-python is imported,
and its parser built, only for a plan that has claim templates.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aks_gpu_inference.components.core import catalog, pins
from aks_gpu_inference.components.core.labels import (
    AGENTPOOL_LABEL,
    DRANET_DRIVER,
    GPU_DEVICE_CLASS,
    INTERCONNECT_LABEL,
    MIG_DEVICE_CLASS,
    NVIDIA_DRA_DRIVER,
    POOL_ANNOTATION,
    RDMA_DEVICE_CLASS,
)
from aks_gpu_inference.components.gpu.compute_domain import CHANNEL_CLASS_CEL, CHANNEL_DEVICE_CLASS, COMPUTE_DOMAIN_DRIVER
from aks_gpu_inference.planner.azure.pools import agent_pool, aks_managed_gpus
from aks_gpu_inference.planner.engine.mocks import interconnect_attributes
from aks_gpu_inference.planner.engine.program import ProgramRun
from aks_gpu_inference.policies.cel import cel_environment

# The classes the NVIDIA DRA driver chart creates itself (its deviceclass templates).
CHART_CLASSES = {
    GPU_DEVICE_CLASS: f"device.driver == '{NVIDIA_DRA_DRIVER}' && device.attributes['{NVIDIA_DRA_DRIVER}'].type == 'gpu'",
    MIG_DEVICE_CLASS: f"device.driver == '{NVIDIA_DRA_DRIVER}' && device.attributes['{NVIDIA_DRA_DRIVER}'].type == 'mig'",
    CHANNEL_DEVICE_CLASS: CHANNEL_CLASS_CEL,
}
PLACEHOLDER_PLACEMENT_GROUP = "<simulated placement group>"


@dataclass(frozen=True)
class SimPool:
    name: str
    vm_size: str
    mig_profile: str | None
    dranet: bool
    gpu_driver: bool
    interconnect: dict[str, str] | None = None
    """``interconnectGroupId`` and ``interconnectSubgroupId`` DRANET would publish: the plan's placeholders for the
    group the pool is labelled with, as if Azure had placed the VMs there (which no plan can check)."""
    compute_domains: bool = False
    """The DRA driver's ComputeDomain plugin runs there (a rack-scale pool with computeDomains on)."""


def _attrs(values: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """ResourceSlice attribute values: {"rdma": True} -> {"rdma": {"bool": True}}."""
    kinds = {bool: "bool", int: "int", str: "string"}
    return {name: {kinds[type(value)]: value} for name, value in values.items()}


def resource_slice(driver: str, node: str, devices: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": pins.api_version("ResourceClaimTemplate"),
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{driver.replace('.', '-')}"},
        "spec": {
            "driver": driver,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def nic_slice(sku: catalog.GpuSku, node: str, interconnect: Mapping[str, str] | None = None) -> dict[str, Any]:
    """What DRANET publishes on one node: the InfiniBand NICs (rdma) and the VNet NIC (not rdma).

    Short names belong to the driver's domain (``dra.net``); Azure facts are fully qualified. A VM in an interconnect
    group also carries its group and subgroup (DRANET v1.4.0, from IMDS).
    """
    azure = {"azure.dra.net/vmSize": sku.name, "azure.dra.net/placementGroupId": PLACEHOLDER_PLACEMENT_GROUP}
    azure.update({f"azure.dra.net/{name}": value for name, value in (interconnect or {}).items()})
    half = max(1, sku.infiniband_nics // 2)
    devices = [
        {
            "name": f"ib{i}",
            "attributes": _attrs(
                {
                    "rdma": True,
                    "ifName": f"ib{i}",
                    "rdmaDevice": f"mlx5_{i}",
                    "pciAddress": f"0000:{i + 1:02x}:00.0",
                    "numaNode": i // half,
                    **azure,
                }
            ),
        }
        for i in range(sku.infiniband_nics)
    ]
    devices.append(
        {
            "name": "eth0",
            "attributes": _attrs({"rdma": False, "ifName": "eth0", "pciAddress": "0000:00:0a.0", "numaNode": 0, **azure}),
        }
    )
    return resource_slice(DRANET_DRIVER, node, devices)


def gpu_slice(sku: catalog.GpuSku, mig_profile: str | None, node: str) -> dict[str, Any]:
    """What the NVIDIA DRA driver publishes on one node: whole GPUs, or the MIG slices of each."""
    product = (sku.product_names or [sku.gpu_model])[0]
    devices = []
    for g in range(sku.gpus):
        base = {"productName": product, "brand": "Nvidia", "uuid": f"GPU-{g:08d}"}
        if mig_profile in sku.mig_profiles:
            for s in range(catalog.mig_slices_per_gpu(mig_profile)):
                attributes = {
                    **base,
                    "type": "mig",
                    "profile": sku.mig_profiles[mig_profile],
                    "parentUUID": base["uuid"],
                    "uuid": f"MIG-{g:04d}-{s:02d}",
                }
                devices.append({"name": f"gpu-{g}-mig-{s}", "attributes": _attrs(attributes)})
        else:
            devices.append({"name": f"gpu-{g}", "attributes": _attrs({**base, "type": "gpu"})})
    return resource_slice(NVIDIA_DRA_DRIVER, node, devices)


def node_slices(pool: SimPool) -> list[dict[str, Any]]:
    """The ResourceSlices one node of the pool would publish."""
    sku = catalog.get_sku(pool.vm_size)
    node = f"aks-{pool.name}-00000000-vmss000000"
    slices = [nic_slice(sku, node, pool.interconnect)] if pool.dranet else []
    if pool.gpu_driver and sku.gpu_vendor == "nvidia":
        slices.append(gpu_slice(sku, pool.mig_profile, node))
    if pool.compute_domains:
        slices.append(channel_slice(node))
    return slices


def channel_slice(node: str) -> dict[str, Any]:
    """What the DRA driver's ComputeDomain plugin publishes on a node: IMEX channels and the daemon device (device
    names ``channel-<id>``/``daemon-<id>``, attributes ``type`` and ``id``: kubernetes-sigs/dra-driver-nvidia-gpu@v0.4.1
    cmd/compute-domain-kubelet-plugin/deviceinfo.go). The default channel class takes channel 0."""
    devices = [
        {"name": "channel-0", "attributes": _attrs({"type": "channel", "id": 0})},
        {"name": "daemon-0", "attributes": _attrs({"type": "daemon", "id": 0})},
    ]
    return resource_slice(COMPUTE_DOMAIN_DRIVER, node, devices)


def cel_devices(slices: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``device`` variable CEL sees for each device of some ResourceSlices.

    A short attribute name belongs to the slice's driver domain. As in Kubernetes, a domain a
    device does not publish reads as an empty map.
    """
    devices = []
    for slice_ in slices:
        driver = slice_["spec"]["driver"]
        for device in slice_["spec"]["devices"]:
            attributes: dict[str, dict[str, Any]] = {}
            for key, value in device.get("attributes", {}).items():
                domain, _, name = key.rpartition("/") if "/" in key else (driver, "", key)
                attributes.setdefault(domain, {})[name] = next(iter(value.values()))
            devices.append({"name": device["name"], "driver": driver, "attributes": attributes})
    domains = {domain for device in devices for domain in device["attributes"]}
    for device in devices:
        device["attributes"] = {domain: device["attributes"].get(domain, {}) for domain in domains}
    return devices


@dataclass
class Verdict:
    template: str
    namespace: str
    pool: str
    request: str
    device_class: str
    needed: int | str
    matched: int
    satisfiable: bool
    reason: str


class Selector:
    """A compiled CEL expression. An evaluation error means "no match", as a failed selector does."""

    def __init__(self, expression: str):
        env = cel_environment()
        self.expression = expression
        self.program = env.program(env.compile(expression))

    def match(self, device: dict[str, Any]) -> tuple[bool, str | None]:
        import celpy

        try:
            return bool(self.program.evaluate({"device": celpy.json_to_cel(device)})), None
        except celpy.CELEvalError as err:
            return False, f"{device['name']}: {err.args[0]}"


def _expressions(selectors: Any) -> list[str]:
    return [s["cel"]["expression"] for s in selectors or [] if isinstance(s, Mapping) and "cel" in s]


def sim_pools(run: ProgramRun) -> list[SimPool]:
    """The plan's GPU pools, with which DRA drivers would run on them."""
    charts = {r.name: r.inputs for r in run.resources if r.type == "kubernetes:helm.sh/v4:Chart"}
    dranet = next((c for c in charts.values() if str(c.get("chart", "")).endswith("/dranet")), None)
    gpu_driver = next((c for c in charts.values() if "dra-driver-nvidia-gpu" in str(c.get("chart", ""))), None)
    domains = bool(((gpu_driver or {}).get("values", {}).get("resources") or {}).get("computeDomains", {}).get("enabled"))
    groups = {
        str(r.inputs.get("interconnectGroupName")): interconnect_attributes(r.name)
        for r in run.resources
        if r.type == "azure-native:network:InterconnectGroup"
    }
    pools = []
    for r in run.resources:
        found = agent_pool(r)
        if found is None:
            continue
        name, inputs = found
        vm_size = inputs.get("vmSize")
        if vm_size not in catalog.skus():
            continue
        sku = catalog.get_sku(vm_size)
        group = groups.get(str((inputs.get("nodeLabels") or {}).get(INTERCONNECT_LABEL)))
        runs_gpu_driver = not aks_managed_gpus(inputs) and (
            gpu_driver is None or _selects(gpu_driver.get("values", {}).get("kubeletPlugin", {}), name)
        )
        pools.append(
            SimPool(
                name=name,
                vm_size=vm_size,
                mig_profile=inputs.get("gpuInstanceProfile"),
                # Without a chart in this stack the driver may be installed already: assume it runs where the hardware is.
                dranet=sku.rdma and (dranet is None or _selects(dranet.get("values", {}), name)),
                # AKS's managed GPU experience serves GPUs through its device plugin; the DRA driver never runs there.
                gpu_driver=runs_gpu_driver,
                interconnect=group
                and {"interconnectGroupId": group["resourceGuid"], "interconnectSubgroupId": group["internalSubgroupId"]},
                compute_domains=runs_gpu_driver and domains and gpu_driver is not None and bool(sku.rack_size),
            )
        )
    return pools


def _selects(values: Mapping[str, Any], pool: str) -> bool:
    """Whether chart values' nodeSelector/affinity on the agentpool label admit ``pool``."""
    selector = (values.get("nodeSelector") or {}).get(AGENTPOOL_LABEL)
    if selector is not None:
        return selector == pool
    terms = (
        values.get("affinity", {})
        .get("nodeAffinity", {})
        .get("requiredDuringSchedulingIgnoredDuringExecution", {})
        .get("nodeSelectorTerms", [])
    )
    for term in terms:
        for expression in term.get("matchExpressions", []):
            if expression.get("key") == AGENTPOOL_LABEL:
                return pool in expression.get("values", [])
    return True


@dataclass(frozen=True)
class _Request:
    """One device request of a claim template, as the verdicts name it."""

    template: str
    namespace: str
    name: str
    device_class: str
    needed: int | str
    selectors: tuple[Selector, ...]


def check(run: ProgramRun) -> list[Verdict]:
    """A verdict per (claim template, request, target pool)."""
    templates = [r.inputs for r in run.resources if r.type.endswith("resource.k8s.io/v1:ResourceClaimTemplate")]
    templates += [domain_channel_template(r.inputs) for r in run.resources if r.type.endswith(":ComputeDomain")]
    if not templates:
        return []
    classes = dict(CHART_CLASSES)
    for r in run.resources:
        if r.type.endswith("resource.k8s.io/v1:DeviceClass"):
            inputs = r.inputs
            classes[inputs["metadata"]["name"]] = (
                " && ".join(f"({e})" for e in _expressions(inputs["spec"].get("selectors"))) or "true"
            )
    compiled = {name: Selector(expression) for name, expression in classes.items()}
    pools = sorted(sim_pools(run), key=lambda p: p.name)
    devices = {pool.name: cel_devices(node_slices(pool)) for pool in pools}
    verdicts = []
    for inputs in templates:
        metadata = inputs["metadata"]
        target = (metadata.get("annotations") or {}).get(POOL_ANNOTATION)
        targets = [p for p in pools if target is None or p.name == target]
        for request in inputs["spec"]["spec"]["devices"]["requests"]:
            exactly = request.get("exactly", {})
            wanted = _Request(
                metadata["name"],
                metadata.get("namespace", "default"),
                request["name"],
                exactly.get("deviceClassName"),
                "All" if exactly.get("allocationMode") == "All" else exactly.get("count", 1),
                tuple(Selector(e) for e in _expressions(exactly.get("selectors"))),
            )
            results = [
                _verdict(wanted, compiled.get(wanted.device_class), pool, devices.get(pool.name, []))
                for pool in targets or [SimPool(target or "any pool", "?", None, False, False)]
            ]
            if target is None and len(results) > 1:
                # Not written for one pool: satisfiable if some pool can serve it.
                fits = [v for v in results if v.satisfiable]
                best = fits[0] if fits else results[0]
                best.pool = ", ".join(v.pool for v in fits) if fits else "no pool"
                results = [best]
            verdicts.extend(results)
    return sorted(verdicts, key=lambda v: (v.namespace, v.template, v.request, v.pool))


def domain_channel_template(domain: Mapping[str, Any]) -> dict[str, Any]:
    """The ResourceClaimTemplate a ComputeDomain's controller creates: in the domain's namespace, named by
    ``spec.channel.resourceClaimTemplate.name``, one device of the default channel class (the controller's
    templates/compute-domain-workload-claim-template.tmpl.yaml at v0.4.1)."""
    metadata = domain.get("metadata") or {}
    name = ((domain.get("spec") or {}).get("channel") or {}).get("resourceClaimTemplate", {}).get("name")
    return {
        "metadata": {"name": name, "namespace": metadata.get("namespace", "default")},
        "spec": {"spec": {"devices": {"requests": [{"name": "channel", "exactly": {"deviceClassName": CHANNEL_DEVICE_CLASS}}]}}},
    }


def _verdict(wanted: _Request, device_class: Selector | None, pool: SimPool, devices: list[dict[str, Any]]) -> Verdict:
    def verdict(matched: int, ok: bool, reason: str) -> Verdict:
        return Verdict(
            wanted.template, wanted.namespace, pool.name, wanted.name, wanted.device_class, wanted.needed, matched, ok, reason
        )

    if device_class is None:
        return verdict(0, False, f"DeviceClass {wanted.device_class!r} is not in the stack or a driver chart")
    if pool.vm_size == "?":
        return verdict(0, False, "its pool is not in the stack")
    count, errors = _matching(device_class, wanted.selectors, devices)
    what = "NICs" if wanted.device_class == RDMA_DEVICE_CLASS else "devices"
    if errors:
        # The scheduler aborts the allocation when a selector fails to evaluate on any device.
        return verdict(count, False, f"a CEL selector fails on {pool.vm_size} devices, which aborts allocation: {errors[0]}")
    ok = count > 0 if wanted.needed == "All" else count >= wanted.needed
    if ok:
        return verdict(count, True, f"{count} matching {what} per node")
    return verdict(count, False, f"needs {wanted.needed} {what}, {pool.vm_size} nodes publish {count}")


def _matching(device_class: Selector, selectors: tuple[Selector, ...], devices: list[dict[str, Any]]) -> tuple[int, list[str]]:
    """How many devices the class and then the request's selectors admit, and the evaluation errors."""
    count, errors = 0, []
    for device in devices:
        # The class narrows first; request selectors only see devices of the class.
        ok, error = device_class.match(device)
        for selector in selectors:
            if not ok:
                break
            ok, error = selector.match(device)
        if error:
            errors.append(error)
        count += ok
    return count, errors
