"""The gateway_client_keys secret is refused, by its key names only, before the gateway reads it."""

import pytest

from aks_gpu_inference.components._base import ComponentInputError
from aks_gpu_inference.components.stack.client_keys import gateway_client_keys


class Settings:
    """A ``pulumi.Config`` holding only the secret's text (None: not set)."""

    def __init__(self, raw):
        self.raw = raw

    def get(self, key):
        assert key == "gateway_client_keys"
        return self.raw

    def require_secret_object(self, _key):
        raise AssertionError("read only after the check passed")


def test_no_clients_read_no_secret():
    assert gateway_client_keys(Settings('{"agent": "k3y"}'), []) == {}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"agent": "k3y-agent"}', "lists 'batch', but the secret has no key"),
        ('{"agent": "k3y-agent", "batch": ""}', "lists 'batch', but the secret has no key"),
        ('["k3y-agent"]', "expected a JSON object of client id -> API key"),
        ("k3y-agent", "expected a JSON object of client id -> API key"),
    ],
)
def test_a_secret_without_a_key_for_every_client_is_refused_without_showing_it(raw, expected):
    with pytest.raises(ComponentInputError) as refused:
        gateway_client_keys(Settings(raw), ["agent", "batch"])
    assert expected in str(refused.value) and "k3y" not in str(refused.value)
    assert "pulumi config set --secret gateway_client_keys" in str(refused.value)
