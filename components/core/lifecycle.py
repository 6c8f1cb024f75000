"""Dated lifecycle facts: when AKS Kubernetes versions, node OS versions, Azure OpenAI model versions,
Managed Grafana major versions and GPU VM sizes stop being supported.

The data lives in ``lifecycle.json`` beside this module; every entry carries its ``source`` and a
``verified`` flag. The table has a ``checked_on`` date: after that, Microsoft may have moved a date.
This module imports nothing from Pulumi; every function takes the date to judge against
(``as_of``) explicitly, so results never depend on the clock.

States: ``retired`` once ``as_of`` has reached ``retires`` (the first day without support),
``retiring`` when ``retires`` is at most ``RETIRING_WINDOW_DAYS`` days ahead, else ``supported``
(also when no retirement date is known).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import date
from functools import cache
from pathlib import Path
from typing import Any, Literal

State = Literal["supported", "retiring", "retired"]

KINDS = (
    "aks_kubernetes",
    "aks_kubernetes_lts",
    "aks_node_os",
    "azure_openai_model",
    "managed_grafana",
    "vm_size",
)
"""The ``kind`` values the table uses."""

_PATH = Path(__file__).with_name("lifecycle.json")


@dataclass(frozen=True)
class Lifecycle:
    """One thing's lifecycle judged on a date."""

    kind: str
    name: str
    retires: date | None
    """First day without support; None when no date is known."""
    state: State
    source: str
    verified: bool
    note: str = ""
    ga: str | None = None
    """General availability as ``YYYY-MM`` or ``YYYY-MM-DD`` where the source gives one."""
    replacement: str | None = None
    stage: str | None = None
    """The publisher's own lifecycle label where it has one (Azure OpenAI: GA, Legacy, Deprecated)."""
    days_left: int | None = None
    """Days from ``as_of`` to ``retires`` (negative once retired); None without a date."""
    extra: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


def _parse_date(value: str | None, where: str) -> date | None:
    if value is None:
        return None
    try:
        return date.fromisoformat(value)
    except (TypeError, ValueError) as error:
        raise ValueError(f"lifecycle.json: {where}: {value!r} is not an ISO date (YYYY-MM-DD)") from error


def _ga_start(ga: str | None, where: str) -> date | None:
    """The first day of a ``YYYY-MM`` or ``YYYY-MM-DD`` GA value."""
    if ga is None:
        return None
    text = ga if len(ga) == 10 else f"{ga}-01"
    return _parse_date(text, where)


@cache
def _table() -> dict[str, Any]:
    data = json.loads(_PATH.read_text())
    _parse_date(data.get("checked_on"), "checked_on")
    if not isinstance(data.get("retiring_window_days"), int):
        raise ValueError("lifecycle.json: retiring_window_days must be an integer")
    seen: set[tuple[str, str]] = set()
    for row in data["entries"]:
        where = f"{row.get('kind')}/{row.get('name')}"
        if row.get("kind") not in KINDS:
            raise ValueError(f"lifecycle.json: {where}: unknown kind")
        if not row.get("name") or not row.get("source"):
            raise ValueError(f"lifecycle.json: {where}: every entry needs a name and a source")
        if not isinstance(row.get("verified"), bool):
            raise ValueError(f"lifecycle.json: {where}: 'verified' must be true or false")
        _parse_date(row.get("retires"), where)
        _ga_start(row.get("ga"), where)
        key = (row["kind"], row["name"])
        if key in seen:
            raise ValueError(f"lifecycle.json: {where}: duplicate entry")
        seen.add(key)
    return data


RETIRING_WINDOW_DAYS: int = _table()["retiring_window_days"]
"""How many days before ``retires`` an entry counts as ``retiring``."""


def checked_on() -> date:
    """The date the table's facts were last checked against their sources."""
    checked = _parse_date(_table()["checked_on"], "checked_on")
    assert checked is not None
    return checked


