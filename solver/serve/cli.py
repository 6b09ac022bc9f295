"""``dlsched simulate W --policy fixed|heuristic|pg|exact-window`` for inference workloads.

Called by ``dlsched.simulate.cli`` when the workload's problem is ``inference``; it reads
the same arguments (``--policy``, ``--seed``, ``--option``, ``--time-limit``, ``--format``,
``--no-plots``, ``--out``). Options: ``noise_cv=X`` (delay noise; default the workload's
``delay_cv``), the policy's parameters (``alpha``, ``beta``, ``max_batch``, ``weights``),
and for ``exact-window``: ``window=N`` queries per window (200).

``exact-window`` is an offline oracle: the stream is cut into consecutive windows of N
queries, each solved by the exact model with the GPUs free when the previous window's
batches end; queries a window leaves unserved are dropped. Each window gets
``--time-limit`` seconds; its status (optimal or not) is counted in the summary.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..cli_support import EXIT_BAD_INPUT, EXIT_OK, parse_option_pairs
from ..errors import InputError
from ..instance import Instance
from ..problems.inference import Batch, InferenceDecision, inference_data, window
from .engine import ServeRun, serve
from .metrics import save_serving_results
from .policies import make_policy

POLICIES = ("fixed", "heuristic", "pg", "exact-window")


def exact_window_run(instance: Instance, *, size: int = 200, time_limit: float = 10.0,
                     seed: int = 0) -> tuple[ServeRun, dict[str, int]]:
    """The exact-window oracle (see the module docstring) as a ServeRun."""
    import time

    import numpy as np

    from ..formulations.inference import solve_window
    from ..result import Status

    if size < 1:
        raise InputError(f"window = {size}", field="--option window", fix="use >= 1")
    data = inference_data(instance)
    cpu0 = time.process_time()
    free = [0] * len(data.gpu_ids)
    batches: list[Batch] = []
    counts = {"windows": 0, "optimal": 0}
    for lo in range(0, data.num_queries, size):
        hi = min(lo + size, data.num_queries)
        sub = window(instance, lo, hi)
        out = solve_window(sub, time_limit=time_limit, seed=seed, gpu_free=free)
        counts["windows"] += 1
        counts["optimal"] += out.status is Status.OPTIMAL
        if out.decision is None:
            continue
        for b in out.decision.batches:
            batches.append(Batch(b.gpu, b.model, b.start, b.end,
                                 tuple(q + lo for q in b.queries)))
            g = data.gpu_index[b.gpu]
            free[g] = max(free[g], b.end)
    q_batch = np.full(data.num_queries, -1, dtype=np.int64)
    for k, b in enumerate(batches):
        q_batch[list(b.queries)] = k
    run = ServeRun(instance=instance, data=data, policy="exact-window", seed=seed, noise_cv=0.0,
                   batches=batches, q_batch=q_batch, dropped=q_batch < 0, events=None,
                   cpu_seconds=time.process_time() - cpu0, decisions=len(batches))
    return run, counts


def run_policy(instance: Instance, policy: str, options: dict[str, Any], *, seed: int = 0,
               time_limit: float = 10.0) -> tuple[ServeRun, dict[str, Any]]:
    """Run one serving policy; returns the run and extra figures for the summary."""
    opts = dict(options)
    noise = opts.pop("noise_cv", None)
    if policy == "exact-window":
        if noise not in (None, 0, 0.0):
            raise InputError("exact-window plans with the table's delays", field="noise_cv",
                             fix="leave noise_cv out for exact-window")
        run, counts = exact_window_run(instance, size=int(opts.pop("window", 200)),
                                       time_limit=time_limit, seed=seed)
        if opts:
            raise InputError(f"unknown options {sorted(opts)}", field="--option",
                             fix="exact-window takes window=N")
        return run, {f"exact_{k}": float(v) for k, v in counts.items()}
    if policy not in POLICIES:
        raise InputError(f"unknown serving policy {policy!r}", field="--policy",
                         fix=f"use one of: {', '.join(POLICIES)}")
    if policy == "pg":
        opts.setdefault("seed", seed)
        if "weights" not in opts and "gpus" not in opts:
            from ..rl.inference_policy import gpus_of

            opts["gpus"] = gpus_of(inference_data(instance))
    pol = make_policy(policy, opts)
    return serve(instance, pol, seed=seed, noise_cv=noise), {}


def simulate_inference(args: argparse.Namespace, workload: Instance) -> int:
    """The ``dlsched simulate`` command for an inference workload."""
    try:
        if args.policy is None:
            raise InputError("no policy given", field="--policy",
                             fix=f"pass --policy {'|'.join(POLICIES)}")
        run, extra = run_policy(workload, args.policy, parse_option_pairs(args.option),
                                seed=args.seed, time_limit=args.time_limit)
        summary = save_serving_results(run, args.out, fmt=args.format, plots=not args.no_plots)
        summary.update(extra)
    except InputError as exc:
        print(f"dlsched simulate: {exc.one_line()}", file=sys.stderr)
        return EXIT_BAD_INPUT
    width = max(len(k) for k in summary)
    print(f"{'metric':<{width}}  value")
    for key, value in summary.items():
        print(f"{key:<{width}}  {value:.6g}")
    print(f"results written to {args.out}")
    return EXIT_OK


_ = InferenceDecision  # re-exported type of run.decision()
