"""CPU time of one SCHED² decision inside the simulator with 100 jobs queued.

The state (seed 0): G/8 servers × 8 GPUs (``--gpus``, default 1,024); at t = 0 one 8-GPU
"fill" job per server (any order fills the cluster); ``--queue`` N jobs (demands, models
and ideal times of a ``generate_sched2`` workload) arrive at t = 1…N s while the cluster is
full; at t = 3,600 s the first I/8 fill jobs end together (``--idle`` I GPUs, default 16,
on I/8 servers), the others an hour later. The decision at t = 3,600 s — N jobs queued, I
GPUs idle — is the one timed: the engine's decision step (``_Engine._decide``: the policy
call on a snapshot or on the live view, the decision's check and the starts) in CPU
seconds (process time), once per run, ``--repeat`` runs (the median, and the median per
started job); ``policy ms`` is the part spent in the policy itself (the method on its
snapshot, or the fast form on the live view; the snapshot's construction and the engine's
check and starts are the rest). Earlier calls of the run (at t = 0) have built whatever a
policy keeps.

    python -m dlsched.benchmarks.sim_queue_latency [--queue 100] [--idle 16] [--gpus 1024]
        [--repeat 10] [--policies dqn,sif]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager

from dlsched.instance import Instance
from dlsched.instances.sched2_gen import generate_sched2
from dlsched.jobs import Job
from dlsched.simulate import Policy, simulate
from dlsched.simulate import caller as caller_module
from dlsched.simulate import engine as engine_module
from dlsched.state import ViewPolicy
from dlsched.topology import homogeneous_cluster

POLICIES = ("fifo", "sif", "dsif", "saf", "lrf", "spf", "learned-priority", "dqn")
FILL_S = 3600.0


def workload(gpus: int = 1024, queue: int = 100, idle: int = 16) -> Instance:
    """The benchmark's workload (module docstring)."""
    servers = gpus // 8
    fill = [Job(id=f"fill{k:04d}", submit_time=0.0, num_gpus=8,
                duration=FILL_S if k < idle // 8 else 2 * FILL_S) for k in range(servers)]
    gen = generate_sched2(seed=0, jobs=queue)
    waiting = [j.replace(id=f"q{i:05d}", submit_time=float(i + 1))
               for i, j in enumerate(gen.jobs)]
    return Instance(problem="sched2", cluster=homogeneous_cluster(servers, 8),
                    jobs=tuple(fill + waiting), params=gen.params, name=f"queue{queue}")


@contextmanager
def timed_decisions() -> Iterator[list[tuple[float, int, int, float, float]]]:
    """(time, queued before, jobs started, CPU s, of which in the policy) of each engine
    decision step while inside."""
    rows: list[tuple[float, int, int, float, float]] = []
    in_policy = [0.0]
    originals = (engine_module._Engine._decide, ViewPolicy.run,
                 caller_module.PolicyCaller.__call__)

    def decide(self, t: float) -> None:
        queued, running = len(self.state.queue), len(self.state.running)
        in_policy[0] = 0.0
        c = time.process_time()
        originals[0](self, t)
        rows.append((t, queued, len(self.state.running) - running, time.process_time() - c,
                     in_policy[0]))

    def timed(original):
        def call(*args, **kwargs):
            c = time.process_time()
            try:
                return original(*args, **kwargs)
            finally:
                in_policy[0] += time.process_time() - c
        return call

    engine_module._Engine._decide = decide
    ViewPolicy.run = timed(originals[1])
    caller_module.PolicyCaller.__call__ = timed(originals[2])
    try:
        yield rows
    finally:
        (engine_module._Engine._decide, ViewPolicy.run,
         caller_module.PolicyCaller.__call__) = originals


def measure(w: Instance, policy: str, queue: int, repeat: int) -> dict[str, float]:
    """Figures of one policy (module docstring)."""
    cpu, policy_cpu, started = [], [], 0
    for _ in range(repeat):
        with timed_decisions() as rows:
            simulate(w, Policy(policy), record_events=False, frag_samples=False)
        at = [(n, s, c, p) for t, n, s, c, p in rows if t == FILL_S]
        if len(at) != 1 or at[0][0] != queue:
            raise RuntimeError(f"{policy}: expected one decision at t = {FILL_S:g} s with "
                               f"{queue} jobs queued, got {at}")
        started = at[0][1]
        cpu.append(at[0][2])
        policy_cpu.append(at[0][3])
    return {"started": started, "ms_median": round(1000 * statistics.median(cpu), 3),
            "ms_min": round(1000 * min(cpu), 3),
            "ms_per_started_job": round(1000 * statistics.median(cpu) / max(started, 1), 3),
            "policy_ms_median": round(1000 * statistics.median(policy_cpu), 3)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queue", type=int, default=100, help="jobs queued (default 100)")
    parser.add_argument("--idle", type=int, default=16,
                        help="GPUs idle at the timed decision (a multiple of 8; default 16)")
    parser.add_argument("--gpus", type=int, default=1024,
                        help="GPUs (a multiple of 8, at least 16; default 1024)")
    parser.add_argument("--repeat", type=int, default=10, help="runs per policy (default 10)")
    parser.add_argument("--policies", default=",".join(POLICIES),
                        help=f"comma-separated SCHED² methods (default {','.join(POLICIES)})")
    args = parser.parse_args(argv)
    if args.gpus < 16 or args.gpus % 8:
        parser.error("--gpus must be a multiple of 8, at least 16")
    if args.idle < 8 or args.idle % 8 or args.idle > args.gpus:
        parser.error("--idle must be a multiple of 8, at least 8, at most --gpus")
    if args.queue < 1 or args.repeat < 1:
        parser.error("--queue and --repeat must be at least 1")
    policies = [p for p in args.policies.split(",") if p]
    if not policies:
        parser.error("--policies names no method")
    w = workload(args.gpus, args.queue, args.idle)
    out: dict[str, object] = {"gpus": args.gpus, "queue": args.queue, "idle": args.idle}
    print(f"{'method':<18}{'started':>8}{'ms median':>11}{'ms min':>8}{'ms/job':>8}"
          f"{'policy ms':>11}")
    for policy in policies:
        row = measure(w, policy, args.queue, args.repeat)
        out[policy] = row
        print(f"{policy:<18}{row['started']:>8}{row['ms_median']:>11.3f}{row['ms_min']:>8.3f}"
              f"{row['ms_per_started_job']:>8.3f}{row['policy_ms_median']:>11.3f}")
    out["loadavg_1m"] = round(os.getloadavg()[0], 2)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
