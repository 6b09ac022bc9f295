"""A learned priority rule for SCHED² job selection: one set of weights scores every job.

At a snapshot every queued job (or the ``window`` oldest) gets a score from the same
weights: a linear function of the job's own features (demand, ideal time, waiting time,
locality sensitivity) and of their products with a pooled summary of the cluster and the
queue (the share of idle GPUs, the queue's length per GPU). The summary is the same for
every job and does not depend on how many servers, GPUs per server or queued jobs there
are, so one set of weights acts on any cluster and any queue. Jobs start in increasing
score (ties by arrival, then queue position), each placed by the packing placement of
Fig. 2, until one does not fit: the selection rules' loop (:mod:`dlsched.heuristics.sched2`),
with the order learned instead of fixed.

The weights are a safetensors file (``weights``, float64, one per feature in
:data:`FEATURES`) read with ``safetensors.numpy``; acting needs neither torch nor pickle.
Training: ``dlsched rl train sched2`` (:mod:`dlsched.rl.sched2_search`).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from functools import cache
from importlib import resources

import numpy as np

from dlsched.decision import Decision
from dlsched.errors import InputError
from dlsched.heuristics.sched2 import start_in_order
from dlsched.heuristics.sched2_live import JobArrays, Placer
from dlsched.heuristics.sched2_view import _gpus_only, some_job_fits
from dlsched.heuristics.weights import read_safetensors
from dlsched.instance import Instance
from dlsched.method_support import heuristic_method
from dlsched.problems.sched2 import parse_sched2_params, submitted_part
from dlsched.registry import MethodSpec, register_method
from dlsched.state import ViewPolicy, register_view_policy

FEATURES = (
    "log2_gpus",            # log2(num_gpus)
    "log_duration",         # log(ideal time / 30 min)
    "log_wait",             # log(1 + waiting time / 10 min)
    "locality",             # (sensitivity - 1) for multi-GPU jobs, 0 for one GPU
    "gpus_x_duration",      # log2_gpus * log_duration
    "gpus_x_idle",          # log2_gpus * share of idle GPUs
    "duration_x_queue",     # log_duration * log(1 + queued jobs per GPU)
    "wait_x_queue",         # log_wait * log(1 + queued jobs per GPU)
    "wider_than_a_server",  # 1 when the demand exceeds every server's idle GPUs
)
"""The features of a queued job, in the order of the weight vector."""

DURATION_SCALE_S = 1800.0
WAIT_SCALE_S = 600.0

SHIPPED = "data/sched2_priority/sched2_priority.safetensors"
"""The shipped weights, relative to the ``dlsched.heuristics`` package."""


def priority_features(num_gpus: np.ndarray, duration: np.ndarray, wait: np.ndarray,
                      sensitivity: np.ndarray, idle_per_server: np.ndarray,
                      total_gpus: int, queued: int) -> np.ndarray:
    """The :data:`FEATURES` of queued jobs, one row per job.

    Parameters
    ----------
    num_gpus, duration, wait, sensitivity
        Per job: demand, ideal (packed) run time in seconds, time since submission in
        seconds, SCHED² locality sensitivity S (≥ 1).
    idle_per_server
        Idle GPUs of each server now.
    total_gpus
        GPUs in the cluster.
    queued
        Jobs in the whole queue (not only the scored ones).

    Returns
    -------
    numpy.ndarray
        Shape ``(jobs, len(FEATURES))``.
    """
    gpus = np.log2(num_gpus)
    length = np.log(duration / DURATION_SCALE_S)
    waited = np.log1p(wait / WAIT_SCALE_S)
    idle = float(idle_per_server.sum()) / total_gpus
    queue = float(np.log1p(queued / total_gpus))
    return np.stack([
        gpus, length, waited, (sensitivity - 1.0) * (num_gpus > 1), gpus * length,
        gpus * idle, length * queue, waited * queue,
        (num_gpus > idle_per_server.max()).astype(float),
    ], axis=1)


@dataclass(frozen=True)
class PriorityScorer:
    """Weights of the learned priority: ``score = features @ weights`` (lower starts first)."""

    weights: np.ndarray

    def __post_init__(self) -> None:
        if self.weights.shape != (len(FEATURES),) or not np.isfinite(self.weights).all():
            raise ValueError(f"expected {len(FEATURES)} finite weights, got "
                             f"shape {self.weights.shape}")

    def scores(self, features: np.ndarray) -> np.ndarray:
        """One score per row of ``features``."""
        return features @ self.weights


@cache
def shipped_weights() -> str:
    """Path of the shipped weights."""
    return str(resources.files("dlsched.heuristics").joinpath(SHIPPED))


@cache
def load_scorer(path: str) -> PriorityScorer:
    """Weights written by ``dlsched rl train sched2`` (safetensors, tensor ``weights``).

    Raises
    ------
    InputError
        No such file, or not a file of this scorer (the feature list in its metadata
        differs from :data:`FEATURES`).
    """
    tensors, meta = read_safetensors(path, "dlsched rl train sched2")
    try:
        if json.loads(meta["features"]) != list(FEATURES):
            raise ValueError("its features are not this scorer's")
        return PriorityScorer(np.asarray(tensors["weights"], dtype=np.float64))
    except (KeyError, ValueError) as exc:
        raise InputError(f"not a dlsched priority scorer: {type(exc).__name__}: {exc}",
                         field="weights", fix="pass a file written by `dlsched rl train "
                         "sched2`", source=path) from None


def priority_order(instance: Instance, scorer: PriorityScorer,
                   window: int | None = None) -> list[int]:
    """Indices of ``instance.jobs`` (the ``window`` oldest, or all) by increasing score,
    ties by arrival, then queue position."""
    jobs = instance.jobs
    submit = [j.submit_time for j in jobs]
    shown = sorted(range(len(jobs)), key=submit.__getitem__)[:window]  # stable: ties by i
    if not shown:
        return []
    params = parse_sched2_params(instance.params)
    cluster = instance.cluster
    idle = np.bincount(cluster.gpu_node[~instance.gpu_busy], minlength=cluster.num_nodes)
    picked = [jobs[i] for i in shown]
    features = priority_features(
        np.array([j.num_gpus for j in picked], dtype=float),
        np.array([j.duration for j in picked], dtype=float),
        instance.time - np.array([submit[i] for i in shown], dtype=float),
        np.array([params.sensitivity(j.model) for j in picked], dtype=float),
        idle, cluster.num_gpus, len(jobs))
    scores = scorer.scores(features)
    shown_at = np.array(shown)
    ranked = np.lexsort((shown_at, np.array([submit[i] for i in shown]), scores))
    return shown_at[ranked].tolist()


def learned_priority(instance: Instance, *, weights: str | None = None,
                     window: int | None = None) -> Decision:
    """The learned priority's picks at one snapshot (module docstring)."""
    if weights is not None and not isinstance(weights, str | os.PathLike):
        raise InputError(f"weights = {weights!r}"[:80], field="options.weights",
                         fix="the path of a weights file, or leave it out for the shipped one")
    scorer = load_scorer(str(weights) if weights else shipped_weights())
    instance = submitted_part(instance)
    return start_in_order(instance, priority_order(instance, scorer, window))


