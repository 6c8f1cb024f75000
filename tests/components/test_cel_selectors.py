"""Every CEL selector the project renders: it compiles, and on realistic ResourceSlices it selects
exactly the devices it is meant to, no more and no fewer.

The fixtures in tests/fixtures/resourceslices are what DRANET (``dra.net``), the NVIDIA GPU DRA
driver (``gpu.nvidia.com``) and an unrelated driver publish on four nodes. Selectors are evaluated
with cel-python on ``planner.claims.cel_devices``; a DeviceClass selector and a request selector are
ANDed (class first), as the scheduler's allocator does.
"""

from __future__ import annotations

import functools
from pathlib import Path

import celpy
import kubernetes_validate
import pytest
import yaml

from aks_gpu_inference.components.core import catalog
from aks_gpu_inference.components.core.labels import GPU_DEVICE_CLASS, MIG_DEVICE_CLASS, NVIDIA_DRA_DRIVER, RDMA_DEVICE_CLASS
from aks_gpu_inference.components.gpu.dra_manifests import mig_profile_cel, model_class_cel, model_class_name
from aks_gpu_inference.components.gpu.rdma_network import DEVICE_CLASS_CEL
from aks_gpu_inference.planner.claims import CHART_CLASSES, Selector, SimPool, cel_devices, node_slices
from tests.conftest import planned_stack

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "resourceslices"
SLICES = {path.name: yaml.safe_load(path.read_text()) for path in sorted(FIXTURES.glob("*.yaml"))}

H100_NODE = "aks-h100-31829440-vmss000000"  # Standard_ND96isr_H100_v5, whole GPUs
A100_NODE = "aks-a100mig-31829440-vmss000000"  # Standard_ND96asr_v4, MIG1g
NC_NODE = "aks-nc-31829440-vmss000000"  # Standard_NC24ads_A100_v4, no InfiniBand
FPGA_NODE = "aks-fpga-31829440-vmss000000"

H100_SIZE, A100_SIZE, NC_SIZE = "Standard_ND96isr_H100_v5", "Standard_ND96asr_v4", "Standard_NC24ads_A100_v4"
H100_NICS = {f"{H100_NODE}/ib{n}" for n in range(8)}
A100_NICS = {f"{A100_NODE}/ib{n}" for n in range(8)}
ETH0S = {f"{node}/eth0" for node in (H100_NODE, A100_NODE, NC_NODE)}
H100_GPUS = {f"{H100_NODE}/gpu-{g}" for g in range(8)}
A100_MIGS = {f"{A100_NODE}/gpu-{g}-mig-19-{s}-1" for g in range(8) for s in range(7)}
FPGAS = {f"{FPGA_NODE}/fpga-{n}" for n in range(2)}


def device_ids(slices: list[dict]) -> list[str]:
    return [f"{s['spec']['nodeName']}/{d['name']}" for s in slices for d in s["spec"]["devices"]]


def as_devices(slices: list[dict]) -> dict[str, dict]:
    """``node/device`` -> the CEL ``device`` variable, in slice order."""
    ids, devices = device_ids(slices), cel_devices(slices)
    assert len(ids) == len(devices) == len(set(ids))
    return dict(zip(ids, devices, strict=True))


DEVICES = as_devices(list(SLICES.values()))


