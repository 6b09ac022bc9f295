"""Batch policies of Fang et al. (CIKM'17): ``fixed`` and the Eq. 2 ``heuristic``.

Both take the default model (the largest κ, YOLO full) unless the batch size is at least
``threshold`` (B_thrd = 8), in which case they take the model maximizing the batch's
Σ Q(t_now + D_{n,M,G}) (Sec. 3.1). The paper writes this sum as κ_M · Σ Q(...), with Q
already containing κ_M (Eq. 1); we count κ once. Ties keep the default model.

``fixed`` (Sec. 4.1): batch all queued queries, at most 32. It also chooses the model by
the same rule: Table 3 reports a tiny-model share of 20-34 % for it, which a full-only
policy cannot have.

``heuristic`` (Eq. 2): the smallest listed B (supported by the default model on the GPU's
type) with ``B >= [α · D_{B,M,G} · R_t + (1 − α) · N_t] · β · ξ_G``, else the largest;
``R_t`` = arrivals per ms over the last 5 s, ``N_t`` = queued queries, ``ξ_G`` = the GPU's
share of the cluster's B = 8 throughput of the default model.

A policy reads the serving queue through :class:`ServeState` (the serving simulator,
:func:`dlsched.serve.serve`, fills it) and answers the :class:`BatchPolicy` questions.
Both live here, in the problem's home, so that the simulator, the registered methods
(:mod:`dlsched.heuristics.inference`) and the learned policy's training share them
without importing each other.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Protocol

from ...errors import InputError
from .data import InferenceData

RATE_WINDOW_MS = 5000  # R_t: arrivals over the last 5 s (Sec. 4.2)

PAPER_ALPHA = 0.5
PAPER_BETA = 0.5  # Sec. 4.2 prints "α = 0.5 and κ = 0.5"; κ there can only be β
THRESHOLD = 8
SERVING_POLICIES = ("fixed", "heuristic", "learned-batching")
"""The paper's serving policies: registered methods of ``inference``; a model's warm
start (option ``hint``) names one."""


@dataclass
class ServeState:
    """The live state of the serving queue a policy reads (do not modify it from a policy)."""

    data: InferenceData
    now: int = 0
    heap: list[int] = field(default_factory=list)  # keys bin * N + query
    bin_count: dict[int, int] = field(default_factory=dict)
    gpu_free: list[int] = field(default_factory=list)
    next_arrival: int = 0  # index of the next query to arrive
    arrivals: list[int] = field(default_factory=list)

    def rate(self) -> float:
        """R_t in queries per ms: arrivals in (now − 5 s, now] / 5000."""
        lo = bisect_right(self.arrivals, self.now - RATE_WINDOW_MS, 0, self.next_arrival)
        return (self.next_arrival - lo) / RATE_WINDOW_MS

    def histogram(self, before: int = 4, after: int = 6) -> list[int]:
        """Queued queries per deadline bin: ``before`` bins before the current one, the
        current one and ``after - 1`` after it (Sec. 3.2, N_pre = 4, N_post = 6)."""
        cur = self.now // self.data.bin_ms
        get = self.bin_count.get
        return [get(b, 0) for b in range(cur - before, cur + after)]


class BatchPolicy(Protocol):
    """What the serving simulator asks: a batch size for a free GPU, then a model."""

    label: str

    def reset(self, sim: ServeState) -> None: ...

    def size(self, sim: ServeState, gpu: int) -> int: ...

    def model(self, sim: ServeState, gpu: int, queries: list[int], size: int) -> int: ...


def default_model(data: InferenceData) -> int:
    """The most accurate model (largest κ; first by name on ties)."""
    best = max(data.kappa)
    return min(i for i, k in enumerate(data.kappa) if k == best)


class _ModelChoice:
    """The shared B >= B_thrd model choice."""

    threshold: int = THRESHOLD

    def reset(self, sim: ServeState) -> None:
        data = sim.data
        self.data = data
        self.default = default_model(data)
        self.soft = data.soft.tolist()
        self.hard = data.hard.tolist()
        self.kappa = data.kappa.tolist()
        self.delay = data.delay.tolist()
        self.sizes = data.batch_sizes
        self.types = data.gpu_type.tolist()
        self.order = [self.default] + [m for m in range(len(data.models)) if m != self.default]

    def _duration(self, m: int, t: int, n: int) -> int:
        row = self.delay[m][t]
        for s, b in enumerate(self.sizes):
            if b >= n and row[s] >= 0:
                return row[s]
        return -1

    def model(self, sim: ServeState, gpu: int, queries: list[int], size: int) -> int:
        if size < self.threshold or len(self.order) == 1:
            return self.default
        now, t, n = sim.now, self.types[gpu], len(queries)
        soft, hard = self.soft, self.hard
        best_m, best_q = self.default, -1.0
        for m in self.order:
            d = self._duration(m, t, n)
            if d < 0:
                continue
            end = now + d
            total = 0.0
            for q in queries:
                s = soft[q]
                if end <= s:
                    total += 1.0
                else:
                    h = hard[q]
                    if end < h:
                        total += (h - end) / (h - s)
            total *= self.kappa[m]
            if total > best_q + 1e-12:
                best_m, best_q = m, total
            if m == self.default and total >= n * self.kappa[m]:
                break  # everyone on time with the best model: nothing beats it
        return best_m


class FixedPolicy(_ModelChoice):
    """Batch every queued query, at most ``max_batch`` (32)."""

    def __init__(self, max_batch: int = 32, threshold: int = THRESHOLD) -> None:
        if max_batch < 1:
            raise InputError(f"max_batch = {max_batch}", field="max_batch", fix="use >= 1")
        self.max_batch = max_batch
        self.threshold = threshold
        self.label = "fixed"

    def reset(self, sim: ServeState) -> None:
        super().reset(sim)
        self.cap = [min(self.max_batch, self._largest(t)) for t in self.types]

    def _largest(self, t: int) -> int:
        row = self.delay[self.default][t]
        return max(b for s, b in enumerate(self.sizes) if row[s] >= 0)

    def size(self, sim: ServeState, gpu: int) -> int:
        return min(len(sim.heap), self.cap[gpu])


class HeuristicPolicy(_ModelChoice):
    """Eq. 2 with parameters α, β and (optionally) fixed ξ per GPU."""

    def __init__(self, alpha: float = PAPER_ALPHA, beta: float = PAPER_BETA,
                 xi: list[float] | None = None, threshold: int = THRESHOLD) -> None:
        if not 0.0 <= alpha <= 1.0:
            raise InputError(f"alpha = {alpha}", field="alpha", fix="use a value in [0, 1]")
        if beta <= 0:
            raise InputError(f"beta = {beta}", field="beta", fix="use a value > 0")
        self.alpha, self.beta, self.xi_given, self.threshold = alpha, beta, xi, threshold
        self.label = "heuristic"

    def reset(self, sim: ServeState) -> None:
        super().reset(sim)
        num = len(self.types)
        if self.xi_given is not None:
            if len(self.xi_given) != num or any(x <= 0 for x in self.xi_given):
                raise InputError(f"xi has {len(self.xi_given)} entries", field="xi",
                                 fix=f"give {num} positive shares, one per GPU")
            self.xi = list(self.xi_given)
        else:
            cap = [8.0 / self._duration(self.default, t, 8) for t in self.types]
            total = sum(cap)
            self.xi = [c / total for c in cap]
        row_of = {}
        for t in set(self.types):
            row = self.delay[self.default][t]
            row_of[t] = [(b, row[s]) for s, b in enumerate(self.sizes) if row[s] >= 0]
        self.rows = [row_of[t] for t in self.types]

    def size(self, sim: ServeState, gpu: int) -> int:
        rate = sim.rate()
        queued = len(sim.heap)
        a, scale = self.alpha, self.beta * self.xi[gpu]
        rest = (1.0 - a) * queued
        rows = self.rows[gpu]
        for b, d in rows:
            if b >= (a * d * rate + rest) * scale:
                return b
        return rows[-1][0]

