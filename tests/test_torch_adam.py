"""dlsched's Adam for the deep-Q network gives torch.optim.Adam's parameters bit for bit."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.torch


@pytest.fixture(scope="module")
def torch():
    """torch, imported by the tests that run, not when the suite is collected."""
    return pytest.importorskip("torch")


def _train(torch, make_optimizer, steps: int = 200) -> list:
    nn = torch.nn
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(7, 16), nn.ReLU(), nn.Linear(16, 1))
    opt = make_optimizer(net.parameters())
    data = torch.Generator().manual_seed(1)
    for _ in range(steps):
        x, y = torch.randn(8, 7, generator=data), torch.randn(8, 1, generator=data)
        loss = nn.functional.smooth_l1_loss(net(x), y)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(net.parameters(), 10.0)
        opt.step()
    return [p.detach().clone() for p in net.parameters()]


def test_the_parameters_are_torch_adams_bit_for_bit(torch):
    from dlsched.rl.torch_adam import Adam

    lr = 3e-4  # the deep-Q network's (docs/rl.md)
    ours = _train(torch, lambda params: Adam(params, lr=lr))
    theirs = _train(torch, lambda params: torch.optim.Adam(params, lr=lr))
    assert all(torch.equal(a, b) for a, b in zip(ours, theirs, strict=True))
    start = _train(torch, lambda params: Adam(params, lr=lr), steps=0)
    assert not all(torch.equal(a, b) for a, b in zip(ours, start, strict=True))  # it trained


def test_a_parameter_without_a_gradient_is_left_alone(torch):
    from dlsched.rl.torch_adam import Adam

    used, unused = torch.ones(3, requires_grad=True), torch.ones(2, requires_grad=True)
    opt = Adam([used, unused], lr=0.1)
    (used * torch.tensor([1.0, -2.0, 0.0])).sum().backward()
    opt.step()
    assert torch.equal(unused, torch.ones(2))
    # the first step moves each coordinate by lr against its gradient's sign (m/√v = ±1)
    assert torch.allclose(used.detach(), torch.tensor([0.9, 1.1, 1.0]), atol=1e-6)
    opt.zero_grad()
    assert used.grad is None
