"""The offline schedule model over CP-SAT: variables, one method per constraint family,
the objective (the layout of PyJobShop's ``solvers/ortools`` model).

Per job j: a start and an end on the integer grid, one literal per mode m, and an optional
fixed-size interval per mode (present iff the mode is chosen). Families:

* ``one_mode``: every job runs in exactly one mode; its end is start + that duration.
* ``server_capacity``: per server, a cumulative over the modes' intervals with the mode's
  GPUs on that server as demand (the GPUs of a server are identical and exclusive, so a
  cumulative profile always maps onto concrete GPUs: assign free GPUs in start order).
* ``cluster_capacity`` (redundant): one cumulative over all GPUs, demand = the mode's GPUs;
  lets the solver reason across servers.
* ``energy_bounds`` (relaxation): for every release time t, the jobs released at or after
  t need their GPU-seconds within [t, Cmax] on all GPUs: ``C · (Cmax − t) ≥ Σ energy``
  (energy linear in the mode literals).
* ``completion_bounds`` (relaxation, ``weighted_jct``): the mean-busy-time inequality of
  the whole cluster as one resource of C GPUs. Give job j the last part of its run with
  energy e_j = K·⌊min-mode GPU·duration / K⌋ (a sub-rectangle of g_j GPUs, g_j ≤ its
  widest mode); for the jobs S released at or after t,
  ``Σ e_j (end_j − e_j / (2 g_j)) ≥ t·e(S) + e(S)² / (2C)`` (a fluid schedule of the
  sub-rectangles on C GPUs from t is the best case). Linear in the ends.
* ``identical_jobs`` (symmetry): interchangeable jobs start in index order.
* ``identical_servers`` (symmetry): for interchangeable servers a < b (consecutive in
  their class), the vector of GPUs per job on a is lexicographically ≥ the one on b
  (permuting identical servers keeps a schedule feasible with the same objective, so
  sorting the columns is always possible; it commutes with relabeling identical jobs,
  which changes starts only).
* ``deadlines`` (``qos``): a job counted on time ends by its deadline, in a mode that can
  meet it at all (decided on the real data, so near misses are not blurred by the grid).

Objectives: ``makespan`` min Cmax; ``weighted_jct`` min Σ w_j end_j (the constant
−Σ w_j r_j is added back outside); ``qos`` max (H + 1) · on-time − Cmax (on-time count
first, then makespan); ``effectiveness`` max Σ ⌊K_j / (end_j − r_j)⌋, SCHED²'s Eq. 2
scaled to integers (:mod:`.effectiveness`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ortools.sat.python import cp_model

from ..backend import Deadline
from .data import OfflineData


@dataclass
class Variables:
    """The decision variables of one offline model."""

    start: list[cp_model.IntVar]
    end: list[cp_model.IntVar]
    mode: list[list[cp_model.IntVar]]
    interval: list[list[cp_model.IntervalVar]]
    cmax: cp_model.IntVar
    on_time: list[cp_model.IntVar]

    def gpus_on(self, data: OfflineData, j: int, server: int) -> cp_model.LinearExpr:
        """GPUs of job j on ``server`` (linear in the mode literals)."""
        return sum(m.counts[server] * x
                   for m, x in zip(data.modes[j], self.mode[j], strict=True)
                   if m.counts[server])


class OfflineModel:
    """Build the CP-SAT model of ``data``: ``OfflineModel(data, symmetry=, bounds=)``.

    ``deadline``: building raises :class:`~dlsched.formulations.backend.TimeUp` once it
    passes (checked between constraint families and inside the long ones).
    """

    def __init__(self, data: OfflineData, *, symmetry: bool = True, bounds: bool = True,
                 deadline: Deadline | None = None) -> None:
        self.data = data
        self.deadline = deadline or Deadline(None)
        self.model = cp_model.CpModel()
        self.vars = self._variables()
        self.deadline.check("building the offline model's variables")
        self.one_mode()
        self.server_capacity()
        self.cluster_capacity()
        self.makespan_definition()
        self.deadline.check("building the offline model's capacities")
        if bounds:
            self.energy_bounds()
            if data.objective == "weighted_jct":
                self.completion_bounds()
        if symmetry:
            self.deadline.check("building the offline model's bounds")
            self.identical_jobs()
            self.identical_servers()
        if data.objective == "qos":
            self.deadlines()
        self.objective()
        self.deadline.check("building the offline model")

    # ------------------------------------------------------------------ variables
    def _variables(self) -> Variables:
        d, m = self.data, self.model
        start, end, mode, interval = [], [], [], []
        for j in range(d.num_jobs):
            lo = d.release[j]
            s = m.NewIntVar(lo, d.horizon, f"s{j}")
            e = m.NewIntVar(lo + min(d.durations[j]), d.horizon, f"e{j}")
            lits, ivs = [], []
            for k, dur in enumerate(d.durations[j]):
                x = m.NewBoolVar(f"x{j}_{k}")
                lits.append(x)
                ivs.append(m.NewOptionalFixedSizeIntervalVar(s, dur, x, f"i{j}_{k}"))
            start.append(s)
            end.append(e)
            mode.append(lits)
            interval.append(ivs)
        cmax = m.NewIntVar(0, d.horizon, "cmax")
        on_time = ([m.NewBoolVar(f"on_time{j}") for j in range(d.num_jobs)]
                   if d.objective == "qos" else [])
        return Variables(start, end, mode, interval, cmax, on_time)

    # ------------------------------------------------------------------ constraints
    def one_mode(self) -> None:
        d, m, v = self.data, self.model, self.vars
        for j in range(d.num_jobs):
            m.AddExactlyOne(v.mode[j])
            m.Add(v.end[j] == v.start[j] + sum(
                dur * x for dur, x in zip(d.durations[j], v.mode[j], strict=True)))

    def server_capacity(self) -> None:
        d, m, v = self.data, self.model, self.vars
        for srv in range(d.num_servers):
            ivs, demands = [], []
            for j in range(d.num_jobs):
                for k, mode in enumerate(d.modes[j]):
                    if mode.counts[srv]:
                        ivs.append(v.interval[j][k])
                        demands.append(mode.counts[srv])
            if ivs:
                m.AddCumulative(ivs, demands, d.capacity[srv])

    def cluster_capacity(self) -> None:
        d, m, v = self.data, self.model, self.vars
        if d.num_servers < 2:
            return
        ivs = [iv for j in range(d.num_jobs) for iv in v.interval[j]]
        demands = [mode.gpus for j in range(d.num_jobs) for mode in d.modes[j]]
        m.AddCumulative(ivs, demands, sum(d.capacity))

    def makespan_definition(self) -> None:
        self.model.AddMaxEquality(self.vars.cmax, self.vars.end)

    def energy_bounds(self) -> None:
        d, m, v = self.data, self.model, self.vars
        total = sum(d.capacity)
        for t in sorted(set(d.release)):
            self.deadline.check("building the offline model's energy bounds")
            later = [j for j in range(d.num_jobs) if d.release[j] >= t]
            energy = sum(mode.gpus * dur * x for j in later
                         for mode, dur, x in zip(d.modes[j], d.durations[j], v.mode[j],
                                                 strict=True))
            m.Add(total * (v.cmax - t) >= energy)

    def completion_bounds(self) -> None:
        d, m, v = self.data, self.model, self.vars
        total = sum(d.capacity)
        energy = [min(mode.gpus * dur for mode, dur in zip(d.modes[j], d.durations[j],
                                                           strict=True))
                  for j in range(d.num_jobs)]
        scale = max(1, max(energy) // 100_000)  # keep CP-SAT's coefficients small
        energy = [e // scale for e in energy]
        widest = [max(mode.gpus for mode in d.modes[j]) for j in range(d.num_jobs)]
        for t in sorted(set(d.release)):
            later = [j for j in range(d.num_jobs) if d.release[j] >= t and energy[j] > 0]
            if len(later) < 2:
                continue
            e_s = sum(energy[j] for j in later)
            rhs = 2 * t * e_s + scale * (e_s * e_s / total + sum(energy[j] ** 2 / widest[j]
                                                                 for j in later))
            m.Add(sum(2 * energy[j] * v.end[j] for j in later) >= math.ceil(rhs - 1e-6))

    def identical_jobs(self) -> None:
        for group in self.data.identical_jobs():
            for a, b in zip(group, group[1:], strict=False):
                self.model.Add(self.vars.start[a] <= self.vars.start[b])

    def identical_servers(self) -> None:
        d, m, v = self.data, self.model, self.vars
        for group in d.server_classes():
            for a, b in zip(group, group[1:], strict=False):
                equal = m.NewBoolVar(f"eq{a}_{b}")  # the vectors' prefix is equal
                m.Add(equal == 1)
                self.deadline.check("building the offline model's symmetry rules")
                for j in range(d.num_jobs):
                    ga, gb = v.gpus_on(d, j, a), v.gpus_on(d, j, b)
                    if isinstance(ga, int) and isinstance(gb, int):
                        continue  # the job never uses either server
                    m.Add(ga >= gb).OnlyEnforceIf(equal)
                    more = m.NewBoolVar(f"lex{a}_{b}_{j}")
                    m.Add(ga >= gb + 1).OnlyEnforceIf(more)
                    m.Add(ga <= gb).OnlyEnforceIf(more.Not())
                    nxt = m.NewBoolVar(f"eq{a}_{b}_{j}")
                    m.AddBoolOr([equal.Not(), more, nxt])
                    m.AddImplication(nxt, equal)
                    m.AddImplication(nxt, more.Not())
                    equal = nxt

    def deadlines(self) -> None:
        d, m, v = self.data, self.model, self.vars
        for j in range(d.num_jobs):
            if d.deadline[j] is None:
                m.Add(v.on_time[j] == 0)  # no deadline, or urgent (due at arrival): never
            else:
                m.Add(v.end[j] <= d.deadline[j]).OnlyEnforceIf(v.on_time[j])
                for x, ok in zip(v.mode[j], d.can_meet[j], strict=True):
                    if not ok:  # late in this mode even when started on arrival
                        m.AddImplication(v.on_time[j], x.Not())

    # ------------------------------------------------------------------ objective
    def objective(self) -> None:
        d, m, v = self.data, self.model, self.vars
        if d.objective == "makespan":
            m.Minimize(v.cmax)
        elif d.objective == "weighted_jct":
            m.Minimize(sum(w * e for w, e in zip(d.weights, v.end, strict=True)))
        elif d.objective == "effectiveness":
            m.Maximize(sum(self.effectiveness_terms()))
        else:
            m.Maximize((d.horizon + 1) * sum(v.on_time) - v.cmax)

    def effectiveness_terms(self) -> list[cp_model.IntVar]:
        """q_j = ⌊K_j / T_j⌋ with T_j = end_j − r_j, the job's time in the system."""
        d, m, v = self.data, self.model, self.vars
        terms = []
        for j in range(d.num_jobs):
            lo, hi = min(d.durations[j]), d.horizon - d.release[j]
            t = m.NewIntVar(lo, hi, f"t{j}")
            m.Add(t == v.end[j] - d.release[j])
            q = m.NewIntVar(d.gains[j] // hi, d.gains[j] // lo, f"q{j}")
            m.AddDivisionEquality(q, d.gains[j], t)
            terms.append(q)
        return terms
