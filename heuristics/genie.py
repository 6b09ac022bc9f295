"""GENIE heuristics: SWAF (Alg. 1, Eqs. 12-13) and the baselines of Sec. 7.1.

Every method works on one snapshot and starts tasks on idle GPUs only (exclusive GPUs).
A shape ⟨a, g⟩ goes to the a servers with the fewest idle GPUs that still hold g
(best fit, ties by server order), lowest GPU ids first: the shape fixes the locality
(Comm of Eq. 8 depends on it alone), and best fit keeps whole servers free for packed
shapes later. Shapes are the allowed ones of ``dlsched.problems.genie`` (local batch >= 1).
Ties in PR or CER go to fewer GPUs, then fewer servers; ties in an order to the earlier
arrival, then the queue position.

* ``swaf`` (Alg. 1): per task, s* = the highest-CER shape among those meeting Eq. 12, else
  the highest-CER shape, over every allowed shape of the platform (line 3 of Alg. 1 does
  not look at the load); waiting allowance w = deadline - (time + Lat(s*)) (Eq. 13);
  tasks in increasing w; launch in that order while s* fits the idle GPUs, stop at the
  first that does not (strict order, Sec. 5.4). Options: ``backfill=True`` skips a task
  that does not fit and goes on; ``fit="free"`` keeps the order but, at launch, picks the
  shape by the same rule among the shapes that fit the idle GPUs now; ``late_last=True``
  (beyond the paper) puts the tasks whose s* misses its ECT (w < 0 or urgent) after the
  others: the paper's order runs the latest tasks first, which at a snapshot can spend
  the idle GPUs on tasks that can no longer meet their ECT.
* ``fifo``: arrival order, strict. ``minmin``: earliest deadline (ECT) first.
  ``wfair``: increasing 0.5 · arrival + 0.5 · deadline (our weights). ``capacity``: each
  model type of ``params.coefficients`` owns an equal share of the GPUs (largest
  remainder, ties by model name); running tasks count against their type (``extra.model``);
  per type, arrival order, a task starts only within its type's remaining share.
  Strict order: a task that cannot start blocks those after it (for ``capacity``, those
  of its type). These four are model-blind (the paper: they "treat DL tasks as black
  boxes"); our reading of "allocates the available resources": a task gets, on the
  server with the most idle GPUs, all of them (at most its batch size, and for
  ``capacity`` at most the share left), packed on one server; option
  ``request=k`` asks for exactly k GPUs on one server instead.
* ``tetris-perf`` / ``tetris-cer``: Tetris packing with GENIE's model (QoS-blind): each
  remaining task's best shape among those that fit the idle GPUs now, by PR (Eq. 5) or
  by CER (Eq. 11); with GPUs as the only resource, Tetris' alignment score (demand ·
  free) is largest for the task whose best shape has the most GPUs: it goes first, the
  idle GPUs are updated, and the loop repeats until nothing fits.
"""

from __future__ import annotations

from heapq import heapify, heappop, heappush
from typing import Any

from dlsched.decision import Decision, Placement
from dlsched.errors import InputError
from dlsched.instance import Instance
from dlsched.method_support import decision_from_indices, heuristic_method
from dlsched.problems.genie import (
    ECT_TOL,
    GenieTable,
    ShapeOption,
    genie_table,
    job_rates,
    parse_genie_params,
    platform_of,
)
from dlsched.problems.genie.model import Shape
from dlsched.registry import BOOL, MethodSpec, OptionRule, register_method
from dlsched.state import ViewPolicy, register_view_policy

from .genie_idle import IdleGpus, MostIdle, arrival_key, arrival_order, best
from .genie_live import held_by_model, idle_gpus_of, live, queues_by_model, some_gpu_idle
from .genie_tetris import live_tetris, tetris, tetris_cer, tetris_perf

__all__ = ["METHODS", "IdleGpus", "best", "capacity", "capacity_shares", "fifo", "minmin",
           "swaf", "swaf_choice", "swaf_order", "swaf_shapes", "tetris", "tetris_cer",
           "tetris_perf", "wfair"]

WFAIR_ARRIVAL_WEIGHT = 0.5


