"""One notion of "this pod uses RDMA" (policies/rules/_rdma.py), on upstream manifests: each way of asking for RDMA
makes the RDMA rules run, on the manifest as published (violating) and on the same manifest made compliant.

The fixtures are under tests/fixtures/upstream/, each naming its source on its first line.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from aks_gpu_inference.components.core.labels import is_rdma_resource
from aks_gpu_inference.policies.manifests import StackIndex, pod_templates
from aks_gpu_inference.policies.rules._rdma import rdma_uses, selects_infiniband

from ._upstream import comply, load, mandatory, mutated, rdma_pool, resources, source, verdicts

RDMA_RULES = {"rdma-capable-sku", "ipc-lock-without-privileged"}


def uses(docs) -> list[tuple[str, tuple[str, ...], bool]]:
    """(container, how, verbs) of every RDMA container of the last object's pods."""
    found = resources(docs)
    index = StackIndex.build(found)
    return [(u.where, u.how, u.verbs) for t in pod_templates(found[-1]) for u in rdma_uses(index, t)]


def test_every_fixture_names_its_source():
    root = Path(__file__).resolve().parents[1] / "fixtures" / "upstream"
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.yaml"))
    assert len(files) >= 20
    for file in files:
        assert "@" in source(file) and ":" in source(file).split("@", 1)[1]


# ---- device-plugin NICs -----------------------------------------------------------------------

DEVICE_PLUGIN_PODS = {
    "mellanox-hca-pod.yaml": "rdma/hca_shared_devices_a",  # the shared device plugin's own example
    "aks-doc-sriov-ib-pod.yaml": "rdma/ib",  # AKS's InfiniBand guide, SR-IOV device plugin
    "aks-doc-shared-ib-pod.yaml": "rdma/shared_ib",  # AKS's InfiniBand guide, RDMA shared device plugin
}


@pytest.mark.parametrize("file", DEVICE_PLUGIN_PODS)
def test_device_plugin_nics_as_published(file):
    """IPC_LOCK alone, no pool pinned: the RDMA contract is not met."""
    docs = load(file)
    assert mandatory(docs) == RDMA_RULES
    resource = DEVICE_PLUGIN_PODS[file]
    assert uses(docs) == [("spec.containers[0] " + docs[0]["spec"]["containers"][0]["name"], (f"requests {resource}",), True)]
    found = verdicts(docs)
    assert f"requests {resource} but does not pin an RDMA pool" in found["rdma-capable-sku"][0]
    assert found["ipc-lock-without-privileged"][0].endswith("drop ALL capabilities; set allowPrivilegeEscalation: false")


@pytest.mark.parametrize("file", DEVICE_PLUGIN_PODS)
def test_device_plugin_nics_made_compliant(file):
    docs = mutated(load(file), lambda pod: comply(pod["spec"], image="mellanox/rping-test:v1.0"))
    assert verdicts(docs, rdma_pool()) == {}


@pytest.mark.parametrize(
    ("name", "rdma"),
    [
        ("rdma/rdma_shared_device_a", True),
        ("mellanox.com/mlnx_rdma", True),  # sriov-network-device-plugin@v3.11.0 README
        ("nvidia.com/sriov-rdma-vf", True),  # llm-d's OCI guide
        ("nvidia.com/hostdev", True),
        ("openshift.io/ib_vfs", True),
        ("intel.com/intel_sriov_netdevice", False),  # an Ethernet VF: the plugin's default prefix says nothing
        ("vpc.amazonaws.com/efa", False),
        ("nvidia.com/gpu", False),
    ],
)
def test_rdma_resource_names(name, rdma):
    assert is_rdma_resource(name) is rdma


# ---- Multus networks ----------------------------------------------------------------------------


def test_sriov_rdma_network_and_resource():
    """The SR-IOV device plugin's RDMA example: a NetworkAttachmentDefinition whose resourceName is mellanox.com/mlnx_rdma
    and a pod that joins it and requests the VF."""
    docs = load("sriov-rdma-nad.yaml", "sriov-rdma-pod.yaml")
    assert uses(docs) == [
        ("spec.containers[0] testpmd", ("requests mellanox.com/mlnx_rdma", "joins RDMA network sriov-rdma-mlnx"), True)
    ]
    assert mandatory(docs) == RDMA_RULES


