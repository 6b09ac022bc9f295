"""The teachers of the ``pg`` policy's behaviour cloning: Eq. 2 heuristics with tuned α,
β, and the labeller that records their choices at the states a run visits (step 1-2 of
:mod:`dlsched.rl.inference_train`)."""

from __future__ import annotations

import heapq

import numpy as np

from ..errors import InputError
from ..heuristics.inference_pg import Featurizer, PGPolicy, action_table
from ..instance import Instance
from ..problems.inference.policies import HeuristicPolicy
from ..serve.engine import serve
from .inference_episodes import (
    TrainConfig,
    cluster_key,
    clusters,
    training_episodes,
    tuning_episodes,
)

TEACHERS = ("benchmark", "train", "given", "adaptive")


def _pair(best: dict) -> dict[str, float]:
    return {"alpha": float(best["alpha"]), "beta": float(best["beta"])}


def teacher_params(cfg: TrainConfig,
                   episodes: list[Instance] | None = None) -> list[dict]:
    """The teacher heuristics (see the module docstring), duplicates removed.

    Each is ``{"name", "by_cluster": {"GPUS@xSCALE": {"alpha", "beta"}}}`` (one α, β per
    cluster; with one cluster, ``alpha`` and ``beta`` are also given at the top) or, for
    ``adaptive``, ``{"name": "adaptive", "per_episode": [{"alpha", "beta"}, ...]}`` with
    one pair per training episode (``episodes``, default :func:`training_episodes`)."""
    from ..serve.tune import tune_heuristic

    names = [n.strip() for n in cfg.teachers.split(",")]
    for name in names:
        if name not in TEACHERS:
            raise InputError(f"unknown teacher {name!r}", field="--teachers",
                             fix="use benchmark, train, given and/or adaptive, comma-separated")
    eps = training_episodes(cfg) if episodes is None else episodes
    out: list[dict] = []
    for name in names:
        if name == "adaptive":
            entry: dict = {"name": name, "per_episode": [_pair(tune_heuristic([e])[0])
                                                         for e in eps]}
        else:
            by: dict[str, dict[str, float]] = {}
            for gpus, scale in clusters(cfg):
                if name == "benchmark":
                    best, _grid = tune_heuristic(tuning_episodes(gpus, scale))
                elif name == "train":
                    best, _grid = tune_heuristic([e for e in eps
                                                  if cluster_key(e) == (gpus, scale)] or eps)
                else:
                    best = {"alpha": cfg.teacher_alpha, "beta": cfg.teacher_beta}
                by[_key((gpus, scale))] = _pair(best)
            entry = {"name": name, "by_cluster": by}
            if len(by) == 1:
                entry.update(next(iter(by.values())))
        if all(schedule(entry, eps) != schedule(t, eps) for t in out):
            out.append(entry)
    return out


def _key(cluster: tuple[str, float]) -> str:
    return f"{cluster[0]}@x{cluster[1]:g}"


def pair_for(teacher: dict, episode: Instance) -> dict[str, float]:
    """A cluster-wise teacher's α, β on ``episode`` (by the episode's cluster)."""
    return dict(teacher["by_cluster"][_key(cluster_key(episode))])


def schedule(teacher: dict, episodes: list[Instance]) -> list[dict[str, float]]:
    """A teacher's α, β on each of the training ``episodes``."""
    if "per_episode" in teacher:
        return [dict(p) for p in teacher["per_episode"]]
    return [pair_for(teacher, e) for e in episodes]


def teacher_tag(teacher: dict) -> str:
    """Short label of a teacher in stage names: ``a=..,b=..`` (one cluster), else its
    name."""
    if "alpha" in teacher:
        return f"a={teacher['alpha']:g},b={teacher['beta']:g}"
    return teacher["name"]


class _Labeller:
    """Runs ``actor`` (a PGPolicy, or None for the teacher itself) and records, at every
    state it visits, the teacher's action index (behaviour cloning / DAgger)."""

    def __init__(self, teacher: HeuristicPolicy, actor: PGPolicy | None) -> None:
        self.teacher, self.actor = teacher, actor
        self.label = "labeller"

    def reset(self, sim):
        self.teacher.reset(sim)
        if self.actor is not None:
            self.actor.reset(sim)
        self.featurize = Featurizer(sim.data)
        self.index = {a: i for i, a in enumerate(action_table(sim.data))}
        self.n_q = max(sim.data.num_queries, 1)
        self.pairs: list[tuple[np.ndarray, int]] = []
        self.own = True

    def size(self, sim, gpu):
        state = self.featurize(sim, gpu)
        b = self.teacher.size(sim, gpu)
        if b > 0:
            n = min(b, len(sim.heap))
            chosen = [k % self.n_q for k in heapq.nsmallest(n, sim.heap)]
            m = self.teacher.model(sim, gpu, chosen, b)
            self.pairs.append((state, self.index[(b, m)]))
        else:
            self.pairs.append((state, 0))
        if self.actor is None:
            return b
        return self.actor.size(sim, gpu)

    def model(self, sim, gpu, queries, size):
        if self.actor is None:
            return self.teacher.model(sim, gpu, queries, size)
        return self.actor.model(sim, gpu, queries, size)


def teacher_labels(episodes: list[Instance], plan: list[dict[str, float]],
                   actor: dict[str, np.ndarray] | None = None
                   ) -> tuple[list[np.ndarray], list[int]]:
    """States and teacher action indices over ``episodes``; episode i is labelled by the
    Eq. 2 heuristic with ``plan[i]`` (α, β). ``actor``: weights of the greedy network that
    drives (DAgger); None: the teacher drives (behaviour cloning)."""
    xs: list[np.ndarray] = []
    ys: list[int] = []
    for e, t in zip(episodes, plan, strict=True):
        lab = _Labeller(HeuristicPolicy(alpha=t["alpha"], beta=t["beta"]),
                        None if actor is None else PGPolicy(actor))
        serve(e, lab)
        xs.extend(s for s, _ in lab.pairs)
        ys.extend(a for _, a in lab.pairs)
    return xs, ys
