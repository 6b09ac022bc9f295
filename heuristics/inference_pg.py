"""The learned serving policy ``pg`` (Fang et al., CIKM'17, Sec. 3.2) and its method.

State (Sec. 3.2), for the GPU that is free: the deadline histogram (N_pre = 4 bins before
the current one, N_post = 6 from it on), the queue length N_t, the arrival rate R_t over
the last 5 s, the GPU type one-hot, and every GPU's expected remaining busy time.

Additions to the paper's state (ours, stated; they give the network the quantities Eq. 2
and its model rule use, so that the behaviour-cloned start can match the heuristic):

* ξ_G (the GPU's share of the cluster's B = 8 throughput of the default model) and
  N_t · ξ_G;
* for every listed batch size B: D_{B,M0,G} · R_t · ξ_G (M0 the default model; the first
  term of Eq. 2, in queries);
* the slack of the head of the queue: its soft and hard deadline minus now (s).

Inputs are standardized by the training set's mean and SD, folded into the first layer
when the weights are written, so the file holds only ``w1 b1 w2 b2``.

Action: B = 0 (wait) or a (B, M) pair of the delay table; a B the model cannot run on the
GPU is lowered to its largest supported size (the paper's "automatically selects a
smaller batch size"). One hidden layer of 64 (tanh), softmax over actions. At evaluation
the policy takes the most probable action (``greedy``, the default); sampling from
π(s, ·) is used during policy-gradient training.

Acting needs numpy only: the weights are read from a safetensors file (no pickle, no
torch). Training lives in :mod:`dlsched.rl.inference_train` (torch), which imports this
module; the shipped weights are package data of ``dlsched.heuristics``
(``heuristics/data/inference_pg/``).

The method ``pg`` (:func:`make_pg`): options ``weights`` (a file; default the shipped
weights for the instance's cluster, :func:`gpus_of`), ``gpus`` (which shipped weights)
and ``greedy``; the call's seed seeds the sampling when ``greedy`` is false.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from dlsched.errors import InputError
from dlsched.heuristics.weights import read_safetensors
from dlsched.instance import Instance
from dlsched.problems.inference import InferenceData, inference_data
from dlsched.problems.inference.policies import ServeState
from dlsched.registry import MethodSpec, register_method
from dlsched.serve.method import PolicyMethod

N_PRE, N_POST = 4, 6
HIDDEN = 64
SHIPPED = {"p2:1": "p2x1/policy.safetensors",
           "g2:5,p2:5": "g2x5_p2x5/policy.safetensors"}


def action_table(data: InferenceData) -> list[tuple[int, int]]:
    """Actions: index 0 = wait (0, -1), then (B, model) for every size and model."""
    return [(0, -1)] + [(b, m) for m in range(len(data.models)) for b in data.batch_sizes]


def feature_size(data: InferenceData) -> int:
    """Length of the state vector (see the module docstring)."""
    return (N_PRE + N_POST + 2 + len(data.gpu_types) + len(data.gpu_ids)
            + 2 + len(data.batch_sizes) + 2)


class Featurizer:
    """The state vector of Sec. 3.2 plus the stated additions, for one instance."""

    def __init__(self, data: InferenceData) -> None:
        best = max(data.kappa)
        m0 = min(i for i, k in enumerate(data.kappa) if k == best)  # the default model
        self.data = data
        self.n_q = max(data.num_queries, 1)
        self.soft = data.soft.tolist()
        self.hard = data.hard.tolist()
        types = data.gpu_type.tolist()
        cap = []
        for t in types:
            d8 = data.duration(m0, t, 8)
            cap.append(8.0 / d8 if d8 else 0.0)
        total = sum(cap) or 1.0
        self.xi = [c / total for c in cap]
        self.onehot = []
        self.d_rate = []  # per GPU: D_{B,M0,G} (s) · ξ_G per listed B (-1 → largest)
        for g, t in enumerate(types):
            oh = [0.0] * len(data.gpu_types)
            oh[t] = 1.0
            self.onehot.append(oh)
            row = []
            for b in data.batch_sizes:
                d = data.duration(m0, t, b)
                if d is None:
                    d = data.duration(m0, t, data.max_batch(m0, t)) or 0
                row.append(d / 1000.0 * self.xi[g])
            self.d_rate.append(row)

    def __call__(self, sim: ServeState, gpu: int) -> np.ndarray:
        now = sim.now
        hist = sim.histogram(N_PRE, N_POST)
        queued = len(sim.heap)
        rate = sim.rate() * 1000.0  # queries per s
        busy = [max(0, f - now) / 1000.0 for f in sim.gpu_free]
        if sim.heap:
            q = sim.heap[0] % self.n_q
            slack = [(self.soft[q] - now) / 1000.0, (self.hard[q] - now) / 1000.0]
        else:
            slack = [0.0, 0.0]
        xi = self.xi[gpu]
        vec = ([float(h) for h in hist] + [float(queued), rate] + self.onehot[gpu] + busy
               + [xi, queued * xi] + [d * rate for d in self.d_rate[gpu]] + slack)
        return np.asarray(vec, dtype=np.float64)


class PGPolicy:
    """Softmax MLP policy; ``greedy`` acts by argmax, else samples with ``rng``."""

    def __init__(self, weights: dict[str, np.ndarray], *, greedy: bool = True,
                 rng: np.random.Generator | None = None, label: str = "pg") -> None:
        self.w1 = np.asarray(weights["w1"], dtype=np.float64)
        self.b1 = np.asarray(weights["b1"], dtype=np.float64)
        self.w2 = np.asarray(weights["w2"], dtype=np.float64)
        self.b2 = np.asarray(weights["b2"], dtype=np.float64)
        self.greedy = greedy
        self.rng = rng or np.random.default_rng(0)
        self.label = label
        self.trace: list[tuple[np.ndarray, int]] | None = None  # (state, action) when set

    def reset(self, sim: ServeState) -> None:
        data = sim.data
        self.actions = action_table(data)
        if self.w1.shape[0] != feature_size(data) or self.w2.shape[1] != len(self.actions):
            raise InputError(
                f"weights expect {self.w1.shape[0]} features and {self.w2.shape[1]} actions; "
                f"this instance has {feature_size(data)} and {len(self.actions)}",
                field="weights", fix="train a policy for this cluster (dlsched rl train "
                "inference --gpus ...)")
        self.featurize = Featurizer(data)
        self.max_b = [[data.max_batch(m, int(t)) for m in range(len(data.models))]
                      for t in data.gpu_type]
        self.pending_model = 0

    def logits(self, state: np.ndarray) -> np.ndarray:
        return np.tanh(state @ self.w1 + self.b1) @ self.w2 + self.b2

    def probabilities(self, state: np.ndarray) -> np.ndarray:
        z = self.logits(state)
        z = z - z.max()
        p = np.exp(z)
        return p / p.sum()

    def act(self, state: np.ndarray) -> int:
        """Action index for a state: argmax if greedy, else a draw from π(s, ·)."""
        if self.greedy:
            return int(np.argmax(self.logits(state)))
        p = self.probabilities(state)
        return min(int(np.searchsorted(np.cumsum(p), self.rng.random(), side="right")),
                   p.size - 1)

    def size(self, sim: ServeState, gpu: int) -> int:
        state = self.featurize(sim, gpu)
        a = self.act(state)
        if self.trace is not None:
            self.trace.append((state, a))
        b, m = self.actions[a]
        if b == 0:
            return 0
        self.pending_model = m
        return min(b, self.max_b[gpu][m])

    def model(self, sim: ServeState, gpu: int, queries: list[int], size: int) -> int:
        return self.pending_model


def read_weights(path: str | Path) -> dict[str, np.ndarray]:
    """Weights from a safetensors file (numpy; never pickle)."""
    return read_safetensors(path, "dlsched rl train inference")[0]


def shipped_weights(gpus: str = "p2:1") -> Path:
    """Path of the shipped weights for cluster ``gpus`` (``p2:1`` or ``g2:5,p2:5``)."""
    if gpus not in SHIPPED:
        raise InputError(f"no shipped policy for {gpus!r}", field="gpus",
                         fix=f"use one of {sorted(SHIPPED)} or pass weights=FILE")
    return Path(str(resources.files("dlsched.heuristics").joinpath(
        "data", "inference_pg", *SHIPPED[gpus].split("/"))))


def load_pg_policy(weights: str | None = None, gpus: str = "p2:1", greedy: bool = True,
                   seed: int = 0, **options: Any) -> PGPolicy:
    """The ``pg`` serving policy: ``weights`` file, or the shipped one for ``gpus``.

    By default it takes the most probable action of π(s, ·) (``greedy``, deterministic);
    ``greedy=False`` samples from π (as during training) with a Generator seeded by
    ``seed``, so such a run is deterministic per seed too.
    """
    if options:
        raise InputError(f"unknown options {sorted(options)}", field="--option",
                         fix="pg takes weights=FILE, gpus=p2:1|g2:5,p2:5, greedy, seed")
    if isinstance(greedy, str):
        greedy = greedy.strip().lower() not in ("0", "false", "no", "")
    path = Path(weights) if weights else shipped_weights(gpus)
    return PGPolicy(read_weights(path), greedy=bool(greedy),
                    rng=np.random.default_rng([int(seed), 7]))


def gpus_of(data: InferenceData) -> str:
    """The cluster as ``TYPE:COUNT,...`` (sorted by type), to pick shipped weights."""
    counts: dict[str, int] = {}
    for t in data.gpu_type:
        name = data.gpu_types[int(t)]
        counts[name] = counts.get(name, 0) + 1
    return ",".join(f"{k}:{v}" for k, v in sorted(counts.items()))


def make_pg(instance: Instance, *, seed: int = 0, weights: str | None = None,
            gpus: str | None = None, greedy: bool = True) -> PGPolicy:
    """The ``pg`` policy for ``instance``: ``weights``, else the shipped weights of
    ``gpus`` (default: the instance's cluster)."""
    return load_pg_policy(weights, gpus=gpus or gpus_of(inference_data(instance)),
                          greedy=greedy, seed=seed)


register_method(MethodSpec(
    "inference", "pg", "learned",
    PolicyMethod(make_pg, ("weights", "gpus", "greedy"),
                 {"weights": ("str", None, None), "gpus": ("str", None, None)}, ("weights",)),
    summary="learned batch policy (policy gradient, Sec. 3.2) replayed in the serving "
            "simulator"))
