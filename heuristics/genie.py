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

from collections import Counter
from collections.abc import Callable

from dlsched.decision import Decision
from dlsched.errors import InputError
from dlsched.instance import Instance
from dlsched.method_support import decision_from_indices, free_gpus_by_server, heuristic_method
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

from .genie_live import live, some_gpu_idle

WFAIR_ARRIVAL_WEIGHT = 0.5


class IdleGpus:
    """Idle GPU indices per server, consumed as tasks start."""

    def __init__(self, instance: Instance) -> None:
        self.free = free_gpus_by_server(instance)
        # servers by idle count, so fits() costs O(GPUs per server), not O(servers)
        self._servers_with: dict[int, int] = Counter(map(len, self.free))
        self._buckets: dict[int, set[int]] | None = None  # built on the first take()
        self._at_least: list[int] | None = None

    @property
    def _bucket(self) -> dict[int, set[int]]:
        """Idle count -> servers with that many idle GPUs."""
        if self._buckets is None:
            self._buckets = {}
            for n, f in enumerate(self.free):
                self._buckets.setdefault(len(f), set()).add(n)
        return self._buckets

    def _taking(self, n: int, k: int) -> None:
        c = len(self.free[n])
        self._servers_with[c] -= 1
        self._servers_with[c - k] = self._servers_with.get(c - k, 0) + 1
        if self._buckets is not None:
            self._buckets[c].discard(n)
            self._buckets.setdefault(c - k, set()).add(n)
        self._at_least = None

    def _servers_at_least(self) -> list[int]:
        """[g] -> number of servers with at least g idle GPUs (rebuilt after a take)."""
        if self._at_least is None:
            top = max(self._servers_with, default=0)
            ge = [0] * (top + 2)
            for c, m in self._servers_with.items():
                ge[c] += m
            for c in range(top - 1, -1, -1):
                ge[c] += ge[c + 1]
            self._at_least = ge
        return self._at_least

    def total(self) -> int:
        return sum(c * m for c, m in self._servers_with.items())

    def most(self) -> int:
        return max((c for c, m in self._servers_with.items() if m), default=0)

    def fits(self, shape: Shape) -> bool:
        ge = self._servers_at_least()
        g = shape.gpus_per_node
        return (ge[g] if g < len(ge) else 0) >= shape.nodes

    def take(self, shape: Shape) -> list[int]:
        """Best-fit servers for ``shape`` (the caller checked ``fits``); their GPU indices."""
        g = shape.gpus_per_node
        eligible: list[int] = []  # servers by (idle count, index), counts >= g
        for c in sorted(c for c, servers in self._bucket.items() if c >= g and servers):
            eligible.extend(sorted(self._bucket[c]))
            if len(eligible) >= shape.nodes:
                break
        out = []
        for n in eligible[: shape.nodes]:
            out.extend(self.free[n][:g])
            self._taking(n, len(self.free[n][:g]))
            del self.free[n][:g]
        return out

    def take_on_most_idle(self, gpus: int) -> list[int]:
        """``gpus`` GPUs on the server with the most idle GPUs (ties: first server)."""
        counts = list(map(len, self.free))
        n = counts.index(max(counts))  # the first of the largest
        out = self.free[n][:gpus]
        self._taking(n, len(out))
        del self.free[n][:gpus]
        return out


def best(options: list[ShapeOption] | tuple[ShapeOption, ...],
         key: Callable[[ShapeOption], float]) -> ShapeOption | None:
    """The option with the largest key; ties to the earliest (fewer GPUs, then servers)."""
    top = None
    for o in options:
        if top is None or key(o) > key(top):
            top = o
    return top


def swaf_choice(options: list[ShapeOption] | tuple[ShapeOption, ...]) -> ShapeOption | None:
    """Lines 5-13 of Alg. 1: best CER among shapes meeting Eq. 12, else best CER overall."""
    meeting = [o for o in options if o.on_time]
    return best(meeting or options, lambda o: o.cer)


def _arrival(instance: Instance, j: int) -> tuple[float, int]:
    return instance.jobs[j].submit_time, j


def _arrival_order(instance: Instance) -> list[int]:
    """Task indices by (arrival, index): a stable sort on the arrival alone."""
    submit = [job.submit_time for job in instance.jobs]
    return sorted(range(len(submit)), key=submit.__getitem__)


def swaf_order(instance: Instance, table: GenieTable, *, late_last: bool = False
               ) -> list[tuple[int, ShapeOption, float]]:
    """(task, s*, waiting allowance w) in SWAF order (Eq. 13, smallest w first); with
    ``late_last``, tasks whose s* misses the ECT come after all the others."""
    rows = []
    for j, job in enumerate(instance.jobs):
        chosen = swaf_choice(table.options[j])
        w = job.deadline - (instance.time + chosen.latency)
        rows.append((j, chosen, w))
    rows.sort(key=lambda r: (late_last and not r[1].on_time, r[2], *_arrival(instance, r[0])))
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
    idle = IdleGpus(instance)
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


def _blind(instance: Instance, order: list[int], request: int | None,
           limit: Callable[[int], int] | None = None,
           used: Callable[[int, int], None] | None = None,
           queue_of: Callable[[int], str] | None = None) -> Decision:
    """Start tasks in ``order`` with the model-blind request, in strict order: a task that
    cannot start blocks the tasks after it (of its own queue when ``queue_of`` is given)."""
    _check_request(request)
    idle = IdleGpus(instance)
    placed = []
    blocked: set[str] = set()
    for j in order:
        queue = queue_of(j) if queue_of else ""
        if queue in blocked:
            continue
        room = idle.most() if limit is None else min(idle.most(), limit(j))
        want = min(instance.jobs[j].batch_size, room if request is None else request)
        if want < 1 or want > room:
            if queue_of is None:
                break
            blocked.add(queue)
            continue
        placed.append((j, idle.take_on_most_idle(want)))
        if used:
            used(j, want)
    return decision_from_indices(instance, placed)


