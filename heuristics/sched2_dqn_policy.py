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

import numpy as np

from dlsched.decision import Decision, Placement
from dlsched.errors import InputError
from dlsched.files import unique_keys
from dlsched.heuristics.blas_threads import one_blas_thread
from dlsched.heuristics.sched2 import ServerRoom
from dlsched.heuristics.sched2_live import JobArrays, Placer
from dlsched.heuristics.sched2_priority import (
    DURATION_SCALE_S,
    FEATURES,
    WAIT_SCALE_S,
    arrival_order,
    priority_features,
)
from dlsched.heuristics.sched2_view import some_job_fits
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
                "log_wait", "wider_than_a_server", "stop", "gpus", "record")
"""A row of the fast form (:class:`LiveQ`): the columns of a :func:`q_rows` row that do not
depend on the share of idle GPUs or the queue's load, a constant 1 for the bias, and the
job's GPU count and record index (weight 0: carried so that dropping a picked row drops
them too)."""

WAIT, WIDER, GPUS, RECORD = (LIVE_COLUMNS.index(c) for c in
                             ("log_wait", "wider_than_a_server", "gpus", "record"))

THREADED_ROWS = 200
"""From this many rows up a call holds one BLAS thread (:mod:`.blas_threads`); OpenBLAS
runs smaller products of this network's widths on the calling thread anyway."""


class LiveQ:
    """The Q-network on the live view, its first layer folded.

    A row of :func:`q_rows` is linear in the share of idle GPUs ``s`` and the queue's load
    ``l`` (``gpus_x_idle = log2_gpus · s``, ``duration_x_queue = log_duration · l``, …),
    so the first layer's pre-activation is ``row' @ M(s, l)`` with ``row'`` the
    :data:`LIVE_COLUMNS` (the job's own, kept per run; its waiting time, once per call;
    ``wider_than_a_server``, when the largest idle server shrinks) and
    ``M(s, l) = M₀ + s·M_s + l·M_l`` (a small matrix per pick). The biases of the hidden
    layers ride on a constant unit carried through the network. The Q-values equal the
    network's on :func:`q_rows` up to float64 rounding (``tests/test_sched2_dqn_live.py``:
    within 1e-12 relative), and :func:`greedy_pick` makes the picks independent of it.
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
        self.table[:, WAIT] = a.submit  # :meth:`start` turns it into the waiting time
        self.table[:, GPUS] = a.gpus
        self.table[:, RECORD] = np.arange(len(a.gpus))
        self.phi = np.zeros(len(LIVE_COLUMNS))
        self.phi[[0, LIVE_COLUMNS.index("stop")]] = 1.0
        feature = {name: w0[k] for k, name in enumerate(Q_FEATURES)}
        col = {name: k for k, name in enumerate(LIVE_COLUMNS)}
        fold = np.zeros((3, len(LIVE_COLUMNS), hidden + 1))  # M₀, M_s, M_l
        fold[0, col["one"], :hidden] = b0
        fold[0, col["one"], hidden] = 1.0  # the unit that carries the next bias
        for name in LIVE_COLUMNS[1:GPUS]:
            fold[0, col[name], :hidden] = feature[name]
        fold[1, col["one"], :hidden] = feature["idle_share"]
        fold[1, col["log2_gpus"], :hidden] = feature["gpus_x_idle"]
        fold[2, col["one"], :hidden] = feature["queue_load"]
        fold[2, col["log_duration"], :hidden] = feature["duration_x_queue"]
        fold[2, col["log_wait"], :hidden] = feature["wait_x_queue"]
        self.fold = fold.reshape(3, -1)
        self.coef = np.ones(3)  # (1, s, l)
        self.first = np.empty(self.fold.shape[1])  # M(s, l), written by each q()
        self.first_matrix = self.first.reshape(len(LIVE_COLUMNS), hidden + 1)  # a view
        self.second = np.zeros((hidden + 1, hidden + 1))
        self.second[:hidden, :hidden] = w1
        self.second[hidden, :hidden] = b1
        self.second[hidden, hidden] = 1.0
        self.last = np.append(w2[:, 0], b2[0])
        self._order: tuple[np.ndarray, np.ndarray] | None = None

    def arrival_order(self, view) -> np.ndarray:
        """:func:`.sched2_priority.arrival_order`, kept while the queue's records are the
        same array (the pending queue caches it until the queue changes)."""
        records = view.queue_records()
        if self._order is None or self._order[0] is not records:
            self._order = (records, arrival_order(self.arrays, view))
        return self._order[1]

    def start(self, records: np.ndarray, now: float, widest: int) -> np.ndarray:
        """The rows (:data:`LIVE_COLUMNS`) of ``records`` at time ``now`` with ``widest``
        idle GPUs on the largest idle server, then the φ row."""
        n = len(records)
        out = np.empty((n + 1, len(LIVE_COLUMNS)))
        np.take(self.table, records, axis=0, out=out[:n], mode="clip")  # valid indices
        wait = out[:n, WAIT]  # the submit times, in place: q_rows' operations
        np.subtract(now, wait, out=wait)
        np.divide(wait, WAIT_SCALE_S, out=wait)
        np.log1p(wait, out=wait)
        np.greater(out[:n, GPUS], widest, out=out[:n, WIDER])
        out[n] = self.phi
        return out

    def q(self, rows: np.ndarray, idle_share: float, load: float) -> np.ndarray:
        """The Q-values of ``rows`` (:meth:`start`) at idle share ``idle_share`` and queue
        load ``load`` = log(1 + queued jobs per GPU)."""
        coef = self.coef
        coef[1] = idle_share
        coef[2] = load
        np.matmul(coef, self.fold, out=self.first)
        x = rows @ self.first_matrix
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

    The rows (:class:`LiveQ`) are built once per call; after each pick the picked job's
    row is dropped, and only the small first-layer matrix (the share of idle GPUs, the
    queue's load) and, when the largest idle server shrinks, the ``wider`` column change."""
    if policy_state is None:
        network, window = load_network(shipped_weights())
        policy_state = (LiveQ(view, network), window)
    live, window = policy_state
    queue = live.arrival_order(view)
    placer = Placer(view)
    n = len(queue)
    if not n:
        return placer.decision(), policy_state
    if n >= THREADED_ROWS:
        with one_blas_thread():
            _picks(view, live, window, queue, placer)
    else:
        _picks(view, live, window, queue, placer)
    return placer.decision(), policy_state


