"""Training SCHED²'s learned priority by policy search (the cross-entropy method).

The policy is :mod:`dlsched.heuristics.sched2_priority`: one weight vector scores every
queued job; jobs start in score order, each by packing, until one does not fit. Its mean
execution effectiveness E over an episode (Eq. 2) is what training maximizes, directly:
the cross-entropy method (CEM) keeps a Gaussian over weight vectors, scores
``population`` draws on the same training episodes, and refits the Gaussian to the best
``elites``; after every generation the Gaussian's mean plays the validation episodes, and
the best validation mean is the result. Training starts from SPF's order (``score =
ln 2 · log2 g + ln d`` orders jobs as g × d does), the best of the paper's rules, or from
zero weights (``warm_start=False``: the ablation).

Episodes are played by :func:`play`, an event loop of the simulator's dynamics for
exclusive GPUs specialised to this policy (every arrival and completion is an event; at an
event the policy starts jobs with the clock frozen; a started job holds its GPUs for its
ideal time × the SCHED² locality slowdown of its placement). It gives the simulator's
schedule (a test compares every start time) about 20-50× faster, which is what makes a
few thousand episodes per training run affordable on a CPU. Everything is seeded; numpy
alone, one thread: the same seed gives the same weights.
"""

from __future__ import annotations

import heapq
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..files import atomic_path, write_text
from ..heuristics.sched2_priority import FEATURES, PriorityScorer, priority_features
from ..instance import Instance
from ..problems.sched2 import locality_slowdown, parse_sched2_params

SPF_WEIGHTS = np.array([np.log(2.0), 1.0, *([0.0] * (len(FEATURES) - 2))])
"""Weights whose order is SPF's (smallest num_gpus × ideal time first)."""


@dataclass(frozen=True)
class Episode:
    """A workload as arrays (jobs in submission order).

    ``reference`` is each job's slowdown on the placement its ``duration`` was measured
    on: 1 for generated workloads (the ideal placement), the packed placement's for
    trace-derived ones (the simulator's ``reference="packed"``, docs/simulator.md).
    """

    submit: np.ndarray
    gpus: np.ndarray
    duration: np.ndarray
    sensitivity: np.ndarray
    reference: np.ndarray
    servers: int
    gpus_per_server: int

    @classmethod
    def of(cls, workload: Instance) -> Episode:
        """The arrays of a SCHED² workload on an empty homogeneous cluster whose locality
        groups are its servers (what the simulator's SCHED² rate model reads)."""
        from ..problems.rates import SpeedModel

        params = parse_sched2_params(workload.params)
        jobs = sorted(workload.jobs, key=lambda j: j.submit_time)
        cluster = workload.cluster
        per_server = int(cluster.node_gpu_count.max())
        if (workload.running or cluster.node_gpu_count.min() != per_server
                or len(np.unique(cluster.gpu_locality_group)) != cluster.num_nodes):
            raise ValueError("episodes need an empty homogeneous cluster whose locality "
                             "groups are its servers")
        shared = next((j for j in jobs if j.cpu_per_gpu or j.ram_gb_per_gpu), None)
        if shared is not None:
            raise InputError(f"job {shared.id!r} has CPU or RAM shares per GPU",
                             field="cpu_per_gpu", source=workload.name,
                             fix="the fast episodes model GPUs only: train on a workload "
                             "without CPU or RAM shares")
        sensitivity = np.array([params.sensitivity(j.model) for j in jobs], dtype=float)
        gpus = np.array([j.num_gpus for j in jobs], dtype=np.int64)
        reference = np.ones(len(jobs))
        if SpeedModel.for_workload(workload).reference == "packed":
            for k, (g, s) in enumerate(zip(gpus, sensitivity, strict=True)):
                full, rest = divmod(int(g), per_server)
                reference[k] = locality_slowdown(s, [per_server] * full + [rest] * (rest > 0))
        return cls(np.array([j.submit_time for j in jobs], dtype=float), gpus,
                   np.array([j.duration for j in jobs], dtype=float), sensitivity,
                   reference, int(cluster.num_nodes), per_server)


def _packing(idle: np.ndarray, demand: int) -> dict[int, int] | None:
    """GPUs taken per server by the packing placement of Fig. 2, on idle counts only:
    :func:`dlsched.heuristics.sched2.packing` without the GPU lists, which the episodes do
    not need (the tests that compare :func:`play` with the simulator hold the two equal)."""
    if idle.sum() < demand:
        return None
    left = idle.copy()
    taken: dict[int, int] = {}
    need = demand
    while need > 0:
        fits = left >= need
        if fits.any():
            s = int(np.argmin(np.where(fits, left, np.iinfo(np.int64).max)))
            k = need
        else:
            s = int(np.argmax(left))
            k = int(left[s])
        taken[s] = taken.get(s, 0) + k
        left[s] -= k
        need -= k
    return taken


