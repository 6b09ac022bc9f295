"""SCHED²'s deep-Q agent as a simulator policy (``dqn``), acting with numpy only.

The agent picks jobs one at a time with the clock frozen, each placed by the packing
placement of Fig. 2, until it picks φ (wait for the next arrival or completion), picks a
job that does not fit (it waits for that one: the jobs behind it are blocked, as in the
selection rules' loop) or no candidate fits; an idle cluster never waits. Its Q-network scores every
candidate — the queued jobs, or the ``window`` oldest — with the same weights: one small
MLP reads a row of the job's own features and a pooled summary of the cluster and the
queue (:func:`q_rows`), and φ is one more row (the summary, its own flag). The rows do not
depend on how many servers, GPUs per server or queued jobs there are, so one set of
weights acts on any cluster (a size-agnostic reading of the paper's shared per-server
weights, Eqs. 3-5). After every pick the rows are recomputed (fewer idle GPUs, a shorter
queue).

The weights are a safetensors file (``l0.weight`` … ``l2.bias``, the MLP's three layers)
read with ``safetensors.numpy``; acting needs neither torch nor pickle. Training:
``dlsched rl train sched2 --learner dqn`` (:mod:`dlsched.rl.dqn`).
"""

from __future__ import annotations

import json
import math
from functools import cache
from importlib import resources
from typing import NamedTuple

import numpy as np

from dlsched.decision import Decision, Placement
from dlsched.errors import InputError
from dlsched.files import unique_keys
from dlsched.heuristics.blas_threads import local_thread_setter, one_blas_thread
from dlsched.heuristics.sched2 import ServerRoom
from dlsched.heuristics.sched2_live import JobArrays
from dlsched.heuristics.sched2_priority import (
    DURATION_SCALE_S,
    FEATURES,
    WAIT_SCALE_S,
    priority_features,
)
from dlsched.heuristics.sched2_view import _packing_live, some_job_fits
from dlsched.heuristics.weights import read_safetensors
from dlsched.instance import Instance
from dlsched.problems.sched2 import parse_sched2_params

Q_FEATURES = (*FEATURES, "idle_share", "queue_load", "stop")
"""A row of the Q-network: the learned priority's job features, the pooled summary (share
of idle GPUs, log(1 + queued jobs per GPU)) and 1 for the φ row (its job features are 0)."""

LAYERS = 3

SHIPPED = "data/sched2_dqn/sched2_dqn.safetensors"
"""The shipped agent, relative to the ``dlsched.heuristics`` package."""

TIE_TOL = 1e-9
"""Relative tolerance of the agent's greedy pick (:func:`greedy_pick`). Identical rows
(identical jobs) can get Q-values that differ in the last bits, since a BLAS product's
rounding depends on the matrix's height, the row's position and the CPU's kernel; float64
rounding noise of this small MLP is about 1e-15 relative, far below 1e-9, while Q-values
of distinct candidates differ by far more (on the whole ITP replay the rule decides only
near-exact ties: docs/rl.md)."""


def greedy_pick(q: np.ndarray) -> int:
    """The first row (arrival order; φ last) whose Q-value is within :data:`TIE_TOL` of the
    largest: ``q[k] >= qmax - TIE_TOL * max(1, |qmax|)``, so which of two identical jobs
    starts does not depend on the BLAS kernel's last bits."""
    best = int(q.argmax())
    if best:
        qmax = float(q[best])
        low = qmax - TIE_TOL * max(1.0, abs(qmax))
        if q[:best].max() >= low:
            return int(np.argmax(q[:best] >= low))
    return best


