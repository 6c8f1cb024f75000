"""Where else a self-hosted model could run: every placement (VM size x region x regular/Spot x tensor-parallel size)
that fits it at its context and settings, priced for its region, cheapest first, with the quota it draws on.

The parts are the project's own: the memory fit a VllmService checks (``vllm_checks.fit_settings``, ``models.fit``),
list prices per region (``catalog.vm_price``: Microsoft's Retail Prices snapshot), the gateway's cost per token
(``token_cost.self_hosted_cost_per_million`` over the replica's share of its VM), the quota families
(``quota.family_of``) and each region's zones (``regions``). Pure: no Pulumi, no Azure; ``aks-gpu preflight
--alternatives`` asks Azure about the quota of the top placements.

Each rung (``Rung.as_dict``, what ``aks-gpu alternatives --format json`` prints; keys are added, never renamed):

- ``vm_size``, ``region``, ``priority`` (``regular`` or ``spot``), ``tp``, ``fits`` (true: only fitting placements are
  listed), ``gpu``, ``nodes`` (VMs for ``replicas`` replicas), ``replicas_per_node``;
- ``usd_per_hour`` (one node), ``usd_per_month`` (``nodes`` x 730 h), ``usd_per_1m_tokens`` (one replica's share of
  its VM at the assumed throughput), ``price_basis``: ``list`` for regular; for Spot ``on-demand ceiling``: the
  snapshot has no Spot prices, so a Spot node is priced at the most it can cost (``spotMaxPrice`` -1 pays up to the
  on-demand price), never at a guessed discount;
- ``quota_family`` (the Compute usages row: the size's family for regular, ``lowPriorityCores`` for Spot),
  ``quota_regional`` (``cores``; none for Spot), ``vcpus`` (to request: ``nodes`` x the size's vCPUs);
- ``zones`` (the region's availability zones; empty: a region without zones, where a zonal pool cannot go), ``sold``
  (the snapshot prices the size there), ``current`` (the stack's own placement), ``kv_tokens``,
  ``full_length_sequences``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Any

from aks_gpu_inference.components.core import catalog, models, quota, regions
from aks_gpu_inference.components.core.token_cost import self_hosted_cost_per_million

SPOT_BASIS = "on-demand ceiling"
"""How a Spot rung is priced: the snapshot has no Spot meters, and spotMaxPrice -1 pays up to the on-demand price."""


@dataclass(frozen=True)
class Rung:
    vm_size: str
    region: str
    priority: str
    tp: int
    fits: bool
    gpu: str
    nodes: int
    replicas_per_node: int
    usd_per_hour: float | None
    usd_per_month: float | None
    usd_per_1m_tokens: float | None
    price_basis: str
    quota_family: str | None
    quota_regional: str | None
    vcpus: int
    zones: list[str]
    sold: bool
    current: bool
    kv_tokens: int
    full_length_sequences: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def order(self) -> tuple:
        """Cheapest first; at one price regular before Spot (no eviction), then cheaper tokens, fewer GPUs, by name."""
        price = self.usd_per_month if self.usd_per_month is not None else math.inf
        return (price, self.priority != "regular", self.usd_per_1m_tokens or 0.0, self.tp, self.vm_size, self.region)


@dataclass(frozen=True)
class Need:
    """What one model asks of a placement."""

    name: str
    facts: models.ModelFactsArgs
    settings: dict
    """``fit_settings`` of the model."""
    replicas: int
    """Replicas to place: the autoscaler's ceiling, ``replicas``, or the prefill and decode engines."""
    whole_nodes: bool
    """Each replica takes whole nodes of every GPU (prefill/decode engines)."""
    decoders: int
    """Replicas that write output tokens (the cost per token's divisor): all of them, or the decode engines."""
    rdma: bool
    tokens_per_second: float


@dataclass(frozen=True)
class Current:
    pool: str
    vm_size: str
    region: str
    spot: bool
    tp: int
    mig_profile: str | None = None
    """The pool's MIG profile (a stack output leaves out a None)."""


