#!/usr/bin/env python3
"""Fills "cloud_prices" in lib/data/accelerators.json from Epoch AI's dated price table.

Usage: scripts/catalog-cloud-prices.py HARDWARE_PRICES_CSV [--commit SHA] [--check]

HARDWARE_PRICES_CSV is data/Hardware prices.csv of github.com/epoch-research/training-cost-trends: one row per
observed price with its date, vendor, region and the archived page it was read from. For every catalog card the
script keeps, per cloud vendor, the most recent on-demand price per chip-hour ("Price per chip-hour
(on-demand)"), and writes them newest first. Nothing is typed in by hand: rerun it on a newer copy of the table
to refresh the figures. --check exits 1 when the catalog differs from what the table gives (nothing written).

Which table rows describe which card is the one judgement here, and it is written out below (MODELS, and
excluded() with the reason for each exclusion).
"""
import argparse
import csv
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
CATALOG = ROOT / "lib" / "data" / "accelerators.json"

# catalog id -> the table's "Hardware model" names for that card.
MODELS = {
    "v100-sxm2-32gb": ["NVIDIA Tesla V100 DGXS 32 GB", "NVIDIA Tesla V100 SXM2 32 GB"],
    "a100-40gb-sxm": ["NVIDIA A100 SXM4 40 GB"],
    "a100-80gb-sxm": ["NVIDIA A100 SXM4 80 GB"],
    "a100-80gb-pcie": ["NVIDIA A100 SXM4 80 GB", "NVIDIA A100 PCIe", "NVIDIA A100"],  # Azure NC A100 v4 only
    "h100-sxm": ["NVIDIA H100 SXM5 80GB"],
    "h100-pcie": ["NVIDIA H100 PCIe"],
    "h200": ["NVIDIA H200 SXM"],
    "t4": ["NVIDIA Tesla T4"],
    "l4": ["NVIDIA L4"],
    "a10": ["NVIDIA A10 PCIe"],
    "a10g": ["NVIDIA A10G"],
    "l40s": ["NVIDIA L40S"],
    "rtx-3090": ["NVIDIA GeForce RTX 3090"],
    "rtx-4090": ["NVIDIA GeForce RTX 4090"],
    "tpu-v5e": ["Google TPU v5e"],
}


def azure_nc_a100_v4(row):
    return row["Vendor"] == "Microsoft Azure" and "NC24ads A100 v4" in row["Notes"]


def excluded(card, row):
    """Why a row of one of the card's model names does not price this card (None: it does)."""
    if card == "a100-80gb-pcie":
        # Azure's NC A100 v4 series is the A100 80GB PCIe; the table files it under several names. Its other
        # "NVIDIA A100 PCIe" rows give no memory size (40 GB at some vendors, 80 GB at others): left out.
        return None if azure_nc_a100_v4(row) else "only Azure NC A100 v4 rows are known to be the 80GB PCIe card"
    if card == "a100-80gb-sxm" and azure_nc_a100_v4(row):
        return "Azure NC A100 v4 is the 80GB PCIe card (filed under SXM4 80 GB in the table)"
    return None


def cloud_prices(rows, card):
    latest = {}
    for row in rows:
        if row["Hardware model"] not in MODELS[card]:
            continue
        price = row["Price per chip-hour (on-demand)"].strip()
        if not price or not row["Vendor"].strip():
            continue
        if excluded(card, row) is not None:
            continue
        key = row["Vendor"].strip()
        if key not in latest or row["Price date"] > latest[key]["Price date"]:
            latest[key] = row
    out = []
    for row in sorted(latest.values(), key=lambda r: (r["Price date"], r["Vendor"]), reverse=True):
        entry = {
            "usd_per_hour": float(row["Price per chip-hour (on-demand)"]),
            "vendor": row["Vendor"].strip(),
            "date": row["Price date"].strip(),
            "region": row["Location"].strip(),
            "offer": " ".join((row["Notes"] or row["Cloud GPU description"] or "").split()),
            "source": row["Price source"].strip(),
        }
        out.append(entry)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv")
    parser.add_argument("--commit", default="", help="the table's commit, recorded in the catalog")
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    with open(args.csv, encoding="utf-8-sig", newline="") as f:
        rows = list(csv.DictReader(f))
    catalog = json.loads(CATALOG.read_text())
    before = json.dumps(catalog, indent=1, ensure_ascii=False)
    for card in catalog["cards"]:
        card["cloud_prices"] = cloud_prices(rows, card["id"]) if card["id"] in MODELS else []
    catalog["units"]["cloud_prices.usd_per_hour"] = "US dollars per device-hour, on demand, as listed on the date given"
    where = "github.com/epoch-research/training-cost-trends data/Hardware prices.csv"
    catalog["cloud_prices_source"] = (
        f"{where}{' at ' + args.commit if args.commit else ''}: per card and cloud vendor, the most recent "
        "on-demand price per chip-hour (USD), with the date and archived page the table gives; filled by "
        "scripts/catalog-cloud-prices.py (which rows describe which card: its MODELS and exclusions). Instance "
        "prices divided by the GPUs in them, as the table does; a single-GPU instance with a large host (AWS "
        "g4dn.8xlarge for the T4) carries the host's price too.")
    after = json.dumps(catalog, indent=1, ensure_ascii=False)
    if args.check:
        sys.exit(0 if after == before else 1)
    CATALOG.write_text(after + "\n")
    for card in catalog["cards"]:
        prices = card["cloud_prices"]
        if prices:
            low = min(p["usd_per_hour"] for p in prices)
            high = max(p["usd_per_hour"] for p in prices)
            print(f"{card['id']}: {len(prices)} vendors, ${low:.2f}..${high:.2f}/h")
        else:
            print(f"{card['id']}: none in the table")


if __name__ == "__main__":
    main()