@pytest.fixture(scope="module", autouse=True)
def _schemas_read_once():
    """kubernetes_validate re-reads its schema files on every call; read each once for this module."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(kubernetes_validate.utils, "schema_contents", functools.cache(kubernetes_validate.utils.schema_contents))
        yield


@functools.cache
def compiled(expression: str) -> Selector:
    return Selector(expression)


@functools.cache
def fixture_match(expression: str, device_id: str) -> tuple[bool, str | None]:
    return compiled(expression).match(DEVICES[device_id])


def select(expressions: list[str], devices: dict[str, dict] | None = None) -> set[str]:
    """Devices every expression selects, evaluated left to right (class first) as the allocator does.

    The first expression sees every device (a class selector runs on every device of a node, other
    drivers' included). A CEL runtime error aborts allocation in Kubernetes, so any error fails the test.
    """
    if devices is None:
        ids, match = list(DEVICES), fixture_match
    else:
        ids, match = list(devices), lambda expression, device_id: compiled(expression).match(devices[device_id])
    chosen, errors = set(), []
    for device_id in ids:
        ok = True
        for expression in expressions:
            ok, error = match(expression, device_id)
            if error:
                errors.append(error)
            if not ok:
                break
        if ok:
            chosen.add(device_id)
    assert not errors, f"CEL runtime errors (Kubernetes would abort the allocation): {errors[:3]}"
    return chosen


@pytest.fixture(scope="module")
def prod_cel() -> dict[str, list[str]]:
    """The CEL the prod stack renders: DeviceClass name -> selectors, template name -> request selectors."""
    run = planned_stack("prod")
    rendered: dict[str, list[str]] = {}
    for r in run.resources:
        inputs = r.inputs
        if r.type.endswith("resource.k8s.io/v1:DeviceClass"):
            rendered[f"class {inputs['metadata']['name']}"] = [s["cel"]["expression"] for s in inputs["spec"]["selectors"]]
        elif r.type.endswith("resource.k8s.io/v1:ResourceClaimTemplate"):
            for request in inputs["spec"]["spec"]["devices"]["requests"]:
                key = f"template {inputs['metadata']['name']}/{request['name']}"
                rendered[key] = [s["cel"]["expression"] for s in request["exactly"].get("selectors", [])]
    return rendered


GPU_MODELS = sorted({sku.gpu_model: sku.product_names for sku in catalog.skus().values()}.items())
MIG_SLICES = sorted({profile for sku in catalog.skus().values() for profile in sku.mig_profiles.values()})


# --- fixtures -------------------------------------------------------------------------------------


def test_fixtures_are_the_expected_resourceslices():
    assert sorted(SLICES) == [
        "dranet-nc24ads-a100-v4.yaml",
        "dranet-nd96asr-v4.yaml",
        "dranet-nd96isr-h100-v5.yaml",
        "fpga-example.yaml",
        "gpu-nd96asr-v4-mig1g.yaml",
        "gpu-nd96isr-h100-v5.yaml",
    ]
    ids = set(DEVICES)
    assert ids == H100_NICS | A100_NICS | ETH0S | H100_GPUS | A100_MIGS | FPGAS  # 8 + 8 + 3 + 8 + 56 + 2 devices
    drivers = {name: s["spec"]["driver"] for name, s in SLICES.items()}
    assert drivers["fpga-example.yaml"] == "fpga.example.com"
    assert {d for n, d in drivers.items() if n.startswith("dranet")} == {"dra.net"}
    assert {d for n, d in drivers.items() if n.startswith("gpu")} == {"gpu.nvidia.com"}


@pytest.mark.parametrize("name", sorted(SLICES))
def test_every_fixture_validates_strictly_against_1_35(name):
    obj = SLICES[name]
    kubernetes_validate.validate(obj, "1.35", strict=True)
    spec = obj["spec"]
    assert obj["apiVersion"] == "resource.k8s.io/v1" and obj["kind"] == "ResourceSlice"
    assert spec["pool"]["name"] == spec["nodeName"] and spec["pool"]["resourceSliceCount"] == 1
    names = [d["name"] for d in spec["devices"]]
    assert len(names) == len(set(names)) <= 128
    for device in spec["devices"]:
        for value in device["attributes"].values():
            assert len(value) == 1 and next(iter(value)) in {"string", "int", "bool", "version"}


def test_strict_validation_would_catch_a_malformed_attribute():
    broken = yaml.safe_load((FIXTURES / "fpga-example.yaml").read_text())
    broken["spec"]["devices"][0]["attributes"]["index"] = {"integer": 0}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, "1.35", strict=True)


def test_cel_devices_reads_short_names_in_the_driver_domain_and_qualified_names_in_theirs():
    nic = DEVICES[f"{H100_NODE}/ib3"]
    assert nic["driver"] == "dra.net"
    assert nic["attributes"]["dra.net"] == {
        "rdma": True,
        "ifName": "ib3",
        "rdmaDevice": "mlx5_3",
        "pciAddress": "0104:00:00.0",
        "numaNode": 0,
    }
    assert nic["attributes"]["azure.dra.net"]["vmSize"] == H100_SIZE
    assert nic["attributes"][NVIDIA_DRA_DRIVER] == {}, "a domain the device does not publish reads as an empty map"
    mig = DEVICES[f"{A100_NODE}/gpu-2-mig-19-6-1"]
    assert mig["attributes"][NVIDIA_DRA_DRIVER]["profile"] == "1g.5gb" and mig["attributes"][NVIDIA_DRA_DRIVER]["type"] == "mig"
    assert DEVICES[f"{FPGA_NODE}/fpga-0"]["attributes"]["fpga.example.com"]["type"] == "gpu"


# --- every expression compiles --------------------------------------------------------------------


def compiles(expression: str) -> None:
    env = celpy.Environment()
    env.program(env.compile(expression))


def test_a_broken_expression_does_not_compile():
    with pytest.raises(celpy.CELParseError):
        compiles('device.driver == "dra.net" &&')


def test_every_expression_the_prod_stack_renders_compiles(prod_cel):
    assert set(prod_cel) == {
        f"class {RDMA_DEVICE_CLASS}",
        "class gpu-h100-80gb",
        "template h100-rdma-full-node/rdma-nics",
        "template h100-rdma-1-nic/rdma-nics",
        "template h100-gpus-full-node/gpus",
        "template gpu-1/gpus",
        "template gpu-8/gpus",
    }
    expressions = [e for selectors in prod_cel.values() for e in selectors]
    assert len(expressions) == 4  # two classes, the vmSize selector on both NIC templates
    for expression in expressions:
        compiles(expression)


@pytest.mark.parametrize("name", sorted(CHART_CLASSES))
def test_chart_class_compiles(name):
    compiles(CHART_CLASSES[name])


@pytest.mark.parametrize("product_names", [names for _, names in GPU_MODELS], ids=[m for m, _ in GPU_MODELS])
def test_model_class_compiles_for_every_catalog_model(product_names):
    compiles(model_class_cel(product_names))


@pytest.mark.parametrize("profile", MIG_SLICES)
def test_mig_profile_selector_compiles_for_every_catalog_slice(profile):
    compiles(mig_profile_cel(profile))


# --- what each selector selects -------------------------------------------------------------------


def test_rendered_selectors_are_the_seed_and_component_ones(prod_cel):
    assert prod_cel[f"class {RDMA_DEVICE_CLASS}"] == [DEVICE_CLASS_CEL]
    assert prod_cel["class gpu-h100-80gb"] == [model_class_cel(["NVIDIA H100 80GB HBM3"])]
    assert prod_cel["template h100-rdma-full-node/rdma-nics"] == [
        f'device.attributes["azure.dra.net"]["vmSize"] == "{H100_SIZE}"'
    ]
    assert prod_cel["template gpu-8/gpus"] == prod_cel["template h100-gpus-full-node/gpus"] == []


def test_dranet_class_selects_the_infiniband_nics_only(prod_cel):
    (expression,) = prod_cel[f"class {RDMA_DEVICE_CLASS}"]
    chosen = select([expression])
    assert chosen == H100_NICS | A100_NICS
    assert not chosen & (ETH0S | H100_GPUS | A100_MIGS | FPGAS), "not eth0 (rdma false), GPUs, or the FPGA's own rdma attribute"


def test_vm_size_selector_with_the_class_selects_one_size(prod_cel):
    (dranet,) = prod_cel[f"class {RDMA_DEVICE_CLASS}"]
    (h100,) = prod_cel["template h100-rdma-full-node/rdma-nics"]
    assert select([dranet, h100]) == H100_NICS
    assert h100.count(H100_SIZE) == 1
    assert select([dranet, h100.replace(H100_SIZE, A100_SIZE)]) == A100_NICS
    assert select([dranet, h100.replace(H100_SIZE, NC_SIZE)]) == set(), "the NC node publishes eth0 only"


def test_vm_size_selector_relies_on_the_class_to_narrow(prod_cel):
    """Alone, the template's selector takes eth0 too and errors on devices without azure.dra.net."""
    (h100,) = prod_cel["template h100-rdma-full-node/rdma-nics"]
    nics = {k: v for k, v in DEVICES.items() if v["driver"] == "dra.net"}
    assert select([h100], nics) == H100_NICS | {f"{H100_NODE}/eth0"}
    errors = [fixture_match(h100, d)[1] for d in sorted(H100_GPUS)]
    assert all(errors), "vmSize is not a member of the empty azure.dra.net map of a GPU"


def test_chart_gpu_class_selects_whole_gpus_only():
    assert select([CHART_CLASSES[GPU_DEVICE_CLASS]]) == H100_GPUS, "no MIG device, no FPGA with type 'gpu'"


def test_chart_mig_class_selects_mig_devices_only():
    assert select([CHART_CLASSES[MIG_DEVICE_CLASS]]) == A100_MIGS


@pytest.mark.parametrize("profile", MIG_SLICES)
def test_mig_class_and_profile_select_exactly_that_profile(profile):
    expected = A100_MIGS if profile == "1g.5gb" else set()
    assert select([CHART_CLASSES[MIG_DEVICE_CLASS], mig_profile_cel(profile)]) == expected


def test_mig_profile_examples():
    assert len(select([CHART_CLASSES[MIG_DEVICE_CLASS], mig_profile_cel("1g.5gb")])) == 56
    assert select([CHART_CLASSES[MIG_DEVICE_CLASS], mig_profile_cel("1g.10gb")]) == set()


def test_rendered_h100_model_class_selects_h100_gpus(prod_cel):
    (expression,) = prod_cel["class gpu-h100-80gb"]
    assert model_class_name("H100-80GB") == "gpu-h100-80gb"
    assert select([expression]) == H100_GPUS, "not the A100 MIG devices, not the look-alike FPGA"


@pytest.mark.parametrize(("model", "product_names"), GPU_MODELS, ids=[m for m, _ in GPU_MODELS])
def test_model_class_for_every_catalog_model(model, product_names):
    """Only the H100 class has whole GPUs in the fixtures; the A100-40GB class must not take MIG slices."""
    expected = H100_GPUS if model == "H100-80GB" else set()
    assert select([model_class_cel(product_names)]) == expected


# --- the planner's simulated slices ----------------------------------------------------------------

SIZES = [(name, profile) for name, sku in sorted(catalog.skus().items()) for profile in [None, *sorted(sku.mig_profiles)]]


@pytest.mark.parametrize(("vm_size", "mig"), SIZES, ids=[f"{n}-{m or 'whole'}" for n, m in SIZES])
def test_simulated_slices_validate_and_follow_the_catalog(vm_size, mig):
    sku = catalog.get_sku(vm_size)
    slices = node_slices(SimPool("p1", vm_size, mig, dranet=sku.rdma, gpu_driver=True))
    for obj in slices:
        kubernetes_validate.validate(obj, "1.35", strict=True)
        names = [d["name"] for d in obj["spec"]["devices"]]
        assert len(names) == len(set(names))
    by_driver = {s["spec"]["driver"]: s["spec"]["devices"] for s in slices}
    assert set(by_driver) == {d for d, on in (("dra.net", sku.rdma), (NVIDIA_DRA_DRIVER, sku.gpu_vendor == "nvidia")) if on}

    if sku.rdma:
        devices = cel_devices([s for s in slices if s["spec"]["driver"] == "dra.net"])
        rdma = [d for d in devices if d["attributes"]["dra.net"]["rdma"]]
        assert len(rdma) == sku.infiniband_nics
        assert [d["name"] for d in devices if not d["attributes"]["dra.net"]["rdma"]] == ["eth0"]
        assert {d["attributes"]["azure.dra.net"]["vmSize"] for d in devices} == {vm_size}

    if sku.gpu_vendor == "nvidia":
        gpus = [d["attributes"] for d in cel_devices([s for s in slices if s["spec"]["driver"] == NVIDIA_DRA_DRIVER])]
        assert {g[NVIDIA_DRA_DRIVER]["productName"] for g in gpus} <= set(sku.product_names)
        if mig is None:
            assert len(gpus) == sku.gpus and {g[NVIDIA_DRA_DRIVER]["type"] for g in gpus} == {"gpu"}
        else:
            per_gpu = catalog.mig_slices_per_gpu(mig)
            assert len(gpus) == sku.gpus * per_gpu
            assert {g[NVIDIA_DRA_DRIVER]["type"] for g in gpus} == {"mig"}
            assert {g[NVIDIA_DRA_DRIVER]["profile"] for g in gpus} == {sku.mig_profiles[mig]}
            parents = [g[NVIDIA_DRA_DRIVER]["parentUUID"] for g in gpus]
            assert len(set(parents)) == sku.gpus and all(parents.count(p) == per_gpu for p in set(parents))


@pytest.mark.parametrize(
    ("node", "vm_size", "mig", "gpu_driver"),
    [(H100_NODE, H100_SIZE, None, True), (A100_NODE, A100_SIZE, "MIG1g", True), (NC_NODE, NC_SIZE, None, False)],
)
def test_simulation_agrees_with_the_fixture_nodes(prod_cel, node, vm_size, mig, gpu_driver):
    """Per selector, the simulated node matches as many devices as the realistic fixture node.

    (The NC fixture has no GPU driver slice; the simulation publishes no DRANET slice for non-RDMA sizes,
    where the real driver would publish eth0 alone, which no selector takes.)
    """
    sku = catalog.get_sku(vm_size)
    simulated = as_devices(node_slices(SimPool("p1", vm_size, mig, dranet=sku.rdma, gpu_driver=gpu_driver)))
    real = {k: v for k, v in DEVICES.items() if k.startswith(f"{node}/")}
    (dranet,) = prod_cel[f"class {RDMA_DEVICE_CLASS}"]
    (vm_selector,) = prod_cel["template h100-rdma-full-node/rdma-nics"]
    cases = [
        [dranet],
        [dranet, vm_selector.replace(H100_SIZE, vm_size)],
        [CHART_CLASSES[GPU_DEVICE_CLASS]],
        [CHART_CLASSES[MIG_DEVICE_CLASS]],
        [CHART_CLASSES[MIG_DEVICE_CLASS], mig_profile_cel("1g.5gb")],
        [model_class_cel(sku.product_names)],
    ]
    for expressions in cases:
        assert len(select(expressions, simulated)) == len(select(expressions, real)), expressions
