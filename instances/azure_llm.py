"""Reader of the raw Azure LLM inference trace 2023 → ``inference`` workloads.

Source: Azure/AzurePublicDataset @ b469a11, ``data/AzureLLMInferenceTrace_{code,conv}.csv``
(CC BY 4.0; Patel et al., "Splitwise", ISCA 2024): one hour of real request arrivals
(columns ``TIMESTAMP`` with seven fractional digits, ``ContextTokens``,
``GeneratedTokens``).

What we keep: every recorded arrival, in order, at millisecond resolution
(``floor((t − t_first) / 1 ms)``), so sub-second bursts stay as recorded. Optional time
compression by a stated ``factor`` (``arrival / factor``, floored to ms) raises the load
to a target while keeping the burst structure (the relative gaps are scaled alike).
Deadlines follow the paper (t_s = 1 s, t_h = 2 s after the request; the trace has no
upstream delay, so request = arrival). ``size`` = ContextTokens (a per-request size for
models that want one; the Table 1 delays ignore it).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from dlsched.errors import InputError
from dlsched.instance import Instance

from .inference_gen import HARD_MS, SOFT_MS, inference_instance, parse_gpus

COLUMNS = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")


def read_azure_llm(path: str | Path) -> pd.DataFrame:
    """``arrival_ms`` (from the first request), ``context_tokens``, ``generated_tokens``."""
    p = Path(path)
    try:
        raw = pd.read_csv(p, dtype={"TIMESTAMP": str})
    except FileNotFoundError:
        raise InputError("no such file", source=str(p), fix="pass an AzureLLMInferenceTrace "
                         "CSV") from None
    missing = [c for c in COLUMNS if c not in raw.columns]
    if missing:
        raise InputError(f"missing columns {missing}", field="(header)", source=str(p),
                         fix="pass a raw AzureLLMInferenceTrace_*.csv file")
    try:
        ts = pd.to_datetime(raw["TIMESTAMP"], format="%Y-%m-%d %H:%M:%S.%f")
    except ValueError as exc:
        raise InputError(f"bad TIMESTAMP: {exc}", field="TIMESTAMP", source=str(p),
                         fix="timestamps look like 2023-11-16 18:15:46.6805900") from None
    ns = ts.astype("int64").to_numpy()
    if (np.diff(ns) < 0).any():
        i = int(np.flatnonzero(np.diff(ns) < 0)[0]) + 1
        raise InputError("rows are not in time order", field=f"TIMESTAMP[{i}]",
                         source=str(p), fix="sort the file by TIMESTAMP")
    return pd.DataFrame({"arrival_ms": (ns - ns[0]) // 1_000_000,
                         "context_tokens": raw["ContextTokens"].to_numpy(np.int64),
                         "generated_tokens": raw["GeneratedTokens"].to_numpy(np.int64)})


def compression_for(frame: pd.DataFrame, target_qps: float) -> float:
    """The factor that turns the trace's mean rate into ``target_qps``."""
    span_s = max(float(frame["arrival_ms"].iloc[-1]) / 1000.0, 1e-3)
    return target_qps / (len(frame) / span_s)


def azure_workload(path: str | Path, *, factor: float = 1.0, gpus: str = "p2:1",
                   delay_cv: float = 0.0, name: str | None = None) -> Instance:
    """An inference workload of the recorded arrivals compressed by ``factor`` (>= 1 speeds
    time up)."""
    if factor <= 0:
        raise InputError(f"factor = {factor}", field="factor", fix="use a factor > 0")
    frame = read_azure_llm(path)
    arrival = np.floor(frame["arrival_ms"].to_numpy() / factor).astype(np.int64)
    stem = Path(path).stem.replace("AzureLLMInferenceTrace_", "azure-")
    return inference_instance(
        arrival=arrival, soft=arrival + SOFT_MS, hard=arrival + HARD_MS,
        size=frame["context_tokens"].to_numpy(), gpu_types=parse_gpus(gpus),
        delay_cv=delay_cv,
        name=name or f"inference-{stem}-x{factor:g}-{gpus.replace(':', '').replace(',', '-')}",
        provenance={"generator": "instances.azure_llm", "seed": None,
                    "arguments": {"factor": factor, "gpus": gpus, "delay_cv": delay_cv},
                    "source": f"Azure LLM inference trace 2023, {Path(path).name} "
                              "(Azure/AzurePublicDataset @ b469a11, CC BY 4.0), arrivals "
                              f"as recorded, time compressed by {factor:g}"})