register_method(MethodSpec(
    "sched2", "learned-priority", "learned",
    heuristic_method(learned_priority, ("weights", "window"), {"window": ("int", 1, None)},
                     ("window",)),
    summary="learned job priority (shared weights over job and cluster features, "
            "cross-entropy policy search), packing placement"))


# ---------------------------------------------------------------------- simulator fast form
def idle_per_server(view) -> np.ndarray:
    """Idle GPUs of each server of the live view (int64), as a snapshot's
    ``bincount(gpu_node[~gpu_busy])``."""
    return view.idle_counts()


def arrival_order(arrays, view) -> np.ndarray:
    """The queue's records sorted by arrival, ties by queue position (a snapshot's order)."""
    return view.queue_by_arrival()


class _LiveScorer:
    """The learned priority's run state: the job arrays, the scorer, and each job's
    features that do not change while it waits (columns of :data:`FEATURES`, computed
    once per run with the same numpy operations as :func:`priority_features`)."""

    def __init__(self, view) -> None:
        self.arrays = a = JobArrays(view)
        self.scorer = load_scorer(shipped_weights())
        self.weights = self.scorer.weights
        gpus = np.log2(a.gpus)
        length = np.log(a.duration / DURATION_SCALE_S)
        static = np.zeros((len(a.gpus), len(FEATURES)))
        static[:, 0] = gpus
        static[:, 1] = length
        static[:, 3] = (a.sensitivity - 1.0) * (a.gpus > 1)
        static[:, 4] = gpus * length
        # placeholders read (and overwritten) by each call: submit time, GPU count
        static[:, 2] = a.submit
        static[:, 8] = a.gpus
        self.static = static
        self.queued: dict[int, float] = {}  # queue length -> its feature term
        self.scale = np.empty(3)  # per call: idle share, queue term, queue term


