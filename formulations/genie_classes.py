"""GENIE exact model over server *classes* (``form="classes"``, the default; the per-server
model of :mod:`dlsched.formulations.genie` is ``form="servers"``).

Servers with the same number of idle GPUs f are interchangeable (the per-server model's
symmetry rows rest on the same fact), so this form counts them instead of naming them.
A *fragment* of size s is one server's part of a shape ⟨a, s⟩; a *pattern* of class f is
a non-empty multiset of fragment sizes (sizes of the candidate shapes) summing to at most
f; n_s(p) is how many fragments of size s it holds.

  y[j,k]   binary            task j starts now on shape k = ⟨a_k, s_k⟩ (as before)
  m[f,p]   integer 0..N_f    servers of class f (N_f of them) whose fragments form p

  1. one shape   Σ_k y[j,k] <= 1
  2. class size  Σ_p m[f,p] <= N_f
  3. per size s, with v_j = Σ_{k: s_k = s} a_k y[j,k] (servers task j needs at size s)
     and R_t = Σ_{f,p} min(n_s(p), t) m[f,p]:
       total   Σ_j v_j <= R_b           (b = the largest n_s(p) of any pattern)
       top-t   the t largest v_j sum to at most R_t, for t = 1 .. b − 1, written
               t λ + Σ_j μ_j <= R_t, μ_j >= v_j − λ, λ, μ_j >= 0 integers
  Objective: max Σ (W · ontime[j,k] + CER[j,k]) y[j,k] (minimized as −F).

**Why it is the same problem.** The fragments of size s must go to servers so that a
task's a fragments sit on a distinct servers and server n holds at most b_n = n_s(p_n) of
them: a flow from tasks (supply v_j) through unit task–server arcs to servers (capacity
b_n). Its minimum cut, for the set T of tasks left uncut at the source, is
Σ_{j∉T} v_j + Σ_n min(b_n, |T|), so every fragment finds a place iff
Σ_{j∈T} v_j <= Σ_n min(b_n, |T|) for every T — for |T| = t the worst T is the t largest
v_j, and for t >= b the right side is Σ_n b_n, the total row. Sizes do not interact: a
task's fragments all have one size and a pattern fixes each size's slots. So a solution
of the per-server model (each server's fragments form a pattern of its class; its
fragments of each size are such a flow) satisfies 1-3 with the same objective, and
conversely from y and m, giving the class's servers the counted patterns in any order,
a flow exists and places every task on distinct servers within each server's idle GPUs
(Σ_s s n_s(p) <= f). The top-t rows are the LP dual of "sum of the t largest"
(min over λ of t λ + Σ_j max(0, v_j − λ)); λ = the t-th largest v_j, an integer, so
integer λ and μ lose nothing.

**Decoding.** Per size, tasks in queue order each take the a servers with the most free
slots of that size left (ties: lower index). Exchange argument: if some placement exists,
one exists where the current task uses the a servers with the most slots — swap a server
u it uses for a server v it skips with at least as many slots: if v has room, move;
else v holds more other tasks than u, so one of them is on v and not on u and can swap
with it. So the greedy never fails where the rows hold (a failure raises RuntimeError).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from dlsched.decision import Decision
from dlsched.errors import InputError
from dlsched.result import MethodOutput, Status

from .backend import Deadline, LinearModel, TimeUp, solver_params
from .backends import new_model

MAX_PATTERNS = 20_000


@dataclass(frozen=True)
class ServerClasses:
    """Servers by idle GPUs and each class's patterns (size -> count tuples)."""

    sizes: tuple[int, ...]  # fragment sizes of the candidate shapes, ascending
    members: dict[int, list[int]]  # idle count f -> servers, ascending
    patterns: dict[int, list[tuple[int, ...]]]  # f -> patterns, counts per size in order


