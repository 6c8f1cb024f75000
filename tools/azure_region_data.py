#!/usr/bin/env python3
"""Generate the regional facts the planner prices and places with, from Azure/karpenter-provider-azure at a commit.

Reads, with ``git show`` (nothing is copied into the repository):

- ``pkg/providers/pricing/zz_generated.pricing.go``: Microsoft's snapshot of the Azure Retail Prices API that
  karpenter-provider-azure ships (``hack/code/prices_gen``: priceType Consumption, Linux, no Spot or Low Priority
  meters), one ``initialOnDemandPrices["<region>"]`` map of ArmSkuName -> USD per hour per region;
- ``pkg/fake/locations.json``: the ARM ListLocations answer (``az account list-locations``) its zone provider reads:
  per physical region, the logical availability zones, the geography and its group, and the paired regions;
- ``pkg/providers/instancetype/known_skus.yaml``: each VM size's Resource SKU ``family``, which is the name of its
  quota row in the Compute usages API.

and writes ``components/core/vm_prices.json`` (prices per region for the sizes below),
``components/core/azure_locations.json`` (zones and geography per region) and the ``source`` and ``families`` of
``components/core/quota_families.json`` (its other keys are written by hand and kept).

Only the sizes the project prices are kept, so the file stays small: every GPU size of the catalog
(``components/core/gpu_sizes.json``: what ``aks-gpu alternatives`` ranks), every VM size a stack file or the example
program in the repository names, and the general-purpose D-series v5/v6 sizes system and platform pools use
(``^Standard_D<n>[a][d]s_v[56]$``: AKS's recommended system-pool family and the component defaults). A size that the
snapshot prices nowhere is still listed under ``sizes``, so "no price here" and "not asked for" differ.

Example (the commit defaults to the one the current file names):

    python tools/azure_region_data.py --repo /work/.mirror/Azure+karpenter-provider-azure/repo
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "components" / "core"
PRICES, LOCATIONS, FAMILIES = CORE / "vm_prices.json", CORE / "azure_locations.json", CORE / "quota_families.json"
PRICING_GO = "pkg/providers/pricing/zz_generated.pricing.go"
LOCATIONS_JSON = "pkg/fake/locations.json"
KNOWN_SKUS = "pkg/providers/instancetype/known_skus.yaml"
UPSTREAM = "Azure/karpenter-provider-azure"
GENERAL_PURPOSE = re.compile(r"^Standard_D\d+a?d?s_v[56]$")
"""General-purpose sizes kept besides the GPU sizes: what system and platform pools use."""
_SIZE = re.compile(r"Standard_[A-Za-z0-9_-]+")
_REGION = re.compile(r'^\s*initialOnDemandPrices\["([a-z0-9]+)"\] = map\[string\]float64\{\s*$')
_ENTRY = re.compile(r'^\s*"([^"]*)":\s*([0-9.]+),\s*$')
_GENERATED = re.compile(r"^// generated at (\d{4}-\d{2}-\d{2})T[0-9:]+Z$")


def parse_prices(text: str) -> tuple[str, dict[str, dict[str, float]]]:
    """(generation date, region -> size -> USD per hour) of a ``zz_generated.pricing.go``; raises ValueError when
    the layout is not the one ``prices_gen`` writes (a region header, entries, a closing brace per region)."""
    generated, prices, region = "", {}, None
    for number, line in enumerate(text.splitlines(), 1):
        if found := _GENERATED.match(line):
            generated = found[1]
        elif found := _REGION.match(line):
            region = found[1]
            prices[region] = {}
        elif region is not None and (found := _ENTRY.match(line)):
            prices[region][found[1]] = float(found[2])
        elif region is not None and line.strip() == "}":
            region = None
        elif region is not None and line.strip():
            raise ValueError(f"{PRICING_GO}:{number}: not a price entry: {line.strip()!r}")
    if not generated or not prices:
        raise ValueError(f"{PRICING_GO}: no generation date or no region maps: not the layout prices_gen writes")
    return generated, prices


def parse_locations(text: str) -> dict[str, dict]:
    """Physical regions of a ListLocations answer: zones (logical, sorted), geography and group, pairs, category."""
    regions = {}
    for entry in json.loads(text):
        about = entry.get("metadata") or {}
        if about.get("regionType") != "Physical":
            continue  # logical entries ("asia", "europe") are geography aliases that hold no resources
        regions[entry["name"]] = {
            "display_name": entry.get("displayName", entry["name"]),
            "zones": sorted(z["logicalZone"] for z in entry.get("availabilityZoneMappings") or []),
            "geography": about.get("geography", ""),
            "geography_group": about.get("geographyGroup", ""),
            "paired": sorted(p["name"] for p in about.get("pairedRegion") or []),
            "category": about.get("regionCategory", ""),
        }
    return dict(sorted(regions.items()))


def parse_families(text: str, sizes: list[str]) -> dict[str, list[str]]:
    """Family -> the ``sizes`` in it, from ``known_skus.yaml`` (a list of ``name``/``family``/``discoveredOn`` entries, which
    ``hack/code`` writes one key per line); a size the file does not know is left out."""
    family_of, name = {}, None
    for line in text.splitlines():
        if found := re.match(r"^- name: (\S+)\s*$", line):
            name = found[1]
        elif (found := re.match(r"^  family: (.+?)\s*$", line)) and name:
            family_of[name] = found[1].strip("'\"")
    families: dict[str, list[str]] = {}
    for size in sizes:
        if size in family_of:
            families.setdefault(family_of[size], []).append(size)
    return dict(sorted(families.items(), key=lambda item: item[0].lower()))


def wanted_sizes(root: Path, snapshot_sizes: set[str]) -> list[str]:
    """The catalog's GPU sizes, every size the repo's stack files and example program name, and the general-purpose
    D-series v5/v6 sizes of the snapshot."""
    catalog = {row["name"] for row in json.loads((root / "components" / "core" / "gpu_sizes.json").read_text())["sizes"]}
    named = set()
    for path in [*root.glob("Pulumi.*.yaml"), *(root / "examples").rglob("*.py")]:
        named |= set(_SIZE.findall(path.read_text()))
    general = {size for size in snapshot_sizes if GENERAL_PURPOSE.match(size)}
    return sorted(catalog | (named & snapshot_sizes) | general)


def _show(repo: Path, commit: str, path: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "show", f"{commit}:{path}"], check=True, capture_output=True, text=True).stdout


def _current_commit() -> str | None:
    if not PRICES.is_file():
        return None
    found = re.search(r"@([0-9a-f]{40}):", json.loads(PRICES.read_text()).get("source", ""))
    return found[1] if found else None


def build(repo: Path, commit: str, root: Path = ROOT) -> tuple[dict, dict, dict]:
    """The three files' contents for ``commit`` of the karpenter-provider-azure git directory ``repo``."""
    generated, prices = parse_prices(_show(repo, commit, PRICING_GO))
    locations = parse_locations(_show(repo, commit, LOCATIONS_JSON))
    sizes = wanted_sizes(root, {size for table in prices.values() for size in table})
    kept = {region: {s: table[s] for s in sizes if s in table} for region, table in sorted(prices.items())}
    price_file = {
        "source": f"{UPSTREAM}@{commit}:{PRICING_GO}",
        "source_note": (
            f"Microsoft's snapshot of the Azure Retail Prices API, generated {generated} by karpenter-provider-azure's "
            "hack/code/prices_gen: priceType Consumption, USD, Linux (Windows products dropped), no Low Priority or Spot "
            "meters (pkg/providers/pricing/pricing.go). Pay-as-you-go USD per node-hour, per region. A size absent "
            "from a region's map has no price there: Microsoft does not sell it there, or did not on that date."
        ),
        "generated_by": "tools/azure_region_data.py (refresh: run it on a newer commit of karpenter-provider-azure)",
        "date": generated,
        "selection": (
            "every GPU size of components/core/gpu_sizes.json, every size the repo's stack files and example program "
            "name, and the general-purpose D-series v5/v6 sizes (system and platform pools)"
        ),
        "sizes": sizes,
        "usd_per_hour": kept,
    }
    location_file = {
        "source": f"{UPSTREAM}@{commit}:{LOCATIONS_JSON}",
        "source_note": (
            "The ARM Subscriptions ListLocations answer (what `az account list-locations` prints) that "
            "karpenter-provider-azure's hack/code/locations_gen recorded, subscription ids redacted. Physical regions "
            "only. zones: the region's logical availability zones (none: the region has no zones); whether a given "
            "VM size is offered in each zone to a subscription is the Resource SKUs API's to say (aks-gpu preflight)."
        ),
        "generated_by": "tools/azure_region_data.py",
        "regions": locations,
    }
    curated = json.loads((root / "components" / "core" / "quota_families.json").read_text())
    family_file = {
        "source": (
            f"{UPSTREAM}@{commit}:{KNOWN_SKUS}, each size's Resource SKU `family` (the Resource SKUs API, "
            "GET /subscriptions/{sub}/providers/Microsoft.Compute/skus), for the sizes vm_prices.json keeps"
        ),
        **{key: value for key, value in curated.items() if key not in ("source", "families")},
        "families": parse_families(_show(repo, commit, KNOWN_SKUS), sizes),
    }
    return price_file, location_file, family_file


def _write(path: Path, data: dict) -> None:
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repo", required=True, type=Path, help="a git directory of Azure/karpenter-provider-azure")
    parser.add_argument("--commit", default=_current_commit(), help="the commit to read (default: the one vm_prices.json names)")
    args = parser.parse_args(argv)
    if not args.commit:
        parser.error("--commit is required: vm_prices.json names none")
    try:
        price_file, location_file, family_file = build(args.repo, args.commit)
    except (subprocess.CalledProcessError, ValueError) as err:
        print(f"error: {getattr(err, 'stderr', None) or err}", file=sys.stderr)
        return 1
    _write(PRICES, price_file)
    _write(LOCATIONS, location_file)
    _write(FAMILIES, family_file)
    priced = {size for table in price_file["usd_per_hour"].values() for size in table}
    print(
        f"{len(price_file['sizes'])} sizes ({len(priced)} priced somewhere) in {len(price_file['usd_per_hour'])} regions, "
        f"as of {price_file['date']}; {len(location_file['regions'])} physical regions; "
        f"{sum(map(len, family_file['families'].values()))} sizes in {len(family_file['families'])} quota families"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
