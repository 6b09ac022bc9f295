"""Improve a feasible ``inference`` schedule: optimal re-assignment on a fixed batch skeleton.

A skeleton fixes every batch's GPU, model, start time S_b, duration D_b and capacity B_b
(its table size). Which queries go where is then a bipartite b-matching: maximize
Σ w_qb x_qb with w_qb = κ_b V_q(S_b + D_b) over pairs with a_q <= S_b and w_qb > 0,
Σ_b x_qb <= 1, Σ_q x_qb <= B_b. Its constraint matrix is totally unimodular (a bipartite
incidence matrix), so a simplex vertex is integral; the LP is solved by HiGHS' dual
simplex and the solution is checked to be integral (else it is not used).

After a re-assignment every batch is re-timed on its GPU in order: start = max(GPU free,
last arrival of its members) and the duration of the smallest supported size >= its
member count. Starts and ends only move earlier, so every query's Q is at least its
w_qb: the schedule's Σ Q is at least the LP optimum, which is at least the old Σ Q.

Local search over skeletons (each move re-assigned optimally, kept when Σ Q rises):
change a batch's model, raise or lower its table size, delete it, start it at one of the
next arrivals (waiting for more queries), add a twin batch right after it, move it to
another GPU, or merge it with the next batch of its GPU (one table size up). A heuristic: it
improves schedules, it proves nothing.
"""

from __future__ import annotations

import time

import numpy as np
from scipy.optimize import linprog
from scipy.sparse import coo_matrix

from dlsched.problems.inference import (
    Batch,
    InferenceData,
    InferenceDecision,
    query_qualities,
    utility,
)

Skeleton = list[tuple[int, int, int, int]]  # (gpu, model, table-size index, start)


def skeleton_of(data: InferenceData, decision: InferenceDecision) -> Skeleton:
    """The (gpu, model, table size, start) of every batch, by GPU then start."""
    out = []
    for b in sorted(decision.batches, key=lambda b: (data.gpu_index[b.gpu], b.start)):
        g, m = data.gpu_index[b.gpu], data.model_index[b.model]
        s = data.table_size(m, int(data.gpu_type[g]), len(b.queries))
        out.append((g, m, int(s), int(b.start)))
    return out


def _regrouped(skel: Skeleton) -> Skeleton:
    """Batches sorted by GPU, then start (the order :func:`_retimed` expects)."""
    return sorted(skel, key=lambda b: (b[0], b[3]))


def _retimed(data: InferenceData, skel: Skeleton) -> Skeleton | None:
    """Starts pushed so that batches on a GPU do not overlap (None if a size is invalid)."""
    out = []
    free: dict[int, int] = {}
    for g, m, s, start in skel:
        d = int(data.delay[m, int(data.gpu_type[g]), s])
        if d < 0:
            return None
        st = max(start, free.get(g, -(10**18)))
        out.append((g, m, s, st))
        free[g] = st + d
    return out


def assign(data: InferenceData, skel: Skeleton) -> InferenceDecision | None:
    """The optimal re-assignment on ``skel``, re-timed (None when the LP is not integral)."""
    n = data.num_queries
    rows, cols, w = [], [], []
    caps = []
    for j, (g, m, s, start) in enumerate(skel):
        d = int(data.delay[m, int(data.gpu_type[g]), s])
        caps.append(data.batch_sizes[s])
        ok = np.flatnonzero(data.arrival <= start)
        if ok.size == 0:
            continue
        val = data.kappa[m] * utility(start + d, data.soft[ok], data.hard[ok])
        keep = val > 0
        rows.extend(ok[keep].tolist())
        cols.extend([j] * int(keep.sum()))
        w.extend(val[keep].tolist())
    if not w:
        return InferenceDecision()
    k = len(w)
    var = np.arange(k)
    a_q = coo_matrix((np.ones(k), (np.asarray(rows), var)), shape=(n, k))
    a_b = coo_matrix((np.ones(k), (np.asarray(cols), var)), shape=(len(skel), k))
    from scipy.sparse import vstack

    res = linprog(-np.asarray(w), A_ub=vstack([a_q, a_b]).tocsr(),
                  b_ub=np.concatenate([np.ones(n), np.asarray(caps, float)]),
                  bounds=(0, 1), method="highs-ds")
    if res.status != 0:
        return None
    x = res.x
    if np.any(np.abs(x - np.round(x)) > 1e-6):
        return None
    members: dict[int, list[int]] = {}
    for i in np.flatnonzero(x > 0.5):
        members.setdefault(cols[i], []).append(rows[i])
    out = []
    free: dict[int, int] = {}
    for j, (g, m, _s, _start) in enumerate(skel):
        qs = sorted(members.get(j, []))
        if not qs:
            continue
        t = int(data.gpu_type[g])
        d = data.duration(m, t, len(qs))
        st = max(free.get(g, -(10**18)), max(int(data.arrival[q]) for q in qs))
        out.append(Batch(data.gpu_ids[g], data.models[m], st, st + int(d), tuple(qs)))
        free[g] = st + int(d)
    return InferenceDecision(batches=tuple(out))