def learned_priority_live(view, *, policy_state: _LiveScorer | None = None,
                          window: int | None = None) -> tuple[Decision, _LiveScorer]:
    """``learned-priority`` (shipped weights) on the live view: the same features and
    scores as :func:`priority_order` on a snapshot (bit for bit: the per-job columns are
    the same elementwise operations, computed once per run), from the run's job arrays."""
    state = policy_state if policy_state is not None else _LiveScorer(view)
    arrays = state.arrays
    queue = arrival_order(arrays, view)
    shown = queue[:window]
    placer = Placer(view)
    if not len(shown):
        return placer.decision(), state
    total = view.cluster.num_gpus
    # priority_features(), with the static columns gathered instead of recomputed and
    # each dynamic column written in place (the same elementwise operations)
    features = state.static.take(shown, axis=0)  # = static[shown], without fancy indexing
    waited = np.subtract(view.time, features[:, 2])  # column 2 holds the submit time
    np.divide(waited, WAIT_SCALE_S, out=waited)
    np.log1p(waited, out=waited)  # on a contiguous array, as priority_features() does
    features[:, 2] = waited
    queued = state.queued.get(len(queue))
    if queued is None:
        queued = state.queued[len(queue)] = float(np.log1p(len(queue) / total))
    # columns 5-7 = columns 0-2 times (idle share, queue term, queue term): one product
    scale = state.scale
    scale[0] = float(view.idle_count) / total
    scale[1] = scale[2] = queued
    np.multiply(features[:, :3], scale, out=features[:, 5:8])
    np.greater(features[:, 8], view.most_idle(), out=features[:, 8])  # held the GPU count
    # by (score, arrival, queue position): ``shown`` is in (arrival, queue position) order,
    # so the first smallest score is the next job of priority_order()'s lexsort
    scores = features @ state.weights  # PriorityScorer.scores
    if not math.isfinite(float(scores.sum())):  # an overflow: sort, as lexsort does
        scores = np.argsort(scores, kind="stable").argsort().astype(float)
    for _ in range(len(shown)):
        k = int(scores.argmin())
        r = int(shown[k])
        got = placer.place(int(arrays.gpus[r]))
        if got is None:
            break
        placer.take(arrays.ids[r], got)
        scores[k] = math.inf  # started: after every finite score
    return placer.decision(), state


def _can_start(view, **options) -> bool:
    return some_job_fits(view)


register_view_policy(ViewPolicy("sched2", "learned-priority", learned_priority_live, _can_start,
                                frozenset({"window"}), _gpus_only, stateful=True))
