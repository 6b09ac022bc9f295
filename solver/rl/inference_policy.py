"""The learned serving policy ``pg`` (Fang et al., CIKM'17, Sec. 3.2), inference only.

State (Sec. 3.2), for the GPU that is free: the deadline histogram (N_pre = 4 bins before
the current one, N_post = 6 from it on; counts / 32), the queue length (/ 64), the arrival
rate R_t (queries/s / 50), the GPU type one-hot, and every GPU's expected remaining busy
time (s). Action: B = 0 (wait) or a (B, M) pair of the delay table; a B the model cannot
run on the GPU is lowered to its largest supported size (the paper's "automatically
selects a smaller batch size"). One hidden layer of 64 (tanh), softmax over actions.

Acting needs numpy only: the weights are read from a safetensors file (no pickle, no
torch). Training lives in :mod:`dlsched.rl.inference_train` (torch).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError
from ..problems.inference import InferenceData
from ..serve.engine import ServeState

N_PRE, N_POST = 4, 6
HIDDEN = 64
SHIPPED = {"p2:1": "p2x1/policy.safetensors",
           "g2:5,p2:5": "g2x5_p2x5/policy.safetensors"}


def action_table(data: InferenceData) -> list[tuple[int, int]]:
    """Actions: index 0 = wait (0, -1), then (B, model) for every size and model."""
    return [(0, -1)] + [(b, m) for m in range(len(data.models)) for b in data.batch_sizes]


def feature_size(data: InferenceData) -> int:
    return N_PRE + N_POST + 2 + len(data.gpu_types) + len(data.gpu_ids)


def features(sim: ServeState, gpu: int) -> np.ndarray:
    """The state vector of Sec. 3.2 for free GPU ``gpu``."""
    data = sim.data
    hist = sim.histogram(N_PRE, N_POST)
    onehot = [0.0] * len(data.gpu_types)
    onehot[int(data.gpu_type[gpu])] = 1.0
    busy = [max(0, f - sim.now) / 1000.0 for f in sim.gpu_free]
    vec = [h / 32.0 for h in hist] + [len(sim.heap) / 64.0, sim.rate() * 1000.0 / 50.0]
    return np.asarray(vec + onehot + busy, dtype=np.float32)


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
        self.max_b = [[data.max_batch(m, int(t)) for m in range(len(data.models))]
                      for t in data.gpu_type]
        self.pending_model = 0

    def probabilities(self, state: np.ndarray) -> np.ndarray:
        h = np.tanh(state @ self.w1 + self.b1)
        z = h @ self.w2 + self.b2
        z = z - z.max()
        p = np.exp(z)
        return p / p.sum()

    def size(self, sim: ServeState, gpu: int) -> int:
        state = features(sim, gpu)
        p = self.probabilities(state)
        if self.greedy:
            a = int(np.argmax(p))
        else:
            a = min(int(np.searchsorted(np.cumsum(p), self.rng.random(), side="right")),
                    p.size - 1)
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
    from safetensors.numpy import load_file

    try:
        return load_file(str(path))
    except FileNotFoundError:
        raise InputError("no such weights file", field="weights", source=str(path),
                         fix="pass a .safetensors file written by dlsched rl train") from None
    except Exception as exc:  # malformed file: say so in one line
        raise InputError(f"cannot read weights: {exc}", field="weights", source=str(path),
                         fix="pass a .safetensors file written by dlsched rl train") from None


def shipped_weights(gpus: str = "p2:1") -> Path:
    """Path of the shipped weights for cluster ``gpus`` (``p2:1`` or ``g2:5,p2:5``)."""
    if gpus not in SHIPPED:
        raise InputError(f"no shipped policy for {gpus!r}", field="gpus",
                         fix=f"use one of {sorted(SHIPPED)} or pass weights=FILE")
    return Path(str(resources.files("dlsched.rl").joinpath("data", *SHIPPED[gpus].split("/"))))


def load_pg_policy(weights: str | None = None, gpus: str = "p2:1", greedy: bool = False,
                   seed: int = 0, **options: Any) -> PGPolicy:
    """The ``pg`` serving policy: ``weights`` file, or the shipped one for ``gpus``.

    It samples its actions from π(s, ·) (Sec. 3.2: a stochastic policy) with a Generator
    seeded by ``seed``, so a run is deterministic per seed; ``greedy=True`` takes the
    most probable action instead.
    """
    if options:
        raise InputError(f"unknown options {sorted(options)}", field="--option",
                         fix="pg takes weights=FILE, gpus=p2:1|g2:5,p2:5, greedy, seed")
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