def test_an_rdma_network_alone_makes_an_rdma_pod():
    """Without the VF request, the network (its NetworkAttachmentDefinition's resourceName) still makes it an RDMA pod."""
    docs = mutated(load("sriov-rdma-nad.yaml", "sriov-rdma-pod.yaml"), lambda pod: pod["spec"]["containers"][0].pop("resources"))
    assert uses(docs) == [("spec.containers[0] testpmd", ("joins RDMA network sriov-rdma-mlnx",), True)]
    assert mandatory(docs) == RDMA_RULES
    docs = mutated(docs, lambda pod: comply(pod["spec"], image="rdma/app:v1"))
    assert verdicts(docs, rdma_pool()) == {}


def test_a_network_attachment_that_is_not_rdma():
    """The same name on a NetworkAttachmentDefinition of a macvlan config and no RDMA resource is no RDMA network."""
    nad = {
        "apiVersion": "k8s.cni.cncf.io/v1",
        "kind": "NetworkAttachmentDefinition",
        "metadata": {"name": "sriov-rdma-mlnx"},
        "spec": {"config": '{"type": "macvlan", "master": "eth1"}'},
    }
    pod = mutated(load("sriov-rdma-pod.yaml"), lambda pod: pod["spec"]["containers"][0].pop("resources"))
    assert uses([nad, *pod]) == []


@pytest.mark.parametrize("with_network", [True, False], ids=["IPoIBNetwork scanned", "by its name"])
def test_ip_over_infiniband_needs_an_infiniband_size_but_no_ipc_lock(with_network):
    """AKS's IPoIB example pod joins aks-infiniband (Network Operator's IPoIBNetwork): IP over InfiniBand, not
    verbs. It must run on an InfiniBand size; it needs no IPC_LOCK."""
    docs = load(*(["aks-ipoib-network.yaml"] if with_network else []), "aks-doc-ipoib-pod.yaml")
    assert uses(docs) == [("spec.containers[0] ib", ("joins InfiniBand network aks-infiniband (IP over InfiniBand)",), False)]
    found = verdicts(docs)
    assert set(found) == {"rdma-capable-sku"}
    assert (
        "joins InfiniBand network aks-infiniband (IP over InfiniBand) but does not pin an RDMA pool"
        in found["rdma-capable-sku"][0]
    )
    pinned = mutated(docs, lambda pod: pod["spec"].update(nodeSelector={"kubernetes.azure.com/agentpool": "ndh100"}))
    assert verdicts(pinned, rdma_pool()) == {}


# ---- DRA claims at pod level ----------------------------------------------------------------------


def test_pod_level_dranet_claim_as_published():
    """DRANET's GKE perftest: the pod holds the rdma-net-interface claim and no container lists it (DRANET moves the
    NIC into the pod's network namespace); GPU without toleration; a :stable image."""
    docs = load("dranet-rdma-perftest.yaml")
    assert uses(docs) == [("spec.template.spec.containers[0] dranet-rdma-perftest", ("claims RDMA NICs",), True)]
    found = verdicts(docs)
    assert set(found) == {
        "gpu-taints-and-tolerations",
        "rdma-capable-sku",
        "ipc-lock-without-privileged",
        "nccl-infiniband-enabled",
        "image-pinned",
    }
    assert "uses the floating tag 'stable'" in found["image-pinned"][0]


def test_pod_level_dranet_claim_made_compliant():
    def change(sts):
        comply(sts["spec"]["template"]["spec"], image="registry.k8s.io/networking/dranet-rdma-perftest:v1.4.0")

    docs = load("dranet-rdma-perftest.yaml")
    assert verdicts(mutated(docs, change, index=3), rdma_pool()) == {}


# ---- the host's /dev/infiniband, SYS_ADMIN, NCCL and UCX variables ----------------------------------


def test_host_infiniband_with_host_network_and_sys_admin():
    """OME's DeepSeek RDMA runtime: hostNetwork, /dev/infiniband from the host, privileged and CAP_SYS_ADMIN, plus
    the HCAs named in NVSHMEM_HCA_LIST and OME's RDMA webhook (rdma.ome.io/auto-inject)."""
    docs = load("ome-deepseek-rdma-rt.yaml")
    worker = next(u for u in uses(docs) if u[0].startswith("spec.engineConfig.worker."))
    assert "mounts /dev/infiniband from the host" in worker[1] and "selects InfiniBand (NVSHMEM_HCA_LIST)" in worker[1]
    found = verdicts(docs)
    assert mandatory(docs) == {*RDMA_RULES, "gpu-taints-and-tolerations"}
    assert any("remove capabilities ['SYS_ADMIN']" in m for m in found["ipc-lock-without-privileged"])
    assert any("securityContext.privileged is true" in m for m in found["ipc-lock-without-privileged"])