def q_rows(num_gpus: np.ndarray, duration: np.ndarray, wait: np.ndarray,
           sensitivity: np.ndarray, idle_per_server: np.ndarray, total_gpus: int,
           queued: int) -> np.ndarray:
    """One row of :data:`Q_FEATURES` per candidate job, then the φ row.

    Parameters are those of :func:`dlsched.heuristics.sched2_priority.priority_features`.

    Returns
    -------
    numpy.ndarray
        Shape ``(jobs + 1, len(Q_FEATURES))``.
    """
    rows = np.zeros((len(num_gpus) + 1, len(Q_FEATURES)))
    if len(num_gpus):
        rows[:-1, : len(FEATURES)] = priority_features(
            num_gpus, duration, wait, sensitivity, idle_per_server, total_gpus, queued)
    rows[:, len(FEATURES)] = float(idle_per_server.sum()) / total_gpus
    rows[:, len(FEATURES) + 1] = np.log1p(queued / total_gpus)
    rows[-1, -1] = 1.0
    return rows


class NumpyJobQ:
    """The Q-network's forward pass in numpy: ReLU MLP, one Q-value per row."""

    def __init__(self, tensors: dict[str, np.ndarray]) -> None:
        self.layers = [(tensors[f"l{k}.weight"].astype(np.float64).T,
                        tensors[f"l{k}.bias"].astype(np.float64)) for k in range(LAYERS)]
        if self.layers[0][0].shape[0] != len(Q_FEATURES):
            raise ValueError(f"the first layer reads {self.layers[0][0].shape[0]} features, "
                             f"not {len(Q_FEATURES)}")

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        if len(rows) > 256:  # a long queue: one BLAS thread (the same Q-values, less CPU)
            with one_blas_thread():
                return self.forward(rows)
        return self.forward(rows)

    def forward(self, rows: np.ndarray) -> np.ndarray:
        """The Q-values of ``rows`` on the calling thread's BLAS threads (``__call__``:
        one thread for long queues)."""
        x = rows
        for k, (w, b) in enumerate(self.layers):
            x = x @ w
            x += b  # in place: the same sums as x @ w + b, without another array
            if k < LAYERS - 1:
                np.maximum(x, 0.0, out=x)
        return x[:, 0]

    _forward = forward


@cache
def load_network(path: str) -> tuple[NumpyJobQ, int | None]:
    """The Q-network and its window J (None: the whole queue) from a weights file."""
    tensors, meta = read_safetensors(path, "dlsched rl train sched2 --learner dqn")
    try:
        if json.loads(meta["features"], object_pairs_hook=unique_keys) != list(Q_FEATURES):
            raise ValueError("its features are not this agent's")
        return NumpyJobQ(tensors), json.loads(meta["window"], object_pairs_hook=unique_keys)
    except (KeyError, ValueError, IndexError) as exc:
        raise InputError(f"not a dlsched per-job Q-network: {type(exc).__name__}: {exc}",
                         field="weights", fix="pass a file written by `dlsched rl train "
                         "sched2 --learner dqn`", source=str(path)) from None


def shipped_weights() -> str:
    """Path of the shipped agent's weights."""
    return str(resources.files("dlsched.heuristics").joinpath(SHIPPED))


def dqn_decision(instance: Instance, network: NumpyJobQ, window: int | None) -> Decision:
    """The agent's picks at one snapshot (module docstring)."""
    cluster = instance.cluster
    params = parse_sched2_params(instance.params)
    jobs = instance.jobs
    queue = sorted(range(len(jobs)), key=lambda j: (jobs[j].submit_time, j))
    gpus = np.array([float(j.num_gpus) for j in jobs])
    duration = np.array([float(j.duration) for j in jobs])
    wait = np.array([instance.time - j.submit_time for j in jobs])
    sensitivity = np.array([params.sensitivity(j.model) for j in jobs])
    room = ServerRoom(instance)
    running = bool(instance.running)
    placements = []
    idle = np.array([len(f) for f in room.free], dtype=np.int64)
    while queue:
        shown = np.array(queue[:window])
        if not (gpus[shown] <= idle.sum()).any():
            break
        q = network(q_rows(gpus[shown], duration[shown], wait[shown], sensitivity[shown],
                           idle, cluster.num_gpus, len(queue)))
        if not running:
            q[-1] = -np.inf
        pick = greedy_pick(q)
        if pick == len(shown):
            break
        j = int(shown[pick])
        placed = room.place(jobs[j])
        if placed is None:  # it waits for this job (or its CPU / RAM shares do not fit)
            break
        room.take(jobs[j], placed)
        idle -= np.bincount(cluster.gpu_node[placed], minlength=len(idle))
        queue.remove(j)
        running = True
        placements.append(Placement(jobs[j].id, tuple(cluster.gpu_ids[g] for g in placed)))
    return Decision(tuple(placements))