def swaf_choice(options: list[ShapeOption] | tuple[ShapeOption, ...]) -> ShapeOption | None:
    """Lines 5-13 of Alg. 1: best CER among shapes meeting Eq. 12, else best CER overall."""
    meeting = [o for o in options if o.on_time]
    return best(meeting or options, lambda o: o.cer)


def swaf_order(instance: Instance, table: GenieTable, *, late_last: bool = False
               ) -> list[tuple[int, ShapeOption, float]]:
    """(task, s*, waiting allowance w) in SWAF order (Eq. 13, smallest w first); with
    ``late_last``, tasks whose s* misses the ECT come after all the others."""
    rows = []
    for j, job in enumerate(instance.jobs):
        chosen = swaf_choice(table.options[j])
        w = job.deadline - (instance.time + chosen.latency)
        rows.append((j, chosen, w))
    rows.sort(key=lambda r: (late_last and not r[1].on_time, r[2], *arrival_key(instance, r[0])))
    return rows


_BY_CER: dict[int, tuple[tuple, list[tuple[float, Shape, float]] | None]] = {}


def _by_cer(rows: tuple[tuple[Shape, float, float], ...]
            ) -> list[tuple[float, Shape, float]] | None:
    """A class's ``job_rates`` rows as (CER, shape, PR) by decreasing CER, ties in row order
    (a stable sort): the first of them that qualifies is the first of the largest CER among
    those that qualify. None when a CER is NaN (no total order). Kept per rows object."""
    hit = _BY_CER.get(id(rows))
    if hit is None or hit[0] is not rows:
        cers = [r[2] for r in rows]
        ranked = None
        if not any(c != c for c in cers):
            order = sorted(range(len(rows)), key=cers.__getitem__, reverse=True)
            ranked = [(rows[i][2], rows[i][0], rows[i][1]) for i in order]
        if len(_BY_CER) >= 4096:
            _BY_CER.clear()
        hit = _BY_CER[id(rows)] = (rows, ranked)
    return hit[1]


def swaf_shapes(instance: Instance, *, late_last: bool = False) -> list[tuple[int, Shape]]:
    """(task, shape of s*) in :func:`swaf_order`'s order, from the per-class PR and CER
    (``job_rates``) without building the option table: the same shapes, latencies (Eq. 4
    as ``latency`` computes it), ECT verdicts and ties, so the same order."""
    params = parse_genie_params(instance.params)
    platform = platform_of(instance, params.theta)
    coefs = params.coefficients
    t = instance.time
    rows = []
    for j, job in enumerate(instance.jobs):
        coef = coefs[job.model]
        work, nu = float(job.batch_size) * float(job.iterations), coef.nu
        check = job.qos != "urgent"  # Eq. 12: an urgent task never meets its ECT
        limit = job.deadline + ECT_TOL
        top = top_on = None  # (CER, shape, latency): the first of the largest CER
        rates = job_rates(coef, job, platform)
        ranked = _by_cer(rates)
        if ranked is not None:
            c, shape, rate = ranked[0]
            top = (c, shape, work / rate + nu)
            for c, shape, rate in ranked if check else ():
                lat = work / rate + nu
                if t + lat <= limit:
                    top_on = (c, shape, lat)
                    break
        else:
            for shape, rate, c in rates:
                lat = work / rate + nu
                if top is None or c > top[0]:
                    top = (c, shape, lat)
                if check and t + lat <= limit and (top_on is None or c > top_on[0]):
                    top_on = (c, shape, lat)
        chosen = top_on or top
        rows.append((late_last and top_on is None, job.deadline - (t + chosen[2]),
                     job.submit_time, j, chosen[1]))
    rows.sort(key=lambda r: r[:4])
    return [(r[3], r[4]) for r in rows]


def swaf(instance: Instance, *, backfill: bool = False, fit: str = "platform",
         late_last: bool = False) -> Decision:
    """SWAF for one snapshot (module docstring)."""
    if fit not in ("platform", "free"):
        raise InputError(f"fit = {fit!r}", field="options.fit", fix="use platform or free")
    idle = idle_gpus_of(instance)
    placed = []
    if fit == "platform":
        for j, shape in swaf_shapes(instance, late_last=late_last):
            if not idle.fits(shape):
                if backfill:
                    continue
                break
            placed.append((j, idle.take(shape)))
        return decision_from_indices(instance, placed)
    table = genie_table(instance)
    for j, _chosen, _w in swaf_order(instance, table, late_last=late_last):
        chosen = swaf_choice([o for o in table.options[j] if idle.fits(o.shape)])
        if chosen is None or not idle.fits(chosen.shape):
            if backfill:
                continue
            break
        placed.append((j, idle.take(chosen.shape)))
    return decision_from_indices(instance, placed)


