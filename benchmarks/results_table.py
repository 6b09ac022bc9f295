"""The results table of ``dlsched bench``: its columns, how a run is keyed, reading it, and
adding rows to it safely while other benchmarks write into the same file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from dlsched.errors import InputError
from dlsched.files import atomic_path, locked

COLUMNS = (
    "suite", "instance", "instance_sha256", "problem", "sense", "method", "kind", "backend",
    "seed", "time_limit", "cpu_limit", "status", "objective", "bound", "method_gap",
    "best_known", "best_known_status", "gap_to_best", "wall_time", "cpu_time", "peak_rss_mb",
    "metrics", "message",
    "dlsched_version", "solver_versions", "python", "commit", "host", "cores", "parallel",
    "load_avg", "finished_at",
)
"""Columns of the results table, in order (one row per run)."""

KEY = ("instance_sha256", "method", "backend", "seed", "time_limit", "cpu_limit")
"""A run is the same run when these agree; a resumed benchmark skips it."""

def read_table(path: str | Path) -> pd.DataFrame:
    """Read a results table (CSV or Parquet by suffix); empty with the columns if absent."""
    p = Path(path)
    if not p.is_file():
        return pd.DataFrame(columns=list(COLUMNS))
    try:
        if p.suffix == ".parquet":
            return pd.read_parquet(p)
        return pd.read_csv(p, keep_default_na=False, na_values=[""])
    except (ValueError, OSError) as exc:
        raise InputError(f"cannot read the results table: {exc}", field="--output",
                         fix="pass a table written by dlsched bench", source=str(p)) from None


def run_key(row: dict[str, Any] | pd.Series) -> tuple:
    backend = row["backend"]
    backend = "" if backend is None or (isinstance(backend, float) and backend != backend) \
        else str(backend)
    cpu = row.get("cpu_limit")
    cpu = "" if cpu is None or (isinstance(cpu, float) and cpu != cpu) else round(float(cpu), 6)
    return (str(row["instance_sha256"]), str(row["method"]), backend, int(row["seed"]),
            round(float(row["time_limit"]), 6), cpu)


class TableWriter:
    """Adds each row to the results table as it comes (CSV or Parquet by suffix).

    Each addition reads the table, adds the row and replaces the file (atomic: a reader or
    an interrupted write sees the old table or the new one, never a truncated file), all
    under a lock on the table's folder (:func:`dlsched.files.locked`), so that two
    benchmarks writing into one table take turns and neither loses the other's rows. A row
    whose run (:data:`KEY`) is already in the table — another benchmark into the same
    table finished it first — is not added twice.
    """

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.rows: list[dict[str, Any]] = []
        if path is not None:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise InputError(f"cannot create the folder: {exc.strerror or exc}",
                                 field="--output", fix="write to a writable place",
                                 source=str(path)) from None

    def add(self, row: dict[str, Any]) -> None:
        self.rows.append(row)
        if self.path is None:
            return
        with locked(self.path.parent):
            old = read_table(self.path)
            if run_key(row) in {run_key(r) for _, r in old.iterrows()}:
                return
            frame = pd.DataFrame([row], columns=list(COLUMNS))
            if len(old):
                frame = pd.concat([old.reindex(columns=list(COLUMNS)), frame],
                                  ignore_index=True)
            with atomic_path(self.path, "--output") as tmp:
                if self.path.suffix == ".parquet":
                    frame.to_parquet(tmp, index=False)
                else:
                    frame.to_csv(tmp, index=False)
