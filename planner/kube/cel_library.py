"""The Kubernetes CEL library functions the pinned CRDs use that cel-python lacks: string functions
(``lowerAscii``, ``split``, ``substring``, ``indexOf``, ...), lists (``isSorted``) and ``isIP``/``isCIDR``.

Imported only when a CEL rule is evaluated (``crd_cel.CelEngine``): importing cel-python is not free.
"""

from __future__ import annotations

import ipaddress
import itertools
from typing import Any

from celpy import celtypes as ct

from aks_gpu_inference.planner.kube.json_values import json_equal


def _ascii(text: str, upper: bool) -> str:
    """``text`` with only the ASCII letters case-mapped, as Kubernetes' lowerAscii/upperAscii do."""
    return "".join(chr(ord(c) + (-32 if upper else 32)) if ("a" <= c <= "z" if upper else "A" <= c <= "Z") else c for c in text)


def lower_ascii(s: Any) -> ct.StringType:
    return ct.StringType(_ascii(str(s), upper=False))


def upper_ascii(s: Any) -> ct.StringType:
    return ct.StringType(_ascii(str(s), upper=True))


def split(s: Any, sep: Any, n: Any = None) -> ct.ListType:
    s, sep = str(s), str(sep)
    n = -1 if n is None else int(n)
    if n == 0:
        return ct.ListType([])
    if sep == "":
        parts = list(s) if n < 0 or n >= len(s) else [*list(s[: n - 1]), s[n - 1 :]]
    else:
        parts = s.split(sep) if n < 0 else s.split(sep, n - 1)
    return ct.ListType([ct.StringType(p) for p in parts])


def substring(s: Any, start: Any, end: Any = None) -> ct.StringType:
    s, start = str(s), int(start)
    end = len(s) if end is None else int(end)
    if not 0 <= start <= end <= len(s):
        raise IndexError(f"substring({start}, {end}) out of range for a string of length {len(s)}")
    return ct.StringType(s[start:end])


def index_of(target: Any, what: Any, offset: Any = 0) -> ct.IntType:
    if isinstance(target, list):
        return ct.IntType(next((i for i, x in enumerate(target) if json_equal(x, what)), -1))
    return ct.IntType(str(target).find(str(what), int(offset)))


def last_index_of(target: Any, what: Any, offset: Any = None) -> ct.IntType:
    if isinstance(target, list):
        return ct.IntType(next((i for i in range(len(target) - 1, -1, -1) if json_equal(target[i], what)), -1))
    end = None if offset is None else int(offset) + len(str(what))
    return ct.IntType(str(target).rfind(str(what), 0, end))


def char_at(s: Any, i: Any) -> ct.StringType:
    s, i = str(s), int(i)
    if not 0 <= i <= len(s):
        raise IndexError(f"charAt({i}) out of range")
    return ct.StringType(s[i : i + 1])


def trim(s: Any) -> ct.StringType:
    return ct.StringType(str(s).strip())


def replace(s: Any, old: Any, new: Any, n: Any = -1) -> ct.StringType:
    return ct.StringType(str(s).replace(str(old), str(new), int(n)))


def join(items: Any, sep: Any = "") -> ct.StringType:
    return ct.StringType(str(sep).join(str(x) for x in items))


def is_ip(s: Any) -> ct.BoolType:
    """An IPv4 or IPv6 address without a zone; an IPv4-mapped IPv6 address is not one (as in Kubernetes)."""
    text = str(s)
    if "%" in text:
        return ct.BoolType(False)
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return ct.BoolType(False)
    return ct.BoolType(not (isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None))


def is_cidr(s: Any) -> ct.BoolType:
    try:
        ipaddress.ip_network(str(s), strict=False)
    except ValueError:
        return ct.BoolType(False)
    return ct.BoolType("/" in str(s))


def is_sorted(items: Any) -> ct.BoolType:
    values = list(items)
    return ct.BoolType(all(a <= b for a, b in itertools.pairwise(values)))


FUNCTIONS = {
    "lowerAscii": lower_ascii,
    "upperAscii": upper_ascii,
    "split": split,
    "substring": substring,
    "indexOf": index_of,
    "lastIndexOf": last_index_of,
    "charAt": char_at,
    "trim": trim,
    "replace": replace,
    "join": join,
    "isIP": is_ip,
    "isCIDR": is_cidr,
    "isSorted": is_sorted,
}
"""CEL function name -> implementation, for ``celpy.Environment.program(..., functions=FUNCTIONS)``."""