def _picks(view, live: LiveQ, window: int | None, queue: np.ndarray, placer: Placer) -> None:
    """:func:`dqn_live`'s picks into ``placer``."""
    total = view.cluster.num_gpus
    free = view.idle_count
    running = free < total  # every SCHED² job holds a GPU
    n = len(queue)
    idle = view.idle_lists()
    widest = widest_left(view, placer.taken)
    rows = live.start(queue, view.time, widest)  # one per job in arrival order; φ last
    least = None  # the least GPU count of the jobs shown (None: to recompute)
    while n:
        k = n if window is None else min(window, n)  # the jobs the agent sees
        if least is None:
            least = rows[:k, GPUS].min()
        if least > free:
            break
        q = live.q(rows[:n + 1] if k == n else np.concatenate((rows[:k], rows[n:n + 1])),
                   free / total, math.log1p(n / total))
        if not running:
            q[-1] = -np.inf
        pick = greedy_pick(q)
        if pick == k:
            break
        gpus = rows[pick, GPUS]
        got = placer.place(int(gpus))
        if got is None:  # it waits for this job
            break
        placer.take(live.arrays.ids[int(rows[pick, RECORD])], got)
        free -= len(got[0])
        rows[pick:n] = rows[pick + 1:n + 1]  # the later jobs and φ move up one row
        n -= 1
        running = True
        if window is not None or gpus == least:
            least = None
        if any(c + len(idle[s]) - placer.taken[s] == widest for s, c in got[1].items()):
            top = widest_left(view, placer.taken, widest)  # a server at the largest count shrank
            if top != widest:
                widest = top
                np.greater(rows[:n, GPUS], widest, out=rows[:n, WIDER])


def dqn_can_start(view, **options) -> bool:
    """``dqn``'s ``can_start``: some waiting job's GPU count fits the idle GPUs."""
    return some_job_fits(view)