def _value(data: InferenceData, decision: InferenceDecision) -> float:
    return float(query_qualities(data, decision).sum())


def improve(data: InferenceData, decision: InferenceDecision, *,
            time_limit: float | None = 10.0) -> tuple[InferenceDecision, float]:
    """Local search from ``decision`` (module docstring); (best schedule, its Σ Q).

    ``time_limit`` (wall seconds) stops it early; ``None`` runs to a local optimum, which
    makes the result depend on the input only (reproducible)."""
    t0 = time.perf_counter()
    if time_limit is None:
        time_limit = float("inf")
    best, best_val = decision, _value(data, decision)
    first = assign(data, skeleton_of(data, best))
    if first is not None:
        first_val = _value(data, first)
        if first_val > best_val + 1e-9:
            best, best_val = first, first_val
    arrivals = data.arrival
    improved = True
    while improved and time.perf_counter() - t0 < time_limit:
        improved = False
        skel = skeleton_of(data, best)
        for j in range(len(skel)):
            if time.perf_counter() - t0 >= time_limit:
                break
            g, m, s, st = skel[j]
            t = int(data.gpu_type[g])
            moves: list[Skeleton] = [skel[:j] + skel[j + 1:]]
            for m2 in range(len(data.models)):
                if m2 != m:
                    s2 = data.table_size(m2, t, data.batch_sizes[s])
                    if s2 is not None:
                        moves.append(skel[:j] + [(g, m2, s2, st)] + skel[j + 1:])
            for s2 in (s - 1, s + 1):
                if 0 <= s2 < len(data.batch_sizes) and data.delay[m, t, s2] >= 0:
                    moves.append(skel[:j] + [(g, m, s2, st)] + skel[j + 1:])
            later = np.unique(arrivals[arrivals > st])[:8]
            for k in (0, 1, 3, 7):  # wait for more arrivals
                if k < later.size:
                    moves.append(skel[:j] + [(g, m, s, int(later[k]))] + skel[j + 1:])
            moves.append(skel[:j + 1] + [(g, m, s, st)] + skel[j + 1:])  # a twin after it
            for g2 in range(len(data.gpu_ids)):  # the same batch on another GPU
                if g2 != g and data.delay[m, int(data.gpu_type[g2]), s] >= 0:
                    moves.append(_regrouped(skel[:j] + [(g2, m, s, st)] + skel[j + 1:]))
            if j + 1 < len(skel) and skel[j + 1][0] == g and s + 1 < len(data.batch_sizes) \
                    and data.delay[m, t, s + 1] >= 0:  # merged with the next batch
                moves.append(skel[:j] + [(g, m, s + 1, skel[j + 1][3])] + skel[j + 2:])
            for cand in moves:  # the best move for this batch
                timed = _retimed(data, cand)
                dec = None if timed is None else assign(data, timed)
                if dec is None:
                    continue
                val = _value(data, dec)
                if val > best_val + 1e-9:
                    best, best_val, improved = dec, val, True
            if improved:
                break
    return best, best_val
