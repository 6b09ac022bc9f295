"""Gavel's own FIFO traces replayed in dlsched, beside Gavel's simulator's figures.

The cross-check of issue 30 (docs/simulator.md, "Cross-check with Gavel's simulator")
reported dlsched's mean JCT 62,736 s and Gavel's 204,337 s on 3,000 jobs (3.3x) but
agreement within 5 % on 1,000. This benchmark replays traces drawn by Gavel's own
generator (``benchmarks/data/gavel/``, made by ``instances/derive/gavel_fifo.py`` with
Gavel at commit c4fa400) under FIFO, locality and interference off, on two clusters:

* ``64 V100``: the cluster Gavel's simulator was run on (8 servers x 8 V100), the
  like-for-like comparison with Gavel's figures (read from the committed
  ``gavel-*.json``: Gavel cannot run here);
* ``importer``: the cluster ``dlsched``'s trace importer sizes for the same file
  (``import_trace("gavel", ...)``, default ``target_load`` 0.8: whole 8-GPU servers
  holding the offered load inside the trace's window / 0.8), which grows with the
  trace's length;

and, as ablations on 64 V100, Gavel's 360 s round leases (every arrival and duration
rounded up to 360 s, as ``gavel_rounds`` does) and dlsched's FIFO called only every
2,160 s (Gavel's delayed allocation alone, without its over-commitment: docs/simulator.md).

Durations are Gavel's ``total_steps`` / its measured V100 steps per second at the job's
scale (dlsched's ``gavel`` trace reader). JCT is from each job's own arrival. The last
line is one JSON object.

    python -m dlsched.benchmarks.gavel_replay [--jobs 1000,3000]
    python -m dlsched.benchmarks.gavel_replay --scan DIR   # any folder of Gavel traces
"""

from __future__ import annotations

import argparse
import gzip
import json
import tempfile
import time
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

import numpy as np
import pandas as pd

from dlsched.errors import InputError
from dlsched.instance import Instance
from dlsched.instances.trace_formats import read_raw_trace
from dlsched.instances.traces import workload_from_frame
from dlsched.jobs import Job
from dlsched.markdown import markdown_table
from dlsched.simulate import Policy, SpeedModel, job_table, simulate
from dlsched.topology import homogeneous_cluster

ROUND_S = 360.0  # Gavel's time_per_iteration
GPUS = 64  # the cluster Gavel's simulator ran on: -c 64:0:0, 8 GPUs per server
RESET_S = 2160.0
"""Median gap between Gavel's allocation recomputations in these runs: its
``minimum_time_between_allocation_resets`` (1,920 s) checked at 360 s round starts."""
TRACES = ("fifo-l1900-s0", "fifo-l1600-s0", "fifo-l1700-s6")
"""Gavel ``-m`` traces: mean inter-arrival (``-l``) 1900 s and 1600 s seed 0, 1700 s seed 6."""


def data_dir() -> Traversable:
    """The committed traces and Gavel's summaries."""
    return resources.files("dlsched.benchmarks").joinpath("data/gavel")


def read_trace(name: str, jobs: int) -> pd.DataFrame:
    """The first ``jobs`` rows of a committed Gavel trace, read by dlsched's reader."""
    raw = data_dir().joinpath(f"{name}.trace.gz").read_bytes()
    lines = gzip.decompress(raw).decode("utf-8").splitlines(keepends=True)
    if jobs > len(lines):
        raise InputError(f"--jobs {jobs}", field="--jobs",
                         fix=f"the trace {name} has {len(lines)} jobs")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{name}.trace"
        path.write_text("".join(lines[:jobs]), encoding="utf-8")
        return read_raw_trace("gavel", path).frame


