"""Metrics of a serving run: the per-query table, the summary, and two plots.

Per query: arrival, soft and hard deadline, GPU, model, batch, batch start and end,
end-to-end delay ``end − arrival`` (ms; NaN when not served), Q (Eq. 1; 0 when not
served), whether it was dropped (hard deadline passed while queued) and whether it ended
past its hard deadline.

Summary: mean Q over all queries (dropped ones count 0, as in the paper's mean over all
queries) and its SD, the share of queries on each model (P_tiny of Tables 3 and 5 is
``share_tiny``), the share dropped or finished past t_h, the delay p50/p95/p99 of served
queries, GPU utilization (busy time of all GPUs / (GPUs × [first arrival, last batch
end])), batches, mean batch size, decisions, simulator CPU seconds and queries per CPU
second.

Plots follow the package convention (``dlsched.simulate.results``): each ``plot_*``
returns the Figure and the data it drew, so tests check the data, never the pixels.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..files import TABLE_FORMATS, atomic_path, write_table, write_text
from .engine import ServeRun

if TYPE_CHECKING:  # pandas loads where a table is built: tuning needs none (~0.5 CPU-s)
    import pandas as pd

QUERY_COLUMNS = ("query", "arrival_ms", "soft_ms", "hard_ms", "gpu", "model", "batch",
                 "start_ms", "end_ms", "delay_ms", "quality", "dropped", "past_hard")


class _Served:
    """Each query's batch (its index, or 0 when not served), end and Q."""

    def __init__(self, run: ServeRun) -> None:
        data = run.data
        self.served = run.q_batch >= 0
        self.batch = np.where(self.served, run.q_batch, 0)
        ends = np.array([b.end for b in run.batches] or [0], dtype=np.int64)
        self.model_of = np.array([data.model_index[b.model] for b in run.batches] or [0])
        self.end = np.where(self.served, ends[self.batch], -1)
        self.quality = np.zeros(data.num_queries)
        for m in range(len(data.models)):
            sel = self.served & (self.model_of[self.batch] == m)
            self.quality[sel] = data.quality(self.end[sel], np.flatnonzero(sel), m)


def mean_quality(run: ServeRun) -> float:
    """The summary's ``mean_q`` without building the query table (what tuning compares)."""
    quality = _Served(run).quality
    return float(quality.mean()) if quality.size else 0.0


def query_table(run: ServeRun) -> pd.DataFrame:
    """One row per query (see the module docstring)."""
    import pandas as pd

    data = run.data
    q = _Served(run)
    served, kk = q.served, q.batch
    starts = np.array([b.start for b in run.batches] or [0], dtype=np.int64)
    gpu_of = np.array([data.gpu_index[b.gpu] for b in run.batches] or [0])
    gpu_names = np.array(data.gpu_ids, dtype=object)
    model_names = np.array(data.models, dtype=object)
    return pd.DataFrame({
        "query": np.arange(data.num_queries),
        "arrival_ms": data.arrival,
        "soft_ms": data.soft,
        "hard_ms": data.hard,
        "gpu": np.where(served, gpu_names[gpu_of[kk]], None),
        "model": np.where(served, model_names[q.model_of[kk]], None),
        "batch": run.q_batch,
        "start_ms": np.where(served, starts[kk], -1),
        "end_ms": q.end,
        "delay_ms": np.where(served, (q.end - data.arrival).astype(float), np.nan),
        "quality": q.quality,
        "dropped": run.dropped,
        "past_hard": run.dropped | (served & (q.end >= data.hard)),
    }, columns=list(QUERY_COLUMNS))


