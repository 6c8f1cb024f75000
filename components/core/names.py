"""Name rules the Kubernetes API server and Azure Resource Manager enforce, in one place.

Each pattern is anchored and matches exactly what the API accepts; a validator reports the rule's
``*_RULE`` text beside the value it refused.
"""

from __future__ import annotations

import re

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
"""RFC 1123 label (namespaces, Service and container names): at most 63 lowercase alphanumerics or '-'."""
DNS_LABEL_RULE = "an RFC 1123 label: at most 63 lowercase letters, digits or '-', starting and ending alphanumeric"

DNS_SUBDOMAIN = re.compile(r"^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
"""RFC 1123 subdomain (most object names, host names): dot-separated labels, at most 253 characters."""

LABEL_NAME = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)$")
"""The name part of a label key: at most 63 alphanumerics, '-', '_' or '.', alphanumeric at both ends."""

LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$")
"""A label value: empty, or at most 63 alphanumerics, '-', '_' or '.', alphanumeric at both ends."""

GUID = re.compile(r"^[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}$")
"""An Entra object, tenant or role-definition ID."""

AKS_POOL_NAME = re.compile(r"^[a-z][a-z0-9]{0,11}$")
"""An AKS agent pool name (Linux): a lowercase letter, then at most 11 lowercase letters or digits."""
