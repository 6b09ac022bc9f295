"""Metrics of a simulation run: a per-job table and a summary.

Per job: submit, start, end, GPUs, servers, wait = start - submit, JCT = end - submit,
run = end - start, ideal = the job's work (solo run time on an ideal placement),
slowdown = JCT / ideal, run_slowdown = run / ideal, locality slowdown of its placement,
SCHED² execution effectiveness E = ideal / (wait + run) (Eq. 2).

Summary: makespan (last completion - first arrival), JCT mean / median / p95, wait mean /
median, time-weighted GPU utilization (busy GPUs integrated over [first arrival,
last completion] / (GPUs x that span); a GPU is busy while at least one job holds it),
mean execution effectiveness, mean fragmentation (SCHED² Eq. 1, time-weighted over the
same span), and, when jobs carry deadlines, GENIE's QoS-guarantee percentage (Eq. 14) and
average normalized latency (Eqs. 15-16) from ``dlsched.genie_model``.

Fragmentation reading (Eq. 1): per server, x_i is the remaining time of GPU i (0 when
idle), n the server's GPU count; an all-idle server has fragmentation 0 (the formula's
0/0); the cluster value is the mean over all servers, recorded after every event batch.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..genie_model import average_normalized_latency, qos_guarantee_pct
from .engine import SimRun

JOB_COLUMNS = ("job", "submit", "start", "end", "num_gpus", "nodes", "gpus", "wait", "jct",
               "run", "ideal", "slowdown", "run_slowdown", "locality_slowdown",
               "effectiveness", "deadline", "model")


def job_table(run: SimRun) -> pd.DataFrame:
    """One row per job (see the module docstring for the columns)."""
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
            " ".join(ids[g] for g in rec.gpus) if rec.gpus is not None else "",
            wait, jct, span, rec.work, jct / rec.work, span / rec.work, rec.locality_slowdown,
            rec.work / (wait + span) if rec.end is not None else np.nan,
            job.deadline if job.deadline is not None else np.nan, job.model or "",
        ))
    return pd.DataFrame(rows, columns=list(JOB_COLUMNS))


def utilization_series(run: SimRun) -> pd.DataFrame:
    """Busy GPUs (and their share of all GPUs) from each change time on."""
    g = run.workload.cluster.num_gpus
    return pd.DataFrame({"time": run.busy_t, "busy_gpus": run.busy_n,
                         "utilization": run.busy_n / g})


def _time_weighted(t: np.ndarray, v: np.ndarray, start: float, end: float) -> float:
    """Mean of the step function v (value v[i] on [t[i], t[i+1])) over [start, end]."""
    if end <= start or len(t) == 0:
        return 0.0
    edges = np.clip(np.append(t, end), start, end)
    return float(np.sum(v * np.diff(edges)) / (end - start))


def summary(run: SimRun, table: pd.DataFrame | None = None) -> dict[str, float]:
    """The summary metrics of a run (see the module docstring)."""
    df = job_table(run) if table is None else table
    finished = df.dropna(subset=["end"])
    first, last = float(df["submit"].min()), float(finished["end"].max())
    g = run.workload.cluster.num_gpus
    out: dict[str, float] = {
        "jobs": float(len(df)),
        "completed": float(len(finished)),
        "makespan": last - first,
        "jct_mean": float(finished["jct"].mean()),
        "jct_median": float(finished["jct"].median()),
        "jct_p95": float(finished["jct"].quantile(0.95)),
        "wait_mean": float(finished["wait"].mean()),
        "wait_median": float(finished["wait"].median()),
        "slowdown_mean": float(finished["slowdown"].mean()),
        "gpu_utilization": _time_weighted(run.busy_t, run.busy_n / g, first, last),
        "effectiveness_mean": float(finished["effectiveness"].mean()),
        "fragmentation_mean": _time_weighted(run.frag_t, run.frag, first, last),
        "policy_calls": float(run.policy_calls),
        "events": float(run.event_count),
        "wall_time_s": run.wall_time,
        "events_per_s": run.event_count / run.wall_time if run.wall_time > 0 else float("nan"),
        "events_without_solution": float(run.events_without_solution),
    }
    timed = finished.dropna(subset=["deadline"])
    if len(timed):
        out["qos_guarantee_pct"] = qos_guarantee_pct(timed["submit"], timed["end"],
                                                     timed["deadline"])
        out["normalized_latency_mean"] = average_normalized_latency(
            timed["start"], timed["end"], timed["ideal"])
    return out
