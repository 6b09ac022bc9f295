"""Liquid's job-wise best-fit with fewer array passes: the decision of ``jobwise_bestfit``.

:func:`fast_bestfit` places the jobs in queue order as
:func:`dlsched.heuristics.liquid_jobwise.jobwise_bestfit` does (the same candidate plans,
costs, fit rules and ties: module docstring there) and computes every number the same way;
it only does less work per job, which at 2,048 servers is what a decision costs:

- a fit mask is kept per demand (a container's level, GPUs, CPU and RAM; a job's GPUs per
  level, CPU and RAM) from job to job and recomputed only at the servers whose loads
  changed since it was last read, by the same comparisons one server at a time;
- the cost rows are summed into buffers made once (``out=``: the same additions);
- a split plan reads its containers' PS-worker pairs and the servers of the job's placed
  containers from Python lists (pairs lie within a job) instead of indexing arrays.

``tests/test_liquid_bestfit_fast.py`` compares it with ``jobwise_bestfit`` on random
batches (both objectives, tight and loose clusters, several PS and workers per job).
"""

from __future__ import annotations

import numpy as np

from dlsched.problems.liquid import LiquidData

from .liquid_jobwise import _cheapest, _dynamic_terms, _Round, job_cost


class _CachedRound(_Round):
    """A best-fit round whose fit masks are kept per demand (module docstring)."""

    def __init__(self, data: LiquidData) -> None:
        super().__init__(data, dynamic=True)
        self.masks: dict[tuple, list] = {}
        self.changed: list[int] = []  # servers whose loads changed, in order

    def place(self, c: int, n: int) -> None:
        super().place(c, n)
        self.changed.append(n)

    def remove_job(self, j: int) -> None:  # pragma: no cover - best-fit only places
        raise NotImplementedError("a cached round only places containers")

    def fits(self, c: int) -> np.ndarray:
        """``loads.fits(c)`` as a new array (the caller may change it)."""
        d, loads = self.data, self.loads
        key = (int(d.c_level[c]), int(d.c_gpus[c]), float(d.c_cpu[c]), float(d.c_ram[c]))
        return self._mask(key, lambda: loads.fits(c), lambda n: loads.fits_at(c, n)).copy()

    def fits_whole(self, j: int) -> np.ndarray:
        """``loads.fits_all(*job_needs[j])``, read-only."""
        need, cpu, ram = self.data.job_needs[j]
        loads = self.loads
        key = (*need.tolist(), float(cpu), float(ram))
        return self._mask(key, lambda: loads.fits_all(need, cpu, ram),
                          lambda n: loads.fits_all_at(need, cpu, ram, n))

    def _mask(self, key: tuple, compute, compute_at) -> np.ndarray:
        """The kept mask of ``key``, first brought up to date at the servers whose loads
        changed since it was last read (``compute_at(n)``: ``compute()[n]``)."""
        hit = self.masks.get(key)
        if hit is None:
            hit = self.masks[key] = [compute(), len(self.changed)]
        elif hit[1] < len(self.changed):
            mask = hit[0]
            for n in set(self.changed[hit[1]:]):
                mask[n] = compute_at(n)
            hit[1] = len(self.changed)
        return hit[0]


class _Plans:
    """What pricing a job's plans reads, in Python lists, and the cost buffers."""

    def __init__(self, data: LiquidData) -> None:
        self.data = data
        ps = data.c_ps.tolist()
        # per job: its workers, then its PS (container order within each): the split order
        self.order = [[c for c in range(sl.start, sl.stop) if not ps[c]]
                      + [c for c in range(sl.start, sl.stop) if ps[c]]
                      for sl in data.job_slices]
        # per container: (pair, partner) as the PS, then as the worker, pairs ascending
        self.as_ps: list[list[tuple[int, int]]] = [[] for _ in ps]
        self.as_worker: list[list[tuple[int, int]]] = [[] for _ in ps]
        for k, (p, w) in enumerate(zip(data.pair_p.tolist(), data.pair_w.tolist(),
                                       strict=True)):
            self.as_ps[p].append((k, w))
            self.as_worker[w].append((k, p))
        n = data.num_nodes
        self.whole = np.empty(n)
        self.cost = np.empty(n)
        self.rows = np.empty(n)
        self.coef = np.empty(n)

    def best(self, rnd: _CachedRound, j: int) -> list[int] | None:
        """``best_job_plan(data, rnd, j)`` as a list of servers."""
        d = self.data
        sl = d.job_slices[j]
        lin, node_coef = _dynamic_terms(d, rnd, j)
        best, best_cost = None, np.inf
        costs = self.whole
        lin.sum(axis=0, out=costs)
        np.add(costs, node_coef, out=costs)
        n = _cheapest(costs, rnd.fits_whole(j))
        if n is not None:
            best, best_cost = [n] * (sl.stop - sl.start), float(costs[n])
        split = self._split(rnd, j, lin, node_coef)
        if split is not None:
            cost = job_cost(d, j, np.array(split, dtype=np.int64), lin, node_coef)
            if cost < best_cost - 1e-12:
                best = split
        return best

    def _split(self, rnd: _CachedRound, j: int, lin: np.ndarray,
               node_coef: np.ndarray) -> list[int] | None:
        """``_split_plan(data, rnd, j, lin, node_coef)`` as a list of servers."""
        d = self.data
        start = d.job_slices[j].start
        # the servers of the job's containers, the round's and this plan's (a pair's
        # partner is a container of the same job)
        local = rnd.assign[d.job_slices[j]].tolist()
        added: dict[int, list[int]] = {}
        coef = node_coef
        cost = self.cost
        for c in self.order[j]:
            ok = rnd.fits(c)
            for m, here in added.items():
                ok[m] = rnd.loads.fits_after(c, m, here)
            np.add(lin[c - start], coef, out=cost)
            for pairs in (self.as_ps[c], self.as_worker[c]):
                k = [(q, local[p - start]) for q, p in pairs if local[p - start] >= 0]
                if len(k) == 1:  # data.pair_rows: the product itself
                    np.multiply(d.pair_coef[k[0][0]], d.dist[k[0][1]], out=self.rows)
                    np.add(cost, self.rows, out=cost)
                elif k:
                    cost += d.pair_rows(np.array([q for q, _ in k], dtype=np.int64),
                                        np.array([m for _, m in k], dtype=np.int64))
            n = _cheapest(cost, ok)
            if n is None:
                return None
            added.setdefault(n, []).append(c)
            local[c - start] = n
            if coef is node_coef:
                coef = self.coef
                np.copyto(coef, node_coef)
            coef[n] = 0.0
        return local


def fast_bestfit(data: LiquidData) -> np.ndarray | None:
    """``jobwise_bestfit(data)``: the same assignment (None when a job fits nowhere)."""
    rnd = _CachedRound(data)
    plans = _Plans(data)
    for j, sl in enumerate(data.job_slices):
        plan = plans.best(rnd, j)
        if plan is None:
            return None
        for k, n in enumerate(plan):
            rnd.place(sl.start + k, n)
    return rnd.assign
