"""aks-node-os-upgrade-channel: every ManagedCluster upgrades node OS images through NodeImage."""

from aks_gpu_inference.policies.manifests import UNKNOWN, Resource
from aks_gpu_inference.policies.rules.node_os_upgrade_channel import RULE

from ._fixtures import Case, agent_pool, managed_cluster, table_tests

API_VERSIONS = (None, "v20250901")
"""The type token without and with an API-version segment (``containerservice/v20250901``)."""


def cluster(channel=None, **props):
    """A cluster with ``nodeOSUpgradeChannel`` set to ``channel`` (None: not set) and props replaced."""

    def build(api_version):
        r = managed_cluster(channel=channel, api_version=api_version)
        return [Resource(r.type, r.name, {**r.props, **props}, r.urn)]

    return build


PREFIX = "ManagedCluster aks: autoUpgradeProfile.nodeOSUpgradeChannel "
FIX = "; set it to NodeImage so kernel and GPU driver upgrade together (accepted: NodeImage)"

CASES = [
    Case("NodeImage", cluster("NodeImage"), over=API_VERSIONS),
    Case("Unmanaged", cluster("Unmanaged"), once=(PREFIX + "is 'Unmanaged'" + FIX,), over=API_VERSIONS),
    Case("None", cluster("None"), once=(PREFIX + "is 'None'" + FIX,), over=API_VERSIONS),
    Case("SecurityPatch", cluster("SecurityPatch"), once=(PREFIX + "is 'SecurityPatch'" + FIX,), over=API_VERSIONS),
    Case("not set", cluster(), once=(PREFIX + "is not set" + FIX,), over=API_VERSIONS),
    Case("no autoUpgradeProfile", cluster(autoUpgradeProfile={}), once=(PREFIX + "is not set",), over=API_VERSIONS),
    Case("lower-case channel is not NodeImage", cluster("nodeimage"), once=(PREFIX + "is 'nodeimage'",), over=(None,)),
    Case("agent pools are not clusters", lambda _: [agent_pool("gpu", "Standard_NC24ads_A100_v4")]),
    # knobs and levels
    Case(
        "allow_security_patch accepts SecurityPatch",
        cluster("SecurityPatch"),
        config={"allow_security_patch": True},
        over=API_VERSIONS,
    ),
    Case(
        "allow_security_patch still rejects Unmanaged",
        cluster("Unmanaged"),
        once=(
            PREFIX
            + "is 'Unmanaged'; set it to NodeImage so kernel and GPU driver upgrade together (accepted: NodeImage, SecurityPatch)",
        ),
        config={"allow_security_patch": True},
    ),
    Case("disabled", cluster("Unmanaged"), level="disabled"),
    Case("advisory override", cluster("Unmanaged"), once=(PREFIX + "is 'Unmanaged'",), level="advisory"),
    # unknown values fail closed
    Case("unknown channel", cluster(UNKNOWN), once=(PREFIX + "is unknown during preview (fails closed)",), over=API_VERSIONS),
    Case(
        "unknown autoUpgradeProfile",
        cluster(autoUpgradeProfile=UNKNOWN),
        once=(PREFIX + "is unknown during preview (fails closed)",),
    ),
    Case(
        "unknown channel with allow_security_patch",
        cluster(UNKNOWN),
        once=(PREFIX + "is unknown during preview (fails closed)",),
        config={"allow_security_patch": True},
    ),
]


test_rule, test_through_analyzer, test_table_covers_the_rule = table_tests(RULE, CASES)