def fixed_workload(frame: pd.DataFrame, gpus: int = GPUS, rounds: bool = False) -> Instance:
    """The trace on ``gpus`` V100 in 8-GPU servers; ``rounds``: every arrival and duration
    rounded up to a multiple of 360 s (Gavel's round leases, as in ``gavel_rounds``)."""
    def up(x: float) -> float:
        return float(np.ceil(x / ROUND_S) * ROUND_S) if rounds else float(x)

    jobs = tuple(Job(id=str(r.job_id), submit_time=round(up(r.submit_time_s), 3),
                     num_gpus=int(r.num_gpus), duration=round(up(r.duration_s), 3),
                     model="resnet50", kind="train") for r in frame.itertuples())
    return Instance(problem="sched2", cluster=homogeneous_cluster(
        gpus // 8, 8, gpu_type="v100", gpu_mem_gb=16.0), jobs=jobs, params={},
        name="gavel-trace")


def run_fifo(work: Instance, every: float | None = None,
             arrivals: pd.Series | None = None) -> dict:
    """Mean JCT, makespan and utilization of FIFO (locality, interference off); ``every``:
    FIFO is called only every ``every`` seconds (arrivals and completions just queue/free);
    ``arrivals`` (by job id): JCT from these instead of the workload's submit times."""
    policy = Policy("fifo") if every is None else Policy("fifo", interval=every,
                                                         batch_only=True)
    run = simulate(work, policy, SpeedModel(locality=None, interference=None),
                   record_events=False, frag_samples=False)
    table = job_table(run)
    start, end = table["start"].to_numpy(float), table["end"].to_numpy(float)
    size = table["num_gpus"].to_numpy(float)
    makespan = float(end.max())
    gpus = work.cluster.num_gpus
    edges = np.linspace(0.0, makespan, 11)
    busy = [float((size * np.clip(np.minimum(end, b) - np.maximum(start, a), 0, None)).sum())
            / (gpus * (b - a)) for a, b in zip(edges[:-1], edges[1:], strict=True)]
    jct = (table["jct"] if arrivals is None
           else table["end"] - table["job"].map(arrivals).astype(float))
    return {"gpus": gpus, "mean_jct_s": float(jct.mean()), "makespan_s": makespan,
            "utilization": float((size * (end - start)).sum() / (gpus * makespan)),
            "utilization_by_decile": [round(x, 4) for x in busy]}


def gavel_figures(name: str, jobs: int) -> dict | None:
    """Gavel's summary for (trace, jobs), or None if it was not run."""
    path = data_dir().joinpath(f"gavel-{name.removeprefix('fifo-')}-n{jobs}.json")
    return json.loads(path.read_text()) if path.is_file() else None


def compare(name: str, jobs: int) -> dict:
    """One trace prefix: dlsched on 64 V100 and on the importer's cluster; Gavel."""
    frame = read_trace(name, jobs)
    fixed = run_fifo(fixed_workload(frame))
    delayed = run_fifo(fixed_workload(frame), every=RESET_S)
    leased = run_fifo(fixed_workload(frame, rounds=True),
                      arrivals=frame.set_index(frame["job_id"].astype(str))["submit_time_s"])
    imported = run_fifo(workload_from_frame(frame, name=name, source="gavel"))
    gavel = gavel_figures(name, jobs)
    return {"trace": name, "jobs": jobs, "dlsched_64": fixed,
            "dlsched_64_rounds": leased, "dlsched_64_every_reset": delayed,
            "dlsched_importer": imported,
            "gavel_64": None if gavel is None else {
                k: gavel[k] for k in ("mean_jct_s", "gavel_utilization", "makespan_s",
                                      "utilization_by_decile")}}


def scan(folder: Path) -> list[dict]:
    """Every ``*.trace`` in ``folder`` (whole): dlsched on 64 V100 and on the importer's."""
    paths = sorted(folder.glob("*.trace"))
    if not paths:
        raise InputError(f"--scan {folder}", field="--scan",
                         fix="name a folder of Gavel traces (instances/derive/gavel_fifo.py trace)")
    rows = []
    for path in paths:
        frame = read_raw_trace("gavel", path).frame
        imported = run_fifo(workload_from_frame(frame, name=path.stem, source="gavel"))
        rows.append({"trace": path.name, "jobs": len(frame),
                     "jct_64_s": run_fifo(fixed_workload(frame))["mean_jct_s"],
                     "importer_gpus": imported["gpus"], "jct_importer_s": imported["mean_jct_s"]})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", default="1000,3000",
                    help="comma-separated trace prefixes (1000,3000)")
    ap.add_argument("--trace", choices=TRACES, action="append",
                    help="a committed trace (repeatable; default all)")
    ap.add_argument("--scan", type=Path,
                    help="instead: every *.trace in this folder, dlsched only")
    args = ap.parse_args(argv)
    if args.scan is not None:
        start = time.process_time()
        rows = scan(args.scan)
        print(markdown_table(
            ["trace", "jobs", "dlsched, 64 V100: mean JCT (s)", "importer GPUs",
             "dlsched, importer's cluster", "64 / importer"],
            [[r["trace"], r["jobs"], f"{r['jct_64_s']:,.0f}", r["importer_gpus"],
              f"{r['jct_importer_s']:,.0f}", f"{r['jct_64_s'] / r['jct_importer_s']:.2f}"]
             for r in rows]))
        print(json.dumps({"scan": rows, "cpu_s": time.process_time() - start}))
        return 0
    try:
        sizes = [int(x) for x in args.jobs.split(",")]
    except ValueError:
        raise InputError(f"--jobs {args.jobs!r}", field="--jobs",
                         fix="give job counts separated by commas, e.g. 1000,3000") from None
    start = time.process_time()
    rows = [compare(t, n) for t in (args.trace or TRACES) for n in sizes]

    def jct(x):
        return "n/a" if x is None else f"{x['mean_jct_s']:,.0f}"

    print(markdown_table(
        ["trace", "jobs", "Gavel, 64 V100: mean JCT (s)", "dlsched, 64 V100",
         "dlsched / Gavel", "dlsched 64, 360 s leases", "dlsched 64, FIFO every 2,160 s",
         "importer GPUs",
         "dlsched, importer's cluster",
         "Gavel / dlsched-importer"],
        [[r["trace"], r["jobs"], jct(r["gavel_64"]), jct(r["dlsched_64"]),
          "n/a" if r["gavel_64"] is None else
          f"{r['dlsched_64']['mean_jct_s'] / r['gavel_64']['mean_jct_s']:.3f}",
          jct(r["dlsched_64_rounds"]), jct(r["dlsched_64_every_reset"]),
          r["dlsched_importer"]["gpus"],
          jct(r["dlsched_importer"]),
          "n/a" if r["gavel_64"] is None else
          f"{r['gavel_64']['mean_jct_s'] / r['dlsched_importer']['mean_jct_s']:.2f}"]
         for r in rows]))
    print()
    print(markdown_table(
        ["trace", "jobs", "utilization, Gavel 64", "dlsched 64", "makespan Gavel (s)",
         "dlsched 64 (s)"],
        [[r["trace"], r["jobs"],
          "n/a" if r["gavel_64"] is None else f"{r['gavel_64']['gavel_utilization']:.4f}",
          f"{r['dlsched_64']['utilization']:.4f}",
          "n/a" if r["gavel_64"] is None else f"{r['gavel_64']['makespan_s']:,.0f}",
          f"{r['dlsched_64']['makespan_s']:,.0f}"] for r in rows]))
    print(json.dumps({"rows": rows, "cpu_s": time.process_time() - start}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
