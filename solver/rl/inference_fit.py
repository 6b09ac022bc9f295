"""The serving policy's network under training: initialization, gradients, Adam (numpy).

Every product and transcendental goes through :mod:`dlsched.heuristics.inference_net`, so
a seed gives the same tensors on any machine with the same numpy (see that module for
why torch and BLAS do not: their kernels, and the order they sum in, are chosen by CPU
type). The network sees standardized inputs ``(x − mu) / sd``; :meth:`Network.weights`
folds the standardization into the first layer for the acting code.
"""

from __future__ import annotations

import numpy as np

from ..heuristics import inference_net as net

ADAM_BETAS = (0.9, 0.999)
ADAM_EPS = 1e-8


class Network:
    """One hidden layer of ``hidden`` tanh units, softmax over ``n_out`` actions.

    Initialization as torch's ``nn.Linear`` (weights and biases uniform in ±1/√fan_in),
    drawn from ``np.random.default_rng(seed)`` (PCG64: the same stream on every platform).
    """

    def __init__(self, n_in: int, hidden: int, n_out: int, seed: int,
                 mu: np.ndarray, sd: np.ndarray) -> None:
        rng = np.random.default_rng([int(seed), 29])
        lim1, lim2 = 1.0 / np.sqrt(n_in), 1.0 / np.sqrt(hidden)
        self.params = {"w1": rng.uniform(-lim1, lim1, (n_in, hidden)),
                       "b1": rng.uniform(-lim1, lim1, hidden),
                       "w2": rng.uniform(-lim2, lim2, (hidden, n_out)),
                       "b2": rng.uniform(-lim2, lim2, n_out)}
        self.mu = np.asarray(mu, dtype=np.float64)
        self.sd = np.asarray(sd, dtype=np.float64)

    def state(self) -> dict[str, np.ndarray]:
        """A copy of the parameters (to restore with :meth:`load`)."""
        return {k: v.copy() for k, v in self.params.items()}

    def load(self, state: dict[str, np.ndarray]) -> None:
        self.params = {k: v.copy() for k, v in state.items()}

    def standardize(self, x: np.ndarray) -> np.ndarray:
        return (x - self.mu) / self.sd

    def forward(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Hidden activations and logits of raw states ``x`` (rows)."""
        p = self.params
        h = net.hidden(self.standardize(x), p["w1"], p["b1"])
        return h, net.matmul(h, p["w2"]) + p["b2"]

    def backward(self, x: np.ndarray, h: np.ndarray, dz: np.ndarray) -> dict[str, np.ndarray]:
        """Gradients of the parameters given d loss / d logits ``dz``."""
        p = self.params
        da = net.matmul_nt(dz, p["w2"]) * (1.0 - h * h)
        return {"w2": net.matmul_tn(h, dz), "b2": dz.sum(axis=0),
                "w1": net.matmul_tn(self.standardize(x), da), "b1": da.sum(axis=0)}

    def weights(self) -> dict[str, np.ndarray]:
        """Acting weights ``w1 b1 w2 b2`` on raw inputs (standardization folded in)."""
        p = self.params
        w1 = p["w1"] / self.sd[:, None]
        b1 = p["b1"] - net.matmul(self.mu, w1)
        return {"w1": np.ascontiguousarray(w1), "b1": b1, "w2": p["w2"].copy(),
                "b2": p["b2"].copy()}


class Adam:
    """Adam (Kingma & Ba) with torch's defaults; bias corrections by repeated products."""

    def __init__(self, network: Network, lr: float) -> None:
        self.network, self.lr = network, lr
        self.m = {k: np.zeros_like(v) for k, v in network.params.items()}
        self.v = {k: np.zeros_like(v) for k, v in network.params.items()}
        self.pow1 = self.pow2 = 1.0

    def step(self, grads: dict[str, np.ndarray]) -> None:
        b1, b2 = ADAM_BETAS
        self.pow1 *= b1
        self.pow2 *= b2
        for k, g in grads.items():
            self.m[k] = b1 * self.m[k] + (1.0 - b1) * g
            self.v[k] = b2 * self.v[k] + (1.0 - b2) * (g * g)
            m_hat = self.m[k] / (1.0 - self.pow1)
            v_hat = self.v[k] / (1.0 - self.pow2)
            self.network.params[k] = self.network.params[k] - self.lr * m_hat / (
                np.sqrt(v_hat) + ADAM_EPS)


def cross_entropy_step(network: Network, opt: Adam, x: np.ndarray, y: np.ndarray) -> None:
    """One Adam step on the mean cross-entropy of actions ``y`` at states ``x``."""
    h, z = network.forward(x)
    dz = net.softmax(z)
    dz[np.arange(y.size), y] -= 1.0
    opt.step(network.backward(x, h, dz / y.size))


def cross_entropy(network: Network, x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Mean cross-entropy and the share of states where the argmax is ``y``."""
    _h, z = network.forward(x)
    logp = net.log_softmax(z)
    return float(-logp[np.arange(y.size), y].mean()), float((z.argmax(1) == y).mean())


def reinforce_step(network: Network, opt: Adam, x: np.ndarray, a: np.ndarray,
                   advantage: np.ndarray, entropy: float) -> None:
    """One Adam step on −mean(log π(a|x) · A) − ``entropy`` · mean H(π(·|x))."""
    h, z = network.forward(x)
    logp = net.log_softmax(z)
    p = net.exp(logp)
    n = a.size
    ent = -(p * logp).sum(axis=1)
    dz = p * (advantage / n)[:, None]
    dz[np.arange(n), a] -= advantage / n
    dz = dz + (entropy / n) * (p * (logp + ent[:, None]))
    opt.step(network.backward(x, h, dz))
