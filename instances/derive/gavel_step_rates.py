"""Derive Gavel's measured V100 steps per second per job type and GPU count.

Reads ``../shared/data/gavel_throughputs/simulation_throughputs.json`` (Narayanan et al.,
OSDI 2020, MIT licence; the throughputs Gavel's own simulator uses) and writes
``solver/data/gavel_step_rates.json``: ``{"v100": {job_type: {scale: steps_per_s}}}`` with
the isolated (``null`` co-runner), consolidated throughput of each ``(job_type, scale)``
key. The Gavel trace reader (``instances/trace_formats.py``) turns a job's
``total_steps`` into a run time with it.

Run: ``python instances/derive/gavel_step_rates.py [--source PATH] [--out PATH]``. The
output is deterministic (sorted keys, rates rounded to 6 significant digits).
"""

from __future__ import annotations

import argparse
import ast
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT.parent / "shared" / "data" / "gavel_throughputs" / "simulation_throughputs.json"
OUT = ROOT / "solver" / "data" / "gavel_step_rates.json"


def derive(data: dict, gpu_type: str = "v100") -> dict:
    """``{gpu_type: {job_type: {scale: rate}}}`` from Gavel's throughput file."""
    rates: dict[str, dict[str, float]] = {}
    for key, entry in data[gpu_type].items():
        job_type, scale = ast.literal_eval(key)
        rate = entry.get("null") if isinstance(entry, dict) else None
        if rate:
            rates.setdefault(job_type, {})[str(scale)] = float(f"{rate:.6g}")
    return {"source": "Gavel simulation_throughputs.json (MIT), isolated consolidated "
            "steps/s", gpu_type: {k: dict(sorted(v.items(), key=lambda kv: int(kv[0])))
                                  for k, v in sorted(rates.items())}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=SOURCE, help=f"input (default {SOURCE})")
    parser.add_argument("--out", type=Path, default=OUT, help=f"output (default {OUT})")
    args = parser.parse_args()
    doc = derive(json.loads(args.source.read_text()))
    args.out.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n")
    print(f"wrote {args.out}: {len(doc['v100'])} job types")


if __name__ == "__main__":
    main()
