"""The learned serving policy ``pg`` (Fang et al., CIKM'17, Sec. 3.2) and its method.

One policy acts on any cluster of the paper's GPU types (``g2``, ``p2``), of any size: the
state is the same length for one p2, two p2 or 5 g2 + 5 p2. For the GPU that is free:

* the deadline histogram (N_pre = 4 bins before the current one, N_post = 6 from it on),
  the queue length N_t and the arrival rate R_t (queries/s over the last 5 s), each times
  ξ_G — the GPU's share of the cluster's B = 8 throughput of the default model M0 — so
  that they read as "this GPU's share of the queue and of the arrivals" whatever the
  number of GPUs (the paper's raw N_t and R_t grow with the cluster);
* for every listed batch size B: D_{B,M0,G} · R_t · ξ_G (the first term of Eq. 2, in
  queries);
* the GPU type, one-hot over the known types;
* the slack of the head of the queue: its soft and hard deadline minus now (s);
* the rest of the cluster, pooled per known type (in place of the paper's list of every
  GPU's remaining busy time, whose length is the GPU count): the type's share of the
  cluster's throughput, the mean remaining busy time of its GPUs (s) and the share of them
  busy; and the time until the soonest other GPU is free (s; 0 with none).

Inputs are standardized by the training set's mean and SD, folded into the first layer
when the weights are written, so the file holds only ``w1 b1 w2 b2``.

Action: B = 0 (wait) or a (B, M) pair of the delay table; a B the model cannot run on the
GPU is lowered to its largest supported size (the paper's "automatically selects a
smaller batch size"). One hidden layer of 64 (tanh), softmax over actions. At evaluation
the policy takes the most probable action (``greedy``, the default); sampling from
π(s, ·) is used during policy-gradient training. The arithmetic is
:mod:`.inference_net` (the same bits on every machine).

Acting needs numpy only: the weights are read from a safetensors file (no pickle, no
torch). Training lives in :mod:`dlsched.rl.inference_train`, which imports this module;
the shipped weights are package data of ``dlsched.heuristics``
(``heuristics/data/inference_pg/policy.safetensors``, one file for every cluster).

The method ``pg`` (:func:`make_pg`): options ``weights`` (a file; default the shipped
weights) and ``greedy``; the call's seed seeds the sampling when ``greedy`` is false.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from dlsched.errors import InputError
from dlsched.heuristics import inference_net as net
from dlsched.heuristics.weights import read_safetensors
from dlsched.instance import Instance
from dlsched.problems.inference import InferenceData
from dlsched.problems.inference.data import PAPER_QPS
from dlsched.problems.inference.policies import ServeState, default_model
from dlsched.registry import MethodSpec, register_method
from dlsched.serve.method import PolicyMethod

N_PRE, N_POST = 4, 6
HIDDEN = 64
KNOWN_TYPES = tuple(sorted(PAPER_QPS["full"]))  # the GPU types of Table 1: g2, p2
SHIPPED = "policy.safetensors"


def action_table(data: InferenceData) -> list[tuple[int, int]]:
    """Actions: index 0 = wait (0, -1), then (B, model) for every size and model."""
    return [(0, -1)] + [(b, m) for m in range(len(data.models)) for b in data.batch_sizes]


def feature_size(data: InferenceData) -> int:
    """Length of the state vector (see the module docstring): independent of the number
    of GPUs; it depends on the listed batch sizes only."""
    return (N_PRE + N_POST + 2 + len(data.batch_sizes) + len(KNOWN_TYPES) + 2
            + 3 * len(KNOWN_TYPES) + 1)


def known_type_index(data: InferenceData) -> list[int]:
    """Each instance GPU type's index in :data:`KNOWN_TYPES`; an unknown type is an error."""
    unknown = sorted(set(data.gpu_types) - set(KNOWN_TYPES))
    if unknown:
        raise InputError(f"GPU types {unknown} are not known to the learned policy",
                         field="gpus", fix=f"use GPU types {', '.join(KNOWN_TYPES)}")
    return [KNOWN_TYPES.index(t) for t in data.gpu_types]