def _patterns(sizes: tuple[int, ...], room: int) -> list[tuple[int, ...]]:
    """Every non-empty multiset of ``sizes`` with total at most ``room`` (counts)."""
    out: list[tuple[int, ...]] = []

    def grow(i: int, counts: list[int], left: int) -> None:
        if i == len(sizes):
            if any(counts):
                out.append(tuple(counts))
            return
        for c in range(left // sizes[i] + 1):
            counts.append(c)
            grow(i + 1, counts, left - c * sizes[i])
            counts.pop()

    grow(0, [], room)
    return out


def server_classes(data, max_patterns: int = MAX_PATTERNS) -> ServerClasses:
    """The classes of ``data`` (a :class:`GenieData`) and their patterns."""
    sizes = tuple(sorted({opt.shape.gpus_per_node for opt in data.options.values()}))
    members: dict[int, list[int]] = {}
    for n, idle in enumerate(data.free):
        if idle and sizes and len(idle) >= sizes[0]:
            members.setdefault(len(idle), []).append(n)
    patterns = {f: _patterns(sizes, f) for f in members}
    total = sum(len(p) for p in patterns.values())
    if total > max_patterns:
        raise InputError(f"the class model needs {total} pattern columns (> {max_patterns})",
                         field="options.form", fix="use form='servers' (the default)")
    return ServerClasses(sizes, members, patterns)


@dataclass
class ClassModel:
    """The class model on one backend, with its variables."""

    model: LinearModel
    classes: ServerClasses
    y: dict[tuple[int, int], Any]
    m: dict[tuple[int, int], Any]  # (idle count f, pattern index) -> count


def build_class_model(data, classes: ServerClasses, backend: str, value,
                      deadline: Deadline | None = None) -> ClassModel:
    """The model of the module docstring on ``backend``; ``value(key)`` is W·ontime + CER."""
    deadline = deadline or Deadline(None)
    md = new_model(backend, "genie_classes", deadline)
    y = {key: md.binary(f"y_{key[0]}_{key[1]}") for key in data.options}
    per_job: dict[int, list] = {}
    for (j, _k), var in y.items():
        per_job.setdefault(j, []).append(var)
    for j, vars_ in per_job.items():  # 1. one shape
        if len(vars_) > 1:
            md.at_most_one(vars_, f"one_{j}")
    m: dict[tuple[int, int], Any] = {}
    for f, pats in classes.patterns.items():  # 2. class size
        size = len(classes.members[f])
        for p in range(len(pats)):
            m[f, p] = md.integer(f"m_{f}_{p}", 0, size)
        md.add([(1, m[f, p]) for p in range(len(pats))], "<=", size, f"class_{f}")
    deadline.check("building the GENIE class model")
    for i, s in enumerate(classes.sizes):  # 3. per fragment size
        need: dict[int, list] = {}
        for (j, k), var in y.items():
            shape = data.options[j, k].shape
            if shape.gpus_per_node == s:
                need.setdefault(j, []).append((shape.nodes, var))
        if not need:
            continue
        slots = [(f, p, pat[i]) for f, pats in classes.patterns.items()
                 for p, pat in enumerate(pats) if pat[i]]
        b = max((c for _, _, c in slots), default=0)

        def room(t: int, slots=slots) -> list:
            return [(-min(c, t), m[f, p]) for f, p, c in slots]

        md.add([term for terms in need.values() for term in terms] + room(b), "<=", 0,
               f"total_{s}")
        most = max(sum(a for a, _ in terms) for terms in need.values())
        for t in range(1, b):
            if t == 1:  # λ = the largest v_j: one row per task
                for j, terms in need.items():
                    md.add(terms + room(1), "<=", 0, f"top1_{s}_{j}")
                continue
            lam = md.integer(f"lam_{s}_{t}", 0, most)
            row = [(t, lam)]
            for j, terms in need.items():
                mu = md.integer(f"mu_{s}_{t}_{j}", 0, most)
                md.add([(1, mu), (1, lam)] + [(-a, v) for a, v in terms], ">=", 0,
                       f"mu_{s}_{t}_{j}")
                row.append((1, mu))
            md.add(row + room(t), "<=", 0, f"top{t}_{s}")
        deadline.check("building the GENIE class model")
    md.minimize([(-value(key), var) for key, var in y.items()],
                rounding_slack=0.5 * len(per_job))
    return ClassModel(md, classes, y, m)


def place_fragments(needs: list[int], slots: list[int]) -> list[list[int]]:
    """Per task (in the given order), ``needs[i]`` distinct servers, server n used at most
    ``slots[n]`` times: each task takes the servers with the most slots left (ties: lower
    index). Never fails where some placement exists (module docstring, "Decoding");
    RuntimeError where none does."""
    left = list(slots)
    out = []
    for i, a in enumerate(needs):
        order = sorted(range(len(left)), key=lambda n: (-left[n], n))[:a]
        if len(order) < a or any(left[n] <= 0 for n in order):
            raise RuntimeError(f"no {a} distinct servers with room for task {i}")
        for n in order:
            left[n] -= 1
        out.append(sorted(order))
    return out


def assign_servers(data, classes: ServerClasses, shapes: dict[int, int],
                   counts: dict[tuple[int, int], int]) -> dict[int, tuple[int, list[int]]]:
    """Task -> (option index, servers) from the chosen shapes (task -> option index) and
    the pattern counts: the class's servers take the counted patterns in turn, then
    :func:`place_fragments` per fragment size, tasks in queue order."""
    slots: dict[int, list[int]] = {s: [0] * len(data.free) for s in classes.sizes}
    for f, pats in classes.patterns.items():
        servers = iter(classes.members[f])
        for p, pat in enumerate(pats):
            for _ in range(counts.get((f, p), 0)):
                n = next(servers)
                for i, s in enumerate(classes.sizes):
                    slots[s][n] = pat[i]
    chosen: dict[int, tuple[int, list[int]]] = {}
    for s in classes.sizes:
        tasks = [j for j in sorted(shapes) if data.options[j, shapes[j]].shape.gpus_per_node == s]
        needs = [data.options[j, shapes[j]].shape.nodes for j in tasks]
        for j, nodes in zip(tasks, place_fragments(needs, slots[s]), strict=True):
            chosen[j] = (shapes[j], nodes)
    return chosen


def class_hint(data, cm: ClassModel, chosen: dict[int, tuple[int, list[int]]]
               ) -> dict[Any, float]:
    """Hint values from task -> (option index, servers): the shapes and each server's
    pattern (a server whose fragments are no pattern of its class leaves it partial)."""
    sizes = cm.classes.sizes
    per_server: dict[int, list[int]] = {}
    for j, (k, nodes) in chosen.items():
        s = data.options[j, k].shape.gpus_per_node
        for n in nodes:
            per_server.setdefault(n, [0] * len(sizes))[sizes.index(s)] += 1
    values: dict[Any, float] = {var: 0.0 for var in (*cm.y.values(), *cm.m.values())}
    for j, (k, _nodes) in chosen.items():
        values[cm.y[j, k]] = 1.0
    for n, counts in per_server.items():
        f = len(data.free[n])
        pats = cm.classes.patterns.get(f, [])
        if tuple(counts) in pats:
            values[cm.m[f, pats.index(tuple(counts))]] += 1.0
    return values


def run_classes(data, backend: str, deadline: Deadline, seed: int, num_workers: int,
                solver_options: dict | None, hint, value, decide) -> MethodOutput:
    """Build, warm-start, solve and decode (``form="classes"``). ``hint``: task ->
    (option index, servers) or None; ``value``: a candidate's W·ontime + CER; ``decide``:
    task -> (option, servers) to a Decision."""
    t0 = time.perf_counter()
    extra: dict[str, Any] = {"candidates": len(data.options), "form": "classes"}
    try:
        classes = server_classes(data)
        cm = build_class_model(data, classes, backend, value, deadline)
    except TimeUp as exc:
        return MethodOutput(None, Status.NO_SOLUTION, message=str(exc), extra=extra)
    extra["classes"] = len(classes.members)
    extra["patterns"] = len(cm.m)
    if hint is not None:
        cm.model.hint(class_hint(data, cm, hint))
    build = time.perf_counter() - t0
    run = cm.model.solve(solver_params(deadline, seed, num_workers, solver_options))
    decision: Decision | None = None
    if run.status.has_solution:
        shapes = {j: k for (j, k), var in cm.y.items() if cm.model.is_one(var)}
        counts = {key: int(round(cm.model.value(var))) for key, var in cm.m.items()}
        decision = decide(assign_servers(data, classes, shapes, counts))
    bound = None if run.bound is None else -run.bound  # an upper bound on F
    extra["solve_time"] = run.solve_time
    return MethodOutput(decision, run.status, bound, cm.model.size(), build, run.log,
                        run.message, extra=extra)


__all__ = ["ClassModel", "ServerClasses", "assign_servers", "build_class_model",
           "class_hint", "place_fragments", "run_classes", "server_classes"]