# --------------------------------------------------------------------------- model-blind
def _check_request(request: int | None) -> None:
    if request is not None and (isinstance(request, bool) or not isinstance(request, int)
                                or request < 1):
        raise InputError(f"request = {request!r}", field="options.request",
                         fix="an integer number of GPUs >= 1, or leave it out")


def _blind(instance: Instance, order: list[int], request: int | None) -> Decision:
    """Start tasks in ``order`` with the model-blind request, in strict order: a task that
    cannot start blocks the tasks after it."""
    _check_request(request)
    idle = MostIdle(instance)
    placed = []
    for j in order:
        most = idle.most()
        want = min(instance.jobs[j].batch_size, most if request is None else request)
        if want < 1 or want > most:
            break
        placed.append((j, idle.take_on_most_idle(want)))
    return decision_from_indices(instance, placed)


def fifo(instance: Instance, *, request: int | None = None) -> Decision:
    """FIFO: arrival order, model-blind request (module docstring)."""
    return _blind(instance, arrival_order(instance), request)


def minmin(instance: Instance, *, request: int | None = None) -> Decision:
    """Min-Min: earliest deadline first, model-blind request."""
    jobs = instance.jobs
    order = [j for _d, _s, j in sorted(
        zip([job.deadline for job in jobs], [job.submit_time for job in jobs],
            range(len(jobs)), strict=True))]  # (deadline, arrival, index)
    return _blind(instance, order, request)


def wfair(instance: Instance, *, request: int | None = None,
          arrival_weight: float = WFAIR_ARRIVAL_WEIGHT) -> Decision:
    """Weighted Fair: increasing weighted mean of arrival and deadline, model-blind request."""
    if not 0.0 <= arrival_weight <= 1.0:
        raise InputError(f"arrival_weight = {arrival_weight!r}", field="options.arrival_weight",
                         fix="a number in [0, 1]")

    a, b = arrival_weight, 1 - arrival_weight
    jobs = instance.jobs
    order = [j for _m, _s, j in sorted(
        (a * job.submit_time + b * job.deadline, job.submit_time, j)
        for j, job in enumerate(jobs))]  # (mix, arrival, index)
    return _blind(instance, order, request)


def capacity_shares(instance: Instance) -> dict[str, int]:
    """GPUs per model type: equal shares of the cluster, largest remainder, ties by name."""
    models = sorted(parse_genie_params(instance.params).coefficients)
    total = instance.cluster.num_gpus
    exact = total / len(models)
    shares = {m: int(exact) for m in models}
    rest = total - sum(shares.values())
    for m in models[:rest]:  # equal remainders: the first names get one more
        shares[m] += 1
    return shares


def _shares_left(instance: Instance, need: int, shares: dict[str, int]) -> dict[str, int]:
    """The GPUs of each type's share that its running tasks leave (an input error for a
    type whose share is below ``need``, a task's least request)."""
    for job in (instance.jobs if min(shares.values()) < need else ()):
        if shares[job.model] < need:
            # its type's share can never hold it: the paper's Capacity Scheduler would
            # leave it waiting for ever ("each model type can only access its own
            # allocated resources"), so say so instead of returning an empty decision
            raise InputError(
                f"capacity gives model {job.model!r} (task {job.id!r}) {shares[job.model]} "
                f"of the cluster's {instance.cluster.num_gpus} GPUs ({len(shares)} model "
                f"types share them equally); its tasks need {need}: they could never start",
                field="cluster",
                fix=f"use at least {need * len(shares)} GPUs, fewer model types in "
                    "params.coefficients, or another method")
    left = dict(shares)
    for model, gpus in held_by_model(instance).items():
        if model in left:  # a running task of a type outside the shares holds none of them
            left[model] -= gpus
    return left


