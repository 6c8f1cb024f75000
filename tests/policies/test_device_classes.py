"""Device classes are judged by what their selectors select, not by their names.

``policies.rules._device_classes.classify`` evaluates a DeviceClass's CEL selectors on synthetic
DRANET NICs and GPU devices; the RDMA rules and the GPU taint rule use it, and fall back to the
class name only when no DeviceClass object is at hand.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from aks_gpu_inference.components.core import catalog
from aks_gpu_inference.components.core.labels import VFIO_GPU_DEVICE_CLASS
from aks_gpu_inference.components.gpu.dra_device_classes import GPU_CLASS, MIG_CLASS, model_class_cel
from aks_gpu_inference.components.gpu.rdma_network import DEVICE_CLASS, DEVICE_CLASS_CEL
from aks_gpu_inference.planner.claims import CHART_CLASSES, cel_devices
from aks_gpu_inference.policies.manifests import UNKNOWN, Resource, StackIndex, token_for_manifest
from aks_gpu_inference.policies.rules import _device_classes as dc
from aks_gpu_inference.policies.rules import ipc_lock_without_privileged, nccl_ib, rdma_capable_sku
from aks_gpu_inference.policies.rules._gpus import gpu_device_classes
from aks_gpu_inference.policies.rules.gpu_taints import RULE as GPU_TAINTS
from tests.conftest import render_pinned

from ._device_class_fixtures import BY_NAME, FAST_NICS, GPU_CEL, RDMA_CEL, class_stack, dra_class, pool_affinity
from ._fixtures import (
    GPU_TAINT,
    NS,
    RDMA_POOL,
    RDMA_TEMPLATE,
    agent_pool,
    claim_template,
    container,
    managed_cluster,
    rdma_container,
    rdma_spec,
    rdma_stack,
    resource,
    rule_messages,
    workload,
)

REPO = Path(__file__).resolve().parents[2]
NC = "Standard_NC24ads_A100_v4"
H100 = "Standard_ND96isr_H100_v5"


def kinds(*expressions):
    return dc.classify({"spec": {"selectors": [{"cel": {"expression": e}} for e in expressions]}})


def manifest_resource(obj: dict) -> Resource:
    return resource(token_for_manifest(obj["apiVersion"], obj["kind"]), obj["metadata"]["name"], obj)


# ---- the classes the project and its charts render ---------------------------------------------

SNAPSHOT_CLASSES = sorted((REPO / "tests" / "snapshots").glob("*/kubernetes/deviceclass-*.yaml"))
EXPECTED = {
    DEVICE_CLASS: {"rdma"},
    GPU_CLASS: {"gpu"},
    MIG_CLASS: {"gpu"},
    "vfio.gpu.nvidia.com": {"gpu"},
    "gpu-h100-80gb": {"gpu"},
    "gpu-gb300-288gb": {"gpu"},
    "compute-domain-daemon.nvidia.com": set(),
    "compute-domain-default-channel.nvidia.com": set(),
}


def test_the_snapshots_hold_the_rendered_classes():
    names = {yaml.safe_load(p.read_text())["metadata"]["name"] for p in SNAPSHOT_CLASSES}
    assert {DEVICE_CLASS, GPU_CLASS, MIG_CLASS, "gpu-h100-80gb"} <= names


@pytest.mark.parametrize("path", SNAPSHOT_CLASSES, ids=lambda p: f"{p.parent.parent.name}/{p.stem}")
def test_classes_the_stacks_render(path):
    """What `aks-gpu plan` renders (RdmaNetwork, DraDeviceClasses and the NVIDIA DRA driver chart), as in the snapshots."""
    obj = yaml.safe_load(path.read_text())
    assert dc.classify(obj) == EXPECTED[obj["metadata"]["name"]]


def test_classes_the_nvidia_dra_driver_chart_renders():
    values = {"gpuResourcesEnabledOverride": True}  # the chart's own defaults refuse to render without it
    rendered = render_pinned("dra-driver-nvidia-gpu", "0.4.1", values, "release", "dra-driver-nvidia-gpu")
    found = {o["metadata"]["name"]: dc.classify(o) for o in rendered.objects if o["kind"] == "DeviceClass"}
    assert found == {name: EXPECTED[name] for name in found}
    assert set(found) == {GPU_CLASS, MIG_CLASS, "vfio.gpu.nvidia.com", *(n for n in EXPECTED if n.startswith("compute-domain"))}


def test_seed004_dranet_class_folded_over_two_lines():
    obj = yaml.safe_load((REPO / "tests" / "fixtures" / "seeds" / "seed004-dranet-device-class.yaml").read_text())
    assert "\n" not in obj["spec"]["selectors"][0]["cel"]["expression"] and dc.classify(obj) == {"rdma"}


def test_component_and_planner_selectors():
    assert kinds(DEVICE_CLASS_CEL) == {"rdma"}
    # An IMEX channel of a ComputeDomain is neither a GPU nor a NIC.
    assert {name: kinds(e) for name, e in CHART_CLASSES.items()} == {
        GPU_CLASS: {"gpu"},
        MIG_CLASS: {"gpu"},
        "compute-domain-default-channel.nvidia.com": set(),
    }


MODELS = sorted({sku.gpu_model: sku.product_names for sku in catalog.skus().values()}.items())


@pytest.mark.parametrize("product_names", [names for _, names in MODELS], ids=[model for model, _ in MODELS])
def test_per_model_class_for_every_catalog_model(product_names):
    """The model classes DraDeviceClasses would create select GPUs (AMD models have no NVML names: the recognizer decides)."""
    assert kinds(model_class_cel(product_names)) == {"gpu"}


# ---- what a selector selects ---------------------------------------------------------------------

NIC = 'device.driver == "dra.net"'
CASES = {
    "every dra.net NIC, RDMA ones included (DRANET's own class): RDMA": ([NIC], {"rdma"}),
    "single quotes": (["device.driver == 'dra.net' && device.attributes['dra.net'].rdma == true"], {"rdma"}),
    "index syntax, no driver test": (['device.attributes["dra.net"]["rdma"] == true'], {"rdma"}),
    "rdma as a bare boolean": ([f'{NIC} && device.attributes["dra.net"].rdma'], {"rdma"}),
    "rdma == false": ([f'{NIC} && device.attributes["dra.net"].rdma == false'], set()),
    "negated rdma": ([f'{NIC} && !(device.attributes["dra.net"].rdma == true)'], set()),
    "InfiniBand by interface name": ([f'{NIC} && device.attributes["dra.net"].ifName.startsWith("ib")'], {"rdma"}),
    "two selectors are ANDed": ([NIC, 'device.attributes["dra.net"].rdma == true'], {"rdma"}),
    "one vmSize of the catalog": ([RDMA_CEL, f'device.attributes["azure.dra.net"].vmSize == "{H100}"'], {"rdma"}),
    "a vmSize outside the catalog (recognizer)": (
        [RDMA_CEL + ' && device.attributes["azure.dra.net"].vmSize == "Standard_X"'],
        {"rdma"},
    ),
    "RDMA on an NC size only: no synthetic device, recognizer": (
        [RDMA_CEL + f' && device.attributes["azure.dra.net"].vmSize == "{NC}"'],
        {"rdma"},
    ),
    "nvidia GPUs": ([GPU_CEL], {"gpu"}),
    "nvidia driver, any device": (['device.driver == "gpu.nvidia.com"'], {"gpu"}),
    "one MIG profile": ([CHART_CLASSES[MIG_CLASS], 'device.attributes["gpu.nvidia.com"].profile == "1g.10gb"'], {"gpu"}),
    "a product outside the catalog (recognizer)": (
        ['device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].productName == "NVIDIA B300"'],
        {"gpu"},
    ),
    "capacity through quantity(), which cel-python lacks (recognizer)": (
        ['device.driver == "gpu.nvidia.com" && device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0'],
        {"gpu"},
    ),
    "mig.nvidia.com driver": (['device.driver == "mig.nvidia.com"'], {"gpu"}),
    "AMD GPUs": (['device.driver == "gpu.amd.com"'], {"gpu"}),
    "AMD partitions by attribute": (['device.attributes["gpu.amd.com"].type == "amdgpu-partition"'], {"gpu"}),
    "driver in a list": (['device.driver in ["gpu.nvidia.com", "gpu.amd.com"]'], {"gpu"}),
    "driver on the right": (['"gpu.amd.com" == device.driver'], {"gpu"}),
    "RDMA NICs or GPUs": ([f"({RDMA_CEL}) || device.driver == 'gpu.nvidia.com'"], {"gpu", "rdma"}),
    "another driver": (['device.driver == "fpga.example.com"'], set()),
    "NVIDIA compute domains are not GPUs": (["device.driver == 'compute-domain.nvidia.com'"], set()),
    "no selector selects every device, GPUs and RDMA NICs included": ([], {"gpu", "rdma"}),
    "dra.net NICs by an attribute the synthetic NICs lack (recognizer): RDMA": (
        [f'{NIC} && device.attributes["dra.net"].ifName == "eth7"'],
        {"rdma"},
    ),
    "plain dra.net NICs by an attribute the synthetic NICs lack (recognizer)": (
        [f'{NIC} && device.attributes["dra.net"].rdma == false && device.attributes["dra.net"].ifName == "eth7"'],
        set(),
    ),
    "does not compile (the API server rejects it): recognizer": ([RDMA_CEL + " &&"], {"rdma"}),
}


@pytest.mark.parametrize(("expressions", "expected"), list(CASES.values()), ids=list(CASES))
def test_classify(expressions, expected):
    assert kinds(*expressions) == expected


def test_unknown_selectors_cannot_be_judged():
    assert kinds(UNKNOWN) is None
    assert dc.classify({"spec": {"selectors": UNKNOWN}}) is None
    assert dc.classify({"spec": UNKNOWN}) is None


def test_recognizer_reads_drivers_and_rdma_only():
    assert dc.recognize("device.driver == 'dra.net' && device.attributes['dra.net']['rdma'] == true") == {"rdma"}
    assert dc.recognize('device.driver == "dra.net"') == {"rdma"}, "every DRANET NIC, RDMA ones included"
    assert dc.recognize('device.driver == "dra.net" && device.attributes["dra.net"]["rdma"] == false') == set()
    assert dc.recognize('device.attributes["dra.net"].rdma == true') == set(), "RDMA needs the dra.net driver named"
    assert dc.recognize("device.driver in ['mig.nvidia.com']") == {"gpu"}


def test_synthetic_devices_use_the_attribute_names_the_drivers_publish():
    """Every attribute of a synthetic DRANET NIC or NVIDIA GPU is one the realistic ResourceSlice fixtures carry."""
    slices = [yaml.safe_load(p.read_text()) for p in sorted((REPO / "tests" / "fixtures" / "resourceslices").glob("*.yaml"))]
    published: dict[tuple[str, str], set[str]] = {}
    for device in cel_devices(slices):
        for domain, attributes in device["attributes"].items():
            published.setdefault((device["driver"], domain), set()).update(attributes)
    roles = {"rdma-nic": 0, "nic": 0, "gpu": 0}
    for role, device in dc.synthetic_devices():
        roles[role] += 1
        driver = str(device["driver"])
        if driver in ("dra.net", GPU_CLASS):
            for domain, attributes in device["attributes"].items():
                assert set(map(str, attributes)) <= published.get((driver, str(domain)), set()), (driver, domain)
    assert all(roles.values()), roles


# ---- the index: objects in the stack first, names as the fallback ----------------------------------


def test_class_kinds_over_a_stack():
    index = StackIndex.build(
        [
            dra_class(FAST_NICS, RDMA_CEL),
            dra_class("dranet.net", GPU_CEL),
            dra_class("twice", RDMA_CEL),
            dra_class("twice", GPU_CEL),
            dra_class("later", UNKNOWN),
        ]
    )
    assert dc.class_kinds(index) == {FAST_NICS: {"rdma"}, "dranet.net": {"gpu"}, "twice": {"gpu", "rdma"}, "later": None}
    known = dc.class_kinds(index)
    assert dc.judge(FAST_NICS, known) == ({"rdma"}, False)
    assert dc.judge("dranet.net", known) == ({"gpu"}, False), "the object wins over the name"
    assert dc.judge("gpu.nvidia.com", known) == ({"gpu"}, True), "absent: judged by name"
    assert dc.judge("other", known) == (set(), True)


def test_gpu_device_classes_by_selector_with_name_fallback():
    index = StackIndex.build([dra_class("amd", 'device.driver == "gpu.amd.com"'), dra_class(GPU_CLASS, RDMA_CEL)])
    by_name = {MIG_CLASS, VFIO_GPU_DEVICE_CLASS}
    assert gpu_device_classes(index) == {"amd", *by_name}, "gpu.nvidia.com selects NICs here; mig and vfio are absent"
    assert gpu_device_classes(StackIndex.build([dra_class(MIG_CLASS, UNKNOWN)])) == {GPU_CLASS, *by_name}


# ---- the rules ---------------------------------------------------------------------------------------


def messages(module, resources):
    return rule_messages(module.RULE, resources)


LABEL = "Deployment llm/engine"
ON_NC = f"{LABEL}: claims RDMA NICs on pool '{RDMA_POOL}', whose vmSize is '{NC}'"


def test_custom_rdma_class_on_a_non_rdma_pool_fails_rdma_capable_sku():
    [message] = messages(rdma_capable_sku, class_stack("Deployment", vm_size=NC, labels={}))
    assert message.startswith(ON_NC) and "judged by its name" not in message


def test_custom_rdma_class_pinned_by_agentpool_affinity_passes_rdma_capable_sku():
    spec = rdma_spec(pool=None, affinity=pool_affinity(RDMA_POOL))
    assert messages(rdma_capable_sku, class_stack("Deployment", spec)) == []
    unpinned = messages(rdma_capable_sku, class_stack("Deployment", rdma_spec(pool=None)))
    assert [m.split(";")[0] for m in unpinned] == [f"{LABEL}: claims RDMA NICs but does not pin an RDMA pool"]


def test_custom_rdma_class_needs_ipc_lock():
    [message] = messages(ipc_lock_without_privileged, class_stack("Deployment", rdma_spec(rdma_container(security=None))))
    assert message.startswith(f"{LABEL} spec.template.spec.containers[0] vllm claims RDMA NICs: add capability IPC_LOCK")
    assert messages(ipc_lock_without_privileged, class_stack("Deployment")) == []


def test_custom_rdma_class_through_a_resource_claim_with_first_available():
    """resource.k8s.io/v1 prioritized alternatives: any subrequest's class counts."""
    claim = resource(
        "kubernetes:resource.k8s.io/v1:ResourceClaim",
        "nics",
        {
            "metadata": {"name": "nics", "namespace": NS},
            "spec": {
                "devices": {
                    "requests": [{"name": "nics", "firstAvailable": [{"name": "ib", "deviceClassName": FAST_NICS, "count": 8}]}]
                }
            },
        },
    )
    spec = rdma_spec(rdma_container(security=None), resourceClaims=[{"name": "rdma", "resourceClaimName": "nics"}])
    stack = [*class_stack("Deployment", spec), claim]
    assert len(messages(ipc_lock_without_privileged, stack)) == 1