def _same_kind(sku: catalog.GpuSku, current: catalog.GpuSku, need: Need) -> bool:
    """A size the model's image and network can use: the current GPU vendor and CPU architecture (the vLLM image is
    built for one), InfiniBand where the model uses it."""
    same = sku.gpu_vendor == current.gpu_vendor and sku.arch == current.arch
    return same and (not need.rdma or sku.rdma)


def _shapes(need: Need, current: Current) -> list[tuple[str, int]]:
    """(size, tp) worth fitting: whole GPUs of current sizes of the same kind, tp the model's heads split into."""
    here = catalog.get_sku(current.vm_size)
    found = []
    for name in catalog.current_sizes():
        sku = catalog.skus()[name]
        if not _same_kind(sku, here, need):
            continue
        tps = [sku.gpus] if need.whole_nodes else [t for t in models.TP_SIZES if t <= sku.gpus]
        found += [(name, t) for t in tps if not need.facts.tp_problem(t)]
    return found


def _rung(need: Need, fit: models.FitResult, region: str, spot: bool, current: Current) -> Rung:
    sku = catalog.get_sku(fit.vm_size)
    per_node = 1 if need.whole_nodes else max(1, sku.gpus // fit.tp) if fit.mig_profile is None else fit.replicas_per_vm
    nodes = need.replicas if need.whole_nodes else math.ceil(need.replicas / per_node)
    hourly = catalog.vm_price(sku.name, region)
    # One decoder's share of the VMs: its tp GPUs, with prefill/decode the prefill engines' GPUs too.
    gpus_per_decoder = fit.tp * need.replicas / need.decoders
    share = None if hourly is None else hourly * gpus_per_decoder / sku.gpus
    at = regions.get(region)
    return Rung(
        vm_size=sku.name,
        region=region,
        priority="spot" if spot else "regular",
        tp=fit.tp,
        fits=fit.fits,
        gpu=fit.gpu,
        nodes=nodes,
        replicas_per_node=per_node,
        usd_per_hour=hourly,
        usd_per_month=None if hourly is None else round(nodes * hourly * catalog.HOURS_PER_MONTH, 2),
        usd_per_1m_tokens=None if share is None else round(self_hosted_cost_per_million(share, need.tokens_per_second), 4),
        price_basis=SPOT_BASIS if spot else "list",
        quota_family=quota.SPOT if spot else quota.family_of(sku.name),
        quota_regional=None if spot else quota.REGIONAL,
        vcpus=nodes * sku.vcpus,
        zones=list(at.zones) if at else [],
        sold=hourly is not None,
        current=(sku.name, region, spot, fit.tp) == (current.vm_size, current.region, current.spot, current.tp),
        kv_tokens=fit.kv_tokens,
        full_length_sequences=fit.full_length_sequences,
    )


def default_regions(region: str, vm_size: str) -> list[str]:
    """The stack's region, then the regions of its geography whose snapshot sells the current size."""
    selling = set(catalog.regions_selling(vm_size))
    return [region, *(r for r in regions.same_geography(region)[1:] if r in selling)]


def current_rung(need: Need, current: Current) -> Rung:
    """The stack's own placement, priced and fitted as the others (on its MIG slice, if the pool serves slices)."""
    fit = models.fit(need.facts, current.vm_size, current.tp, mig_profile=current.mig_profile, suggest=False, **need.settings)
    return replace(_rung(need, fit, current.region, current.spot, current), current=True)


def rungs(need: Need, current: Current, where: list[str]) -> list[Rung]:
    """Every fitting placement in the regions ``where`` that sell the size, regular and Spot, cheapest first."""
    found = []
    for name, tp in _shapes(need, current):
        fit = models.fit(need.facts, name, tp, suggest=False, **need.settings)
        if not fit.fits:
            continue
        for region in where:
            if catalog.vm_price(name, region) is None:
                continue  # not sold there: not a placement
            found += [_rung(need, fit, region, spot, current) for spot in (False, True)]
    return sorted(found, key=lambda r: r.order)