def capacity(instance: Instance, *, request: int | None = None) -> Decision:
    """Capacity Scheduler: per model type, arrival order within the type's GPU share.

    The tasks are visited in arrival order, as :func:`_blind` visits them, but through a
    merge of the per-type queues (:func:`queues_by_model`) that drops a type at its first
    task that cannot start: a call visits the tasks it starts and one more per type, not
    the whole queue (a type whose share its running tasks hold lets its queue grow).
    """
    return _capacity(instance, request, capacity_shares(instance))


def _capacity_of_run(instance: Any, *, policy_state: dict[str, int] | None = None,
                     request: int | None = None) -> tuple[Decision, dict[str, int]]:
    """:func:`capacity` as a stateful fast form: the shares, fixed for a run (its params
    and cluster), kept across its calls (parsing the params again is a fifth of a call)."""
    shares = capacity_shares(instance) if policy_state is None else policy_state
    return _capacity(instance, request, shares), shares


def _capacity(instance: Any, request: int | None, shares: dict[str, int]) -> Decision:
    _check_request(request)
    need = 1 if request is None else request
    left = _shares_left(instance, need, shares)
    jobs, queues = queues_by_model(instance)
    # a type with less than a task's need left blocks at its first task: leave it out
    heap = [(keys[0], model, 0) for model, (keys, _order) in queues.items()
            if keys and left[model] >= need]
    if not heap:
        return Decision.of(())  # every type waits for its running tasks (or has no task)
    heapify(heap)  # keys are unique (their last entry is the queue position)
    idle = MostIdle(instance)
    placed = []
    while heap:
        most = idle.most()
        if most == 0:
            break  # every later task would find no room
        _key, model, p = heappop(heap)
        keys, order = queues[model]
        job = jobs[order[p]]
        room = min(most, left[model])
        want = min(job.batch_size, room if request is None else request)
        if want < 1 or want > room:
            continue  # strict order per type: its later tasks wait behind this one
        placed.append((job.id, idle.take_on_most_idle(want)))
        left[model] -= want
        if p + 1 < len(order):
            heappush(heap, (keys[p + 1], model, p + 1))
    ids = instance.cluster.gpu_ids
    return Decision.of(Placement(job_id, tuple(ids[g] for g in sorted(gpus)))
                       for job_id, gpus in placed)


METHODS = (
    ("swaf", swaf, "heuristic", ("backfill", "fit", "late_last"),
     "Alg. 1: best-CER shape meeting the ECT, shortest waiting allowance first"),
    ("fifo", fifo, "baseline", ("request",), "arrival order, model-blind one-server request"),
    ("capacity", capacity, "baseline", ("request",), "equal GPU share per model type"),
    ("minmin", minmin, "baseline", ("request",), "earliest ECT first, model-blind"),
    ("wfair", wfair, "baseline", ("request", "arrival_weight"),
     "weighted mean of arrival and ECT first, model-blind"),
    ("tetris-perf", tetris_perf, "baseline", (), "Tetris packing, highest-PR fitting shape"),
    ("tetris-cer", tetris_cer, "baseline", (), "Tetris packing, highest-CER fitting shape"),
)

OPTION_RULES: dict[str, OptionRule] = {
    "backfill": BOOL, "late_last": BOOL,
    "request": ("int", 1, None), "arrival_weight": ("float", 0, 1)}
"""Values the number and on/off options may take (``request`` null: the default)."""

for _name, _fn, _kind, _allowed, _summary in METHODS:
    register_method(MethodSpec("genie", _name, _kind,
                               heuristic_method(_fn, _allowed, OPTION_RULES, ("request",)),
                               summary=_summary))
    # the simulator's fast form (heuristics/genie_live.py; Tetris: heuristics/genie_tetris.py)
    if _name.startswith("tetris-"):
        register_view_policy(ViewPolicy("genie", _name, live_tetris(_name, _name[7:].replace(
            "perf", "pr")), some_gpu_idle, frozenset(_allowed), stateful=True))
    elif _name == "capacity":
        register_view_policy(ViewPolicy("genie", _name, live(_name, _capacity_of_run),
                                        some_gpu_idle, frozenset(_allowed), stateful=True))
    else:
        register_view_policy(ViewPolicy("genie", _name, live(_name, _fn), some_gpu_idle,
                                        frozenset(_allowed)))