def _state(retires: date | None, as_of: date) -> State:
    if retires is None:
        return "supported"
    if as_of >= retires:
        return "retired"
    if (retires - as_of).days <= RETIRING_WINDOW_DAYS:
        return "retiring"
    return "supported"


_KNOWN = {"kind", "name", "retires", "source", "verified", "note", "ga", "replacement", "lifecycle"}


def _judge(row: dict[str, Any], as_of: date) -> Lifecycle:
    retires = _parse_date(row.get("retires"), f"{row['kind']}/{row['name']}")
    return Lifecycle(
        kind=row["kind"],
        name=row["name"],
        retires=retires,
        state=_state(retires, as_of),
        source=row["source"],
        verified=row["verified"],
        note=row.get("note", ""),
        ga=row.get("ga"),
        replacement=row.get("replacement"),
        stage=row.get("lifecycle"),
        days_left=None if retires is None else (retires - as_of).days,
        extra={k: v for k, v in row.items() if k not in _KNOWN},
    )


def entries(kind: str | None = None, as_of: date | None = None) -> list[Lifecycle]:
    """Every entry (of one ``kind`` if given), in table order, judged on ``as_of``
    (default: the table's ``checked_on`` date)."""
    if kind is not None and kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; expected one of {', '.join(KINDS)}")
    when = as_of or checked_on()
    return [_judge(row, when) for row in _table()["entries"] if kind is None or row["kind"] == kind]


def status(kind: str, name: str, as_of: date) -> Lifecycle | None:
    """The lifecycle of one thing on ``as_of``, or None when the table does not list it.

    Names: AKS minors as ``"1.35"`` (patch versions like ``"1.35.2"`` are reduced to the minor),
    Azure OpenAI models as ``"<model>@<version>"`` (see ``model_status``), Grafana as ``"12"``,
    VM sizes as ``"Standard_NC24ads_A100_v4"``, node OS as the osSKU (``"Ubuntu2204"``).
    """
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; expected one of {', '.join(KINDS)}")
    if kind.startswith("aks_kubernetes"):
        parts = name.removeprefix("v").split(".")
        name = ".".join(parts[:2])
    for row in _table()["entries"]:
        if row["kind"] == kind and row["name"] == name:
            return _judge(row, as_of)
    return None


def model_status(model: str, version: str, as_of: date) -> Lifecycle | None:
    """``status("azure_openai_model", f"{model}@{version}", as_of)``."""
    return status("azure_openai_model", f"{model}@{version}", as_of)


def supported(kind: str, as_of: date) -> list[Lifecycle]:
    """Entries of ``kind`` still supported on ``as_of`` (state ``supported`` or ``retiring``),
    leaving out those whose GA date (where the table has one) is after ``as_of``.

    ``supported("aks_kubernetes", date(2026, 12, 1))`` gives AKS's standard-support minors that day.
    """
    found = []
    for item in entries(kind, as_of):
        ga = _ga_start(item.ga, f"{item.kind}/{item.name}")
        if item.state != "retired" and (ga is None or ga <= as_of):
            found.append(item)
    return found


def advised_minor(minimum: tuple[int, int], as_of: date) -> str | None:
    """The AKS Kubernetes minor to advise: the oldest at least ``minimum`` in standard support on ``as_of`` (and not
    within the retiring window when a later one is), so advice never names a release AKS no longer supports.
    None when the table knows no such minor."""
    usable = [e for e in supported("aks_kubernetes", as_of) if _minor(e.name) >= minimum]
    usable.sort(key=lambda e: _minor(e.name))
    lasting = [e for e in usable if e.state == "supported"]
    chosen = (lasting or usable)[:1]
    return chosen[0].name if chosen else None


def _minor(name: str) -> tuple[int, int]:
    major, minor = name.split(".")[:2]
    return int(major), int(minor)


def recommendations() -> dict[str, dict[str, Any]]:
    """The table's sourced recommendations (frontier model, Grafana major version, AKS version)."""
    return json.loads(json.dumps(_table()["recommendations"]))