@pytest.mark.parametrize(
    ("env", "selects"),
    [
        ({"NCCL_IB_HCA": "mlx5_0,mlx5_1"}, ["selects InfiniBand (NCCL_IB_HCA=mlx5_0,mlx5_1)"]),
        ({"NCCL_IB_HCA": "^mlx5_0"}, []),
        ({"NCCL_NET": "IB"}, ["selects InfiniBand (NCCL_NET=IB)"]),
        ({"UCX_NET_DEVICES": "mlx5_0:1,mlx5_1:1"}, ["selects InfiniBand (UCX_NET_DEVICES=mlx5_0:1,mlx5_1:1)"]),
        ({"UCX_NET_DEVICES": "eth0"}, []),
        ({"UCX_TLS": "rc_x,cuda_copy,cuda_ipc,self"}, ["selects InfiniBand (UCX_TLS=rc_x,cuda_copy,cuda_ipc,self)"]),
        ({"UCX_TLS": "ib,tcp,shm"}, []),  # NIM's multi-node sample: InfiniBand if there is one, else TCP
        ({"UCX_TLS": "^rc"}, []),
    ],
)
def test_nccl_and_ucx_variables_that_select_infiniband(env, selects):
    container = {"name": "c", "env": [{"name": k, "value": v} for k, v in env.items()]}
    assert selects_infiniband(container) == selects


def test_nccl_kept_off_infiniband_on_an_rdma_pod():
    """NIM Operator's multi-node RDMA sample requests rdma/rdma_shared_device_a and sets NCCL_NET=Socket."""
    docs = load("nim-multinode-rdma.yaml")
    found = verdicts(docs)
    assert mandatory(docs) == {*RDMA_RULES, "gpu-taints-and-tolerations"}
    assert any("sets NCCL_NET='Socket', which keeps NCCL off InfiniBand" in m for m in found["nccl-infiniband-enabled"])


def test_nccl_ib_disable_1_on_an_rdma_pod_is_flagged():
    docs = mutated(load("aks-doc-sriov-ib-pod.yaml"), lambda pod: comply(pod["spec"]))
    docs[0]["spec"]["containers"][0]["env"] = [{"name": "NCCL_IB_DISABLE", "value": "1"}]
    found = verdicts(docs, rdma_pool())
    assert set(found) == {"nccl-infiniband-enabled"}
    assert "requests rdma/ib but sets NCCL_IB_DISABLE=1, which forces TCP" in found["nccl-infiniband-enabled"][0]


def test_a_node_agent_that_mounts_infiniband_is_no_rdma_workload():
    """DRANET's own DaemonSet (the train stack renders it) mounts /dev/infiniband to manage the NICs; it is the
    exempted privileged node agent, not an RDMA pod."""
    path = Path(__file__).resolve().parents[1] / "snapshots" / "train" / "kubernetes" / "daemonset-kube-system-rdma-dranet.yaml"
    docs = [yaml.safe_load(path.read_text())]
    assert uses(docs) == []
    assert verdicts(docs) == {}


def test_the_issues_classic_infiniband_job():
    """The issue's case: a Job on rdma/rdma_shared_device_a with SYS_ADMIN and NCCL_IB_DISABLE=1 once scanned clean."""
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "nccl-allreduce"},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "nccl",
                            "image": "ghcr.io/coreweave/nccl-tests:12.9.1-devel-ubuntu22.04-nccl2.28.3-1-8b67957",
                            "env": [{"name": "NCCL_IB_DISABLE", "value": "1"}],
                            "securityContext": {"capabilities": {"add": ["IPC_LOCK", "SYS_ADMIN"]}},
                            "resources": {"limits": {"rdma/rdma_shared_device_a": 1, "nvidia.com/gpu": 8}},
                        }
                    ],
                }
            }
        },
    }
    found = verdicts([job])
    assert mandatory([job]) == {*RDMA_RULES, "gpu-taints-and-tolerations"}
    assert "remove capabilities ['SYS_ADMIN']" in found["ipc-lock-without-privileged"][0]
    assert "sets NCCL_IB_DISABLE=1, which forces TCP" in found["nccl-infiniband-enabled"][0]
