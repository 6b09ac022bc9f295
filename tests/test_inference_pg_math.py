"""The serving policy's machine-independent arithmetic and hand-written gradients."""

from __future__ import annotations

import numpy as np
import pytest

from dlsched.heuristics import inference_net as net
from dlsched.rl.inference_fit import Adam, Network, cross_entropy_step, reinforce_step


def test_exp_log_tanh_agree_with_the_c_library():
    x = np.linspace(-40.0, 40.0, 40001)
    assert np.max(np.abs(net.exp(x) / np.exp(x) - 1.0)) < 1e-15
    y = np.exp(np.linspace(-30.0, 30.0, 40001))
    assert np.max(np.abs(net.log(y) - np.log(y))) < 1e-14
    assert np.max(np.abs(net.tanh(x / 8) - np.tanh(x / 8))) < 1e-15
    assert net.exp(np.array([0.0]))[0] == 1.0 and net.log(np.array([1.0]))[0] == 0.0
    assert net.tanh(np.array([0.0, 800.0, -800.0])).tolist() == [0.0, 1.0, -1.0]


def test_products_equal_blas_up_to_rounding():
    rng = np.random.default_rng(0)
    a, b, d = rng.normal(size=(7, 5)), rng.normal(size=(5, 3)), rng.normal(size=(7, 3))
    assert np.allclose(net.matmul(a, b), a @ b, rtol=0, atol=1e-13)
    assert np.allclose(net.matmul(a[0], b), a[0] @ b, rtol=0, atol=1e-13)
    assert np.allclose(net.matmul_tn(a, d), a.T @ d, rtol=0, atol=1e-13)
    assert np.allclose(net.matmul_nt(d, b), d @ b.T, rtol=0, atol=1e-13)
    z = rng.normal(size=(4, 6))
    assert np.allclose(net.softmax(z).sum(1), 1.0)
    assert np.allclose(net.log_softmax(z), np.log(net.softmax(z)), atol=1e-14)


def _network(seed=3):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(9, 4)) * 2 + 1
    netw = Network(4, 5, 3, seed, mu=x.mean(0), sd=x.std(0))
    return netw, x


def _losses(netw, x, y, adv, c):
    _h, z = netw.forward(x)
    logp = net.log_softmax(z)
    ce = -logp[np.arange(y.size), y].mean()
    ent = -(np.exp(logp) * logp).sum(1).mean()
    pg = -(logp[np.arange(y.size), y] * adv).mean() - c * ent
    return ce, pg


class _Capture(Adam):
    """An optimizer that records the gradient instead of stepping."""

    def step(self, grads):
        self.grads = grads


@pytest.mark.parametrize("which", ["ce", "pg"])
def test_gradients_match_finite_differences(which):
    netw, x = _network()
    y = np.array([0, 1, 2, 2, 1, 0, 0, 1, 2])
    adv = np.linspace(-1.0, 1.5, 9)
    c = 0.3
    cap = _Capture(netw, 1.0)
    if which == "ce":
        cross_entropy_step(netw, cap, x, y)
    else:
        reinforce_step(netw, cap, x, y, adv, c)
    eps = 1e-6
    for key, value in netw.params.items():
        num = np.zeros_like(value)
        for idx in np.ndindex(value.shape):
            keep = value[idx]
            value[idx] = keep + eps
            up = _losses(netw, x, y, adv, c)[which == "pg"]
            value[idx] = keep - eps
            down = _losses(netw, x, y, adv, c)[which == "pg"]
            value[idx] = keep
            num[idx] = (up - down) / (2 * eps)
        assert np.allclose(cap.grads[key], num, atol=1e-7), key


def test_folded_weights_act_like_the_standardized_network():
    from dlsched.heuristics.inference_pg import PGPolicy

    netw, x = _network()
    _h, z = netw.forward(x)
    pol = PGPolicy(netw.weights())
    for row, want in zip(x, z, strict=True):
        assert np.allclose(pol.logits(row), want, atol=1e-12)


def test_adam_first_step_moves_each_weight_by_the_learning_rate():
    netw, _x = _network()
    before = netw.state()
    opt = Adam(netw, 0.01)
    opt.step({k: np.ones_like(v) for k, v in before.items()})
    for k, v in netw.params.items():
        assert np.allclose(before[k] - v, 0.01, rtol=1e-6)