class Featurizer:
    """The state vector of Sec. 3.2, pooled over GPUs (see the module docstring)."""

    def __init__(self, data: InferenceData) -> None:
        m0 = default_model(data)
        kinds = known_type_index(data)
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
        self.kind = [kinds[t] for t in types]  # each GPU's known-type index
        n_k = len(KNOWN_TYPES)
        self.kind_count = [self.kind.count(k) for k in range(n_k)]
        self.kind_share = [sum(x for x, k in zip(self.xi, self.kind, strict=True) if k == j)
                           for j in range(n_k)]
        self.onehot = []
        self.d_rate = []  # per GPU: D_{B,M0,G} (s) · ξ_G per listed B (-1 → largest)
        for g, t in enumerate(types):
            oh = [0.0] * n_k
            oh[self.kind[g]] = 1.0
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
        xi = self.xi[gpu]
        hist = [h * xi for h in sim.histogram(N_PRE, N_POST)]
        queued = len(sim.heap)
        rate = sim.rate() * 1000.0  # queries per s
        if sim.heap:
            q = sim.heap[0] % self.n_q
            slack = [(self.soft[q] - now) / 1000.0, (self.hard[q] - now) / 1000.0]
        else:
            slack = [0.0, 0.0]
        n_k = len(KNOWN_TYPES)
        busy_sum = [0.0] * n_k
        busy_n = [0] * n_k
        soonest = None
        for g, f in enumerate(sim.gpu_free):
            left = (f - now) / 1000.0 if f > now else 0.0
            k = self.kind[g]
            busy_sum[k] += left
            busy_n[k] += left > 0
            if g != gpu and (soonest is None or left < soonest):
                soonest = left
        pooled = []
        for k in range(n_k):
            c = self.kind_count[k]
            pooled += [self.kind_share[k], busy_sum[k] / c if c else 0.0,
                       busy_n[k] / c if c else 0.0]
        vec = (hist + [queued * xi, rate * xi] + [d * rate for d in self.d_rate[gpu]]
               + self.onehot[gpu] + slack + pooled + [soonest or 0.0])
        return np.asarray(vec, dtype=np.float64)


class PGPolicy:
    """Softmax MLP policy; ``greedy`` acts by argmax, else samples with ``rng``."""

    def __init__(self, weights: dict[str, np.ndarray], *, greedy: bool = True,
                 rng: np.random.Generator | None = None, label: str = "learned-batching") -> None:
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
                f"this instance has {feature_size(data)} and {len(self.actions)} (its batch "
                "sizes or models differ from the delay table the policy was trained on)",
                field="weights", fix="train a policy on such instances (dlsched rl train "
                "inference)")
        self.featurize = Featurizer(data)
        self.max_b = [[data.max_batch(m, int(t)) for m in range(len(data.models))]
                      for t in data.gpu_type]
        self.pending_model = 0

    def logits(self, state: np.ndarray) -> np.ndarray:
        return net.logits(state, self.w1, self.b1, self.w2, self.b2)

    def probabilities(self, state: np.ndarray) -> np.ndarray:
        return net.softmax(self.logits(state))

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


def shipped_weights() -> Path:
    """Path of the shipped weights (one file for every cluster of known GPU types)."""
    return Path(str(resources.files("dlsched.heuristics").joinpath(
        "data", "inference_pg", SHIPPED)))


def load_pg_policy(weights: str | None = None, greedy: bool = True, seed: int = 0,
                   **options: Any) -> PGPolicy:
    """The ``pg`` serving policy: ``weights`` file, or the shipped one.

    By default it takes the most probable action of π(s, ·) (``greedy``, deterministic);
    ``greedy=False`` samples from π (as during training) with a Generator seeded by
    ``seed``, so such a run is deterministic per seed too.
    """
    if options:
        raise InputError(f"unknown options {sorted(options)}", field="--option",
                         fix="pg takes weights=FILE and greedy")
    if isinstance(greedy, str):
        greedy = greedy.strip().lower() not in ("0", "false", "no", "")
    path = Path(weights) if weights else shipped_weights()
    return PGPolicy(read_weights(path), greedy=bool(greedy),
                    rng=np.random.default_rng([int(seed), 7]))


def make_pg(instance: Instance, *, seed: int = 0, weights: str | None = None,
            greedy: bool = True) -> PGPolicy:
    """The ``learned-batching`` policy for ``instance``: ``weights``, else the shipped weights."""
    return load_pg_policy(weights, greedy=greedy, seed=seed)


register_method(MethodSpec(
    "inference", "learned-batching", "learned",
    PolicyMethod(make_pg, ("weights", "greedy"), {"weights": ("str", None, None)},
                 ("weights",)),
    summary="learned batch policy (Sec. 3.2's network; DAgger clone of load-adaptive Eq. 2, "
            "REINFORCE polish: no measured margin) replayed in the serving simulator"))
