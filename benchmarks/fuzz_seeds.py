"""The seed files of the command-line fuzzer (:mod:`.fuzz`): small, deterministic, valid
files of every kind it mutates — snapshots and solutions of every problem, workloads, a
suite manifest and a trace of every format."""

from __future__ import annotations

import copy
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import fuzz_files


@dataclass(frozen=True)
class Seed:
    """A valid file to mutate: an instance, a workload, or a solution (with its instance)."""

    name: str
    kind: str  # instance | workload | solution | manifest | trace-json | trace-csv
    problem: str
    doc: Any
    instance_doc: dict[str, Any] | None = None  # the instance a solution belongs to
    method: str = ""  # heuristic that ``solve`` runs on instance mutants
    policy: str = ""  # simulation policy for workload mutants
    csv: Any = None  # the fuzz_files.CsvSeed of a delimited trace


def make_seeds() -> list[Seed]:
    """The seed files: deterministic, small, every problem; solutions from real methods."""
    from dlsched.registry import generators
    from dlsched.solution_io import solution_to_dict
    from dlsched.solve import solve

    gen = generators()
    seeds: list[Seed] = []
    snapshots = [
        ("horus", gen["horus"].build(seed=1, nodes=3, gpus_per_node=2, busy=0.5, beta=4),
         "greedy"),
        ("horus-coloc", gen["horus"].build(seed=2, nodes=3, gpus_per_node=2, busy=0.5, beta=4,
                                           cost_model="colocation"), "obp"),
        ("genie", gen["genie"].build(seed=1, nodes=2, gpus_per_node=2, snapshot=True,
                                     waiting=4, busy=0.5), "swaf"),
        ("liquid", gen["liquid"].build(seed=1, nodes=3, gpus_per_node=2, busy=0.3), "bestfit"),
        ("sched2", gen["sched2"].build(seed=1, jobs=8, servers=2, gpus_per_server=4), "sif"),
    ]
    if "inference" in gen:  # decisions are batches (solution key "batches")
        inst = gen["inference"].build(seed=1, hours=0.003, peak_qps=5)
        seeds.append(Seed("inference", "instance", "inference", inst.to_dict(),
                          method="edf-dp"))
        exact_delays = gen["inference"].build(seed=2, hours=0.003, peak_qps=5, delay_cv=0.0)
        result = solve(exact_delays, "edf-dp", seed=0)
        if result.decision is not None:
            seeds.append(Seed("inference-solution", "solution", "inference",
                              solution_to_dict(exact_delays, result.decision),
                              instance_doc=exact_delays.to_dict()))
    for name, inst, method in snapshots:
        doc = inst.to_dict()
        seeds.append(Seed(name, "instance", inst.problem, doc, method=method))
        result = solve(inst, method, seed=0)
        if result.decision is not None and inst.problem != "inference":
            seeds.append(Seed(f"{name}-solution", "solution", inst.problem,
                              solution_to_dict(inst, result.decision), instance_doc=doc))
    # decisions with start times (GENIE and SCHED² offline schedules)
    for name, inst, _ in snapshots:
        if inst.problem in ("genie", "sched2"):
            result = solve(inst, "offline-makespan", time_limit=20, seed=0)
            if result.decision is not None:
                seeds.append(Seed(f"{name}-timed-solution", "solution", inst.problem,
                                  solution_to_dict(inst, result.decision),
                                  instance_doc=inst.to_dict()))
    w1 = gen["sched2"].build(seed=3, jobs=10, servers=2, gpus_per_server=4)
    w2 = gen["genie"].build(seed=3, nodes=2, gpus_per_node=2, duration=1.0, density=8.0)
    seeds.append(Seed("sched2-workload", "workload", "sched2", w1.to_dict(), policy="fifo"))
    seeds.append(Seed("genie-workload", "workload", "genie", w2.to_dict(), policy="swaf"))
    with tempfile.TemporaryDirectory(prefix="dlsched-fuzz-suite-") as tmp:
        seeds.append(Seed("manifest", "manifest", "library",
                          fuzz_files.build_manifest_suite(Path(tmp))))
    seeds.append(Seed("trace-philly", "trace-json", "trace", copy.deepcopy(fuzz_files.PHILLY)))
    seeds += [Seed(f"trace-{c.fmt}", "trace-csv", "trace", None, csv=c)
              for c in fuzz_files.CSV_SEEDS]
    return seeds