# ---------------------------------------------------------------------- simulator fast form
LIVE_COLUMNS = ("one", "log2_gpus", "log_duration", "locality", "gpus_x_duration",
                "log_wait", "wider_than_a_server", "stop", "gpus", "record", "submit")
"""A row of the fast form (:class:`LiveQ`): the columns of a :func:`q_rows` row that do not
depend on the share of idle GPUs or the queue's load and a constant 1 for the bias (the
first :data:`NET`, which the network reads), then the job's GPU count, record index and
submit time (carried so that dropping a picked row drops them too)."""

WAIT, WIDER, STOP, GPUS, RECORD, SUBMIT = (LIVE_COLUMNS.index(c) for c in (
    "log_wait", "wider_than_a_server", "stop", "gpus", "record", "submit"))
NET = STOP + 1

THREADED_ROWS = 200
"""From this many rows up a call holds one BLAS thread (:mod:`.blas_threads`); OpenBLAS
runs smaller products of this network's widths on the calling thread anyway."""

# ---------------------------------------------------------------- calls that would wait
# After a call that ends on φ the engine asks ``dqn_can_start`` at each event. Until a job
# arrives, an event only ends jobs, so a new call would score the same jobs on the same
# features but three: the share of idle GPUs s (larger), the log waiting times w (longer)
# and, when the largest idle server changes, the ``wider`` flags (then it is called).
# ReLU is 1-Lipschitz, so a change dz of a row's first-layer pre-activation changes its
# Q-value by at most g · |dz|, g = |W₂| |w₃| (elementwise absolute values). A job row's
# pre-activation moves with s by (f_idle + log2_gpus · f_gpus×idle) · ds and with w by
# (f_wait + l · f_wait×queue) · dw (the queue load l is unchanged: the same jobs wait).
# g · |f_idle + x · f_gpus×idle| is convex in x, so its largest value over the workload's
# log2 GPU counts is at an end of their range; log1p is concave, so the youngest job's w
# grows the most. φ's value moves by at most g · |f_idle| · ds. When the best job's upper
# bound stays below φ's lower bound by more than greedy_pick's tolerance, the agent picks
# φ: the call would start nothing and change nothing, and the engine skips it. The bound is
# exact arithmetic on the network; WAIT_SLACK covers the float64 rounding of the stored
# Q-values (about 1e-15 relative: docs/rl.md). tests/test_sched2_dqn_live.py runs the
# skipped calls and checks that they start nothing.

WAIT_SLACK = 1e-9
"""Absolute margin added to :data:`TIE_TOL`'s in :meth:`LiveQ.still_waits`."""


class WaitPoint(NamedTuple):
    """A call that ended on φ: the values and state its last pass scored."""

    phi: float  # φ's Q-value
    best_job: float  # the largest Q-value of a job
    time: float
    idle_share: float  # s
    load: float  # l = log(1 + queued jobs per GPU)
    queued: int  # jobs left waiting
    widest: int  # idle GPUs of the largest idle server
    newest_submit: float  # the youngest waiting job's submit time


def _drift_gains(network: NumpyJobQ, log2_gpus: np.ndarray) -> tuple[float, ...]:
    """The Lipschitz gains of :meth:`LiveQ.still_waits` (section above): a job's Q-value
    per unit of idle share (the largest over the workload's GPU counts), φ's, and a job's
    per unit of log waiting time (constant part, part per unit of queue load)."""
    (w0, _), (w1, _), (w2, _) = network.layers
    gain = np.abs(w1) @ np.abs(w2[:, 0])
    feature = {name: w0[k] for k, name in enumerate(Q_FEATURES)}

    def spread(z: np.ndarray) -> float:
        return float(gain @ np.abs(z))

    ends = (float(log2_gpus.min()), float(log2_gpus.max())) if len(log2_gpus) else (0.0,)
    per_idle = max(spread(feature["idle_share"] + x * feature["gpus_x_idle"]) for x in ends)
    return (per_idle, spread(feature["idle_share"]), spread(feature["log_wait"]),
            spread(feature["wait_x_queue"]))


