"""Saving simulation results and drawing their plots.

``save_results(run, out_dir)`` writes ``jobs.csv`` (or ``jobs.parquet``),
``utilization.csv``, ``fragmentation.csv`` and ``summary.json``; ``plot_*`` functions
return the matplotlib Figure together with the data they drew, so tests check the data
and never the pixels.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .engine import SimRun
from .metrics import job_table, summary, utilization_series
from .speed import describe


def save_results(run: SimRun, out_dir: str | Path, *, fmt: str = "csv",
                 plots: bool = True) -> dict[str, Any]:
    """Write tables, summary and (optionally) plots to ``out_dir``; returns the summary."""
    if fmt not in ("csv", "parquet"):
        raise ValueError("fmt must be 'csv' or 'parquet'")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    jobs = job_table(run)
    if fmt == "csv":
        jobs.to_csv(out / "jobs.csv", index=False)
    else:
        jobs.to_parquet(out / "jobs.parquet", index=False)
    utilization_series(run).to_csv(out / "utilization.csv", index=False)
    pd.DataFrame({"time": run.frag_t, "fragmentation": run.frag}).to_csv(
        out / "fragmentation.csv", index=False)
    summ = summary(run, jobs)
    doc = {"workload": run.workload.name, "workload_sha256": run.workload.sha256,
           "problem": run.workload.problem, "policy": run.policy.label,
           "policy_options": run.policy.options, "speed": describe(run.speed),
           "summary": summ}
    (out / "summary.json").write_text(json.dumps(doc, indent=1, default=float) + "\n")
    if plots:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        for name, fn in (("utilization", plot_utilization), ("jct_cdf", plot_jct_cdf),
                         ("gantt", plot_gantt)):
            fig, _ = fn(run, jobs)
            fig.savefig(out / f"{name}.png", dpi=100)
            plt.close(fig)
    return summ


def plot_utilization(run: SimRun, jobs: pd.DataFrame | None = None):
    """Busy-GPU share over time (a step plot). Returns (figure, data frame drawn)."""
    import matplotlib.pyplot as plt
    data = utilization_series(run)
    fig, ax = plt.subplots(figsize=(8, 3))
    ax.step(data["time"], data["utilization"], where="post")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("busy GPUs (share)")
    ax.set_ylim(0, 1.05)
    fig.tight_layout()
    return fig, data


def jct_cdf(jobs: pd.DataFrame) -> pd.DataFrame:
    """Empirical CDF of the JCT of finished jobs: (jct sorted, cumulative share)."""
    jct = np.sort(jobs["jct"].dropna().to_numpy())
    return pd.DataFrame({"jct": jct, "cdf": np.arange(1, len(jct) + 1) / max(len(jct), 1)})


def plot_jct_cdf(run: SimRun, jobs: pd.DataFrame | None = None):
    """JCT CDF. Returns (figure, data frame drawn)."""
    import matplotlib.pyplot as plt
    data = jct_cdf(job_table(run) if jobs is None else jobs)
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.step(data["jct"], data["cdf"], where="post")
    ax.set_xscale("log")
    ax.set_xlabel("JCT (s)")
    ax.set_ylabel("share of jobs")
    fig.tight_layout()
    return fig, data


def gantt_bars(run: SimRun, jobs: pd.DataFrame | None = None,
               max_jobs: int = 2000) -> pd.DataFrame:
    """One bar per (job, GPU): GPU row index, start, end (the first ``max_jobs`` jobs)."""
    jobs = job_table(run) if jobs is None else jobs
    index = run.workload.cluster.gpu_index
    rows = []
    for _, r in jobs.dropna(subset=["end"]).head(max_jobs).iterrows():
        for g in r["gpus"].split():
            rows.append((r["job"], index[g], r["start"], r["end"]))
    return pd.DataFrame(rows, columns=["job", "gpu", "start", "end"])


def plot_gantt(run: SimRun, jobs: pd.DataFrame | None = None):
    """GPU-allocation Gantt chart (GPU rows, job bars). Returns (figure, bars drawn)."""
    import matplotlib.pyplot as plt
    bars = gantt_bars(run, jobs)
    fig, ax = plt.subplots(figsize=(8, max(2.0, 0.12 * run.workload.cluster.num_gpus)))
    codes = {j: k for k, j in enumerate(dict.fromkeys(bars["job"]))}
    colors = plt.get_cmap("tab20")
    for _, b in bars.iterrows():
        ax.barh(b["gpu"], b["end"] - b["start"], left=b["start"], height=0.8,
                color=colors(codes[b["job"]] % 20))
    ax.set_xlabel("time (s)")
    ax.set_ylabel("GPU")
    fig.tight_layout()
    return fig, bars