def test_a_class_named_like_the_rdma_class_that_selects_gpus_is_not_rdma():
    stack = class_stack(
        "Deployment",
        rdma_spec(rdma_container(security=None, nccl="1"), pool=None),
        device_class="dranet.net",
        expressions=(GPU_CEL,),
    )
    for rule in (rdma_capable_sku, ipc_lock_without_privileged, nccl_ib):
        assert messages(rule, stack) == [], rule.NAME


def test_a_missing_class_falls_back_by_name_and_says_so():
    spec = rdma_spec(rdma_container(security=None, nccl="1"))
    on_nc = rdma_stack("Deployment", spec, vm_size=NC, labels={})
    assert not any(r.type.endswith(":DeviceClass") for r in on_nc)
    for rule in (rdma_capable_sku, ipc_lock_without_privileged, nccl_ib):
        found = [m for m in messages(rule, on_nc) if "claims RDMA NICs" in m]
        assert found and all(BY_NAME in m for m in found), rule.NAME
    custom_missing = [r for r in class_stack("Deployment", spec, vm_size=NC, labels={}) if not r.type.endswith(":DeviceClass")]
    assert messages(rdma_capable_sku, custom_missing) == [], "an unknown class name without its object is not RDMA"


def test_gpu_taints_judges_a_custom_gpu_class_by_its_selectors():
    def stack(device_class, *extra):
        """A tainted GPU pool and a pod claiming ``device_class`` devices, without tolerations."""
        spec = {
            "nodeSelector": {"kubernetes.azure.com/agentpool": "gpu"},
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpus"}],
            "containers": [container(resources={"claims": [{"name": "gpu"}]})],
        }
        return [
            managed_cluster(),
            agent_pool("gpu", NC, taints=[GPU_TAINT]),
            claim_template("gpus", device_class),
            *extra,
            workload("Deployment", spec),
        ]

    def claims_gpu(resources):
        return [m for m in rule_messages(GPU_TAINTS, resources) if "claim gpu" in m]

    assert claims_gpu(stack("mi300x", dra_class("mi300x", 'device.attributes["gpu.amd.com"].type == "amdgpu"')))
    assert claims_gpu(stack(GPU_CLASS)), "absent: gpu.nvidia.com counts by name"
    assert not claims_gpu(stack(GPU_CLASS, dra_class(GPU_CLASS, RDMA_CEL))), "present: judged by what it selects"
    assert not claims_gpu(stack(RDMA_TEMPLATE, dra_class(RDMA_TEMPLATE, 'device.driver == "fpga.example.com"')))