class LiveQ:
    """The Q-network on the live view, its first layer folded, and the queue's rows.

    A row of :func:`q_rows` is linear in the share of idle GPUs ``s`` and the queue's load
    ``l`` (``gpus_x_idle = log2_gpus · s``, ``duration_x_queue = log_duration · l``, …),
    so the first layer's pre-activation is ``row' @ M(s, l)`` with ``row'`` the
    :data:`LIVE_COLUMNS` (the job's own, kept per run; its waiting time, once per call;
    ``wider_than_a_server``, when the largest idle server changes) and
    ``M(s, l) = M₀ + s·M_s + l·M_l`` (a small matrix per pick). The biases of the hidden
    layers ride on a constant unit carried through the network. The Q-values equal the
    network's on :func:`q_rows` up to float64 rounding (``tests/test_sched2_dqn_live.py``:
    within 1e-12 relative), and :func:`greedy_pick` makes the picks independent of it.

    The rows live in one buffer kept across calls (:meth:`rows`): what a call leaves (the
    jobs it did not start, in arrival order) is the next call's start when the queue has
    changed only by those starts and by jobs added at its tail.
    """

    def __init__(self, view, network: NumpyJobQ) -> None:
        self.arrays = a = JobArrays(view)
        (w0, b0), (w1, b1), (w2, b2) = network.layers
        hidden = len(b0)
        log2_gpus = np.log2(a.gpus)
        log_duration = np.log(a.duration / DURATION_SCALE_S)
        self.table = np.zeros((len(a.gpus), len(LIVE_COLUMNS)))
        self.table[:, :5] = np.stack([np.ones(len(a.gpus)), log2_gpus, log_duration,
                                      (a.sensitivity - 1.0) * (a.gpus > 1),
                                      log2_gpus * log_duration], axis=1)
        self.table[:, GPUS] = a.gpus
        self.table[:, RECORD] = np.arange(len(a.gpus))
        self.table[:, SUBMIT] = a.submit  # each call turns it into the waiting time
        self.most_gpus = float(a.gpus.max()) if len(a.gpus) else 0.0  # the largest demand
        self.phi = np.zeros(len(LIVE_COLUMNS))
        self.phi[[0, STOP]] = 1.0
        feature = {name: w0[k] for k, name in enumerate(Q_FEATURES)}
        col = {name: k for k, name in enumerate(LIVE_COLUMNS)}
        fold = np.zeros((3, NET, hidden + 1))  # M₀, M_s, M_l
        fold[0, col["one"], :hidden] = b0
        fold[0, col["one"], hidden] = 1.0  # the unit that carries the next bias
        for name in LIVE_COLUMNS[1:NET]:
            fold[0, col[name], :hidden] = feature[name]
        fold[1, col["one"], :hidden] = feature["idle_share"]
        fold[1, col["log2_gpus"], :hidden] = feature["gpus_x_idle"]
        fold[2, col["one"], :hidden] = feature["queue_load"]
        fold[2, col["log_duration"], :hidden] = feature["duration_x_queue"]
        fold[2, col["log_wait"], :hidden] = feature["wait_x_queue"]
        self.fold = fold.reshape(3, -1)
        self.coef = np.ones(3)  # (1, s, l)
        self.first = np.empty(self.fold.shape[1])  # M(s, l), written by each pass
        self.first_matrix = self.first.reshape(NET, hidden + 1)  # a view
        self.second = np.zeros((hidden + 1, hidden + 1))
        self.second[:hidden, :hidden] = w1
        self.second[hidden, :hidden] = b1
        self.second[hidden, hidden] = 1.0
        self.last = np.append(w2[:, 0], b2[0])
        self.buffer = np.empty((0, len(LIVE_COLUMNS)))  # the rows, then φ (:meth:`room`)
        self.room(63, 0)
        self.kept = -1  # rows the last call left in the buffer (-1: none to reuse)
        self.waited: WaitPoint | None = None  # the last call's, if it ended on φ
        self.drift = _drift_gains(network, log2_gpus)
        self.added = 0  # the queue's count of added jobs at the last call
        self.widest = 0  # the largest idle server the buffer's ``wider`` column is for

    def still_waits(self, view) -> bool:
        """Whether the agent would pick φ at once on ``view`` (the section "calls that
        would wait" above this class): the best job's upper bound is below φ's lower
        bound by more than :func:`greedy_pick`'s tolerance and :data:`WAIT_SLACK`."""
        bounds = self.wait_bounds(view)
        if bounds is None:
            return False
        jobs_high, phi_low = bounds
        return jobs_high < phi_low - TIE_TOL * max(1.0, abs(phi_low)) - WAIT_SLACK

    def wait_bounds(self, view) -> tuple[float, float] | None:
        """(an upper bound on every job's Q-value, a lower bound on φ's) on ``view``, from
        the last call when it ended on φ; None unless only jobs ended since and the largest
        idle server kept its size (or when nothing runs: an idle cluster never waits)."""
        w = self.waited
        if (w is None or view.queue_added() != self.added or view.queue_length() != w.queued
                or view.most_idle() != w.widest):
            return None
        total = view.cluster.num_gpus
        free = view.idle_count
        if free >= total:
            return None
        idle_drift = abs(free / total - w.idle_share)
        wait_drift = (math.log1p((view.time - w.newest_submit) / WAIT_SCALE_S)
                      - math.log1p((w.time - w.newest_submit) / WAIT_SCALE_S))
        per_idle, per_idle_phi, per_wait, per_wait_load = self.drift
        jobs_high = w.best_job + idle_drift * per_idle + wait_drift * (
            per_wait + w.load * per_wait_load)
        return jobs_high, w.phi - idle_drift * per_idle_phi

    def start(self, records: np.ndarray, now: float, widest: int) -> np.ndarray:
        """The rows (:data:`LIVE_COLUMNS`) of ``records`` at time ``now`` with ``widest``
        idle GPUs on the largest idle server, then the φ row (in the buffer: valid until
        the next call)."""
        n = len(records)
        out = self.room(n, 0)[:n + 1]
        np.take(self.table, records, axis=0, out=out[:n], mode="clip")  # valid indices
        np.greater(out[:n, GPUS], widest, out=out[:n, WIDER])
        out[n] = self.phi
        self.widest = widest
        return self._waits(out, n, now)

    def room(self, n: int, keep: int) -> np.ndarray:
        """The row buffer with room for ``n`` rows and φ (its first ``keep`` rows kept),
        and a pass's scratch arrays (:func:`_picks`) as long."""
        if n >= len(self.buffer):
            old, self.buffer = self.buffer, np.empty((2 * n + 2, len(LIVE_COLUMNS)))
            self.buffer[:keep] = old[:keep]
            size = (len(self.buffer), len(self.last))
            self.hidden = (np.empty(size), np.empty(size))
            self.zeros = np.zeros(size)  # ReLU against an array: faster than against 0.0
            self.values = np.empty(len(self.buffer))
        return self.buffer

    def _waits(self, out: np.ndarray, n: int, now: float) -> np.ndarray:
        """The ``log_wait`` column of ``out[:n]`` at ``now`` (q_rows' operations), φ last
        (the first two in a contiguous scratch array: a column of the rows is strided)."""
        wait = self.values[:n]  # free until the first pass writes its Q-values
        np.subtract(now, out[:n, SUBMIT], out=wait)
        np.divide(wait, WAIT_SCALE_S, out=wait)
        np.log1p(wait, out=out[:n, WAIT])
        return out

    def rows(self, view, widest: int) -> tuple[np.ndarray, int]:
        """The queue's rows in arrival order, then φ, and their number.

        The last call's rows are kept when the queue's length is what they predict: that
        call's starts all left (the engine applied its decision) and the jobs added since
        (``view.queue_added()``) are the only other change, so, with the queue still in
        arrival order, they are its tail (``view.queue_last_added``) and only their rows
        are read from the table. Otherwise the rows are built afresh (:meth:`start`).
        """
        n = view.queue_length()
        added = view.queue_added()
        kept, self.kept = self.kept, -1  # until this call's picks are done
        fresh = added - self.added
        self.added = added
        if kept < 0 or n != kept + fresh or not view.queue_in_arrival_order:
            return self.start(view.queue_by_arrival(), view.time, widest), n
        buf = self.room(n, kept)
        if fresh == 1:  # one row: a row copy costs less than a gather
            r = view.queue_last_added(1)[0]
            buf[kept] = self.table[r]
            buf[kept, WIDER] = self.table[r, GPUS] > widest
        elif fresh:
            new = buf[kept:n]
            np.take(self.table, view.queue_last_added(fresh), axis=0, out=new, mode="clip")
            np.greater(new[:, GPUS], widest, out=new[:, WIDER])
        if widest != self.widest:
            np.greater(buf[:n, GPUS], widest, out=buf[:n, WIDER])
            self.widest = widest
        if fresh:
            buf[n] = self.phi  # else φ is where the last call's picks moved it
        return self._waits(buf[:n + 1], n, view.time), n

    def q(self, rows: np.ndarray, idle_share: float, load: float) -> np.ndarray:
        """The Q-values of ``rows`` (:meth:`start`) at idle share ``idle_share`` and queue
        load ``load`` = log(1 + queued jobs per GPU)."""
        coef = self.coef
        coef[1] = idle_share
        coef[2] = load
        np.matmul(coef, self.fold, out=self.first)
        x = rows[:, :NET] @ self.first_matrix
        np.maximum(x, 0.0, out=x)
        x = x @ self.second
        np.maximum(x, 0.0, out=x)
        return x @ self.last


