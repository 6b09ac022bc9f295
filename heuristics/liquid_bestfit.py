"""Liquid's job-wise best-fit with fewer array passes: the decision of ``jobwise_bestfit``.

:func:`fast_bestfit` places the jobs in queue order as
:func:`dlsched.heuristics.liquid_jobwise.jobwise_bestfit` does (the same candidate plans,
costs, fit rules and ties: module docstring there) and computes every number the same way;
it only does less work per job, which at 2,048 servers is what a decision costs:

- a misfit mask is kept per demand (a container's level, GPUs, CPU and RAM; a job's GPUs
  per level, CPU and RAM) from job to job and recomputed only at the servers whose loads
  changed since it was last read, by the same comparisons one server at a time, on
  Python numbers kept per touched server (:class:`_ServerLoads`);
- the cost rows are summed into buffers made once (``out=``: the same additions); with
  the paper objective a container's row is kept per GPU count (it depends on nothing else);
- a split plan reads its containers' PS-worker pairs and the servers of the job's placed
  containers from Python lists (pairs lie within a job) instead of indexing arrays, and a
  job of one or two containers is priced on floats (a one-term dot product is the product;
  a sum of one or two terms is the same in any order).

``tests/test_liquid_bestfit_fast.py`` compares it with ``jobwise_bestfit`` on random
batches (both objectives, tight and loose clusters, several PS and workers per job).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dlsched.instance import Instance
from dlsched.problems.liquid import LiquidData, liquid_data
from dlsched.registry import MethodSpec, check_options, register_method
from dlsched.result import MethodOutput

from .liquid_jobwise import _dynamic_terms, _output, _Round, job_cost
from .liquid_loads import NodeLoads


class _ServerLoads(NodeLoads):
    """:class:`NodeLoads` whose one-server steps (add, the one-server fit rules) run on
    Python numbers kept per touched server: the arrays' numbers (integer GPU counts; CPU
    and RAM summed by the same float additions), without numpy's per-element calls."""

    def __post_init__(self) -> None:
        super().__post_init__()
        d = self.data
        self.own: dict[int, list] = {}  # server -> [gpu by level, cpu, ram, count, free, room]
        self.limits: dict[int, tuple] = {}  # server -> (level caps, cpu limit, ram limit)
        self.demand = list(zip(d.c_level.tolist(), d.c_gpus.tolist(), d.c_cpu.tolist(),
                               d.c_ram.tolist(), strict=True))

    def _server(self, n: int) -> list:
        s = self.own.get(n)
        if s is None:
            s = self.own[n] = [self.gpu[n].tolist(), float(self.cpu[n]), float(self.ram[n]),
                               int(self.count[n]), self.free[:, n].tolist(),
                               self.room[:, n].tolist()]
            d = self.data
            self.limits[n] = (d.level_cap[n].tolist(), float(d.cpu_limit[n]),
                              float(d.ram_limit[n]))
        return s

    def add(self, c: int, n: int) -> None:
        s = self._server(n)
        level, g, cpu, ram = self.demand[c]
        if g:
            gpu = s[0]
            for lev in range(level + 1):
                gpu[lev] += g
            free = [cap - used for cap, used in zip(self.limits[n][0], gpu, strict=True)]
            room = list(free)
            for lev in range(1, len(room)):
                room[lev] = min(room[lev - 1], room[lev])
            s[4], s[5] = free, room
            self.gpu[n] = gpu
            self.free[:, n] = free
            self.room[:, n] = room
        s[1] += cpu
        s[2] += ram
        s[3] += 1
        self.cpu[n], self.ram[n], self.count[n] = s[1], s[2], s[3]

    def remove(self, c: int, n: int) -> None:  # pragma: no cover - best-fit only places
        raise NotImplementedError("best-fit's loads only add")

    def fits_at(self, c: int, n: int) -> bool:
        s, (_, cpu_limit, ram_limit) = self._server(n), self.limits[n]
        level, g, cpu, ram = self.demand[c]
        return s[5][level] >= g and s[1] + cpu <= cpu_limit and s[2] + ram <= ram_limit

    def fits_all_at(self, need: Sequence[int], cpu: float, ram: float, n: int) -> bool:
        s, (_, cpu_limit, ram_limit) = self._server(n), self.limits[n]
        free = s[4]
        return (all(free[lev] >= need[lev] for lev in range(len(need)))
                and s[1] + cpu <= cpu_limit and s[2] + ram <= ram_limit)

    def fits_after(self, c: int, n: int, added: list[int]) -> bool:
        s, (caps, cpu_limit, ram_limit) = self._server(n), self.limits[n]
        gpu, cpu, ram = list(s[0]), s[1], s[2]
        for a in added:
            level, g, a_cpu, a_ram = self.demand[a]
            for lev in range(level + 1):
                gpu[lev] += g
            cpu += a_cpu
            ram += a_ram
        level, g, c_cpu, c_ram = self.demand[c]
        return (all(caps[lev] - gpu[lev] >= g for lev in range(level + 1))
                and cpu + c_cpu <= cpu_limit and ram + c_ram <= ram_limit)