def summary(run: ServeRun, table: pd.DataFrame | None = None) -> dict[str, float]:
    """The run's figures (see the module docstring); all values are floats."""
    t = query_table(run) if table is None else table
    n = len(t)
    data = run.data
    out: dict[str, float] = {"queries": float(n)}
    out["mean_q"] = float(t["quality"].mean()) if n else 0.0
    out["sd_q"] = float(t["quality"].std(ddof=0)) if n else 0.0
    for m in data.models:
        out[f"share_{m}"] = float((t["model"] == m).mean()) if n else 0.0
    out["share_dropped"] = float(t["dropped"].mean()) if n else 0.0
    out["share_past_hard"] = float(t["past_hard"].mean()) if n else 0.0
    delays = t["delay_ms"].dropna().to_numpy()
    for p in (50, 95, 99):
        out[f"delay_p{p}_ms"] = float(np.percentile(delays, p)) if delays.size else float("nan")
    busy = sum(b.end - b.start for b in run.batches)
    if run.batches and n:
        span = max(b.end for b in run.batches) - int(data.arrival[0])
        out["gpu_utilization"] = busy / (len(data.gpu_ids) * max(span, 1))
    else:
        out["gpu_utilization"] = 0.0
    out["batches"] = float(len(run.batches))
    out["mean_batch"] = float(sum(len(b.queries) for b in run.batches) / max(len(run.batches),
                                                                             1))
    out["decisions"] = float(run.decisions)
    out["cpu_seconds"] = float(run.cpu_seconds)
    out["queries_per_cpu_second"] = n / run.cpu_seconds if run.cpu_seconds > 0 else float("inf")
    return out


def quality_series(table: pd.DataFrame, window_ms: int = 60_000) -> pd.DataFrame:
    """Mean Q of the queries arriving in each ``window_ms`` window (Q over time)."""
    import pandas as pd

    if table.empty:
        return pd.DataFrame({"time_s": [], "mean_q": [], "queries": []})
    slot = (table["arrival_ms"] // window_ms).to_numpy()
    g = table.groupby(slot)["quality"]
    return pd.DataFrame({"time_s": g.mean().index.to_numpy() * window_ms / 1000.0,
                         "mean_q": g.mean().to_numpy(), "queries": g.size().to_numpy()})


def delay_cdf(table: pd.DataFrame) -> pd.DataFrame:
    """Empirical CDF of the end-to-end delay (ms) of served queries."""
    import pandas as pd

    d = np.sort(table["delay_ms"].dropna().to_numpy())
    return pd.DataFrame({"delay_ms": d, "cdf": np.arange(1, d.size + 1) / max(d.size, 1)})


def plot_quality(table: pd.DataFrame, window_ms: int = 60_000):
    """Figure of mean Q over time, and the series drawn."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = quality_series(table, window_ms)
    fig, ax = plt.subplots(figsize=(7, 3))
    ax.plot(series["time_s"] / 60.0, series["mean_q"], lw=1)
    ax.set_xlabel("time (min)")
    ax.set_ylabel("mean Q")
    ax.set_ylim(0, 1.02)
    fig.tight_layout()
    return fig, series


def plot_delay_cdf(table: pd.DataFrame):
    """Figure of the end-to-end delay CDF, and the curve drawn."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cdf = delay_cdf(table)
    fig, ax = plt.subplots(figsize=(5, 3))
    ax.plot(cdf["delay_ms"], cdf["cdf"], lw=1)
    ax.set_xlabel("end-to-end delay (ms)")
    ax.set_ylabel("CDF")
    fig.tight_layout()
    return fig, cdf


def save_serving_results(run: ServeRun, out_dir: str | Path, *, fmt: str = "csv",
                         plots: bool = True) -> dict[str, float]:
    """Write ``queries.csv``/``.parquet``, ``batches.csv``, ``summary.json`` and plots."""
    import pandas as pd

    if fmt not in TABLE_FORMATS:
        raise ValueError(f"fmt must be one of {TABLE_FORMATS}, not {fmt!r}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    table = query_table(run)
    write_table(table, out, "queries", fmt)
    write_table(pd.DataFrame([{"gpu": b.gpu, "model": b.model, "start_ms": b.start,
                               "end_ms": b.end, "size": len(b.queries)} for b in run.batches],
                             columns=["gpu", "model", "start_ms", "end_ms", "size"]),
                out, "batches", "csv")
    summ = summary(run, table)
    doc: dict[str, Any] = {"workload": run.instance.name,
                           "workload_sha256": run.instance.sha256, "problem": "inference",
                           "policy": run.policy, "seed": run.seed, "noise_cv": run.noise_cv,
                           "summary": summ}
    write_text(out / "summary.json", json.dumps(doc, indent=1) + "\n")
    if plots:
        import matplotlib.pyplot as plt

        for name, fn in (("quality", plot_quality), ("delay_cdf", plot_delay_cdf)):
            fig, _ = fn(table)
            with atomic_path(out / f"{name}.png") as tmp:
                fig.savefig(tmp, dpi=110, format="png")
            plt.close(fig)
    return summ
