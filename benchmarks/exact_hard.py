"""The hard exact snapshots of issue 33's stretch item: proven, and in how many CPU seconds.

Cases (one generated instance per seed):

* ``horus-16x8-B``: Horus, 16 servers (``--small-nodes``) × 8 GTX 1080, β = 15 pending
  jobs (``--beta``), a share B of the GPUs running jobs (``generate_horus(seed,
  nodes=16, beta=15, busy=B)``), B in ``--busy`` (0.9, 0.93, 0.97), seeds 0 ..
  ``--seeds`` − 1 (10): the small full snapshots;
* ``horus-Nx8-B``: the same at N servers in ``--sizes`` (64, 128, 256, 512), busy 0.9 and
  0.97, ``--size-seeds`` seeds (2);
* ``genie-256x100``: GENIE, 64 servers × 4 GPUs, 100 waiting tasks (``--genie``), half
  the GPUs busy (``generate_genie(seed, nodes=64, gpus_per_node=4, waiting=100,
  busy=0.5)``), ``--genie-seeds`` seeds (2).

Every case runs on each backend of ``--backends`` and each model form of ``--forms``
(Horus: ``pairs``, ``patterns``, ``auto``; GENIE: ``servers`` — the per-server model —
and ``classes``; a form a family does not have is skipped) through ``dlsched.solve``,
one thread, gap 0, seed = the instance's seed. Limits, per run, ``--horus-limit`` (2) or
``--genie-limit`` (10) seconds L, as close to CPU seconds as each backend allows:
CP-SAT gets ``max_deterministic_time`` L (deterministic, load-independent; no wall limit);
CBC, HiGHS and SCIP ``--wall-factor`` (20) × L (wall; SCIP's on its CPU clock,
``timing/clocktype`` 1: a wall deadline of L alone ran out during the build at load 12).
Every run is a forked process
whose CPU is capped at L + 1 s (a timer on its exact CPU clock, :mod:`.cpu_timer`, and
``RLIMIT_CPU``, inherited by CBC's process): a run the cap ends is reported as
``cpu_limit`` (no objective, no gap), so a loaded machine gives every backend the same CPU
(the load is printed). CPU s is the process plus its
finished children (CBC runs as one) around the whole ``solve`` call, build included.
"Within target" counts the runs proven optimal in at most 1 CPU-s (Horus) or 10 (GENIE):
the issue's targets.

    python -m dlsched.benchmarks.exact_hard [--seeds 10] [--backends cbc,highs]
        [--forms pairs,patterns] [--only horus-16x8-0.9,genie-256x100]

The last line is one JSON object: per case, per backend and form, every run's status,
CPU s, gap, and a summary.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import resource
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from dlsched import solve
from dlsched.benchmarks import cpu_timer
from dlsched.cli_support import parse_backends
from dlsched.formulations.backend import BACKENDS
from dlsched.instance import Instance
from dlsched.instances.genie_gen import generate_genie
from dlsched.instances.horus_gen import generate_horus
from dlsched.markdown import markdown_table

HORUS_FORMS = ("pairs", "patterns", "auto")
GENIE_FORMS = ("servers", "classes")
Case = tuple[str, str, list[int], Callable[[int], Instance]]
"""(case name, family, seeds, instance builder taking a seed)."""


def cases(busy: list[float], seeds: int, sizes: list[int], size_seeds: int,
          genie_seeds: int, small: int = 16, genie: tuple[int, int] = (64, 100),
          beta: int = 15) -> Iterator[Case]:
    for b in busy if seeds else ():
        yield (f"horus-{small}x8-{b:g}", "horus", list(range(seeds)),
               lambda s, b=b: generate_horus(seed=s, nodes=small, beta=beta, busy=b))
    for n in sizes if size_seeds else ():
        for b in (0.9, 0.97):
            yield (f"horus-{n}x8-{b:g}", "horus", list(range(size_seeds)),
                   lambda s, n=n, b=b: generate_horus(seed=s, nodes=n, beta=beta, busy=b))
    if genie_seeds:
        nodes, waiting = genie
        yield (f"genie-{4 * nodes}x{waiting}", "genie", list(range(genie_seeds)),
               lambda s: generate_genie(seed=s, nodes=nodes, gpus_per_node=4,
                                        waiting=waiting, busy=0.5))


def _cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def limits(backend: str, seconds: float, wall_factor: float = 20.0) -> dict[str, Any]:
    """``solve`` keywords that stop ``backend`` after about ``seconds`` of CPU (docstring)."""
    if backend == "cpsat":
        return {"time_limit": None, "solver_options": {"max_deterministic_time": seconds}}
    if backend == "scip":  # the deadline left is handed to SCIP's limits/time: its CPU clock
        return {"time_limit": seconds * wall_factor, "solver_options": {"timing/clocktype": 1}}
    return {"time_limit": seconds * wall_factor}


def _solve_here(instance: Instance, family: str, backend: str, form: str, seed: int,
                seconds: float, wall_factor: float) -> dict[str, Any]:
    kwargs = limits(backend, seconds, wall_factor)
    kwargs["form"] = form
    c0 = _cpu()
    r = solve(instance, "exact", backend=backend, seed=seed, **kwargs)
    return {"seed": seed, "status": r.status.value, "cpu_s": _cpu() - c0,
            "objective": r.objective, "bound": r.bound, "gap": r.gap,
            "message": r.message or None}


def _child(conn, args: tuple, seconds: float) -> None:
    # the CPU cap, ``seconds`` + 1 CPU-s of this process (counted from the fork: it starts
    # with none), whatever the machine's load: a timer on its exact CPU clock sends SIGXCPU
    # (SIGKILL a second later). RLIMIT_CPU alone let SCIP on its CPU clock run 3-4 times
    # past the cap on a loaded machine (cpu_timer's docstring); it stays for a CBC child,
    # which inherits it (whole seconds, SIGKILL a second later)
    cap = seconds + 1.0
    rlimit = math.ceil(cap)
    _soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if hard != resource.RLIM_INFINITY:
        rlimit = min(rlimit, hard - 1)
    resource.setrlimit(resource.RLIMIT_CPU, (rlimit, rlimit + 1))
    cpu_timer.arm(max(cap - time.process_time(), 1e-3))
    conn.send(_solve_here(*args))
    conn.close()


def run_one(instance: Instance, family: str, backend: str, form: str, seed: int,
            seconds: float, wall_factor: float = 20.0) -> dict[str, Any]:
    """One solve in a forked process capped at ``seconds`` + 1 CPU-s (``RLIMIT_CPU``); a
    run the cap ends is reported with status ``cpu_limit`` and no objective."""
    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)
    args = (instance, family, backend, form, seed, seconds, wall_factor)
    c0 = _cpu()
    proc = ctx.Process(target=_child, args=(send, args, seconds))
    proc.start()
    send.close()
    try:
        out = receive.recv()
    except EOFError:  # the process ended without an answer: the CPU cap
        out = None
    proc.join()
    if out is None:
        return {"seed": seed, "status": "cpu_limit", "cpu_s": _cpu() - c0, "objective": None,
                "bound": None, "gap": None, "message": f"exit code {proc.exitcode}"}
    return out


def summarize(runs: list[dict], target: float) -> dict[str, Any]:
    cpu = [r["cpu_s"] for r in runs]
    gaps = [r["gap"] for r in runs if r["gap"] is not None]
    proven = [r for r in runs if r["status"] == "optimal"]
    return {"runs": len(runs), "proven": len(proven),
            "within_target": sum(r["cpu_s"] <= target for r in proven),
            "cpu_mean": statistics.fmean(cpu), "cpu_max": max(cpu),
            "gap_max": max(gaps, default=None),
            "no_solution": sum(r["gap"] is None for r in runs)}


_MARK = {"optimal": "", "cpu_limit": "†"}


def _fmt(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--busy", default="0.9,0.93,0.97",
                        help="busy shares of the 16 x 8 Horus cases (0.9,0.93,0.97)")
    parser.add_argument("--seeds", type=int, default=10, help="seeds per 16 x 8 case (10)")
    parser.add_argument("--beta", type=int, default=15, help="Horus pending jobs (15)")
    parser.add_argument("--small-nodes", type=int, default=16,
                        help="servers of the small full Horus cases (16)")
    parser.add_argument("--genie", default="64,100",
                        help="GENIE servers (of 4 GPUs) and waiting tasks (64,100)")
    parser.add_argument("--sizes", default="64,128,256,512",
                        help="larger Horus server counts ('' for none)")
    parser.add_argument("--size-seeds", type=int, default=2, help="seeds per size (2)")
    parser.add_argument("--genie-seeds", type=int, default=2,
                        help="GENIE 256/100 seeds (2; 0 for none)")
    parser.add_argument("--backends", type=parse_backends, default=BACKENDS,
                        help=f"comma-separated ({','.join(BACKENDS)})")
    parser.add_argument("--forms", default="pairs,patterns,servers,classes",
                        help="model forms (Horus: pairs,patterns,auto; GENIE: servers,classes)")
    parser.add_argument("--horus-limit", type=float, default=2.0,
                        help="seconds per Horus run (about CPU s; docstring) (2)")
    parser.add_argument("--genie-limit", type=float, default=10.0,
                        help="seconds per GENIE run (about CPU s; docstring) (10)")
    parser.add_argument("--wall-factor", type=float, default=20.0,
                        help="CBC and HiGHS: wall limit = this × the limit (20)")
    parser.add_argument("--only", default="", help="comma-separated case names to keep")
    args = parser.parse_args(argv)
    forms = [f for f in args.forms.split(",") if f]
    unknown = set(forms) - set(HORUS_FORMS) - set(GENIE_FORMS)
    if unknown:
        parser.error(f"--forms: unknown {sorted(unknown)}; "
                     f"Horus {', '.join(HORUS_FORMS)}, GENIE {', '.join(GENIE_FORMS)}")
    only = {c for c in args.only.split(",") if c}
    busy = [float(b) for b in args.busy.split(",") if b]
    sizes = [int(n) for n in args.sizes.split(",") if n]
    load0 = os.getloadavg()
    results: dict[str, dict[str, Any]] = {}
    rows = []
    genie = tuple(int(v) for v in args.genie.split(","))
    for name, family, seeds, build in cases(busy, args.seeds, sizes, args.size_seeds,
                                            args.genie_seeds, args.small_nodes, genie,
                                            args.beta):
        if only and name not in only:
            continue
        own = HORUS_FORMS if family == "horus" else GENIE_FORMS
        seconds, target = ((args.horus_limit, 1.0) if family == "horus"
                           else (args.genie_limit, 10.0))
        instances = {s: build(s) for s in seeds}
        results[name] = {}
        for form in (f for f in forms if f in own):
            for backend in args.backends:
                runs = [run_one(instances[s], family, backend, form, s, seconds,
                                args.wall_factor) for s in seeds]
                summary = summarize(runs, target)
                results[name][f"{backend}/{form}"] = {"summary": summary, "runs": runs}
                rows.append([name, backend, form, f"{summary['proven']} / {len(runs)}",
                             f"{summary['within_target']} (≤ {target:g})",
                             f"{_fmt(summary['cpu_mean'])} / {_fmt(summary['cpu_max'])}",
                             _fmt(summary["gap_max"], 4),
                             " ".join(_fmt(r["cpu_s"]) + _MARK.get(r["status"], "*")
                                      for r in runs)])
                print(f"{name} {backend}/{form}: {summary['proven']}/{len(runs)} proven, "
                      f"cpu max {_fmt(summary['cpu_max'])}", file=sys.stderr, flush=True)
    load1 = os.getloadavg()
    print(f"Hard exact snapshots: limit {args.horus_limit:g} s (Horus) / "
          f"{args.genie_limit:g} s (GENIE) per run (CBC, HiGHS: × {args.wall_factor:g} "
          f"wall), 1 thread; load average "
          f"{load0[0]:.2f} at the start, {load1[0]:.2f} at the end, {os.cpu_count()} cores\n")
    print(markdown_table(["case", "backend", "form", "proven", "within target",
                          "CPU s mean / max", "gap max",
                          "CPU s per seed (* unproven, † CPU cap)"], rows))
    print(json.dumps({"benchmark": "exact_hard", "horus_limit": args.horus_limit,
                      "genie_limit": args.genie_limit, "load_average": [load0[0], load1[0]],
                      "cases": results}, allow_nan=False))


if __name__ == "__main__":
    main()