def fifo(instance: Instance, *, request: int | None = None) -> Decision:
    """FIFO: arrival order, model-blind request (module docstring)."""
    return _blind(instance, _arrival_order(instance), request)


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


_SHARES: dict[tuple[int, int], tuple[object, dict[str, int]]] = {}


def _shares(instance: Instance) -> dict[str, int]:
    """:func:`capacity_shares`, kept per (parsed parameters, GPU count); read-only."""
    params = parse_genie_params(instance.params)
    key = (id(params), instance.cluster.num_gpus)
    hit = _SHARES.get(key)
    if hit is None or hit[0] is not params:
        if len(_SHARES) >= 64:
            _SHARES.clear()
        hit = _SHARES[key] = (params, capacity_shares(instance))
    return hit[1]


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


def capacity(instance: Instance, *, request: int | None = None) -> Decision:
    """Capacity Scheduler: per model type, arrival order within the type's GPU share."""
    shares = _shares(instance)
    _check_request(request)
    need = 1 if request is None else request
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
    for r in instance.running:
        model = r.extra.get("model")
        if model in left:
            left[model] -= len(r.gpus)
    order = _arrival_order(instance)
    model_of = [job.model for job in instance.jobs]

    def limit(j: int) -> int:
        return max(0, left[model_of[j]])

    def used(j: int, k: int) -> None:
        left[model_of[j]] -= k

    return _blind(instance, order, request, limit, used, lambda j: model_of[j])


# --------------------------------------------------------------------------- Tetris
def _ranked(rows: tuple[tuple[Shape, float, float], ...], by: str
            ) -> list[tuple[int, int, Shape]] | None:
    """(GPUs per server, servers, shape) of a task's ``job_rates`` rows by decreasing PR
    (``by="pr"``) or CER, ties to the earlier row: the first of these that fits is what
    :func:`best` picks among the fitting options. None when a key is NaN (no total order:
    the caller scans the options with :func:`best`)."""
    k = 1 if by == "pr" else 2
    keys = [r[k] for r in rows]
    if any(x != x for x in keys):
        return None
    # a stable sort with reverse=True keeps equal keys in their original order
    order = sorted(range(len(rows)), key=keys.__getitem__, reverse=True)
    return [(rows[i][0].gpus_per_node, rows[i][0].nodes, rows[i][0]) for i in order]


_RANKED: dict[tuple[int, str], tuple[tuple, list[tuple[int, int, Shape]] | None]] = {}
"""(id of a class's rows, key) -> (those rows, :func:`_ranked`), across calls."""


def tetris(instance: Instance, *, by: str) -> Decision:
    """Tetris packing with the best fitting shape by PR (``by="pr"``) or CER (``"cer"``)."""
    params = parse_genie_params(instance.params)
    platform = platform_of(instance, params.theta)
    coefs = params.coefficients
    idle = IdleGpus(instance)
    key = (lambda o: o.rate) if by == "pr" else (lambda o: o.cer)
    remaining = _arrival_order(instance)
    # Idle GPUs only shrink, so a shape that does not fit never fits again: each task keeps
    # a cursor into its shapes ranked by key and only moves it forward. Tasks of one class
    # (model, kind, batch) share their rows, so their ranking is computed once (_RANKED).
    ranked = {}
    for j in remaining:
        job = instance.jobs[j]
        rows = job_rates(coefs[job.model], job, platform)
        hit = _RANKED.get((id(rows), by))
        if hit is None or hit[0] is not rows:
            if len(_RANKED) >= 4096:
                _RANKED.clear()
            hit = _RANKED[(id(rows), by)] = (rows, _ranked(rows, by))
        ranked[j] = hit[1]
    table: GenieTable | None = None  # only for NaN keys
    cursor = dict.fromkeys(remaining, 0)
    placed = []
    while remaining and idle.total() > 0:
        ge = idle._servers_at_least()
        top = len(ge)
        pick = None
        for j in remaining:  # arrival order: the first of equal scores wins
            rows = ranked[j]
            if rows is None:
                table = table or genie_table(instance)
                o = best([o for o in table.options[j] if idle.fits(o.shape)], key)
                shape = None if o is None else o.shape
            else:
                c, end = cursor[j], len(rows)
                while c < end and not ((ge[rows[c][0]] if rows[c][0] < top else 0)
                                       >= rows[c][1]):
                    c += 1
                cursor[j] = c
                shape = rows[c][2] if c < end else None
            if shape is not None and (pick is None or shape.gpus > pick[1].gpus):
                pick = (j, shape)
        if pick is None:
            break
        remaining.remove(pick[0])
        placed.append((pick[0], idle.take(pick[1])))
    placed.sort()
    return decision_from_indices(instance, placed)


def tetris_perf(instance: Instance) -> Decision:
    return tetris(instance, by="pr")


def tetris_cer(instance: Instance) -> Decision:
    return tetris(instance, by="cer")


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
    # the simulator's fast form (heuristics/genie_live.py)
    register_view_policy(ViewPolicy("genie", _name, live(_name, _fn), some_gpu_idle,
                                    frozenset(_allowed)))
