"""Running a serving policy on an inference workload: the registered policies by name, and
the ``exact-window`` oracle (the stream cut into consecutive windows of N queries, each
solved by the registered ``exact`` method with the GPUs free when the previous window's
batches end; queries a window leaves unserved are dropped; each window gets
``time_limit`` seconds)."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ..errors import InputError
from ..instance import Instance
from ..problems.inference import Batch, inference_data, window
from ..problems.inference.policies import SERVING_POLICIES
from ..registry import get_method, methods_for
from ..result import Status
from .engine import ServeRun, serve
from .method import PolicyMethod

POLICIES = (*SERVING_POLICIES, "exact-window")


def exact_window_run(instance: Instance, *, size: int = 200, time_limit: float = 10.0,
                     seed: int = 0) -> tuple[ServeRun, dict[str, int]]:
    """The exact-window oracle (see the module docstring) as a ServeRun."""
    if size < 1:
        raise InputError(f"window = {size}", field="--option window", fix="use >= 1")
    exact = get_method("inference", "exact")
    data = inference_data(instance)
    cpu0 = time.process_time()
    free = [0] * len(data.gpu_ids)
    batches: list[Batch] = []
    counts = {"windows": 0, "optimal": 0}
    for lo in range(0, data.num_queries, size):
        hi = min(lo + size, data.num_queries)
        sub = window(instance, lo, hi)
        out = exact.run(sub, time_limit=time_limit, seed=seed, hint=None, gpu_free=free)
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
    """Run one serving policy; returns the run and extra figures for the summary.

    ``policy`` is a registered serving-policy method of ``inference`` (its options are
    the method's, plus ``noise_cv``) or ``exact-window`` (option ``window``).
    """
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
    spec = methods_for("inference").get(policy)
    if spec is None or not isinstance(spec.run, PolicyMethod):
        raise InputError(f"unknown serving policy {policy!r}", field="--policy",
                         fix=f"use one of: {', '.join(POLICIES)}")
    method = spec.run
    pol = method.policy(instance, seed=seed, **opts)
    return serve(instance, pol, seed=seed, noise_cv=noise), {}