class _CachedRound(_Round):
    """A best-fit round whose fit masks are kept per demand (module docstring)."""

    def __init__(self, data: LiquidData) -> None:
        super().__init__(data, dynamic=True, loads=_ServerLoads)
        self.node_terms: dict[int, tuple] = {}  # server -> (node_coef, total GPUs)
        self.masks: dict[tuple, list] = {}
        self.changed: list[int] = []  # servers whose loads changed, in order

    def place(self, c: int, n: int) -> None:
        super().place(c, n)
        self.changed.append(n)

    def remove_job(self, j: int) -> None:  # pragma: no cover - best-fit only places
        raise NotImplementedError("a cached round only places containers")

    def misfits(self, c: int) -> np.ndarray:
        """``~loads.fits(c)`` as a new array (the caller may change it)."""
        loads = self.loads
        return self._mask(loads.demand[c], lambda: loads.fits(c),
                          lambda n: loads.fits_at(c, n)).copy()

    def misfits_whole(self, j: int) -> np.ndarray:
        """``~loads.fits_all(*job_needs[j])``, read-only."""
        need, cpu, ram = self.data.job_needs[j]
        loads, levels = self.loads, need.tolist()
        key = (*levels, float(cpu), float(ram))
        return self._mask(key, lambda: loads.fits_all(need, cpu, ram),
                          lambda n: loads.fits_all_at(levels, cpu, ram, n))

    def dynamic_coef(self) -> np.ndarray:
        """``_Round.dynamic_coef`` with the touched servers' numbers read once (the same
        float operations; the division stays numpy's)."""
        if self.coef is None:
            return super().dynamic_coef()
        d, loads = self.data, self.loads
        scale = 1.0 - d.params.lam
        for n in self.touched:
            terms = self.node_terms.get(n)
            if terms is None:
                terms = self.node_terms[n] = (float(d.node_coef[n]), d.total_gpus[n])
            self.coef[n] = terms[0] - scale * (float(loads._server(n)[0][0]) / terms[1])
        self.touched.clear()
        return self.coef

    def _mask(self, key: tuple, compute, compute_at) -> np.ndarray:
        """``~compute()``, kept for ``key`` and first brought up to date at the servers
        whose loads changed since it was last read (``compute_at(n)``: ``compute()[n]``)."""
        hit = self.masks.get(key)
        if hit is None:
            hit = self.masks[key] = [~compute(), len(self.changed)]
        elif hit[1] < len(self.changed):
            mask = hit[0]
            for n in set(self.changed[hit[1]:]):
                mask[n] = not compute_at(n)
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
        self.pair_ends = list(zip(data.pair_p.tolist(), data.pair_w.tolist(), strict=True))
        for k, (p, w) in enumerate(self.pair_ends):
            self.as_ps[p].append((k, w))
            self.as_worker[w].append((k, p))
        self.gpus = data.c_gpus.tolist()
        self.lin_of: dict[int, np.ndarray] = {}  # GPU count -> lin row (paper objective)
        n = data.num_nodes
        self.whole = np.empty(n)
        self.cost = np.empty(n)
        self.rows = np.empty(n)
        self.coef = np.empty(n)

    def best(self, rnd: _CachedRound, j: int) -> list[int] | None:
        """``best_job_plan(data, rnd, j)`` as a list of servers."""
        d = self.data
        sl = d.job_slices[j]
        costs = self.whole
        if d.params.objective == "paper" and sl.stop - sl.start <= 2:
            # _dynamic_terms' branch for a job not placed yet, its rows kept per GPU count;
            # the sum of one or two rows is the same in any order
            lin = [self._row(c) for c in range(sl.start, sl.stop)]
            node_coef = rnd.dynamic_coef()
            if len(lin) == 2:
                np.add(lin[0], lin[1], out=costs)
            else:
                np.copyto(costs, lin[0])
        else:
            if d.params.objective == "paper":
                lin, node_coef = d.lin_rows(sl), rnd.dynamic_coef()
            else:
                lin, node_coef = _dynamic_terms(d, rnd, j)
            lin.sum(axis=0, out=costs)
        best, best_cost = None, np.inf
        np.add(costs, node_coef, out=costs)
        n = _least(costs, rnd.misfits_whole(j))
        if n is not None:
            best, best_cost = [n] * (sl.stop - sl.start), float(costs[n])
        split = self._split(rnd, j, lin, node_coef)
        if split is not None and self._cost(j, split, lin, node_coef) < best_cost - 1e-12:
            best = split
        return best

    def _row(self, c: int) -> np.ndarray:
        """``lin[c]`` (paper objective: it depends on the container's GPUs alone)."""
        d = self.data
        g = self.gpus[c]
        row = self.lin_of.get(g)
        if row is None:
            row = self.lin_of[g] = d.lin_rows(slice(c, c + 1))[0]
        return row

    def _cost(self, j: int, nodes: list[int], lin, node_coef: np.ndarray) -> float:
        """``job_cost(data, j, nodes, lin, node_coef)``. A job of one or two containers
        (at most one PS-worker pair) is priced on Python floats: a one-term dot product is
        the product, and a sum of one or two terms is the same in any order."""
        d = self.data
        k = d.job_pair_ranges[j]
        if len(nodes) > 2:
            return job_cost(d, j, np.array(nodes, dtype=np.int64), np.asarray(lin), node_coef)
        net = 0.0
        if k.stop > k.start:
            start = d.job_slices[j].start
            p, w = self.pair_ends[k.start]
            net = float(d.pair_coef[k.start] * d.dist[nodes[p - start], nodes[w - start]])
        own = sum(float(lin[r][n]) for r, n in enumerate(nodes))
        return net + own + sum(float(node_coef[n]) for n in sorted(set(nodes)))

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
        last = self.order[j][-1]
        for c in self.order[j]:
            bad = rnd.misfits(c)
            for m, here in added.items():
                bad[m] = not rnd.loads.fits_after(c, m, here)
            np.add(lin[c - start], coef, out=cost)
            for pairs in (self.as_ps[c], self.as_worker[c]):
                k = [(q, local[p - start]) for q, p in pairs if local[p - start] >= 0]
                if len(k) == 1:  # data.pair_rows: the product itself
                    np.multiply(d.pair_coef[k[0][0]], d.dist[k[0][1]], out=self.rows)
                    np.add(cost, self.rows, out=cost)
                elif k:
                    cost += d.pair_rows(np.array([q for q, _ in k], dtype=np.int64),
                                        np.array([m for _, m in k], dtype=np.int64))
            n = _least(cost, bad)
            if n is None:
                return None
            added.setdefault(n, []).append(c)
            local[c - start] = n
            if c == last:  # the per-server term is read no more
                break
            if coef is node_coef:
                coef = self.coef
                np.copyto(coef, node_coef)
            coef[n] = 0.0
        return local


def _least(cost: np.ndarray, bad: np.ndarray) -> int | None:
    """``_cheapest(cost, ~bad)``: the first server of least cost among those not bad (None
    when every one is); overwrites ``cost`` where bad."""
    np.putmask(cost, bad, np.inf)
    n = int(cost.argmin())
    if not bad[n]:
        return n
    cand = np.flatnonzero(~bad)  # every server is bad, or every good one costs +inf
    return int(cand[cost[cand].argmin()]) if len(cand) else None


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


def run_bestfit(instance: Instance, *, backend=None, time_limit=None, seed: int = 0,
                **options) -> MethodOutput:
    """Best-fit, job by job (``heuristics.liquid_jobwise``'s docstring)."""
    check_options(options, ())
    data = liquid_data(instance)
    return _output(data, fast_bestfit(data), "a job fits on no server")


register_method(MethodSpec(
    "liquid", "bestfit", "heuristic", run_bestfit,
    summary="Alg. 1 job by job: the cheapest of one-server plans and workers-then-PS"))
