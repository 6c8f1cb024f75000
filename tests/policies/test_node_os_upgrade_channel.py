import pytest

from policies.rules import node_os_upgrade_channel as rule


def cluster(channel=None):
    return {"autoUpgradeProfile": {"upgradeChannel": "patch", **({"nodeOSUpgradeChannel": channel} if channel else {})}}


def test_node_image_passes():
    assert rule.violations(cluster("NodeImage")) == []


@pytest.mark.parametrize("channel", ["Unmanaged", "None", "SecurityPatch"])
def test_other_channels_fail(channel):
    (message,) = rule.violations(cluster(channel))
    assert f"is {channel!r}; use NodeImage" in message


def test_missing_channel_fails_and_security_patch_is_a_knob():
    assert "is not set" in rule.violations({})[0]
    assert rule.violations(cluster("SecurityPatch"), allow_security_patch=True) == []
