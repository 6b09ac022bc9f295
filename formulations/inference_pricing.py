"""The per-GPU pricing of the Lagrangian bound of :mod:`.inference_lagrange`: P_g(λ), the
best batch sequence on one GPU when queries may repeat and each earns κ V − λ (an exact
backward dynamic programme over integer start times), what each query can earn at most,
and the feasible schedule repaired from λ."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dlsched.problems.inference import Batch, InferenceData, InferenceDecision, utility


@dataclass(frozen=True)
class _Config:
    model: int
    size: int  # table size B_s
    dur: int
    kappa: float


def _configs(data: InferenceData, t: int) -> list[_Config]:
    out = []
    for m in range(len(data.models)):
        for s, b in enumerate(data.batch_sizes):
            d = int(data.delay[m, t, s])
            if d >= 0:
                out.append(_Config(m, int(b), d, float(data.kappa[m])))
    return out


PRICE_BLOCK = 256
"""Start times per block of the pricer's tables: each block keeps only the queries that can
earn something in it (arrived by its end, not past their hard deadline at its start)."""


class GpuPricer:
    """P_g(λ) for one GPU type and free time, with the batches of its best sequence.

    The batch values are computed per block of :data:`PRICE_BLOCK` start times over the
    queries that can be positive there (any other has reduced value ≤ 0 for λ ≥ 0), and the
    backward DP runs on runs of start times shorter than the shortest batch: there every
    batch ends after the run, so the run's values are a suffix maximum of known terms.
    """

    def __init__(self, data: InferenceData, gpu_type: int, free: int) -> None:
        self.data = data
        self.configs = _configs(data, gpu_type)
        self.t_lo = max(int(data.arrival.min()), int(free))
        self.t_end = int(data.hard.max())
        n = data.num_queries
        times = np.arange(self.t_lo, max(self.t_end, self.t_lo) + 1, dtype=np.int64)
        self.times = times
        self.durs = np.array([c.dur for c in self.configs], dtype=np.int64)
        # per config, per block of start times: (first row, queries that can be positive,
        # κ V_q(t + D_c) on those rows and queries, -inf where q has not arrived by t)
        self.blocks: list[list[tuple[int, np.ndarray, np.ndarray]]] = []
        for c in self.configs:
            rows = []
            for lo in range(0, times.size, PRICE_BLOCK):
                t = times[lo:lo + PRICE_BLOCK]
                end = t[0] + c.dur  # V > 0 at end <= soft (soft = hard included) or end < hard
                cols = np.flatnonzero((data.arrival <= t[-1])
                                      & ((data.soft >= end) | (data.hard > end)))
                v = c.kappa * utility(t[:, None] + c.dur, data.soft[None, cols],
                                      data.hard[None, cols])
                rows.append((lo, cols, np.where(data.arrival[None, cols] <= t[:, None], v,
                                                -np.inf)))
            self.blocks.append(rows)
        self.n = n

    def values(self, ci: int, i: int) -> np.ndarray:
        """κ V_q(t_i + D_c) of every query for config ``ci`` at start row ``i`` (-inf for
        queries not arrived by then, 0 for those it cannot earn anything)."""
        out = np.zeros(self.n)
        out[self.data.arrival > self.times[i]] = -np.inf
        lo, cols, v = self.blocks[ci][i // PRICE_BLOCK]
        out[cols] = v[i - lo]
        return out

    def batch_values(self, lam: np.ndarray) -> np.ndarray:
        """w[c, t]: the sum of the ``B_c`` largest positive κ V_q(t + D_c) − λ_q."""
        w = np.zeros((len(self.configs), self.times.size))
        for ci, c in enumerate(self.configs):
            for lo, cols, v in self.blocks[ci]:
                if cols.size == 0:
                    continue
                pos = np.maximum(v - lam[cols][None, :], 0.0)
                if c.size < cols.size:
                    pos = np.partition(pos, cols.size - c.size, axis=1)[:, cols.size - c.size:]
                w[ci, lo:lo + pos.shape[0]] = pos.sum(axis=1)
        return w

    def price(self, lam: np.ndarray) -> tuple[float, list[tuple[int, int, np.ndarray]]]:
        """(P(λ), the best sequence as [(start, config index, member indices)])."""
        T = self.times.size
        w = self.batch_values(lam)
        value = np.zeros(T + 1)  # value[i] = V(times[i]); value[T] = 0 (t past the end)
        choice = np.full(T, -1, dtype=np.int64)
        run = max(1, int(self.durs.min()))
        for hi in range(T, 0, -run):
            lo = max(0, hi - run)
            idx = np.arange(lo, hi)
            cand = w[:, lo:hi] + value[np.minimum(idx[None, :] + self.durs[:, None], T)]
            k = np.argmax(cand, axis=0)
            best = cand[k, idx - lo]
            # value[i] = max(value[i + 1], best[i]): a suffix maximum over the run
            value[lo:hi] = np.maximum.accumulate(np.append(best, value[hi])[::-1])[::-1][:-1]
            after = value[lo + 1:hi + 1]
            choice[lo:hi] = np.where(best > after, k, -1)
        seq = []
        i = 0
        while i < T:
            k = int(choice[i])
            if k < 0:
                i += 1
                continue
            c = self.configs[k]
            red = self.values(k, i) - lam
            order = np.argsort(-red, kind="stable")[:c.size]
            members = order[red[order] > 0]
            seq.append((int(self.times[i]), k, members))
            i += c.dur
        return float(value[0]), seq


def standalone_values(data: InferenceData, free: list[int]) -> np.ndarray:
    """The most each query can earn: started at its arrival (or when a GPU is free) with the
    shortest duration any size of a model has on that GPU (V never rises with time)."""
    out = np.zeros(data.num_queries)
    for g in range(len(data.gpu_ids)):
        t = int(data.gpu_type[g])
        start = np.maximum(data.arrival, int(free[g]))
        for m in range(len(data.models)):
            ok = data.delay[m, t][data.delay[m, t] >= 0]
            if ok.size == 0:
                continue
            d = int(ok.min())
            out = np.maximum(out, data.kappa[m] * utility(start + d, data.soft, data.hard))
    return out


BIG = 1e9  # λ of a query already served: its reduced value is never positive


def repair_schedule(data: InferenceData, pricers: dict[tuple[int, int], GpuPricer],
                    lam: np.ndarray, gpu_free: list[int]) -> InferenceDecision:
    """A feasible schedule from λ: GPUs in order, each takes its best sequence at λ with
    the queries already served excluded; a query repeated within one sequence keeps its
    first batch; every batch is then left-shifted (start = max(GPU free, last arrival))."""
    lam = lam.copy()
    out: list[Batch] = []
    for g in range(len(data.gpu_ids)):
        t = int(data.gpu_type[g])
        pricer = pricers[t, int(gpu_free[g])]
        _v, seq = pricer.price(lam)
        free = int(gpu_free[g])
        taken: set[int] = set()
        for _start, k, members in seq:
            qs = tuple(sorted(int(q) for q in members if int(q) not in taken))
            if not qs:
                continue
            taken.update(qs)
            c = pricer.configs[k]
            d = data.duration(c.model, t, len(qs))
            s0 = max(free, max(int(data.arrival[q]) for q in qs))
            out.append(Batch(data.gpu_ids[g], data.models[c.model], s0, s0 + int(d), qs))
            free = s0 + int(d)
        lam[list(taken)] = BIG
    return InferenceDecision(batches=tuple(out))