def widest_left(view, taken: dict[int, int], at_most: int | None = None) -> int:
    """The most idle GPUs of one server once ``taken[s]`` GPUs of server ``s`` are given
    (``at_most``: a known upper bound, where the scan starts)."""
    by_idle, idle = view.servers_by_idle(), view.idle_lists()
    best, touched = 0, []
    for s, k in taken.items():
        level = len(idle[s])
        touched.append(level)
        if level - k > best:
            best = level - k
    top = len(by_idle) - 1 if at_most is None else at_most
    for c in range(top, best, -1):
        if len(by_idle[c]) > touched.count(c):  # a server at c idle GPUs not touched yet
            return c
    return best


def dqn_live(view, *, policy_state=None):
    """``dqn`` (shipped agent) on the live view: :func:`dqn_decision` without a snapshot.

    The rows (:meth:`LiveQ.rows`) are kept across calls; after each pick the picked job's
    row is dropped, and only the small first-layer matrix (the share of idle GPUs, the
    queue's load) and, when the largest idle server shrinks, the ``wider`` column change."""
    if policy_state is None:
        network, window = load_network(shipped_weights())
        policy_state = (LiveQ(view, network), window)
    live, window = policy_state
    threads = local_thread_setter() if view.queue_length() >= THREADED_ROWS else None
    if threads is None:
        placed = _picks(view, live, window)
    else:  # :func:`.blas_threads.one_blas_thread`, without a context manager per call
        previous = threads(1)
        try:
            placed = _picks(view, live, window)
        finally:
            threads(previous)
    return (Decision(tuple(placed)) if placed else _NOTHING), policy_state


