"""Saving simulation results and drawing their plots.

``save_results(run, out_dir)`` writes ``jobs.csv`` (or ``jobs.parquet``),
``utilization.csv``, ``fragmentation.csv``, ``summary.json`` and ``timing.json`` (the
wall-clock figures, kept apart so seeded runs write byte-identical other files);
``plot_*`` functions return the matplotlib Figure together with the data they drew, so
tests check the data and never the pixels.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..files import TABLE_FORMATS, atomic_path, write_table, write_text
from .metrics import job_table, summary, utilization_series
from .records import SimRun

if TYPE_CHECKING:
    import pandas as pd

TIMING_FIELDS = ("wall_time_s", "events_per_s")
"""Summary fields that depend on the machine: written to ``timing.json``, not ``summary.json``."""


def save_results(run: SimRun, out_dir: str | Path, *, fmt: str = "csv",
                 plots: bool = True) -> dict[str, Any]:
    """Write tables, summary and (optionally) plots to ``out_dir``; returns the summary."""
    import pandas as pd

    if fmt not in TABLE_FORMATS:
        raise ValueError(f"fmt must be one of {TABLE_FORMATS}, not {fmt!r}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    jobs = job_table(run)
    write_table(jobs, out, "jobs", fmt)
    write_table(utilization_series(run), out, "utilization", "csv")
    write_table(pd.DataFrame({"time": run.frag_t, "fragmentation": run.frag}), out,
                "fragmentation", "csv")
    summ = summary(run, jobs)
    timing = {k: summ[k] for k in TIMING_FIELDS if k in summ}
    doc = {"workload": run.workload.name, "workload_sha256": run.workload.sha256,
           "problem": run.workload.problem, "policy": run.policy.label,
           "policy_options": run.policy.options, "speed": asdict(run.speed),
           "summary": {k: v for k, v in summ.items() if k not in timing}}
    # wall-clock figures go to their own file, so seeded runs write identical summaries
    write_text(out / "summary.json", json.dumps(doc, indent=1, default=float) + "\n")
    write_text(out / "timing.json", json.dumps(timing, indent=1, default=float) + "\n")
    if plots:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        for name, fn in (("utilization", plot_utilization), ("jct_cdf", plot_jct_cdf),
                         ("gantt", plot_gantt)):
            fig, _ = fn(run, jobs)
            with atomic_path(out / f"{name}.png") as tmp:
                fig.savefig(tmp, dpi=100, format="png")
            plt.close(fig)
    return summ


def time_unit(span: float) -> tuple[float, str]:
    """The unit of a time axis covering ``span`` seconds.

    Parameters
    ----------
    span
        Seconds the axis covers.

    Returns
    -------
    (float, str)
        Seconds per unit and its name: seconds up to 2 hours, hours up to 3 days, days
        beyond.
    """
    if span <= 7200:
        return 1.0, "s"
    if span <= 3 * 86400:
        return 3600.0, "h"
    return 86400.0, "days"


def plot_title(run: SimRun, what: str) -> str:
    """The plots' title: ``what``, then workload, policy, problem and size of the run.

    Parameters
    ----------
    run
        A finished simulation.
    what
        What the plot shows.

    Returns
    -------
    str
        Two lines.
    """
    w = run.workload
    return (f"{what}\nworkload {w.name or w.sha256[:12]} · policy {run.policy.label} · "
            f"problem {w.problem} · {w.cluster.num_gpus} GPUs, {len(w.jobs)} jobs")


def plot_utilization(run: SimRun, jobs: pd.DataFrame | None = None):
    """Busy-GPU share over time (a step plot, time in s, h or days by the span).

    Parameters
    ----------
    run
        A finished simulation.
    jobs
        Not used (the plots share one signature; the series comes from ``run``).

    Returns
    -------
    (matplotlib.figure.Figure, pandas.DataFrame)
        The figure and the data drawn (:func:`~dlsched.simulate.metrics.utilization_series`).
    """
    import matplotlib.pyplot as plt
    data = utilization_series(run)
    times = data["time"].to_numpy(dtype=float)
    scale, unit = time_unit(float(times.max() - times.min()) if len(times) else 0.0)
    fig, ax = plt.subplots(figsize=(9, 3.4))
    ax.step(times / scale, data["utilization"], where="post", linewidth=0.9)
    ax.set_xlabel(f"time ({unit})")
    ax.set_ylabel("busy GPUs (share)")
    ax.set_ylim(0, 1.05)
    ax.grid(True, alpha=0.3)
    ax.set_title(plot_title(run, "GPU utilization"), fontsize=9)
    fig.tight_layout()
    return fig, data


def jct_cdf(jobs: pd.DataFrame) -> pd.DataFrame:
    """Empirical CDF of the JCT of finished jobs: (jct sorted, cumulative share)."""
    import pandas as pd

    jct = np.sort(jobs["jct"].dropna().to_numpy())
    return pd.DataFrame({"jct": jct, "cdf": np.arange(1, len(jct) + 1) / max(len(jct), 1)})


def plot_jct_cdf(run: SimRun, jobs: pd.DataFrame | None = None):
    """JCT CDF (log time axis with ticks in s, min, h, days).

    Parameters
    ----------
    run
        A finished simulation.
    jobs
        Its :func:`~dlsched.simulate.metrics.job_table` (computed when not given).

    Returns
    -------
    (matplotlib.figure.Figure, pandas.DataFrame)
        The figure and the data drawn (:func:`jct_cdf`).
    """
    import matplotlib.pyplot as plt
    data = jct_cdf(job_table(run) if jobs is None else jobs)
    fig, ax = plt.subplots(figsize=(6.4, 4))
    ax.step(data["jct"], data["cdf"], where="post")
    ax.set_xscale("log")
    ticks = [(1, "1 s"), (60, "1 min"), (600, "10 min"), (3600, "1 h"), (36000, "10 h"),
             (86400, "1 day"), (864000, "10 days"), (8640000, "100 days")]
    if len(data):
        lo, hi = float(data["jct"].min()), float(data["jct"].max())
        shown = [(t, label) for t, label in ticks if lo / 3 <= t <= hi * 3]
        if len(shown) >= 2:
            ax.set_xticks([t for t, _ in shown], [label for _, label in shown])
    ax.set_xlabel("job completion time (submit to end; log scale)")
    ax.set_ylabel("share of finished jobs")
    ax.grid(True, alpha=0.3)
    ax.set_title(plot_title(run, "JCT distribution"), fontsize=8)
    fig.tight_layout()
    return fig, data


def gantt_bars(run: SimRun, jobs: pd.DataFrame | None = None,
               max_jobs: int = 2000) -> pd.DataFrame:
    """One bar per (job, GPU): job, GPU row index, start, end, the job's GPU count and
    model (the first ``max_jobs`` finished jobs).

    Parameters
    ----------
    run
        A finished simulation.
    jobs
        Its :func:`~dlsched.simulate.metrics.job_table` (computed when not given).
    max_jobs
        Most jobs drawn.

    Returns
    -------
    pandas.DataFrame
        Columns ``job, gpu, start, end, num_gpus, model``.
    """
    import pandas as pd

    jobs = job_table(run) if jobs is None else jobs
    index = run.workload.cluster.gpu_index
    rows = []
    for _, r in jobs.dropna(subset=["end"]).head(max_jobs).iterrows():
        for g in r["gpus"].split():
            rows.append((r["job"], index[g], r["start"], r["end"], int(r["num_gpus"]),
                         r["model"]))
    return pd.DataFrame(rows, columns=["job", "gpu", "start", "end", "num_gpus", "model"])


SIZE_CLASSES = ((1, 1, "1 GPU"), (2, 2, "2 GPUs"), (3, 4, "3-4 GPUs"), (5, 8, "5-8 GPUs"),
                (9, 16, "9-16 GPUs"), (17, 10**9, "> 16 GPUs"))
"""Job-size classes that colour the Gantt chart."""
GANTT_MAX_ROWS = 128
"""Above this many GPUs the Gantt chart shows busy GPUs per server instead of GPU rows."""


def plot_gantt(run: SimRun, jobs: pd.DataFrame | None = None):
    """GPU-allocation Gantt chart. Returns (figure, data drawn).

    Up to :data:`GANTT_MAX_ROWS` GPUs: one row per GPU, grouped by server (lines between
    servers, server names on the axis), bars coloured by the job's size class with a key;
    data = :func:`gantt_bars`. Larger clusters: one row per server, colour = busy GPUs of
    the server in each of 400 time slices (a colour bar gives the scale); data = that
    matrix as a frame (rows servers, columns slice start times).

    Parameters
    ----------
    run
        A finished simulation.
    jobs
        Its :func:`~dlsched.simulate.metrics.job_table` (computed when not given).

    Returns
    -------
    (matplotlib.figure.Figure, pandas.DataFrame)
        The figure and the data drawn.
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    cluster = run.workload.cluster
    table = job_table(run) if jobs is None else jobs
    done = table.dropna(subset=["end"])
    t0 = float(done["start"].min()) if len(done) else 0.0
    t1 = float(done["end"].max()) if len(done) else 1.0
    scale, unit = time_unit(t1 - t0)
    per_node = cluster.node_gpu_count
    bounds = np.cumsum(per_node)[:-1]
    if cluster.num_gpus > GANTT_MAX_ROWS:
        data = server_busy_matrix(run, done, bins=400)
        fig, ax = plt.subplots(figsize=(10, max(3.5, min(12.0, 1.5 + 0.12 * cluster.num_nodes))))
        edges = np.concatenate([data.columns.to_numpy(dtype=float), [t1]]) / scale
        mesh = ax.pcolormesh(edges, np.arange(cluster.num_nodes + 1), data.to_numpy() /
                             np.maximum(per_node, 1)[:, None], cmap="viridis", vmin=0, vmax=1,
                             shading="flat")
        fig.colorbar(mesh, ax=ax, label="busy share of the server's GPUs")
        step = max(1, cluster.num_nodes // 25)
        rows = range(0, cluster.num_nodes, step)
        ax.set_yticks([r + 0.5 for r in rows], [cluster.node_ids[r] for r in rows], fontsize=7)
        ax.set_ylabel(f"server ({cluster.num_nodes}, in cluster order)")
        ax.invert_yaxis()
        what = "Busy GPUs per server (aggregated: too many GPUs for one row each)"
    else:
        data = gantt_bars(run, table)
        fig, ax = plt.subplots(figsize=(10, max(2.5, 0.5 + 0.09 * cluster.num_gpus)))
        handles = []
        for k, (lo, hi, label) in enumerate(SIZE_CLASSES):
            part = data[(data["num_gpus"] >= lo) & (data["num_gpus"] <= hi)]
            if len(part):
                ax.barh(part["gpu"], (part["end"] - part["start"]) / scale,
                        left=part["start"] / scale, height=0.85, color=f"C{k}",
                        edgecolor="white", linewidth=0.2)
                handles.append(Patch(color=f"C{k}", label=label))
        for b in bounds:
            ax.axhline(b - 0.5, color="black", linewidth=0.6)
        mids = np.concatenate([[0], bounds]) + per_node / 2 - 0.5
        step = max(1, cluster.num_nodes // 30)
        ax.set_yticks(mids[::step], [cluster.node_ids[i] for i in
                                     range(0, cluster.num_nodes, step)], fontsize=7)
        ax.set_ylim(cluster.num_gpus - 0.5, -0.5)
        ax.set_ylabel("GPUs, grouped by server")
        ax.legend(handles=handles, title="job size", fontsize=8, loc="upper left",
                  bbox_to_anchor=(1.01, 1.0), frameon=False)
        what = "GPU allocation (one row per GPU; lines separate servers)"
        if len(done) > 2000:
            what += f"; first 2000 of {len(done)} finished jobs"
    ax.set_xlabel(f"time ({unit})")
    ax.set_title(plot_title(run, what), fontsize=9)
    fig.tight_layout()
    return fig, data


def server_busy_matrix(run: SimRun, jobs: pd.DataFrame, bins: int = 400) -> pd.DataFrame:
    """Mean busy GPUs per server in each of ``bins`` equal time slices.

    Parameters
    ----------
    run
        A finished simulation.
    jobs
        Its finished jobs (:func:`~dlsched.simulate.metrics.job_table` rows with an end).
    bins
        Number of slices between the first start and the last end.

    Returns
    -------
    pandas.DataFrame
        Rows: servers in cluster order; columns: slice start times; GPU-seconds in a
        slice / slice width.
    """
    import pandas as pd

    cluster = run.workload.cluster
    t0 = float(jobs["start"].min()) if len(jobs) else 0.0
    t1 = float(jobs["end"].max()) if len(jobs) else 1.0
    edges = np.linspace(t0, max(t1, t0 + 1e-9), bins + 1)
    width = edges[1] - edges[0]
    busy = np.zeros((cluster.num_nodes, bins))
    node_of = cluster.gpu_node
    index = cluster.gpu_index
    for r in jobs.itertuples(index=False):
        overlap = np.clip(np.minimum(edges[1:], r.end) - np.maximum(edges[:-1], r.start),
                          0, None) / width
        for g in r.gpus.split():
            busy[node_of[index[g]]] += overlap
    return pd.DataFrame(busy, columns=edges[:-1])