# ---- upstream claims asking for GPUs and NICs in one claim ---------------------------------------

DRA_FIXTURES = REPO / "tests" / "fixtures" / "scan_dra"
RDMA_RULES = (rdma_capable_sku, ipc_lock_without_privileged, nccl_ib)


def upstream(name: str, **renames: str) -> list[Resource]:
    """A fixture of DRANET's examples as resources; ``renames`` replaces text first (a class's name)."""
    text = (DRA_FIXTURES / name).read_text()
    for old, new in renames.items():
        text = text.replace(old, new)
    return [manifest_resource(obj) for obj in yaml.safe_load_all(text) if obj]


def claim_pod(claim: str, namespace: str = "default") -> Resource:
    """A pod (the GB300 example's worker) consuming the ResourceClaim ``claim`` by name."""
    return manifest_resource(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "nccl-test-dra-worker-0", "namespace": namespace},
            "spec": {
                "resourceClaims": [{"name": "gpu-nic", "resourceClaimName": claim}],
                "containers": [
                    {"name": "nccl", "image": "nvcr.io/nvidia/pytorch:25.10-py3", "resources": {"claims": [{"name": "gpu-nic"}]}}
                ],
            },
        }
    )


def gb300_claim() -> list[Resource]:
    """DRANET's AKS GB300 ResourceClaim (v1, ``exactly``; its classes judged by name) and a pod naming it."""
    return [*upstream("dranet-gb300-resource-claim.yaml"), claim_pod("nccl-test-dra-worker-0-gpu-nic-sbmhc")]


