"""Metrics of a simulation run: a per-job table and a summary.

Per job: submit, start, end, GPUs, servers, wait = start - submit, JCT = end - submit,
run = end - start (start of the run that completed; ``requeues``: earlier runs a policy
such as PAB ended by moving the job back to the queue, their progress lost),
ideal = the job's work (solo run time on an ideal placement),
slowdown = JCT / ideal, run_slowdown = run / ideal, locality slowdown of its placement,
SCHED² execution effectiveness E = ideal / (wait + run) (Eq. 2).

Summary: makespan (last completion - first arrival); ``jct_mean`` / ``jct_median`` /
``jct_p95``: job completion time **end - submit** (waiting included); ``run_time_mean`` /
``run_time_median``: **end - start**, the run time of the completing run (the Horus
paper's JCT, Fig. 7); wait mean / median, time-weighted GPU utilization (busy GPUs
integrated over [first arrival,
last completion] / (GPUs x that span); a GPU is busy while at least one job holds it),
``gpu_util_aggregate``: the Horus papers' cluster GPU utilization (Figs. 8-9): per GPU
the sum of the utilizations (``gpu_util``, percent) of the jobs on it, capped at 100 %,
time-weighted over the same span and averaged over GPUs, as a fraction (jobs without a
``gpu_util`` count 0; requeued attempts count while they ran); ``gpu_util_sum_mean``: the
same without the cap (the offered load; above 1 means oversubscribed GPUs);
``requeues``: how many times a running job was moved back to the queue;
mean execution effectiveness, mean fragmentation (SCHED² Eq. 1, time-weighted over the
same span), and, when jobs carry deadlines, GENIE's QoS-guarantee percentage (Eq. 14) and
average normalized latency (Eqs. 15-16) from ``dlsched.problems.schedule_metrics``.

Fragmentation reading (Eq. 1): per server, x_i is the remaining time of GPU i (0 when
idle), n the server's GPU count; an all-idle server has fragmentation 0 (the formula's
0/0); the cluster value is the mean over all servers, recorded after every event batch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..problems.schedule_metrics import average_normalized_latency, qos_guarantee_pct
from .records import SimRun

if TYPE_CHECKING:
    import pandas as pd

JOB_COLUMNS = ("job", "submit", "start", "end", "num_gpus", "nodes", "gpus", "wait", "jct",
               "run", "ideal", "slowdown", "run_slowdown", "locality_slowdown",
               "effectiveness", "deadline", "model", "requeues")


def job_table(run: SimRun) -> pd.DataFrame:
    """One row per job (see the module docstring for the columns)."""
    import pandas as pd

    ids = run.workload.cluster.gpu_ids
    rows = []
    for rec in run.records:
        job = rec.job
        started = rec.start is not None
        wait = rec.start - job.submit_time if started else np.nan
        jct = rec.end - job.submit_time if rec.end is not None else np.nan
        span = rec.end - rec.start if rec.end is not None else np.nan
        rows.append((
            job.id, job.submit_time, rec.start if started else np.nan,
            rec.end if rec.end is not None else np.nan,
            len(rec.gpus) if rec.gpus is not None else (job.num_gpus or 0), rec.nodes,
            " ".join([ids[g] for g in rec.gpus.tolist()]) if rec.gpus is not None else "",
            wait, jct, span, rec.work, jct / rec.work, span / rec.work, rec.locality_slowdown,
            rec.work / (wait + span) if rec.end is not None else np.nan,
            job.deadline if job.deadline is not None else np.nan, job.model or "",
            len(rec.attempts),
        ))
    return pd.DataFrame(rows, columns=list(JOB_COLUMNS))


def utilization_series(run: SimRun) -> pd.DataFrame:
    """Busy GPUs (and their share of all GPUs) from each change time on."""
    import pandas as pd

    g = run.workload.cluster.num_gpus
    return pd.DataFrame({"time": run.busy_t, "busy_gpus": run.busy_n,
                         "utilization": run.busy_n / g})


def _time_weighted(t: np.ndarray, v: np.ndarray, start: float, end: float) -> float:
    """Mean of the step function v (value v[i] on [t[i], t[i+1])) over [start, end]."""
    if end <= start or len(t) == 0:
        return 0.0
    edges = np.clip(np.append(t, end), start, end)
    return float(np.sum(v * np.diff(edges)) / (end - start))


def aggregate_gpu_utilization(run: SimRun, start: float, end: float) -> tuple[float, float]:
    """(capped, uncapped) time-weighted mean per-GPU summed job utilization over [start, end].

    Built from the job records alone (every run and requeued attempt): per GPU a step
    function of the summed ``gpu_util`` (percent) of the jobs holding it; the capped value
    clips each GPU at 100 %. Both are fractions of all GPUs over the span.
    """
    n_gpus = run.workload.cluster.num_gpus
    if end <= start or n_gpus == 0:
        return 0.0, 0.0
    # per GPU of every span (requeued attempts, then the final run): a +u event at its
    # start and a -u event at its end, in record order (the order the sort below keeps)
    gpus, a, b, u = [], [], [], []
    for rec in run.records:
        util = rec.job.gpu_util or 0.0
        for a_start, a_end, a_gpus in rec.attempts:
            gpus.append(a_gpus)
            a.append(a_start)
            b.append(a_end)
            u.append(util)
        if rec.start is not None and rec.end is not None and rec.gpus is not None:
            gpus.append(rec.gpus)
            a.append(rec.start)
            b.append(rec.end)
            u.append(util)
    lens = np.array([len(g) for g in gpus], dtype=np.int64)
    if not lens.sum():
        return 0.0, 0.0
    k = np.repeat(np.concatenate([np.asarray(g, dtype=np.int64) for g in gpus]), 2)
    tt = np.clip(np.column_stack([np.repeat(np.array(a, dtype=float), lens),
                                  np.repeat(np.array(b, dtype=float), lens)]).ravel(),
                 start, end)
    per = np.repeat(np.array(u, dtype=float), lens)
    dd = np.column_stack([per, -per]).ravel()
    del per
    order = np.lexsort((dd, tt, k))  # per GPU by time, removals first at equal times
    k, tt, dd = k[order], tt[order], dd[order]
    level = np.cumsum(dd)
    first = np.r_[True, k[1:] != k[:-1]]
    base = np.maximum.accumulate(np.where(first, np.arange(len(k)), 0))
    level = level - np.r_[0.0, np.cumsum(dd)][base]  # per-GPU running sum
    level = np.maximum(level, 0.0)
    nxt = np.r_[tt[1:], end]
    last = np.r_[k[1:] != k[:-1], True]
    width = np.where(last, 0.0, nxt - tt)  # a GPU's level after its last event is 0
    total = float(n_gpus * (end - start) * 100.0)
    return (float(np.sum(np.minimum(level, 100.0) * width)) / total,
            float(np.sum(level * width)) / total)


def summary(run: SimRun, table: pd.DataFrame | None = None) -> dict[str, float]:
    """The summary metrics of a run (see the module docstring)."""
    df = job_table(run) if table is None else table
    done = ~np.isnan(df["end"].to_numpy(dtype=float))

    def finished(column: str) -> np.ndarray:
        return df[column].to_numpy(dtype=float)[done]

    end = finished("end")
    first, last = float(df["submit"].min()), float(end.max())
    g = run.workload.cluster.num_gpus
    agg, agg_sum = aggregate_gpu_utilization(run, first, last)
    jct = finished("jct")
    out: dict[str, float] = {
        "jobs": float(len(df)),
        "completed": float(np.count_nonzero(done)),
        "makespan": last - first,
        "jct_mean": _mean(jct),
        "jct_median": _quantile(jct, 0.5),
        "jct_p95": _quantile(jct, 0.95),
        "run_time_mean": _mean(finished("run")),
        "run_time_median": _quantile(finished("run"), 0.5),
        "wait_mean": _mean(finished("wait")),
        "wait_median": _quantile(finished("wait"), 0.5),
        "slowdown_mean": _mean(finished("slowdown")),
        "gpu_utilization": _time_weighted(run.busy_t, run.busy_n / g, first, last),
        "gpu_util_aggregate": agg,
        "gpu_util_sum_mean": agg_sum,
        "requeues": float(run.requeues),
        "effectiveness_mean": _mean(finished("effectiveness")),
        "fragmentation_mean": _time_weighted(run.frag_t, run.frag, first, last),
        "policy_calls": float(run.policy_calls),
        "events": float(run.event_count),
        "wall_time_s": run.wall_time,
        "events_per_s": run.event_count / run.wall_time if run.wall_time > 0 else float("nan"),
        "events_without_solution": float(run.events_without_solution),
    }
    deadline = finished("deadline")
    timed = ~np.isnan(deadline)
    if timed.any():
        out["qos_guarantee_pct"] = qos_guarantee_pct(finished("submit")[timed], end[timed],
                                                     deadline[timed])
        out["normalized_latency_mean"] = average_normalized_latency(
            finished("start")[timed], end[timed], finished("ideal")[timed])
    return out


# pandas' Series.mean / median / quantile without the Series: NaN left out, NaN when
# nothing is left (numpy's nan-functions would warn there)
def _mean(values: np.ndarray) -> float:
    kept = values[~np.isnan(values)]
    return float(kept.mean()) if kept.size else float("nan")


def _quantile(values: np.ndarray, q: float) -> float:
    kept = values[~np.isnan(values)]
    return float(np.quantile(kept, q)) if kept.size else float("nan")