_NOTHING = Decision(())  # the decision of a call that starts no job (immutable: shared)


def _picks(view, live: LiveQ, window: int | None) -> list[Placement]:
    """:func:`dqn_live`'s placements (:meth:`LiveQ.q` and :func:`greedy_pick` written out:
    a pass costs numpy's per-call overhead, so the loop makes the fewest calls; the
    packing placement and its bookkeeping are :class:`.sched2_live.Placer`'s, inlined).

    Where no shown job fits, a pass can only pick φ or a job that does not fit (an empty
    rest of the decision), so the loop stops without one."""
    total = view.cluster.num_gpus
    free = view.idle_count
    running = free < total  # every SCHED² job holds a GPU
    widest = view.most_idle()  # widest_left with nothing taken yet
    rows, n = live.rows(view, widest)  # one per job in arrival order; φ last
    live.waited = None
    coef, fold, first = live.coef, live.fold, live.first
    m1, m2, m3 = live.first_matrix, live.second, live.last
    (h1, h2), zeros, values = live.hidden, live.zeros, live.values
    matmul, dot, maximum, log1p, least_of = np.matmul, np.dot, np.maximum, math.log1p, _MIN
    ids, gpu_ids, idle_of = live.arrays.ids, view.cluster.gpu_ids, view.idle_lists()
    most = live.most_gpus
    taken: dict[int, int] = {}  # GPUs given per server by this call (Placer.taken)
    placed: list[Placement] = []
    # the least GPU count of the jobs shown (None: to recompute), read only while fewer GPUs
    # are idle than the workload's largest demand; the whole queue's is kept
    # by the view, and it fits (the engine's call guard, :func:`dqn_can_start`)
    least = view.min_demand() if window is None else None
    while n:
        if window is None or window >= n:
            k = n
            shown = rows[:n + 1, :NET]
        else:
            k = window
            shown = np.concatenate((rows[:k, :NET], rows[n:n + 1, :NET]))
        if free < most:  # else every job fits the idle GPUs by count
            if least is None:
                least = least_of(rows[:k, GPUS])
            if least > free:
                break
        coef[1] = free / total
        coef[2] = log1p(n / total)
        dot(coef, fold, out=first)  # M(s, l)
        m = k + 1
        x, z = h1[:m], zeros[:m]
        matmul(shown, m1, out=x)
        maximum(x, z, out=x)
        y = h2[:m]
        matmul(x, m2, out=y)
        maximum(y, z, out=y)
        q = dot(y, m3, out=values[:m])
        if not running:
            q[-1] = -np.inf
        pick = int(q.argmax())  # greedy_pick, written out
        if pick:
            qmax = float(q[pick])
            low = qmax - TIE_TOL * max(1.0, abs(qmax))
            if q[int(q[:pick].argmax())] >= low:
                pick = int((q[:pick] >= low).argmax())
        if pick == k:
            if running and window is None:  # k = n ≥ 1: every job was scored
                live.waited = WaitPoint(float(q[k]), float(q[int(q[:k].argmax())]), view.time,
                                        coef[1], coef[2], n, widest, rows[n - 1, SUBMIT])
            break
        gpus = rows[pick, GPUS]
        got = _packing_live(view, int(gpus), taken, free)
        if got is None:  # it waits for this job
            break
        chosen, local = got
        placed.append(Placement(ids[int(rows[pick, RECORD])],
                                tuple(map(gpu_ids.__getitem__, chosen))))
        free -= len(chosen)
        rows[pick:n] = rows[pick + 1:n + 1]  # the later jobs and φ move up one row
        n -= 1
        running = True
        if window is not None or gpus == least:
            least = None
        shrank = False  # a server at the largest idle count gave GPUs
        for s, c in local.items():
            before = taken.get(s, 0)
            taken[s] = before + c
            if not shrank and len(idle_of[s]) - before == widest:
                shrank = True
        if shrank:
            top = widest_left(view, taken, widest)
            if top != widest:
                widest = top
                np.greater(rows[:n, GPUS], widest, out=rows[:n, WIDER])
    live.kept, live.widest = n, widest
    return placed


_MIN = np.minimum.reduce  # a column's least value (ndarray.min's work, without its wrapper)


def dqn_can_start(view, *, policy_state=None) -> bool:
    """``dqn``'s ``can_start``: some waiting job's GPU count fits the idle GPUs, unless the
    last call ended on φ and the agent provably picks φ again now
    (:meth:`LiveQ.still_waits`)."""
    return some_job_fits(view) and (policy_state is None
                                    or not policy_state[0].still_waits(view))
