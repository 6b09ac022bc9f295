"""Which consecutive inference windows an exact-window method proves optimal, and where.

Protocol: a generated stream (``dlsched.instances.inference_gen``: ``--seed``, ``--gpus``,
``--start-hour``, ``--hours``, ``--scale``, delay CV 0 so that batch durations are the
table's), cut into ``--count`` windows of ``--window`` queries starting every ``--step``
queries; each window solved by ``--method`` (``lagrange`` by default; any registered
``inference`` method) with ``--time-limit`` seconds.

Each window is also classified by its *per-query bound* (every query started alone, at its
arrival, in the fastest batch; :func:`dlsched.formulations.inference_lagrange
.standalone_values`): **free** when the schedule found earns that bound (every query its
most: proving optimality is then trivial), **congested** when the method's proven bound is
below it (no schedule gives every query its most), **open** otherwise (neither is known).
The summary counts proven windows per class: a method that proves only free windows proves
nothing about congestion.

Prints a markdown row per window, the summary, and as its last line one JSON object.

    python -m dlsched.benchmarks.inference_windows                     # p2:2, × 1.8
    python -m dlsched.benchmarks.inference_windows --gpus g2:2 --scale 1.0 --step 600
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import TextIO

from dlsched.formulations.inference_lagrange import standalone_values
from dlsched.instances.inference_gen import generate_inference
from dlsched.markdown import markdown_head, markdown_row, markdown_table
from dlsched.problems.inference import inference_data
from dlsched.problems.inference import window as cut
from dlsched.solve import solve

TOLERANCE = 1e-6
"""Σ Q within this of the per-query bound counts as earning it (the evaluator's sums)."""
CLASSES = ("free", "congested", "open")


def classify(value: float | None, bound: float | None, most: float) -> str:
    """``free`` / ``congested`` / ``open`` for a schedule of Σ Q ``value`` with proven
    upper ``bound`` on a window whose per-query bound is ``most``."""
    if value is not None and value >= most - TOLERANCE:
        return "free"
    if bound is not None and bound < most - TOLERANCE:
        return "congested"
    return "open"


def scan(*, seed: int = 0, gpus: str = "p2:2", start_hour: float = 15.0, hours: float = 0.1,
         scale: float = 1.8, window: int = 200, step: int = 250, count: int = 20,
         method: str = "lagrange", time_limit: float | None = 60.0,
         out: TextIO | None = None) -> list[dict]:
    """Solve the windows (module docstring); one dict per window, printed as it finishes
    when ``out`` (a text stream) is given."""
    stream = generate_inference(seed=seed, gpus=gpus, start_hour=start_hour, hours=hours,
                                scale=scale, delay_cv=0.0)
    total = len(stream.params["queries"]["arrival_ms"])
    rows = []
    for lo in range(0, step * count, step):
        if lo + window > total:
            break
        sub = cut(stream, lo, lo + window)
        data = inference_data(sub)
        most = float(standalone_values(data, [0] * len(data.gpu_ids)).sum())
        cpu, wall = time.process_time(), time.perf_counter()
        r = solve(sub, method, time_limit=time_limit)
        row = {"window": [lo, lo + window], "status": r.status.value,
               "objective": r.objective, "bound": r.bound, "per_query_bound": most,
               "gap": r.gap,
               "class": classify(r.objective, r.bound, most),
               "wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu}
        rows.append(row)
        if out is not None:
            print(_row_line(row), file=out, flush=True)
    return rows


def _fmt(v: float | None, spec: str = ".3f") -> str:
    return "—" if v is None else format(v, spec)


def _row_line(row: dict) -> str:
    lo, hi = row["window"]
    gap = None if row["gap"] is None else 100 * row["gap"]
    return markdown_row([f"{lo}-{hi}", row["class"], row["status"], _fmt(row["objective"]),
                         _fmt(row["bound"]), f"{row['per_query_bound']:.3f}",
                         f"{_fmt(gap, '.3f')} %", f"{row['cpu_s']:.1f}"])


def summary(rows: list[dict]) -> dict:
    """Windows and proven windows per class, the largest gap and CPU seconds."""
    out: dict = {}
    for c in CLASSES:
        mine = [r for r in rows if r["class"] == c]
        out[c] = {"windows": len(mine),
                  "proven": sum(r["status"] == "optimal" for r in mine)}
    gaps = [r["gap"] for r in rows if r["gap"] is not None]
    out["gap_max"] = max(gaps) if gaps else None
    out["cpu_s_max"] = max((r["cpu_s"] for r in rows), default=0.0)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--gpus", default="p2:2", help="cluster, e.g. p2:2 or g2:1,p2:1")
    ap.add_argument("--start-hour", type=float, default=15.0)
    ap.add_argument("--hours", type=float, default=0.1, help="stream length (0.1 h)")
    ap.add_argument("--scale", type=float, default=1.8, help="arrival-rate factor (1.8)")
    ap.add_argument("--window", type=int, default=200, help="queries per window (200)")
    ap.add_argument("--step", type=int, default=250, help="queries between starts (250)")
    ap.add_argument("--count", type=int, default=20, help="most windows (20)")
    ap.add_argument("--method", default="lagrange", help="inference method (lagrange)")
    ap.add_argument("--time-limit", type=float, default=60.0, help="seconds per window")
    args = ap.parse_args(argv)
    print(f"# {args.method} on windows of {args.window} queries, {args.gpus}, "
          f"× {args.scale:g}, {args.start_hour:g} h + {args.hours:g} h, seed {args.seed}\n")
    print(markdown_head(["window", "class", "status", "Σ Q", "bound", "per-query bound", "gap",
                         "CPU s"]))
    rows = scan(seed=args.seed, gpus=args.gpus, start_hour=args.start_hour, hours=args.hours,
                scale=args.scale, window=args.window, step=args.step, count=args.count,
                method=args.method, time_limit=args.time_limit, out=sys.stdout)
    s = summary(rows)
    print(f"\nload average {os.getloadavg()[0]:.2f} (1 min) at the end")
    print("\n" + markdown_table(["class", "windows", "proven"],
                                [[c, s[c]["windows"], s[c]["proven"]] for c in CLASSES]))
    print("\nfree: the schedule gives every query its most (a trivial proof); congested: the "
          "proven bound shows no schedule can; open: neither is known.")
    print(json.dumps({"benchmark": "inference_windows", "arguments": vars(args),
                      "summary": s, "windows": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