def play(episode: Episode, scorer: PriorityScorer, window: int | None = None
         ) -> tuple[np.ndarray, np.ndarray]:
    """Start and end times of the episode's jobs under the learned priority (module
    docstring)."""
    n = len(episode.submit)
    total = episode.servers * episode.gpus_per_server
    idle = np.full(episode.servers, episode.gpus_per_server, dtype=np.int64)
    start = np.full(n, np.nan)
    end = np.full(n, np.nan)
    events: list[tuple[float, int, int, dict[int, int] | None]] = [
        (float(t), 1, i, None) for i, t in enumerate(episode.submit)]
    heapq.heapify(events)
    queue: list[int] = []
    while events:
        now = events[0][0]
        while events and events[0][0] == now:
            _, kind, i, taken = heapq.heappop(events)
            if kind == 1:
                queue.append(i)
            else:
                for s, k in taken.items():
                    idle[s] += k
        if not queue:
            continue
        shown = np.array(queue[:window])
        features = priority_features(
            episode.gpus[shown].astype(float), episode.duration[shown],
            now - episode.submit[shown], episode.sensitivity[shown], idle, total, len(queue))
        order = shown[np.lexsort((shown, episode.submit[shown], scorer.scores(features)))]
        started = []
        for i in order:
            taken = _packing(idle, int(episode.gpus[i]))
            if taken is None:
                break
            for s, k in taken.items():
                idle[s] -= k
            slowdown = locality_slowdown(episode.sensitivity[i], np.array(list(taken.values())))
            start[i] = now
            end[i] = now + episode.duration[i] * slowdown / episode.reference[i]
            heapq.heappush(events, (end[i], 0, int(i), taken))
            started.append(int(i))
        if started:
            gone = set(started)
            queue = [i for i in queue if i not in gone]
    return start, end


def effectiveness(episode: Episode, scorer: PriorityScorer, window: int | None = None) -> float:
    """Mean execution effectiveness E (Eq. 2) of an episode under the learned priority."""
    _, end = play(episode, scorer, window)
    return float(np.mean(episode.duration / (end - episode.submit)))


@dataclass(frozen=True)
class SearchSettings:
    """Settings of the cross-entropy method."""

    generations: int = 20
    population: int = 24
    elites: int = 6
    initial_std: float = 0.3
    min_std: float = 0.02
    warm_start: bool = True
    window: int | None = None


@dataclass
class SearchResult:
    """The trained weights, the learning curve and what it cost."""

    weights: np.ndarray
    curve: list[dict] = field(default_factory=list)
    cpu_s: float = 0.0
    settings: dict = field(default_factory=dict)


def cross_entropy_search(train: Sequence[Episode], valid: Sequence[Episode], *,
                         settings: SearchSettings = SearchSettings(), seed: int = 0,
                         progress: Callable[[dict], None] | None = None) -> SearchResult:
    """Weights maximizing the mean E over ``train``, chosen on ``valid`` (module docstring)."""
    rng = np.random.default_rng(seed)
    c0 = time.process_time()

    def mean_e(weights: np.ndarray, episodes: Sequence[Episode]) -> float:
        scorer = PriorityScorer(weights)
        return float(np.mean([effectiveness(e, scorer, settings.window) for e in episodes]))

    mean = SPF_WEIGHTS.copy() if settings.warm_start else np.zeros(len(FEATURES))
    std = np.full(len(FEATURES), settings.initial_std)
    best = (mean_e(mean, valid), mean.copy(), 0)
    curve = [{"generation": 0, "train_best_E": None, "valid_E": best[0],
              "cpu_s": time.process_time() - c0}]
    for generation in range(1, settings.generations + 1):
        draws = mean + std * rng.standard_normal((settings.population, len(FEATURES)))
        fitness = np.array([mean_e(w, train) for w in draws])
        elite = draws[np.argsort(-fitness, kind="stable")[: settings.elites]]
        mean = elite.mean(axis=0)
        std = np.maximum(elite.std(axis=0), settings.min_std)
        valid_e = mean_e(mean, valid)
        if valid_e > best[0]:
            best = (valid_e, mean.copy(), generation)
        row = {"generation": generation, "train_best_E": float(fitness.max()),
               "valid_E": valid_e, "cpu_s": time.process_time() - c0}
        curve.append(row)
        if progress is not None:
            progress(row)
    return SearchResult(best[1], curve, time.process_time() - c0,
                        {**asdict(settings), "seed": seed, "selected_generation": best[2]})


def train_priority(out: str | Path, *, train: Sequence[Instance], valid: Sequence[Instance],
                   seed: int = 0, settings: SearchSettings = SearchSettings(),
                   command: str = "", progress: Callable[[dict], None] | None = None) -> dict:
    """Train the learned priority on ``train``, choose on ``valid``, and write
    ``sched2_priority.safetensors`` (weights; the feature list and the training summary as
    metadata), ``curve.csv`` and ``training.json`` into ``out``; returns the summary."""
    from safetensors.numpy import save_file

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    result = cross_entropy_search([Episode.of(w) for w in train],
                                  [Episode.of(w) for w in valid], settings=settings,
                                  seed=seed, progress=progress)
    summary = {"learner": "cross-entropy method", "seed": seed,
               "train_workloads": [w.name for w in train],
               "valid_workloads": [w.name for w in valid],
               "search": result.settings, "cpu_s": round(result.cpu_s, 1),
               "best_valid_effectiveness": max(r["valid_E"] for r in result.curve),
               "numpy": np.__version__, "command": command}
    lines = ["generation,train_best_E,valid_E,cpu_s\n"]
    for r in result.curve:
        best = "" if r["train_best_E"] is None else f"{r['train_best_E']:.6f}"
        lines.append(f"{r['generation']},{best},{r['valid_E']:.6f},{r['cpu_s']:.2f}\n")
    write_text(out / "curve.csv", "".join(lines))
    with atomic_path(out / "sched2_priority.safetensors") as tmp:
        save_file({"weights": result.weights}, str(tmp),
                  metadata={"features": json.dumps(list(FEATURES)),
                            "training": json.dumps(summary)})
    write_text(out / "training.json", json.dumps(summary, indent=2) + "\n")
    return summary
