"""Kubernetes objects registered whole, for kinds whose fields sit beside ``metadata``."""

from __future__ import annotations

import pulumi


class KubernetesObject(pulumi.CustomResource):
    """A custom resource whose fields sit beside ``metadata`` instead of under ``spec`` (or both).

    The Python ``kubernetes.apiextensions.CustomResource`` forwards only ``spec``
    (pulumi/pulumi-kubernetes#2363); the Node SDK's spreads every field under the same
    ``kubernetes:<apiVersion>:<kind>`` token, which the provider applies as an unstructured object.
    Registering the whole object under that token does the same from Python.
    """

    def __init__(self, resource_name: str, obj: dict, opts: pulumi.ResourceOptions):
        super().__init__(f"kubernetes:{obj['apiVersion']}:{obj['kind']}", resource_name, obj, opts)