def v1beta1_claim() -> list[Resource]:
    """The v1beta1 example's template made a ResourceClaim of the same API version, and a pod naming it."""
    resources = upstream("dranet-nvidia-v1beta1.yaml")
    [template] = [r for r in resources if r.type.endswith(":ResourceClaimTemplate")]
    claim = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim", "metadata": {"name": "gpu-nic"}}
    claim["spec"] = template.props["spec"]["spec"]
    kept = [r for r in resources if r.type.endswith(":DeviceClass")]
    return [*kept, manifest_resource(claim), claim_pod("gpu-nic")]


GPU_AND_NIC = {
    "v1 template, DRANET's class on the dra.net driver": lambda: upstream("dranet-distributed-training.yaml"),
    "v1 template, the same class named fast-nics": lambda: upstream(
        "dranet-distributed-training.yaml", **{"dranet.net": FAST_NICS}
    ),
    "v1beta1 template (no exactly), class dranet on the dra.net driver": lambda: upstream("dranet-nvidia-v1beta1.yaml"),
    "v1 ResourceClaim, classes judged by their names": gb300_claim,
    "v1beta1 ResourceClaim, class dranet on the dra.net driver": v1beta1_claim,
}


@pytest.mark.parametrize("build", list(GPU_AND_NIC.values()), ids=list(GPU_AND_NIC))
def test_a_claim_on_gpus_and_nics_counts_as_both(build):
    """One claim asking for GPUs and NICs is a GPU claim and an RDMA claim: every rule on either runs."""
    resources = build()
    for rule in RDMA_RULES:
        assert [m for m in messages(rule, resources) if "claims RDMA NICs" in m], rule.NAME
    assert [m for m in rule_messages(GPU_TAINTS, resources) if "requests GPUs (claim" in m]


