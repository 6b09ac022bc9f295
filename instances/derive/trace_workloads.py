"""Write the small trace-derived workloads committed under ``instances/workloads/``.

Reads the normalized traces in ``../shared/traces`` through ``dlsched.instances.traces`` and writes
gzip-compressed instance files (gzip header without a timestamp, so the bytes depend only
on the content):

* ``itp-cluster07-d25-26.json.gz``: ITP cluster07, day 25 (a median-busy day), SCHED²;
* ``philly-tail-d0-7.json.gz``: the first (busiest) week of the Philly tail, SCHED²;
* ``alibaba-openb-dense.json.gz``: the Alibaba GPU-sharing tasks of the dense window,
  Horus problem with fractional GPUs (the whole normalized Alibaba list from day 115);

and the whole traces, for replays on a fresh clone (``dlsched.benchmarks.trace_replay``):

* ``itp-cluster01.json.gz`` .. ``itp-cluster10.json.gz``: every job of each ITP cluster
  (69,351 in all), each cluster sized from its own offered load, SCHED² problem (replay
  them as Horus with ``Instance.replace(problem="horus")``: the fields are the same);
* ``philly-tail.json.gz``: the whole Philly tail (14,237 jobs), SCHED².

Run: ``python instances/derive/trace_workloads.py`` (seed 0, target load 0.8).
"""

from __future__ import annotations

import gzip
from pathlib import Path

from dlsched.canonical import pretty_json
from dlsched.instances.traces import (
    alibaba_workload,
    itp_workload,
    itp_workloads,
    philly_workload,
)

OUT = Path(__file__).resolve().parents[1] / "workloads"


def write(instance, name: str) -> Path:
    path = OUT / name
    data = pretty_json(instance.to_dict()).encode("utf-8")
    path.write_bytes(gzip.compress(data, compresslevel=9, mtime=0))
    return path


def main() -> None:
    OUT.mkdir(exist_ok=True)
    for inst, name in (
        (itp_workload("cluster07", days=(25, 26)), "itp-cluster07-d25-26.json.gz"),
        (philly_workload(days=(0, 7)), "philly-tail-d0-7.json.gz"),
        (alibaba_workload(), "alibaba-openb-dense.json.gz"),
        (philly_workload(), "philly-tail.json.gz"),
        *((w, f"itp-{name}.json.gz") for name, w in itp_workloads().items()),
    ):
        path = write(inst, name)
        print(f"{path.name}: {len(inst.jobs)} jobs, {inst.cluster.num_gpus} GPUs, "
              f"{path.stat().st_size} bytes, sha256 {inst.sha256[:12]}")


if __name__ == "__main__":
    main()
