"""Adam for the deep-Q network's torch parameters, step for step ``torch.optim.Adam``.

``torch.optim``'s optimizers import ``torch._dynamo`` when they are built (about 1.4
CPU-s in every process that trains, more than the training of a tiny run). This is the
same update as torch's single-tensor Adam on CPU with its defaults (no weight decay, no
AMSGrad), operation for operation, so the parameters it produces are bit-identical
(``tests/test_torch_adam.py`` compares them with ``torch.optim.Adam``'s).
"""

from __future__ import annotations

from collections.abc import Iterable

import torch


class Adam:
    """Adam (Kingma & Ba) on ``params`` with learning rate ``lr``.

    Parameters
    ----------
    params
        The tensors to train (``requires_grad``).
    lr
        Learning rate.
    betas
        Decay rates of the first and second moment estimates.
    eps
        Added to the denominator.
    """

    def __init__(self, params: Iterable[torch.Tensor], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8) -> None:
        self.params = list(params)
        self.lr, (self.beta1, self.beta2), self.eps = lr, betas, eps
        self.first = [torch.zeros_like(p) for p in self.params]
        self.second = [torch.zeros_like(p) for p in self.params]
        # torch counts steps in a float32 tensor per parameter; the count is read as a
        # Python number, so the bias corrections are computed in double precision
        self.steps = [torch.tensor(0.0) for _ in self.params]

    def zero_grad(self) -> None:
        """Forget the gradients (set to ``None``, as torch's default does)."""
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        """One update of every parameter that has a gradient."""
        for p, first, second, count in zip(self.params, self.first, self.second, self.steps,
                                           strict=True):
            if p.grad is None:
                continue
            grad = p.grad
            count += 1
            first.lerp_(grad, 1 - self.beta1)
            second.mul_(self.beta2).addcmul_(grad, grad, value=1 - self.beta2)
            step = count.item()
            step_size = self.lr / (1 - self.beta1**step)
            denom = (second.sqrt() / (1 - self.beta2**step) ** 0.5).add_(self.eps)
            p.addcdiv_(first, denom, value=-step_size)