def test_the_dranet_training_worker_made_compliant_passes():
    """The upstream MPIJob with the contract the findings ask for: no rule finds anything in its worker."""
    resources = upstream("dranet-distributed-training.yaml")
    [job] = [r for r in resources if r.type.endswith(":MPIJob")]
    worker = job.props["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]
    worker["nodeSelector"] = {"kubernetes.azure.com/agentpool": RDMA_POOL}
    worker["tolerations"].append({"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"})
    [pytorch] = worker["containers"]
    pytorch["securityContext"] = {"capabilities": {"add": ["IPC_LOCK"], "drop": ["ALL"]}, "allowPrivilegeEscalation": False}
    pytorch["env"] = [{"name": "NCCL_IB_DISABLE", "value": "0"}]
    stack = [*resources, managed_cluster(), agent_pool(RDMA_POOL, H100, taints=[GPU_TAINT])]
    for rule in (*(module.RULE for module in RDMA_RULES), GPU_TAINTS):
        assert rule_messages(rule, stack) == [], rule.name


def test_a_class_on_plain_dranet_nics_only_is_not_rdma():
    """DRANET's class narrowed by its own selectors to NICs without RDMA: no RDMA rule applies."""
    resources = upstream(
        "dranet-distributed-training.yaml",
        **{
            'expression: device.driver == "dra.net"': 'expression: device.driver == "dra.net" && !device.attributes["dra.net"].rdma'
        },
    )
    for rule in RDMA_RULES:
        assert messages(rule, resources) == [], rule.NAME


@pytest.mark.parametrize("vm_size", ["Standard_ND128isr_GB300_v6", "Standard_ND128isr_NDR_GB200_v6"])
def test_the_rdma_rules_try_classes_on_every_nic_of_a_gb_size(vm_size):
    """The GB sizes' NICs as the rules simulate them: the catalog's four InfiniBand NICs per VM, and the VNet NIC."""
    from aks_gpu_inference.policies.rules._device_classes import synthetic_devices

    nics = [d for role, d in synthetic_devices() if role == "rdma-nic" and d["attributes"]["azure.dra.net"]["vmSize"] == vm_size]
    assert len(nics) == catalog.get_sku(vm_size).infiniband_nics == 4
    assert catalog.get_sku(vm_size).infiniband_gbps == (800 if "GB300" in vm_size else 400)
