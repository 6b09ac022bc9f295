"""Derive small calibration tables from Gavel's measured throughputs.

Reads ``../shared/data/gavel_throughputs/simulation_throughputs.json`` (Narayanan et al.,
OSDI 2020, MIT licence) and writes ``solver/data/gavel_tables.json`` with:

* ``locality[gpu_type][model][scale]``: packed / spread throughput ratio (``>1`` = spreading
  one worker per server is slower), the median over the model's batch sizes, with the
  per-batch ratios kept under ``locality_raw``;
* ``type_speed[gpu_type]``: single-GPU throughput relative to V100, the median over the
  26 job types measured on both (heterogeneity);
* ``colocation[gpu_type]``: median and p90 slowdown (solo / shared throughput) of a 1-GPU
  job sharing its GPU with another 1-GPU job, over the measured pairs (interference).

Run: ``python instances/derive/gavel_tables.py [--source PATH] [--out PATH]``. The output
is deterministic (sorted keys, values rounded to 4 decimals).
"""

from __future__ import annotations

import argparse
import ast
import json
import re
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT.parent / "shared" / "data" / "gavel_throughputs" / "simulation_throughputs.json"
OUT = ROOT / "solver" / "data" / "gavel_tables.json"
TYPES = ("k80", "p100", "v100")


def model_of(job_type: str) -> str:
    """'ResNet-50 (batch size 64)' -> 'resnet50'."""
    name = re.sub(r"\s*\(batch size \d+\)", "", job_type)
    return re.sub(r"[^a-z0-9]", "", name.lower())


def derive(data: dict) -> dict:
    locality: dict = {}
    raw: dict = {}
    for t in TYPES:
        packed, spread = data[t], data[f"{t}_unconsolidated"]
        per: dict = {}
        for key, entry in packed.items():
            job_type, scale = ast.literal_eval(key)
            if scale == 1 or key not in spread:
                continue
            a, b = entry["null"], spread[key]["null"]
            if a > 0 and b > 0:
                per.setdefault(model_of(job_type), {}).setdefault(str(scale), {})[
                    job_type] = round(a / b, 4)
        raw[t] = per
        locality[t] = {m: {s: round(float(np.median(list(v.values()))), 4)
                           for s, v in sorted(scales.items(), key=lambda kv: int(kv[0]))}
                       for m, scales in sorted(per.items())}
    speed = {}
    for t in TYPES:
        ratios = []
        for key, entry in data["v100"].items():
            job_type, scale = ast.literal_eval(key)
            if scale == 1 and key in data[t] and entry["null"] > 0 and data[t][key]["null"] > 0:
                ratios.append(data[t][key]["null"] / entry["null"])
        speed[t] = round(float(np.median(ratios)), 4)
    coloc = {}
    for t in TYPES:
        slow = []
        for key, entry in data[t].items():
            _, scale = ast.literal_eval(key)
            if scale != 1:
                continue
            solo = entry["null"]
            for other, pair in entry.items():
                if other == "null" or ast.literal_eval(other)[1] != 1:
                    continue
                if solo > 0 and pair[0] > 0:
                    slow.append(solo / pair[0])
        coloc[t] = {"pairs": len(slow), "median": round(float(np.median(slow)), 4),
                    "p90": round(float(np.quantile(slow, 0.9)), 4)}
    return {
        "source": "stanford-futuredata/gavel scheduler/simulation_throughputs.json "
                  "@ c4fa40097339e9608ab71fd64c8bdea96a5e4a4c (MIT)",
        "derived_by": "instances/derive/gavel_tables.py",
        "locality": locality,
        "locality_raw": raw,
        "type_speed": speed,
        "colocation": coloc,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=SOURCE)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    table = derive(json.loads(args.source.read_text()))
    args.out.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
